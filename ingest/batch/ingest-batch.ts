/**
 * One ingest batch: every log object no committed batch has parsed, read with bounded concurrency,
 * each record to exactly one outcome, pings and rejects staged by the UTC day they belong to, then
 * committed (see ledger.ts).
 */
import { makeWorkDir } from '../../lib/work-dir.js';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import PQueue from 'p-queue';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { O_HTTP_ERROR, O_NOT_PING, O_PING, outcomeName, rejectReason } from '../access-log/outcome-codes.js';
import { AccessLogRecordReader, READ_BYTES } from '../access-log/record-reader.js';
import { gunzipIfNeeded } from '../object-source/gzip.js';
import { dayInObjectName, type ObjectRef, type ObjectSource } from '../object-source/object-source.js';
import { DaySpool } from './day-spool.js';
import { batchKey, stagedFiles, type BatchCommit, type InputObject, type Ledger } from '../../state/ledger.js';
import { loadListing, saveListing, type ListingState } from '../../state/listing-state.js';
import { ListingTracker, windowFrom } from '../object-source/listing-window.js';
import type { Quarantine } from '../../state/quarantine.js';
import { OUTCOMES } from '../ping-record.js';
import { dayOf } from '../../lib/utc-day.js';

export interface IngestOptions {
  source: ObjectSource;
  store: ObjectStore;
  ledger: Ledger;
  pingKeys: readonly string[];
  engine: DuckDBConnection;
  /** Objects read at once (I/O overlaps; parsing is one thread). */
  concurrency: number;
  /** Bytes of staged rows per part (see DaySpool). */
  partBytes?: number;
  /** Called after each object. */
  onProgress?: (done: number, total: number, records: number) => void;
  /** Called just before the commit; throws when the run may no longer commit (it lost the run lock). */
  fence?: () => Promise<void>;
  /** Unreadable objects are recorded here (and accepted-lost ones skipped); saved after the batch when it changed. */
  quarantine: Quarantine;
  /** Called for each object that could not be read. */
  onUnreadable?: (key: string, reason: string) => void;
  /** The listing margin and whether to list everything (the state is read from the store). */
  listing: Omit<Listing, 'state'>;
}

export interface IngestResult {
  /** Null when there was nothing new to parse (or nothing could be read). */
  commit: BatchCommit | null;
  objects: number;
  records: number;
  /** Objects the listing returned, and whether it was full. */
  listed?: { objects: number; full: boolean };
}

/** What a listing found: the objects to parse, and the listing state to save once they are committed. */
export interface NewObjects {
  todo: ObjectRef[];
  /** Objects the listing returned (new or not). */
  listed: number;
  /** Whether the listing was full (no window). */
  full: boolean;
  next: ListingState & { changed: boolean };
}

/**
 * Log objects no committed batch has parsed and no operator has accepted as lost, in key order: of
 * those the listing window can hold (listing-window.ts), or of every object with `full`.
 */
export async function newObjects(source: ObjectSource, ledger: Ledger, quarantine: Quarantine, listing: Listing): Promise<NewObjects> {
  const window = windowFrom(listing.state, listing.marginMs, listing.full ?? false);
  const tracker = new ListingTracker(listing.state, window === undefined);
  const todo: ObjectRef[] = [];
  let listed = 0;
  for await (const ref of source.list(window)) {
    listed++;
    tracker.saw(ref.key);
    if (!(await ledger.hasParsed(ref.key)) && !quarantine.isAcceptedLost(ref.key)) todo.push(ref);
  }
  todo.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const next = tracker.next();
  return { todo, listed, full: window === undefined, next: { ...next, fullListingAt: window === undefined ? new Date().toISOString() : listing.state.fullListingAt } };
}

/** How a run lists: the saved state, the margin for late-visible objects, and whether to list everything. */
export interface Listing {
  state: ListingState;
  marginMs: number;
  full?: boolean | undefined;
}

export function batchId(now = new Date()): string {
  return `${now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}-${randomBytes(4).toString('hex')}`;
}

/** A log object that could not be read; anything else that fails stops the batch. */
class UnreadableObject extends Error {}

/**
 * Parses every new log object as one batch and commits it. An object that cannot be read does not
 * stop the batch: the batch is parsed again without it (its records may already be among the staged
 * rows of the objects read beside it), and it is quarantined, to be tried again by the next run.
 */
