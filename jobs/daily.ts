/**
 * The job cron runs every night (`make rollup DATE=D`): ingest every log object not yet parsed and
 * read the legacy tables that can hold D, then roll up D from everything staged for it and publish it.
 * A re-run gives the same result as one clean run; objects that arrived late are picked up by the
 * next run of their day. The backends come from the composition root (infra/backends.ts).
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { DayPublisher, type PublishedDay } from '../export/day-publish.js';
import { TABLES, type RollupSettings } from '../rollup/day-rollup.js';
import { outputKey } from '../export/day-parquet.js';
import { manifestKey } from '../export/manifest.js';
import { ingestNewObjects, listNewObjects, settleQuarantine } from '../ingest/batch/ingest-batch.js';
import { owns, shardName, type Shard } from '../ingest/batch/shard.js';
import { scanTables, type TableRead } from '../ingest/batch/scan-batch.js';
import { tablesForDay, type MonthlyTable } from '../ingest/dynamodb/monthly-tables.js';
import { openEngine } from '../lib/duckdb-engine.js';
import type { Log } from '../lib/log.js';
import { DirectoryObjectSource } from '../ingest/object-source/directory-object-source.js';
import { Ledger } from '../state/ledger.js';
import { acquireLock, acquireShardLock, type LockOptions } from '../state/run-lock.js';
import { Quarantine, QUARANTINE_KEY } from '../state/quarantine.js';
import { ListingCursor } from '../state/listing-cursor.js';
import { ListedDays } from '../state/listing-state.js';
import type { Backends } from '../infra/backends.js';
import type { Config } from '../infra/config.js';
import { codeVersion } from '../infra/version.js';
import { removeLeftovers } from '../state/leftovers.js';
import { makeWorkDir } from '../lib/work-dir.js';
import { expireRejects } from '../export/rejects-retention.js';
import { loadEpisodeCatalog } from '../rollup/episode-catalog.js';

export interface JobOptions {
  day: string;
  log: Log;
  dryRun?: boolean;
  /** Seconds to wait for another run's lock before failing. */
  waitSeconds?: number;
  /** Read closed tables again even if they were read after their month ended. */
  rescan?: boolean;
  /** The run's clock (tables are closed, and delivery days listed in full, relative to it); tests set it. */
  now?: Date;
  /** Bytes of staged rows per part (a part is made Parquet while parsing goes on); tests make it small. */
  stagingPartBytes?: number;
  /** Log objects per batch at most (MAX_BATCH_OBJECTS); tests make it small. */
  batchObjects?: number;
  /** Roll up from what is staged (by the shards of a sharded ingest): no listing, no parsing, no table scans. */
  noIngest?: boolean;
}

export interface JobSummary {
  day: string;
  run: string;
  dryRun: boolean;
  parsedObjects: number;
  parsedRecords: number;
  /** Tables read by this run, with what they cost. */
  scanned: TableRead[];
  /** Tables that could hold the day and do not exist. */
  missingTables: string[];
  /** Log objects that could not be read and are not accepted as lost (quarantined, retried by every run). */
  unreadable: Array<{ key: string; reason: string }>;
  /** Entries of a log directory the listing passed over (links, FIFOs, ...): how many (each logged with why). */
  skipped: number;
  pings: number;
  outputs: PublishedDay['outputs'];
  manifest: string | null;
}

/** What ingest did: objects parsed, tables read. */
export type IngestSummary = Pick<JobSummary, 'parsedObjects' | 'parsedRecords' | 'scanned' | 'missingTables' | 'unreadable' | 'skipped'>;

