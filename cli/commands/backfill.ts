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
  if (!opts.stale && (!opts.from || !opts.to)) throw new ConfigError('FROM and TO are required; run as make backfill FROM=YYYY-MM-DD TO=YYYY-MM-DD (or make rollup-stale)');
  if (Boolean(opts.from) !== Boolean(opts.to)) throw new ConfigError('give both FROM and TO, or neither with --stale');
  const from = opts.from ? parseDay(opts.from, 'FROM') : undefined;
  // A range must end before today; --stale names (and leaves) stale days of today or later itself.
  const to = opts.to ? (opts.stale ? parseDay(opts.to, 'TO') : pastDay(opts.to, 'TO')) : undefined;
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