export async function ingestNewObjects(opts: IngestOptions): Promise<IngestResult> {
  const quarantine = opts.quarantine;
  const found = await newObjects(opts.source, opts.ledger, quarantine, { ...opts.listing, state: await loadListing(opts.store) });
  let todo = found.todo;
  // A quarantined object the listing no longer shows (gone between list and get, or outside the window) is tried by its key.
  const listed = new Set(todo.map((r) => r.key));
  for (const o of quarantine.pending()) {
    if (!listed.has(o.key) && !(await opts.ledger.hasParsed(o.key))) todo.push({ key: o.key, etag: o.etag, size: o.size });
  }
  todo.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  let result: IngestResult = { commit: null, objects: 0, records: 0 };
  while (todo.length > 0) {
    const attempt = await parseBatch(opts, todo);
    if ('commit' in attempt) {
      result = attempt;
      break;
    }
    for (const f of attempt.failures) quarantine.failed(f.ref, f.reason, dayInObjectName(f.ref.key));
    const failed = new Set(attempt.failures.map((f) => f.ref.key));
    todo = todo.filter((r) => !failed.has(r.key));
  }
  for (const o of result.commit?.objects ?? []) quarantine.parsed(o.key);
  // Entries a committed batch parsed already (a run killed between its commit and this save).
  for (const o of quarantine.all()) if (await opts.ledger.hasParsed(o.key)) quarantine.parsed(o.key);
  if (quarantine.changed) await quarantine.save(opts.store);
  // Only now is everything the listing found committed or quarantined: the next listing may start after it.
  if (found.next.changed) {
    await opts.fence?.();
    const { changed: _, ...state } = found.next;
    await saveListing(opts.store, state);
  }
  return { ...result, listed: { objects: found.listed, full: found.full } };
}

