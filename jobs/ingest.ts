/**
 * `pingroll ingest`: the ingest half of the daily job, on its own. Run as N shards at once (`--shard
 * I/N`, or an AWS Batch array job, or a Kubernetes indexed Job), each parses the new log objects
 * whose keys hash to it and commits them as its own batch; `pingroll rollup --date D --no-ingest`
 * then rolls up from what they staged, exactly as one process would have. Without a shard it is one
 * process that holds the output alone, like a rollup.
 *
 * It is asked for days (`--date D[,D2...]`; yesterday by its clock when none is given, as the nightly
 * job that runs it is): their delivery days are listed if no run listed them before, and the legacy
 * tables that can hold them are read, a shard of N its share of each (scan segments or export files,
 * and the read budget, ingest/dynamodb/item-source.ts), committed as a part; the day's rollup reads a
 * table's latest complete set of parts (state/ledger.ts, `reading`). So the deployed night (shards,
 * then `rollup --no-ingest`) and a backfill's range read every source of their days.
 *
 *   lock (run.ts) → ingest (stages/ingest.ts) → the listing sealed
 */
import { withStage } from './stages/stage.js';
import { randomUUID } from 'node:crypto';
import { tablesForDay, type MonthlyTable } from '../ingest/dynamodb/monthly-tables.js';
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
  /** The days asked for (their delivery days listed, the legacy tables that can hold them read); none: yesterday. */
  days?: readonly string[] | undefined;
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
  const asked = opts.days?.length ? [...new Set(opts.days)].sort() : [yesterday(opts.now)];
  const tables = new Map<string, MonthlyTable>();
  if (config.ddbTables) for (const d of asked) for (const t of tablesForDay(config.ddbTables, d)) tables.set(t.name, t);
  return withRun(backends, { id, command: name ? `ingest --shard ${name}` : 'ingest', kind: 'ingest', log, waitSeconds: opts.waitSeconds, shard, start: ['ingest.start', { run: id, shard: name }] }, (run) =>
    withStage({ config, backends, run }, 'ingest', async (stage) => {
      const { settle, ...ingested } = await ingest(stage, { ...opts, asked, tables: [...tables.values()] });
      await settle();
      return { run: id, ...ingested };
    }));
}
