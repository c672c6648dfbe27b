import { withBackends } from '../../infra/backends.js';
import { ConfigError, parseDay, shardFrom, type Config } from '../../infra/config.js';
import { daysBetween } from '../../jobs/backfill.js';
import { runReconcile } from '../../jobs/reconcile.js';
import { shardText } from '../../ingest/batch/shard.js';
import { makeLog } from '../run-log.js';
import { unreadableError } from './quarantine.js';

export interface ReconcileCommandOptions { from?: string; to?: string; shard?: string }

/** `pingroll reconcile --from D1 --to D2 [--shard I/N]`: those delivery days listed in full now; one summary line on stdout. */
export async function reconcileCommand(config: Config, opts: ReconcileCommandOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!opts.from || !opts.to) throw new ConfigError('--from and --to are required: the delivery days to list in full (YYYY-MM-DD), e.g. pingroll reconcile --from 2026-11-01 --to 2026-11-03');
  const from = parseDay(opts.from, '--from'), to = parseDay(opts.to, '--to');
  daysBetween(from, to);
  const shard = shardFrom(opts.shard, env);
  const log = makeLog();
  const s = await withBackends(config, log, (backends, config) => runReconcile(config, backends, { from, to, log, shard, waitSeconds: config.waitSeconds }), { makeViewerKey: true });
  process.stdout.write(`reconcile ${from}..${to}${shard ? ` shard ${shardText(shard)}` : ''}: ${s.listed} log objects listed, ${s.parsedObjects} new parsed (${s.parsedRecords} records)`
    + `; days of their records: ${s.touched.length ? s.touched.join(', ') : 'none'}`
    + `; made stale: ${s.stale.length ? `${s.stale.join(', ')} (run make rollup-stale)` : 'none'}\n`);
  if (s.unreadable.length) throw unreadableError(config.output.url, s.unreadable);
}