async function parseBatch(opts: IngestOptions, todo: ObjectRef[]): Promise<IngestResult | { failures: Array<{ ref: ObjectRef; reason: string }> }> {
  const batch = batchId();
  const dir = await makeWorkDir('ingest');
  const spool = new DaySpool(dir, opts.engine, opts.partBytes);
  const objects: InputObject[] = todo.map((r) => ({ key: r.key, size: r.size, etag: r.etag, records: 0 }));
  const fallbackDay = new Date().toISOString().slice(0, 10);
  // One scanner per concurrent read: each holds its object's partial line between chunks.
  const idle: AccessLogRecordReader[] = [];
  let current = new ObjectTally(0, '', fallbackDay);
  let done = 0, records = 0;
  const failures: Array<{ ref: ObjectRef; reason: string }> = [];
  try {
    const queue = new PQueue({ concurrency: opts.concurrency });
    let failure: unknown = null;
    for (let index = 0; index < todo.length; index++) {
      queue.add(async () => {
        const ref = todo[index]!;
        const ctx = new ObjectTally(index, ref.key, dayInObjectName(ref.key) ?? fallbackDay);
        // The ping rules run in WebAssembly, write each ping's staged row there and count the pings,
        // not_ping and http_error records by day; JavaScript sees only the rest (the rejects, and any
        // record of a day more than a month from its object's) and keeps them.
        const reader = idle.pop() ?? new AccessLogRecordReader((r) => {
          const c = current;
          const outcome = r.outcome;
          c.records++;
          // A record without a readable time belongs to the day in its object's name (contract §5); so
          // does a malformed one, none of whose fields is trusted.
          const day = r.error !== 0 || Number.isNaN(r.timeMs) ? c.day : dayOf(r.timeMs);
          if (outcome === O_PING || outcome === O_NOT_PING || outcome === O_HTTP_ERROR) c.count(day, outcome);
          else spool.addReject(day, { source: 's3', outcome: outcomeName(r), reason: rejectReason(r), input: c.key, at: r.lineNo, ...rejectedLine(r.b, r.lineStart, r.lineEnd) }, c.index);
        }, { pingKeys: opts.pingKeys, onRows: (rows) => spool.appendPingRows(rows) });
        reader.reset();
        reader.startTally(ctx.day);
        try {
          // Chunks of concurrent objects interleave: each scan runs to completion synchronously,
          // and `current` names the object whose records it hands over. Only what the source
          // throws means the object is unreadable; a failure of the scanner or the spool is not its fault.
          const unreadable = (err: unknown): UnreadableObject => new UnreadableObject((err as Error).message.split('\n')[0]);
          const plain = await opts.source.openPlain?.(ref).catch((err: unknown) => { throw unreadable(err); }) ?? null;
          if (plain) {
            try {
              for (;;) {
                const n = await plain.read(reader.inputSpace(READ_BYTES)).catch((err: unknown) => { throw unreadable(err); });
                if (n === 0) break;
                current = ctx;
                reader.scanRead(n);
              }
            } finally {
              await plain.close();
            }
          } else {
            const chunks = gunzipIfNeeded(await opts.source.open(ref).catch((err: unknown) => { throw unreadable(err); }))[Symbol.asyncIterator]();
            for (;;) {
              const next = await chunks.next().catch((err: unknown) => { throw unreadable(err); });
              if (next.done) break;
              current = ctx;
              reader.push(next.value);
            }
          }
          current = ctx;
          reader.finish();
          for (const { day, counts } of reader.endTally()) counts.forEach((n, outcome) => ctx.add(day, outcome, n));
          objects[index]!.records = ctx.records;
          ctx.addTo(spool);
        } catch (err) {
          if (err instanceof UnreadableObject) {
            failures.push({ ref, reason: err.message });
            opts.onUnreadable?.(ref.key, err.message);
            return;
          }
          throw new Error(`reading log object ${opts.source.url}${ref.key} failed: ${(err as Error).message}`);
        } finally {
          idle.push(reader);
        }
        records += objects[index]!.records;
        opts.onProgress?.(++done, todo.length, records);
      }).catch((err: unknown) => {
        // Any other failure stops the batch: nothing of it is committed, so a re-run parses it all again.
        failure ??= err;
        queue.clear();
      });
    }
    await queue.onIdle();
    if (failure) throw failure;
    if (failures.length) return { failures };
    // The intent names the staging to remove should the run die before its commit (Ledger.tidy).
    await opts.ledger.intend(batch, batchKey(batch));
    const days = await spool.stage(opts.store, batch);
    const commit: BatchCommit = { batch, committedAt: new Date().toISOString(), objects, days };
    try {
      await opts.fence?.();
      await opts.ledger.commit(commit);
    } catch (err) {
      // Uncommitted, the staged files are nobody's: take them back, so that retries never pile them up.
      for (const key of stagedFiles(days)) await opts.store.delete(key).catch(() => {});
      throw err;
    }
    await opts.ledger.compact();
    return { commit, objects: todo.length, records };
  } finally {
    await spool.discard();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A rejected line as the rejects file keeps it: the text, and when the bytes are not valid UTF-8
 * (the text then holds U+FFFD for them), the original bytes too, in base64.
 */
export function rejectedLine(b: Buffer, start: number, end: number): { record: string; recordBase64?: string } {
  const record = b.toString('utf8', start, end);
  return Buffer.byteLength(record, 'utf8') === end - start && !record.includes('\uFFFD')
    ? { record }
    : { record, recordBase64: b.toString('base64', start, end) };
}

/** One object's records counted by day and outcome, handed to the spool once the object is read. */
class ObjectTally {
  records = 0;
  private readonly byDay = new Map<string, number[]>();
  private lastDay = '';
  private last: number[] = [];

  constructor(readonly index: number, readonly key: string, readonly day: string) {}

  /** `n` records of `day` with `outcome`, counted elsewhere (the WebAssembly tally). */
  add(day: string, outcome: number, n: number): void {
    if (n === 0) return;
    this.records += n;
    this.count(day, outcome, n);
  }

  count(day: string, outcome: number, n = 1): void {
    if (day !== this.lastDay) {
      let counts = this.byDay.get(day);
      if (!counts) this.byDay.set(day, counts = OUTCOMES.map(() => 0));
      this.lastDay = day;
      this.last = counts;
    }
    this.last[outcome]! += n;
  }

  addTo(spool: DaySpool): void {
    for (const [day, counts] of this.byDay) {
      counts.forEach((n, k) => { if (n > 0) spool.count(day, 's3', OUTCOMES[k]!, this.index, n); });
    }
  }
}
