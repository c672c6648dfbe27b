/**
 * `pingroll ingest`: the ingest half of the daily job, on its own. Run as N shards at once (`--shard
 * I/N`, or an AWS Batch array job, or a Kubernetes indexed Job), each parses the new log objects
 * whose keys hash to it and commits them as its own batch; `pingroll rollup --date D --no-ingest`
 * then rolls up from what they staged, exactly as one process would have. Without a shard it is one
 * process that holds the output alone, like a rollup.
 *
 * With `--date D` it also reads the legacy tables that can hold D: a shard of N its share of each
 * (scan segments or export files, and the read budget, ingest/dynamodb/item-source.ts), committed as
 * a part; the day's rollup reads a table's latest complete set of parts (state/ledger.ts, `reading`).
 *
 *   lock (run.ts) → ingest (stages/ingest.ts) → the listing sealed
 */
import { randomUUID } from 'node:crypto';
import { tablesForDay } from '../ingest/dynamodb/monthly-tables.js';
import { shardText, type Shard } from '../ingest/batch/shard.js';
import { addDays } from '../lib/utc-day.js';
import type { Log } from '../lib/log.js';
import type { Backends } from '../infra/backends.js';
import type { Config } from '../infra/config.js';
import { withRun } from './run.js';
import { ingest, type IngestSummary } from './stages/ingest.js';

export interface IngestJobOptions {
  log: Log;
  shard: Shard | null;
  /** Also read the legacy tables that can hold this day. */
  day?: string | undefined;
  waitSeconds?: number | undefined;
  rescan?: boolean | undefined;
  now?: Date;
  stagingPartBytes?: number;
}

export interface IngestJobSummary extends IngestSummary {
  run: string;
  /** The batches this run committed, oldest first: none when it found nothing new. */
  batches: string[];
}

/** Without a day, an ingest is asked for yesterday's records, as the nightly job that runs it is (by its own clock). */
function yesterday(now = new Date()): string {
  return addDays(now.toISOString().slice(0, 10), -1);
}

export async function runIngestJob(config: Config, backends: Backends, opts: IngestJobOptions): Promise<IngestJobSummary> {
  const { log, shard } = opts;
  const id = randomUUID();
  const name = shard ? shardText(shard) : null;
  const tables = opts.day && config.ddbTables ? tablesForDay(config.ddbTables, opts.day) : [];
  return withRun(backends, { id, command: name ? `ingest --shard ${name}` : 'ingest', kind: 'ingest', log, waitSeconds: opts.waitSeconds, shard, start: ['ingest.start', { run: id, shard: name }] }, (run) =>
    run.withEngine('ingest', config.memoryLimitMb, async (db) => {
      const { settle, ...ingested } = await ingest(config, backends, run, db, { ...opts, asked: opts.day ? [opts.day] : [yesterday(opts.now)], tables });
      await settle();
      return { run: id, ...ingested };
    }));
}
