/**
 * One ingest batch: every log object no committed batch has parsed, read with bounded concurrency,
 * each record to exactly one outcome, pings and rejects staged by the UTC day they belong to, then
 * committed (see ledger.ts).
 */
import type { Privacy } from '../privacy.js';
import { makeWorkDir } from '../../lib/work-dir.js';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import PQueue from 'p-queue';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { dayInObjectName, type ObjectRef, type ObjectSource } from '../object-source/object-source.js';
import { DaySpool, PART_BYTES } from './day-spool.js';
import { stagedCodec } from '../../lib/parquet-codec.js';
import { CHANGED_AFTER_LISTING, MAX_OBJECT_BYTES, type ParsedObject, type ParseTask } from './object-parser.js';
import { parsers } from './parse-pool.js';
import { batchKey, type BatchCommit, type InputObject, type Ledger, type StagedDay } from '../../state/ledger.js';
import type { BatchWriter } from '../../state/batch-writer.js';
import { Lister, type Listed, type ListingAsk } from '../listing/lister.js';
import type { ReconcileSchedule } from '../listing/delivery-days.js';
import { owns, shardName, type Shard } from './shard.js';
import type { Quarantine } from '../../state/quarantine.js';
import { OUTCOMES } from '../ping-record.js';

export interface IngestOptions {
  source: ObjectSource;
  store: ObjectStore;
  ledger: Ledger;
  pingKeys: readonly string[];
  /** What rejects keep of the people behind the records (ingest/privacy.ts); `keep` when not said. */
  privacy?: Privacy;
  /** The IP-to-country database each ping's country is looked up in (PINGROLL_GEOIP_DB, contract §10); the shipped one when not given. */
  geoipDb?: string | null;
  /** Remote objects fetched at once, at most (the read budget bounds them too). */
  concurrency: number;
  /** Parsing threads: 0 parses in the run's own thread; `auto` one per core for a batch large enough. */
  parseThreads: number | 'auto';
  /** Bytes of staged rows per part (see DaySpool). */
  partBytes?: number;
  /** Called after each object. */
  onProgress?: (done: number, total: number, records: number) => void;
  /** Called when every object is parsed, before the staged rows are made Parquet and put in the store (minutes, on a busy day). */
  onParsed?: (objects: number, records: number) => void;
  /** Commits each batch (state/batch-writer.ts). */
  writer: BatchWriter;
  /** Unreadable objects are recorded here (and accepted-lost ones skipped); saved after the batch when it changed. */
  quarantine: Quarantine;
  /** Called for each object that could not be read. */
  onUnreadable?: (key: string, reason: string) => void;
  /** How to list (the lister's state is read from the store). */
  listing: Listing;
  /** This run is one shard of a sharded ingest: it lists and parses the slices it owns (shard.ts). */
  shard?: Shard | null | undefined;
  /** Objects per batch at most (MAX_BATCH_OBJECTS); tests make it small. */
  batchObjects?: number | undefined;
}

export interface IngestResult {
  /**
   * The batches committed, oldest first, and the days of records each staged: none when there was
   * nothing new to parse (or nothing could be read). Not the commits: their lists of objects are let go.
   */
  batches: Array<{ batch: string; days: string[] }>;
  objects: number;
  records: number;
  /** Sealed slices found unchanged (their parsed keys not read). */
  sealedUnchanged: number;
  /**
   * Objects the listing returned, the delivery days it listed in full, the latest delivery time a
   * returned key named (ISO; null: none named one), and what it passed over (a directory's objects of
   * days no run asked for).
   */
  listed?: { objects: number; days: string[]; newest: string | null; passedOver: Listed['passedOver']; late: number; windowFrom: string | null };
  /**
   * The lister, its listing made: `commit` seals the slices it saw whole and saves its state. Everything
   * the listing found is committed or quarantined when it is returned: the caller commits it once, and
   * may roll up meanwhile (a put a seal: 288 for a day's two delivery days).
   */
  lister: Lister;
}

/**
 * At most this many log objects in one batch: a run with more new objects commits several batches
 * one after another, so that what a process holds (the objects to read, a commit's list of them)
 * follows this, not the day (a day can hold 16M objects).
 */
export const MAX_BATCH_OBJECTS = 100_000;

