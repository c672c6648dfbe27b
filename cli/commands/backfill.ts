import { withBackends } from '../../infra/backends.js';
import { ConfigError, parseDay, pastDay, type Config } from '../../infra/config.js';
import { runBackfill } from '../../jobs/backfill.js';
import { makeLog } from '../run-log.js';
import { unreadableError } from './quarantine.js';

export class SomeDaysFailed extends Error {}

/** `ingest` is commander's --no-ingest: false when given. */
export interface BackfillCommandOptions { from?: string; to?: string; force?: boolean; rescan?: boolean; stale?: boolean; ingest?: boolean }

/** `pingroll backfill --from D --to D`: every day of a range; exit 1 naming the days that failed. */
export async function backfillCommand(config: Config, opts: BackfillCommandOptions): Promise<void> {
  // Named as the program takes them, with both ways of calling it: make's FROM= and TO= become --from and --to.
  const usage = 'pingroll backfill --from 2026-11-01 --to 2026-11-07, or make backfill FROM=2026-11-01 TO=2026-11-07';
  if (!opts.stale && (!opts.from || !opts.to)) throw new ConfigError(`a backfill needs --from and --to, the first and last day as YYYY-MM-DD (e.g. ${usage}); or --stale (make rollup-stale)`);
  if (Boolean(opts.from) !== Boolean(opts.to)) throw new ConfigError('give both --from and --to (make: FROM and TO), or neither with --stale');
  const from = opts.from ? parseDay(opts.from, '--from', usage) : undefined;
  // A range must end before today; --stale names (and leaves) stale days of today or later itself.
  const to = opts.to ? (opts.stale ? parseDay(opts.to, '--to', usage) : pastDay(opts.to, '--to', usage)) : undefined;
  const log = makeLog();
  const s = await withBackends(config, log, (backends, config) =>
    runBackfill(config, backends, { from, to, log, force: opts.force, waitSeconds: config.waitSeconds, rescan: opts.rescan, stale: opts.stale, noIngest: opts.ingest === false }), { makeViewerKey: true });
  const what = opts.stale ? `stale days${from ? ` of ${from}..${to}` : ''}: ${s.done.length ? s.done.join(', ') : 'none'} republished;` : `backfill ${from}..${to}:`;
  process.stdout.write(`${what} ${s.done.length} days done, ${s.skipped.length} skipped (unchanged), ${s.failed.length} failed`
    + `${s.refused.length ? `, ${s.refused.length} refused (today or later: ${s.refused.join(', ')})` : ''}`
    + `${s.months.length ? `; months rolled up again: ${s.months.join(', ')}` : ''}`
    + `${s.settled.length ? `; state published again (final listings done): ${s.settled.join(', ')}` : ''}; `
    + `${s.pings} pings; ${s.parsedObjects} log objects parsed; ${s.scanned.length} tables scanned, ${s.consumedCapacity} RCU\n`);
  if (s.unreadable.length && !s.failed.length) throw unreadableError(config.output.url, s.unreadable);
  if (s.failed.length) {
    throw new SomeDaysFailed(`${s.failed.length} of ${s.days} days failed: ${s.failed.map((f) => `${f.day} (${f.error})`).join('; ')}; run the same backfill again to retry them`);
  }
}
