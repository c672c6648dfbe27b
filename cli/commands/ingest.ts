import { withBackends } from '../../infra/backends.js';
import { pastDay, shardFrom, type Config } from '../../infra/config.js';
import { runIngestJob } from '../../jobs/ingest.js';
import { shardText } from '../../ingest/batch/shard.js';
import { makeLog } from '../run-log.js';
import { unreadableError } from './quarantine.js';

export interface IngestCommandOptions { shard?: string; date?: string; rescan?: boolean }

/** `pingroll ingest [--shard I/N]`: parse the new log objects (this shard's), commit them; one summary line on stdout. */
export async function ingestCommand(config: Config, opts: IngestCommandOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const shard = shardFrom(opts.shard, env);
  // One day or several, comma-separated (the deployment's backfill entry passes its range so).
  const days = opts.date === undefined ? undefined : opts.date.split(',').map((d) => pastDay(d.trim(), '--date'));
  const log = makeLog();
  const s = await withBackends(config, log, (backends, config) =>
    runIngestJob(config, backends, { log, shard, days, waitSeconds: config.waitSeconds, rescan: opts.rescan }), { makeViewerKey: true });
  const scanned = s.scanned.map((t) => `${t.table} (${t.items} items, ${t.consumedCapacity} RCU)`).join(', ');
  process.stdout.write(`ingest${shard ? ` shard ${shardText(shard)}` : ''}: ${s.parsedObjects} log objects parsed, ${s.parsedRecords} records`
    + `${s.batches.length === 1 ? ` (batch ${s.batches[0]})` : s.batches.length ? ` (${s.batches.length} batches)` : ''}${scanned ? `; scanned ${scanned}` : ''}`
    + `${s.skipped ? `; ${s.skipped} entries of the log directory skipped (links or not regular files: see the log's object.skipped)` : ''}\n`);
  if (s.unreadable.length) throw unreadableError(config.output.url, s.unreadable);
}