export async function runDailyJob(config: Config, backends: Backends, opts: JobOptions): Promise<JobSummary> {
  const { day, log } = opts;
  const { logs, store, warehouse } = backends;
  const run = randomUUID();
  const summary: JobSummary = { day, run, dryRun: Boolean(opts.dryRun), parsedObjects: 0, parsedRecords: 0, scanned: [], missingTables: [], unreadable: [], skipped: 0, pings: 0, outputs: [], manifest: null };
  const tables = config.ddbTables ? tablesForDay(config.ddbTables, day) : [];

  if (opts.dryRun) {
    // The episode catalog is read and checked as the run would, before anything is listed (a bad one: EpisodeCatalogError, exit 2).
    let episodeCatalog: { url: string; episodes: number } | null = null;
    if (backends.episodes) {
      const dir = await makeWorkDir('dry-run');
      const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: config.memoryLimitMb });
      try {
        const c = await loadEpisodeCatalog(engine, backends.episodes, dir);
        episodeCatalog = { url: c.url, episodes: c.episodes };
      } finally {
        engine.closeSync();
        await rm(dir, { recursive: true, force: true });
      }
    }
    const ledger = await Ledger.load(store);
    const todo = { objects: 0, bytes: 0 };
    let listedDays: readonly string[] = [];
    if (!opts.noIngest) {
      const cursor = await ListingCursor.open(store, { marginMs: config.listMarginMs, schedule: config.schedule, shard: null });
      const plan = cursor.plan([day], (opts.now ?? new Date()).getTime());
      listedDays = plan.days;
      await listNewObjects(logs, ledger, await Quarantine.load(store), cursor, plan, null, async (refs) => {
        todo.objects += refs.length;
        todo.bytes += refs.reduce((n, o) => n + o.size, 0);
      });
    }
    const staged = await ledger.inputsFor(day);
    log.info('dry-run', {
      day, logs: logs.url, output: store.url, deliveryDaysListedInFull: listedDays,
      objectsToParse: todo.objects, bytesToParse: todo.bytes,
      batchesStagedForDay: staged.length, stagedPings: staged.reduce((n, s) => n + s.staged.pingCount, 0),
      tables: tables.map((t) => `${t.name}: ${ledger.tableClosed(t.name) && !opts.rescan ? 'closed, scanned before; not scanned again' : 'would be scanned'}`),
      wouldWrite: TABLES.map((t) => `${store.url}${outputKey(t, day)}`).concat([`${store.url}${manifestKey(day)}`]),
      warehouse: warehouse?.description ?? 'none', episodeCatalog,
    });
    return summary;
  }

  return withRun(backends, { run, command: `rollup ${day}`, kind: 'run', log, waitSeconds: opts.waitSeconds, start: ['run.start', { run, day }], rollupInWarehouse: config.rollup === 'redshift', settings: config }, async (state) => {
    const engine = await openEngine({ tempDir: join(state.dir, 'spill'), memoryLimitMb: config.memoryLimitMb });
    let touchedDays: string[] = [];
    // The listing's seals are written while the day is rolled up (a put each: 288 for a day's two
    // delivery days); the run fails if they do, once the day is published, and never lets go of its
    // lock before they have ended.
    let settled: Promise<void> = Promise.resolve();
    try {
      // A bad episode catalog stops the run here, before any work.
      await state.publisher.episodeCatalog(engine);
      let listed: ListedDays;
      if (opts.noIngest) {
        await settleQuarantine(state.quarantine, state.ledger, store);
        summary.unreadable = stillUnreadable(state.quarantine);
        listed = await ListedDays.load(store, config.schedule);
      } else {
        const { batches: _, touched, settled: sealing, listed: known, ...ingested } = await ingest(config, backends, state.ledger, engine, tables, { ...opts, asked: [day], fence: state.fence, quarantine: state.quarantine, settleLater: true });
        settled = sealing;
        touchedDays = touched;
        listed = known;
        Object.assign(summary, ingested);
      }
      Object.assign(summary, await state.publisher.publish(engine, day, { ...summary, listed }));
      // Days published before, whose final listings are now done (or whose unreadable objects were accepted as lost): said so.
      await state.publisher.settleStates(engine, listed);
      await settled;
      if (config.rejectsRetentionDays !== null) await expireRejects(store, config.rejectsRetentionDays, opts.now ?? new Date(), log);
      log.info('run.done', { run, day, pings: summary.pings, parsedObjects: summary.parsedObjects, scanned: summary.scanned.map((t) => t.table), unreadable: summary.unreadable.length, staleDays: await staleAmong(store, touchedDays, new Set([day])) });
      return summary;
    } finally {
      await settled.catch(() => {});
      engine.closeSync();
    }
  });
}

/** How many of `days` (that a run added records to) were published before and not by this run (`done`): each is stale until rolled up again. */
export async function staleAmong(store: Backends['store'], days: string[], done: Set<string>): Promise<number> {
  let stale = 0;
  for (const d of days) if (!done.has(d) && (await store.size(manifestKey(d))) !== null) stale++;
  return stale;
}

