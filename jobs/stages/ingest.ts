/**
 * The ingest stage: parse every new log object (in batches), then read the legacy tables that need
 * it; or, after a sharded ingest, take what the shards staged. What it hands on: what it read, the
 * days it added records to, what the listers know of delivery days, and `settle`, which seals and
 * saves the listing (the job calls it once, and may roll up meanwhile).
 */
import type { Stage } from './stage.js';
import { ingestNewObjects } from '../../ingest/batch/ingest-batch.js';
import { scanTables, type TableRead } from '../../ingest/batch/scan-batch.js';
import { owns, type Shard } from '../../ingest/batch/shard.js';
import type { MonthlyTable } from '../../ingest/dynamodb/monthly-tables.js';
import { ListedDays } from '../../ingest/listing/listing-state.js';
import type { Quarantine } from '../../state/quarantine.js';
import { QUARANTINE_KEY } from '../../datasets/layout.js';
import { ConfigError } from '../../infra/config.js';
import { UNDATED } from '../../ingest/ping-record.js';
import { publishUndated, sayUndated } from './undated.js';

export interface IngestSummary {
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
}

/** What the ingest stage hands on. */
export interface Ingested extends IngestSummary {
  /** The batches committed, oldest first. */
  batches: string[];
  /** Objects the listing returned (new or not). */
  listedObjects: number;
  /** The days this run added records to. */
  touched: string[];
  /** What the listers know of delivery days after this run's listing (its own state as the listing left it). */
  listed: ListedDays;
  /** Seals the slices the listing saw whole and saves its state: called once by the job, before it lets go of its lock. */
  settle: () => Promise<void>;
}

export interface IngestAsk {
  /** The days whose records the run wants: their delivery days are listed if they never were (ingest/listing/delivery-days.ts). */
  asked: readonly string[];
  /** The legacy tables to read (those that can hold the asked days). */
  tables: readonly MonthlyTable[];
  /** Delivery days to list in full whatever the schedule (`pingroll reconcile`). */
  listInFull?: readonly string[];
  /** Read closed tables again even if they were read after their month ended. */
  rescan?: boolean | undefined;
  /** The run's clock (tables are closed, and delivery days listed in full, relative to it); tests set it. */
  now?: Date | undefined;
  /** Bytes of staged rows per part; tests make it small. */
  stagingPartBytes?: number | undefined;
  /** Log objects per batch at most; tests make it small. */
  batchObjects?: number | undefined;
}