/** How a run lists: the margin for late-visible objects, the schedule of full listings, and what it asks (lister.ts). */
export interface Listing extends ListingAsk {
  marginMs: number;
  schedule: ReconcileSchedule;
}

export function batchId(now = new Date()): string {
  return `${now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-${randomBytes(4).toString('hex')}`;
}

/**
 * Parses every new log object, in batches of at most MAX_BATCH_OBJECTS, each committed as it is
 * done. An object that cannot be read does not stop its batch: its records count for nothing (its
 * rows are taken back), it is quarantined and left out of the commit, to be tried again by the next run.
 */
export async function ingestNewObjects(opts: IngestOptions): Promise<IngestResult> {
  const quarantine = opts.quarantine;
  const shard = opts.shard ?? null;
  const result: Omit<IngestResult, 'lister'> = { batches: [], objects: 0, records: 0, sealedUnchanged: 0 };
  // Objects quarantined before this run are tried again by it, once: in the listing's chunks, or after it.
  const untried = new Map(quarantine.pending().filter((o) => owns(shard, o.key)).map((o) => [o.key, o]));
  const parseChunk = async (todo: BoundRef[]): Promise<void> => {
    for (const ref of todo) untried.delete(ref.key);
    const parsed = await parseBatch(opts, todo);
    for (const f of parsed.failures) {
      quarantine.failed(f.ref, f.reason, dayInObjectName(f.ref.key));
      opts.onUnreadable?.(f.ref.key, f.reason);
    }
    if (!parsed.commit) return;
    for (const o of parsed.commit.objects) quarantine.parsed(o.key);
    result.batches.push({ batch: parsed.commit.batch, days: Object.keys(parsed.commit.days) });
    result.objects += parsed.commit.objects.length;
    result.records += parsed.records;
  };
  // A shard with no state of its own (the first run with this many shards) starts where the shards
  // before it, all of them, had listed.
  const lister = await Lister.open(opts.store, { marginMs: opts.listing.marginMs, schedule: opts.listing.schedule, shard });
  const found = await lister.newObjects(opts.source, { ...opts.listing, known: opts, chunk: opts.batchObjects ?? MAX_BATCH_OBJECTS }, parseChunk);
  // A quarantined object the listing no longer shows (gone between list and get, or outside the window) is tried by its key.
  // No listing of this run gave its size: it is held at the size it was quarantined at, or at the
  // most an object may be when it was quarantined for growing, or above that (fetched up to it).
  const retry: BoundRef[] = [];
  for (const o of untried.values()) {
    if (await opts.ledger.hasParsed(o.key)) continue;
    retry.push({ key: o.key, etag: o.etag, size: o.size, maxBytes: o.reason.endsWith(CHANGED_AFTER_LISTING) || o.size > MAX_OBJECT_BYTES ? MAX_OBJECT_BYTES : o.size });
  }
  if (retry.length) await parseChunk(retry.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)));
  await quarantine.settle(opts.ledger, shard ? { name: shardName(shard), owns: (key) => owns(shard, key) } : undefined);
  // Only now is everything the listing found committed or quarantined: the lister may commit.
  return {
    ...result, lister, sealedUnchanged: found.sealedUnchanged,
    listed: { objects: found.listed, days: [...found.days], newest: found.newest, passedOver: found.passedOver, late: found.late, windowFrom: found.windowFrom },
  };
}

/**
 * Rows per part for a batch of `bytes` of log objects: about a quarter of the rows they hold (staged
 * rows are about a fifth of the log bytes), from MIN_PART_BYTES to PART_BYTES. The part that is open when parsing ends
 * is made Parquet after it, on the job's critical path: a small batch's is small (the small-object
 * day: 17 MB parts; 16 MB against 32 MB ran it in 0.95x the time, 11 pairs), while a large batch keeps
 * its parts, and staged files, few.
 */
export function partBytesFor(bytes: number): number {
  return Math.min(PART_BYTES, Math.max(MIN_PART_BYTES, Math.ceil(bytes / 5 / 4)));
}

const MIN_PART_BYTES = 8 << 20;

/** Bytes of fetched objects held at once, waiting to be parsed: what bounds the reads in flight. */
export const READ_BUDGET_BYTES = 64 << 20;

/** An object to read, and for a remote one the most its fetch may bring (ParseTask.maxBytes): its listed size unless said. */
type BoundRef = ObjectRef & { maxBytes?: number };