/** What a run holds while it works. */
export interface RunState {
  ledger: Ledger;
  quarantine: Quarantine;
  publisher: DayPublisher;
  /** Throws when the run lost its lock: called before every commit. */
  fence: () => Promise<void>;
  /** The run's local work folder. */
  dir: string;
}

/**
 * Every run starts the same way: the locations checked (a configuration error is found before
 * anything is created), the lock taken, the state loaded, a day a killed run left half published
 * completed, what dead runs left removed. `fn` then runs; the lock and the work folder are let go after.
 */
export async function withRun<T>(backends: Backends, opts: { run: string; command: string; kind: string; log: Log; waitSeconds?: number | undefined; start: [string, Record<string, unknown>]; shard?: Shard | null; rollupInWarehouse?: boolean; settings?: RollupSettings },
  fn: (state: RunState) => Promise<T>): Promise<T> {
  const { logs, store, warehouse } = backends;
  const { run, log } = opts;
  const shard = opts.shard ? shardName(opts.shard) : undefined;
  // Preflight: the logs readable, the output and the warehouse writable, each within a bounded wait;
  // if not, a LocationError (exit 2) before the lock is taken or anything listed.
  await logs.check?.();
  await store.check?.();
  if (!opts.shard) await warehouse?.checkWritable?.();
  await store.checkWritable?.();
  // A shard of a sharded ingest runs beside its fellow shards; every other run, alone.
  const lock = shard === undefined ? await acquireLock(store, run, opts.command, lockOptions(log, opts.waitSeconds))
    : await acquireShardLock(store, run, opts.command, shard, lockOptions(log, opts.waitSeconds));
  const dir = await makeWorkDir(opts.kind);
  try {
    log.info(opts.start[0], { ...opts.start[1], logs: logs.url, output: store.url });
    const ledger = await Ledger.load(store, { migrate: true });
    const quarantine = await Quarantine.load(store);
    const fence = (): Promise<void> => lock.assertHeld();
    const publisher = new DayPublisher({ run, store, warehouse, ledger, workDir: dir, log, version: codeVersion(), fence, quarantine, rollupInWarehouse: opts.rollupInWarehouse, catalog: backends.catalog ?? null, settings: opts.settings, episodes: backends.episodes ?? null });
    // A day a killed run left half published is completed by the next run that holds the output alone.
    if (shard === undefined) await publisher.recover();
    const leftovers = await removeLeftovers(store, ledger, shard);
    if (Object.values(leftovers).some((n) => n > 0)) log.info('leftovers.removed', { ...leftovers });
    return await fn({ ledger, quarantine, publisher, fence, dir });
  } finally {
    await rm(dir, { recursive: true, force: true });
    await lock.release();
  }
}

/** How a job waits for, and takes over, the run lock, said in its log. */
export function lockOptions(log: Log, waitSeconds = 0): LockOptions {
  return {
    waitSeconds,
    onWait: (holder) => log.info('lock.wait', { holder: `${holder.command} pid ${holder.pid} on ${holder.host}` }),
    onTakeover: (holder, reason) => log.warn('lock.takeover', { holder: holder ? `${holder.command} run ${holder.run} pid ${holder.pid} on ${holder.host}` : 'unknown', reason }),
  };
}

