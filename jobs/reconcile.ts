/**
 * `pingroll reconcile --from D1 --to D2`: list the delivery days D1 to D2 in full now, whatever the
 * schedule, and parse what no batch has: for a restore, a migration, a new replication rule, or an
 * object that appeared after a day's final listing (contract §8). It publishes nothing: the days its
 * objects hold are stale, and the next `make rollup-stale` republishes them. As a shard (`--shard I/N`)
 * it lists its own slices of those days.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { shardText, type Shard } from '../ingest/batch/shard.js';
import { openEngine } from '../lib/duckdb-engine.js';
import type { Log } from '../lib/log.js';
import { daysFrom } from '../lib/utc-day.js';
import type { Backends } from '../infra/backends.js';
import type { Config } from '../infra/config.js';
import { manifestKey } from '../export/manifest.js';
import { ingest, withRun, type IngestSummary } from './daily.js';

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
  const run = randomUUID();
  const { log, shard } = opts;
  const days = daysFrom(opts.from, opts.to);
  const name = shard ? shardText(shard) : null;
  return withRun(backends, { run, command: `reconcile ${opts.from}..${opts.to}${name ? ` --shard ${name}` : ''}`, kind: 'reconcile', log, waitSeconds: opts.waitSeconds, shard,
    start: ['reconcile.start', { run, from: opts.from, to: opts.to, shard: name }], settings: config }, async (state) => {
    const engine = await openEngine({ tempDir: join(state.dir, 'spill'), memoryLimitMb: config.memoryLimitMb });
    try {
      let listed = 0;
      const { settled: _, listed: __, batches: ___, ...out } = await ingest(config, backends, state.ledger, engine, [], {
        log, now: opts.now, asked: [], listInFull: days, fence: state.fence, quarantine: state.quarantine, shard,
        onListed: (n) => { listed = n; },
      });
      const stale: string[] = [];
      for (const d of out.touched) if ((await backends.store.size(manifestKey(d))) !== null) stale.push(d);
      log.info('reconcile.done', { run, from: opts.from, to: opts.to, listed, objects: out.parsedObjects, records: out.parsedRecords, days: out.touched, stale });
      return { run, ...out, days, listed, stale };
    } finally {
      engine.closeSync();
    }
  });
}