async function parseBatch(opts: IngestOptions, todo: BoundRef[]): Promise<{ commit: BatchCommit | null; records: number; failures: Array<{ ref: ObjectRef; reason: string }> }> {
  const batch = batchId();
  const dir = await makeWorkDir('ingest');
  const bytes = todo.reduce((n, r) => n + r.size, 0);
  const partBytes = opts.partBytes ?? partBytesFor(bytes);
  const spool = new DaySpool(dir, { partBytes, codec: stagedCodec(opts.store.local)});
  const { threads, fetchHere } = opts.parseThreads === 'auto' ? autoParsing(bytes, !opts.source.local) : { threads: opts.parseThreads, fetchHere: false };
  const pool = parsers(threads, { pingKeys: opts.pingKeys, privacy: opts.privacy ?? 'keep', geoipDb: opts.geoipDb ?? null, dir, partBytes, onPart: (path) => spool.addPart(path), source: opts.source, fetchHere });
  const records: number[] = new Array(todo.length).fill(0);
  const failures: Array<{ ref: ObjectRef; reason: string }> = [];
  const failed = new Set<number>();
  let done = 0, total = 0;
  try {
    // A local file is read by the parser itself; a remote object is fetched whole first (parse-pool.ts),
    // as many at once as the read budget holds, up to `concurrency` requests, so that first-byte
    // latency overlaps instead of adding up. The budget holds what each fetch may bring at most
    // (ParseTask.maxBytes): a listed object its listed size, as no more of it is read (one overwritten
    // by a larger one since is read by the next run); a key retried by its name, the size it was
    // quarantined at, or the most an object may be when it was quarantined for growing (such keys are
    // fetched one at a time), so that a key that grew again is read by the run after.
    const local = opts.source.local;
    const within = local ? opts.source.localRoot?.() : undefined;
    const budget = new ByteBudget(READ_BUDGET_BYTES);
    const queue = new PQueue({ concurrency: local ? pool.slots : Math.max(opts.concurrency, pool.slots) });
    let failure: unknown = null;
    // Listed bytes not yet handed over: with one parser (this thread's), it cuts its parts smaller as the batch's end nears.
    let after = bytes;
    for (let index = 0; index < todo.length && failure === null; index++) {
      after -= todo[index]!.size;
      const tail = threads === 0 ? { after } : {};
      // Objects are handed to the queue as it has room, not all at once: 30,000 tasks made up front
      // cost their allocations and the garbage collector's time before the first object was read.
      if (queue.size >= queue.concurrency) await queue.onSizeLessThan(queue.concurrency);
      queue.add(async () => {
        const ref = todo[index]!;
        // No date in its name (a file that is no access log): its records without a time are of no day (UNDATED).
        const day = dayInObjectName(ref.key);
        const maxBytes = ref.maxBytes ?? ref.size;
        const task: ParseTask = local ? { index, key: ref.key, day, file: opts.source.localFile(ref)!, within, size: ref.size, ...tail } : { index, key: ref.key, day, fetch: ref, maxBytes, ...tail };
        const held = local ? 0 : await budget.take(maxBytes);
        let parsed: ParsedObject;
        try {
          parsed = await pool.parse(task);
        } finally {
          budget.give(held);
        }
        if (parsed.unreadable !== undefined) {
          failures.push({ ref, reason: parsed.unreadable });
          failed.add(index);
          return;
        }
        for (const [d, counts] of parsed.counts) counts.forEach((n, k) => { if (n > 0) spool.count(d, 's3', OUTCOMES[k]!, index, n); });
        if (parsed.rejects) spool.takeRejects(parsed.rejects);
        records[index] = parsed.records;
        total += parsed.records;
        opts.onProgress?.(++done, todo.length, total);
      }).catch((err: unknown) => {
        // Any other failure stops the batch: nothing of it is committed, so a re-run parses it all again.
        // A system error (the run's own files: a full disk) keeps its code and path, so that the run's
        // one line says what to do (cli/failure-message.ts), not only which object was being read.
        const e = err as NodeJS.ErrnoException;
        failure ??= Object.assign(new Error(`reading log object ${opts.source.url}${todo[index]!.key} failed: ${e.message}`), { code: e.code, path: e.path });
        queue.clear();
      });
    }
    await queue.onIdle();
    if (failure) throw failure;
    opts.onParsed?.(done, total);
    await pool.flush();
    // The commit lists the objects read; an unreadable one is left out, and inputs renumbered to match.
    const kept = todo.flatMap((ref, i) => (failed.has(i) ? [] : [{ ref, i }]));
    spool.renumberInputs(new Map(kept.map(({ i }, j) => [i, j])));
    const objects: InputObject[] = kept.map(({ ref, i }) => ({ key: ref.key, size: ref.size, etag: ref.etag, records: records[i]! }));
    if (objects.length === 0) return { commit: null, records: 0, failures };
    // The intent names the staging to remove should the run die before its commit (Ledger.tidy); it is
    // written while the last part is made Parquet.
    const intent = opts.writer.begin(batch, batchKey(batch));
    let days: Record<string, StagedDay>;
    try {
      days = await spool.stage(opts.store, batch, intent);
    } finally {
      await intent.catch(() => {});
    }
    const commit = await opts.writer.commitBatch(batch, objects, days);
    return { commit, records: total, failures };
  } finally {
    await pool.close();
    await spool.discard();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Parsing threads for a batch of `bytes` (`--parse-threads auto`) on `cores`:
 * - 4 cores or more: one per core but the one the run's thread and DuckDB share, unless the batch is
 *   so small that starting them costs more than they save.
 * - 2 or 3 cores: one per core for a batch of FEW_CORES_THREADS_FROM_BYTES or more, else none. A
 *   smaller day parses fastest in the run's own thread, its staged files written on the other core
 *   (measured when DuckDB wrote them: the small-object day, 0.3 GB: 2 threads 1.07x its time; 2.2 GB:
 *   1.01x; since pingroll writes them, that day with 1 and 2 threads is still slower). A larger one
 *   outgrows that balance: 6.6 GB, 0.94x; the 50M-ping busy day, 34 GB in two batches, 0.85x (all in
 *   docs/benchmarks.md, *Parsing threads*).
 * - 1 core: none.
 */
export function autoThreads(bytes: number, cores = availableParallelism()): number {
  if (cores >= 4) return bytes < AUTO_THREADS_FROM_BYTES ? 0 : Math.min(cores - 1, MAX_THREADS);
  return cores >= 2 && bytes >= FEW_CORES_THREADS_FROM_BYTES ? cores : 0;
}

/**
 * `--parse-threads auto` for a batch of `bytes` from a source that is `remote` (S3) or not: the
 * threads (autoThreads), and whether the run's own thread fetches the objects for them (`fetchHere`)
 * rather than each thread fetching its own. On 2 or 3 cores a remote batch too small for autoThreads'
 * threads (32 MB to 4 GiB) is parsed in one thread per core but one, fed by the run's thread: there
 * the run's thread spends as long on each object's request and response as on parsing it, and the two
 * go on side by side (the job bench's day behind 25 ms, 9 interleaved passes: 0.94x the wall time of
 * parsing in the run's own thread, `BENCH_S3_THREADS=1`, docs/benchmarks.md *S3 latency*). A local file is read by its
 * parser, with nothing for the run's thread to do meanwhile: autoThreads alone.
 */
export function autoParsing(bytes: number, remote: boolean, cores = availableParallelism()): { threads: number; fetchHere: boolean } {
  const threads = autoThreads(bytes, cores);
  if (remote && threads === 0 && cores >= 2 && cores < 4 && bytes >= AUTO_THREADS_FROM_BYTES) return { threads: cores - 1, fetchHere: true };
  return { threads, fetchHere: false };
}

/** Below this many bytes to parse a batch is parsed in the run's own thread (starting a thread takes ~40 ms). */
const AUTO_THREADS_FROM_BYTES = 32 << 20;
/** On 2 or 3 cores, from this many bytes a batch is parsed in threads (autoThreads). */
export const FEW_CORES_THREADS_FROM_BYTES = 4 * 2 ** 30;
const MAX_THREADS = 16;

/** Bytes that may be held at once; one object larger than the whole budget is let through alone. */
class ByteBudget {
  private used = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async take(bytes: number): Promise<number> {
    while (this.used > 0 && this.used + bytes > this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.used += bytes;
    return bytes;
  }

  give(bytes: number): void {
    if (bytes === 0) return;
    this.used -= bytes;
    for (const w of this.waiting.splice(0)) w();
  }
}