/** Parse every new log object (one batch), then read the tables that need it. */
export async function ingest(config: Config, backends: Backends, ledger: Ledger, engine: DuckDBConnection, tables: MonthlyTable[],
  opts: Pick<JobOptions, 'log' | 'rescan' | 'now' | 'stagingPartBytes' | 'batchObjects'> & {
    fence?: () => Promise<void>; quarantine: Quarantine; shard?: Shard | null; settleLater?: boolean;
    /** The days whose records the run wants: their delivery days are listed if they never were (state/delivery-days.ts). */
    asked: readonly string[];
    /** Delivery days to list in full whatever the schedule (`pingroll reconcile`). */
    listInFull?: readonly string[];
    /** Told how many objects the listing returned. */
    onListed?: (objects: number) => void;
  }): Promise<Ingested> {
  const { log } = opts;
  const batch = await ingestNewObjects({ settleLater: opts.settleLater,
    source: backends.logs, store: backends.store, ledger, pingKeys: config.pingKeys, privacy: config.privacy, engine, concurrency: config.concurrency, parseThreads: config.parseThreads, partBytes: opts.stagingPartBytes, batchObjects: opts.batchObjects,
    onProgress: (done, total, records) => log.progress('ingest.progress', `parsing log objects ${done}/${total}, ${records} records`, { done, total, records }),
    onParsed: (objects, records) => log.info('ingest.staging', { objects, records, hint: 'staging the parsed rows as Parquet by day' }),
    fence: opts.fence, quarantine: opts.quarantine, shard: opts.shard,
    listing: { marginMs: config.listMarginMs, schedule: config.schedule, asked: opts.asked, nowMs: (opts.now ?? new Date()).getTime(), force: opts.listInFull },
    onUnreadable: (key, reason) => log.warn('object.unreadable', { key, reason, quarantine: `${backends.store.url}${QUARANTINE_KEY}` }),
  });
  const settled = batch.settled.then((n) => {
    if (n > 0) log.info('ingest.sealed', { slicesSealed: n });
  });
  // Awaited by the caller (or below, should reading the tables fail); until then a failure is not an unhandled rejection.
  settled.catch(() => {});
  const batches = batch.batches.map((b) => b.batch);
  const touched = [...new Set(batch.batches.flatMap((b) => b.days))].sort();
  // What a log directory's listing passed over, said every run: an operator may have meant it read.
  const skipped = backends.logs instanceof DirectoryObjectSource ? backends.logs : null;
  for (const e of skipped?.skipped ?? []) log.warn('object.skipped', e);
  if (skipped && skipped.skippedCount > skipped.skipped.length) log.warn('object.skipped', { more: skipped.skippedCount - skipped.skipped.length, reason: 'links or entries that are not regular files, not named one by one' });
  opts.onListed?.(batch.listed?.objects ?? 0);
  const passedOver = batch.listed?.passedOver;
  if (passedOver?.objects) {
    log.warn('objects.passed_over', { objects: passedOver.objects, deliveryDays: passedOver.days,
      reason: 'log objects of delivery days no run has asked for: older logs are parsed only when a backfill asks for their days', hint: `run make backfill FROM=${passedOver.days[0]} TO=${passedOver.days[passedOver.days.length - 1]} to count them` });
  }
  log.info('ingest.done', { listed: batch.listed?.objects ?? 0, windowFrom: batch.listed?.windowFrom ?? null, deliveryDaysListedInFull: batch.listed?.days ?? [], newestObject: batch.listed?.newest ?? null, objects: batch.objects, records: batch.records, batches,
    lateObjects: batch.listed?.late ?? 0, parsedSlicesRead: ledger.slicesRead, sealedSlicesUnchanged: batch.sealedUnchanged, passedOver: passedOver?.objects ?? 0,
    days: touched });
  const out: Ingested = {
    touched, settled, listed: await ListedDays.load(backends.store, config.schedule, batch.lister),
    parsedObjects: batch.objects, parsedRecords: batch.records, scanned: [], missingTables: [], batches, skipped: skipped?.skippedCount ?? 0,
    unreadable: stillUnreadable(opts.quarantine, opts.shard),
  };
  if (tables.length && backends.items) {
    try {
      const tablesRead = await scanTables({
        tables, sources: backends.items, store: backends.store, ledger, engine, now: opts.now ?? new Date(), rescan: opts.rescan ?? false, log, fence: opts.fence, shard: opts.shard, privacy: config.privacy,
      });
      out.scanned = tablesRead.scanned;
      out.missingTables = tablesRead.missing;
    } catch (err) {
      await settled.catch(() => {});
      throw err;
    }
  }
  return out;
}

/** What `ingest` did, and (`settled`) when its listing is sealed and saved: at once unless `settleLater` was given. */
export type Ingested = IngestSummary & {
  batches: string[]; touched: string[]; settled: Promise<void>;
  /** What the listers know of delivery days after this run's listing (its own state as the listing left it). */
  listed: ListedDays;
};

/** Still unreadable: every object the quarantine holds that no operator accepted as lost (a shard's: those it owns). */
export function stillUnreadable(quarantine: Quarantine, shard?: Shard | null): JobSummary['unreadable'] {
  return quarantine.pending().filter((o) => owns(shard, o.key)).map((o) => ({ key: o.key, reason: o.reason }));
}

/** The ids of the batches and scans a day's rollup would read now. */
export async function inputIds(ledger: Ledger, day: string): Promise<string[]> {
  return (await ledger.inputsFor(day)).map((i) => i.id);
}
