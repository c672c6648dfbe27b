/**
 * `pingroll reconcile --from D1 --to D2`: list the delivery days D1 to D2 in full now, whatever the
 * schedule, and parse what no batch has: for a restore, a migration, a new replication rule, or an
 * object that appeared after a day's final listing (contract §8). It publishes nothing: the days its
 * objects hold are stale, and the next `make rollup-stale` republishes them. As a shard (`--shard I/N`)
 * it lists its own slices of those days.
 *
 *   lock (run.ts) → ingest, those days listed in full (stages/ingest.ts) → the listing sealed
 */
import { withStage } from './stages/stage.js';
import { randomUUID } from 'node:crypto';
import { shardText, type Shard } from '../ingest/batch/shard.js';
import type { Log } from '../lib/log.js';
import { daysFrom } from '../lib/utc-day.js';
import type { Backends } from '../infra/backends.js';
import type { Config } from '../infra/config.js';
import { dayManifestKey } from '../datasets/layout.js';
import { withRun } from './run.js';
import { ingest, type IngestSummary } from './stages/ingest.js';

export interface ReconcileOptions {
  from: string;
  to: string;
  log: Log;
  shard: Shard | null;
  waitSeconds?: number | undefined;
  now?: Date;
}

export interface ReconcileSummary extends IngestSummary {
  run: string;
  /** Delivery days listed in full. */
  days: string[];
  /** Objects the listing returned. */
  listed: number;
  /** Days of records the parsed objects hold, and of those the ones published before: stale until rolled up again. */
  touched: string[];
  stale: string[];
}

export async function runReconcile(config: Config, backends: Backends, opts: ReconcileOptions): Promise<ReconcileSummary> {
  const id = randomUUID();
  const { log, shard } = opts;
  const days = daysFrom(opts.from, opts.to);
  const name = shard ? shardText(shard) : null;
  return withRun(backends, { id, command: `reconcile ${opts.from}..${opts.to}${name ? ` --shard ${name}` : ''}`, kind: 'reconcile', log, waitSeconds: opts.waitSeconds, shard,
    start: ['reconcile.start', { run: id, from: opts.from, to: opts.to, shard: name }] }, (run) =>
    withStage({ config, backends, run }, 'reconcile', async (stage) => {
      const { settle, listed: _, batches: __, listedObjects: listed, ...out } = await ingest(stage, { now: opts.now, asked: [], listInFull: days, tables: [] });
      await settle();
      const stale: string[] = [];
      for (const d of out.touched) if ((await backends.store.size(dayManifestKey(d))) !== null) stale.push(d);
      log.info('reconcile.done', { run: id, from: opts.from, to: opts.to, listed, objects: out.parsedObjects, records: out.parsedRecords, days: out.touched, stale });
      return { run: id, ...out, days, listed, stale };
    }));
}