/** Parses every new log object, then reads the tables that need it. */
export async function ingest(stage: Stage, ask: IngestAsk): Promise<Ingested> {
  const { config, backends, run, db } = stage;
  const { log, shard } = run;
  const { ledger, quarantine } = run.state;
  const now = ask.now ?? new Date();
  const batch = await ingestNewObjects({
    source: backends.logs, store: backends.store, ledger, writer: run.writer, quarantine, shard,
    pingKeys: config.pingKeys, privacy: config.privacy, geoipDb: config.geoipDb, concurrency: config.concurrency, parseThreads: config.parseThreads, partBytes: ask.stagingPartBytes, batchObjects: ask.batchObjects,
    onProgress: (done, total, records) => log.progress('ingest.progress', `parsing log objects ${done}/${total}, ${records} records`, { done, total, records }),
    onParsed: (objects, records) => log.info('ingest.staging', { objects, records, hint: 'staging the parsed rows as Parquet by day' }),
    listing: { marginMs: config.listMarginMs, schedule: config.schedule, asked: ask.asked, nowMs: now.getTime(), force: ask.listInFull },
    onUnreadable: (key, reason) => log.warn('object.unreadable', { key, reason, quarantine: `${backends.store.url}${QUARANTINE_KEY}` }),
  });
  const batches = batch.batches.map((b) => b.batch);
  // Records of no day (UNDATED) are no day's: published apart, said once.
  const touched = [...new Set(batch.batches.flatMap((b) => b.days))].filter((d) => d !== UNDATED).sort();
  sayUndated(run, await publishUndated(run, run.shard ? new Set(batches) : null));
  // What a log directory's listing passed over, said every run: an operator may have meant it read.
  const skipped = backends.logs.passedOver();
  for (const e of skipped.named) log.warn('object.skipped', e);
  if (skipped.count > skipped.named.length) log.warn('object.skipped', { more: skipped.count - skipped.named.length, reason: 'links or entries that are not regular files, not named one by one' });
  const passedOver = batch.listed?.passedOver;
  if (passedOver?.objects) {
    log.warn('objects.passed_over', { objects: passedOver.objects, deliveryDays: passedOver.days,
      reason: 'log objects of delivery days no run has asked for: older logs are parsed only when a backfill asks for their days', hint: `run make backfill FROM=${passedOver.days[0]} TO=${passedOver.days[passedOver.days.length - 1]} to count them` });
  }
  log.info('ingest.done', { listed: batch.listed?.objects ?? 0, windowFrom: batch.listed?.windowFrom ?? null, deliveryDaysListedInFull: batch.listed?.days ?? [], newestObject: batch.listed?.newest ?? null, objects: batch.objects, records: batch.records, batches,
    lateObjects: batch.listed?.late ?? 0, parsedSlicesRead: ledger.slicesRead, sealedSlicesUnchanged: batch.sealedUnchanged, passedOver: passedOver?.objects ?? 0,
    days: touched });
  let tables: Awaited<ReturnType<typeof scanTables>> = { scanned: [], missing: [] };
  try {
    if (ask.tables.length && backends.items) {
      tables = await scanTables({ tables: [...ask.tables], sources: backends.items, store: backends.store, ledger, writer: run.writer, engine: db, now, rescan: ask.rescan ?? false, log, shard, privacy: config.privacy });
    }
  } catch (err) {
    // What the listing found is committed: its state is saved all the same.
    await batch.lister.commit(run.fence).catch(() => {});
    throw err;
  }
  return {
    batches, touched, listedObjects: batch.listed?.objects ?? 0, listed: await batch.lister.listedDays(),
    parsedObjects: batch.objects, parsedRecords: batch.records, scanned: tables.scanned, missingTables: tables.missing, skipped: skipped.count,
    unreadable: stillUnreadable(quarantine, shard),
    settle: async () => {
      const sealed = await batch.lister.commit(run.fence);
      if (sealed > 0) log.info('ingest.sealed', { slicesSealed: sealed });
    },
  };
}

/** What the listers know of delivery days, as they saved it. */
export function listedDays({ config, run }: Stage): Promise<ListedDays> {
  return ListedDays.load(run.state.store, config.schedule);
}

/** After a sharded ingest (`--no-ingest`): no listing, no parsing, no table read; what the shards staged, and what they know of delivery days. */
export async function stagedByShards(stage: Stage): Promise<Ingested> {
  const { run } = stage;
  await run.state.quarantine.settle(run.state.ledger);
  // What a shard killed after its commit left of records of no day.
  sayUndated(run, await publishUndated(run));
  return {
    batches: [], touched: [], listedObjects: 0, listed: await listedDays(stage),
    parsedObjects: 0, parsedRecords: 0, scanned: [], missingTables: [], skipped: 0,
    unreadable: stillUnreadable(run.state.quarantine), settle: async () => {},
  };
}

/**
 * A day rolled up from what shards staged (`--no-ingest`) is refused when no lister ever listed one
 * of the delivery days that can hold it: published, it would be empty or short, and exit 0. Said
 * before the day is rolled up, with the command that lists them.
 */
export function refuseUnlisted(listed: ListedDays, days: readonly string[], now: Date): void {
  const today = now.toISOString().slice(0, 10);
  const missing = days.filter((d) => listed.neverListed(d, today).length > 0);
  if (!missing.length) return;
  const delivery = [...new Set(missing.flatMap((d) => listed.neverListed(d, today)))].sort();
  throw new ConfigError(`${missing.length === 1 ? missing[0] : `${missing.length} days (${missing[0]} to ${missing[missing.length - 1]})`} cannot be rolled up from what shards staged (--no-ingest): no ingest has listed delivery day${delivery.length === 1 ? '' : 's'} ${delivery.length <= 3 ? delivery.join(', ') : `${delivery[0]} to ${delivery[delivery.length - 1]}`}, which can hold ${missing.length === 1 ? 'its' : 'their'} records; run pingroll ingest --date ${missing.join(',')} (every shard) first, or roll up without --no-ingest`);
}

/** Still unreadable: every object the quarantine holds that no operator accepted as lost (a shard's: those it owns). */
export function stillUnreadable(quarantine: Quarantine, shard?: Shard | null): IngestSummary['unreadable'] {
  return quarantine.pending().filter((o) => owns(shard, o.key)).map((o) => ({ key: o.key, reason: o.reason }));
}
