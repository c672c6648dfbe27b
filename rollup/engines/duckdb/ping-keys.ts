/**
 * A day's counted ping ids as sorted 128-bit keys (contract §4, rollup/ping-window.ts): what the
 * DuckDB engine's window check merges a day's ids against, instead of joining their text.
 *
 * A ping id that is a canonical UUID (lowercase, with its dashes: what players send) is its 128 bits,
 * exactly: two ids are equal when their keys are. Any other id stays text, kept after the keys and
 * joined by DuckDB (window-check.ts): a text is canonical or not on every day, so a key never has to
 * meet a text.
 *
 * A keys file (`<the ping-ids file's name>.keys`, beside it):
 *
 *   n keys, 16 bytes each, ascending: four 32-bit little-endian words, the UUID's most significant first
 *   n event times, 8 bytes each (epoch ms, little-endian), in the keys' order
 *   the counted ids that are not UUIDs: each its length (4 bytes), its UTF-8, its event time
 *   trailer (48 bytes): n, the text ids, their bytes, the keys' least and greatest event time, magic
 *
 * Only counted ids are kept (what a later day's window reads). A check reads the keys between two
 * bounds by a binary search, and an event time only where the boundary of the window can fall.
 */
import { closeSync, fstatSync, openSync, readSync, renameSync, rmSync, write, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { endianness } from 'node:os';
import type * as Bindings from '@duckdb/node-bindings';
import type { DuckDBConnection, DuckDBDataChunk } from '@duckdb/node-api';
import { sqlString } from '../../../lib/duckdb-engine.js';
import { KeySort, WORDS } from './key-sort.js';

/** DuckDB's C API as Node sees it, loaded at first use (CommonJS, as lib/duckdb-engine.ts loads the API). */
let bindings: typeof Bindings | null = null;

/** A column of a streamed chunk as DuckDB holds it: `width` bytes a row (fixed-width values; no value made for each). */
function columnData(chunk: DuckDBDataChunk, column: number, width: number): Uint8Array {
  const b = (bindings ??= createRequire(import.meta.url)('@duckdb/node-bindings') as typeof Bindings);
  return b.vector_get_data(b.data_chunk_get_vector(chunk.chunk, column), chunk.rowCount * width);
}

/** A column of a streamed chunk as its bytes (`columnData`). */
function columnBytes(chunk: DuckDBDataChunk, column: number, width: number): DataView {
  const data = columnData(chunk, column, width);
  return new DataView(data.buffer, data.byteOffset, data.byteLength);
}

/** Where a 64-bit value's low and high words lie among a column's 32-bit words: the machine's order, as DuckDB holds it. */
const [LOW, HIGH] = endianness() === 'LE' ? [0, 1] : [1, 0];

/**
 * A column of 64-bit values of a streamed chunk as 32-bit words, in place (a DataView's read a word
 * was 3 s of the busy day's 45M keys' four columns); copied only if DuckDB's memory were not aligned.
 */
function columnWords(chunk: DuckDBDataChunk, column: number): Uint32Array {
  const data = columnData(chunk, column, 8);
  if (data.byteOffset % 4 === 0) return new Uint32Array(data.buffer, data.byteOffset, chunk.rowCount * 2);
  return new Uint32Array(new Uint8Array(data).buffer);
}

/**
 * `sql`'s result a chunk at a time, the next asked for before this one is handed over: DuckDB makes
 * it on the thread pool while the caller works on this one (the busy day's 45M keys: 22,000 chunks,
 * at about 200 us each; a fetch and 150 us of work a chunk took 10.1-10.5 s one after the other, 7.4 s
 * so).
 */
async function* streamChunks(db: DuckDBConnection, sql: string): AsyncGenerator<DuckDBDataChunk> {
  const result = await db.stream(sql);
  const fetch = (): Promise<DuckDBDataChunk | null> => {
    const p = result.fetchChunk();
    // Awaited below; until then (or if the caller stops or fails first), not an unhandled rejection.
    p.catch(() => undefined);
    return p;
  };
  let next: Promise<DuckDBDataChunk | null> | null = fetch();
  try {
    for (;;) {
      const chunk = await next;
      next = null;
      if (!chunk || chunk.rowCount === 0) return;
      next = fetch();
      yield chunk;
    }
  } finally {
    // A caller that stops early waits for the fetch under way: no query of its own may start while one is.
    if (next) await next.catch(() => null);
  }
}

const MAGIC = Buffer.from('PRKEYS01');
const TRAILER = 48;
/** Keys a read of a keys file brings at once: 1 MiB. */
const BLOCK_KEYS = 65_536;
/** The blocks a writer lets the thread pool hold at most, 1.5 MiB each: a batch's (window-check.ts: 2M keys, 31 blocks) and a little more. */
export const WRITING_BLOCKS = 40;

/** A block of a keys file as it is written: its keys' and event times' bytes, and their words. */
interface Block { keyBuf: Buffer; evBuf: Buffer; keyWords: Uint32Array; evWords: BigInt64Array }

function newBlock(): Block {
  const keyBuf = Buffer.allocUnsafeSlow(BLOCK_KEYS * 16), evBuf = Buffer.allocUnsafeSlow(BLOCK_KEYS * 8);
  return { keyBuf, evBuf, keyWords: new Uint32Array(keyBuf.buffer, keyBuf.byteOffset, BLOCK_KEYS * 4), evWords: new BigInt64Array(evBuf.buffer, evBuf.byteOffset, BLOCK_KEYS) };
}

/** `len` bytes of `buf` written at `at` of `fd`, on the thread pool. */
function writeAt(fd: number, buf: Buffer, len: number, at: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const from = (done: number): void => {
      if (done === len) return resolve();
      write(fd, buf, done, len - done, at + done, (err, n) => (err ? reject(err) : from(done + n)));
    };
    from(0);
  });
}

/**
 * The SQL of an id's key from its text: when the text is a canonical UUID, its 128 bits as a HUGEINT
 * whose top bit is flipped (so that signed order is the UUIDs' order: DuckDB's own UUID value, which
 * no cast turns into a HUGEINT directly: its bytes do, through BLOB and BIT), else NULL (the id stays
 * text). For ids staged before their key was (staged formats 1 to 3) and ping-ids files;
 * `stagedKeysSql` reads a format 4 file's key.
 */
export function uuidKeySql(id: string): string {
  return `CASE WHEN TRY_CAST(${id} AS UUID)::VARCHAR = ${id} THEN xor(TRY_CAST(${id} AS UUID)::BLOB::BIT::HUGEINT, ${TOP_BIT}) END`;
}

/** -2^127 as a HUGEINT: its top bit alone (the literal 2^127 is past the type). */
const TOP_BIT = `(-${2n ** 127n - 1n}::HUGEINT - 1)`;

/**
 * The SQL of the staged rows `from ... WHERE where` whose ids are canonical UUIDs, as keys in the
 * staged key columns' form (ingest/staged-ping.ts STAGED_KEY_COLUMNS: key_hi and key_lo, the high and
 * low 64 bits, each top bit flipped), with event_ms and rowid, in no order. A row of staged format 4
 * has them (NULL unless its id is one), and its id's text is not read (the busy day's 45M ids held
 * with their text, their keys made HUGEINTs: 7.1-8.2 s; as staged, 5.7-7.1 s). A row of an earlier
 * format has its key made from its text.
 */
export function stagedKeysSql(from: string, where: string): string {
  return `SELECT key_hi, key_lo, event_ms, rowid FROM ${from} WHERE ${where} AND key_hi IS NOT NULL
    UNION ALL SELECT ${keyHalvesSql('u')}, event_ms, rowid
      FROM (SELECT ${uuidKeySql('ping_id')} AS u, event_ms, rowid FROM ${from} WHERE ${where} AND key_hi IS NULL AND ping_id IS NOT NULL) WHERE u IS NOT NULL`;
}

/**
 * The SQL of a key as `uuidKeySql` makes it (UUID - 2^127, signed) as the staged key columns hold it:
 * key_hi, the key shifted; key_lo, its low 64 bits less 2^63 (the top bit flipped, as a signed number).
 */
export function keyHalvesSql(u: string): string {
  return `(${u} >> 64)::BIGINT AS key_hi, ((${u} & ${2n ** 64n - 1n}::HUGEINT) - ${2n ** 63n})::BIGINT AS key_lo`;
}

/**
 * The SQL of the staged rows `from ... WHERE where` with an id that is not a canonical UUID (rare:
 * players send UUIDs), with its text: rowid, event_ms, text_id. A row of staged format 4 with key
 * columns is never one: only rows without them are read for their text.
 */
export function stagedTextIdsSql(from: string, where: string): string {
  return `SELECT rowid, event_ms, ping_id AS text_id FROM ${from} WHERE ${where} AND key_hi IS NULL AND ping_id IS NOT NULL AND ${uuidKeySql('ping_id')} IS NULL`;
}

/**
 * A key as it streams (a HUGEINT, little-endian, the top bit flipped), four words at `at` of `raw`,
 * into a key's words at `o` of `out` (most significant first: ascending words are ascending UUIDs).
 */
function keyFromStored(raw: DataView, at: number, out: Uint32Array, o: number): void {
  out[o] = (raw.getUint32(at + 12, true) ^ 0x80000000) >>> 0;
  out[o + 1] = raw.getUint32(at + 8, true);
  out[o + 2] = raw.getUint32(at + 4, true);
  out[o + 3] = raw.getUint32(at, true);
}

/** -1, 0 or 1: key i of `a` against key j of `b`. */
function compare(a: Uint32Array, i: number, b: Uint32Array, j: number): number {
  for (let w = 0; w < 4; w++) {
    const x = a[i * 4 + w]!, y = b[j * 4 + w]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** The first place from `lo` to before `hi` whose key is not `below` (ascending keys): `hi` when there is none. */
function firstNotBelow(lo: number, hi: number, below: (i: number) => boolean): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (below(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The day's keys in a range, sorted, with their event times and the rows they stand for (rowid). */
export interface DayKeys { keys: Uint32Array; events: BigInt64Array; rowids: BigInt64Array; n: number }

/** A streamed chunk's columns as bytes: keys (16 a row) and event times (8 a row). */
interface KeyChunk { rows: number; u: DataView; ev: DataView }

/** `sql`'s rows (u: a key as uuidKeySql makes it, event_ms BIGINT, none NULL), in its order, a chunk at a time. */
async function* keyChunks(db: DuckDBConnection, sql: string): AsyncGenerator<KeyChunk> {
  for await (const chunk of streamChunks(db, sql)) {
    // Every column is NOT NULL here (the callers' WHERE): no validity to read.
    yield { rows: chunk.rowCount, u: columnBytes(chunk, 0, 16), ev: columnBytes(chunk, 1, 8) };
  }
}

/** `count` of a chunk's keys from row `from` into `out` from key `at` on. */
function putKeys(c: KeyChunk, from: number, count: number, out: Uint32Array, at: number): void {
  for (let i = 0; i < count; i++) keyFromStored(c.u, (from + i) * 16, out, (at + i) * 4);
}

/** `bytes` into `out` at byte `at`. */
function putBytes(bytes: DataView, out: ArrayBufferView, at: number): void {
  new Uint8Array(out.buffer, out.byteOffset + at, bytes.byteLength).set(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}

/**
 * The day's ids of `sql`'s rows (key_hi, key_lo: a key as staged, `stagedKeysSql`; event_ms, rowid;
 * none NULL; in any order) in ascending batches of at most `max`, sorted here (key-sort.ts: DuckDB's
 * ORDER BY and the stream of its sorted rows took 28.7 s of the busy day's check, the rows unsorted
 * 6.4 s), spilled under `dir` when the day holds more than `max`. A batch's arrays are reused for the
 * next: the caller is done with one when it asks for the next.
 */
export async function* dayKeyBatches(db: DuckDBConnection, sql: string, max: number, dir: string): AsyncGenerator<DayKeys> {
  const sort = new KeySort(dir, max);
  try {
    let entries = new Uint32Array(0);
    // (The next chunk is made while this one is sorted in: streamChunks.)
    for await (const chunk of streamChunks(db, sql)) {
      const rows = chunk.rowCount;
      // Every column is NOT NULL here (stagedKeysSql's WHERE): no validity to read.
      const hi = columnWords(chunk, 0), lo = columnWords(chunk, 1), ev = columnWords(chunk, 2), rid = columnWords(chunk, 3);
      if (entries.length < rows * WORDS) entries = new Uint32Array(rows * WORDS);
      for (let i = 0; i < rows; i++) {
        const o = i * WORDS, l = i * 2 + LOW, h = i * 2 + HIGH;
        // Each half's top bit flipped back: the words are the UUID's, most significant first.
        entries[o] = (hi[h]! ^ 0x80000000) >>> 0;
        entries[o + 1] = hi[l]!;
        entries[o + 2] = (lo[h]! ^ 0x80000000) >>> 0;
        entries[o + 3] = lo[l]!;
        entries[o + 4] = ev[l]!;
        entries[o + 5] = ev[h]!;
        entries[o + 6] = rid[l]!;
        entries[o + 7] = rid[h]!;
      }
      sort.add(entries, 0, rows);
    }
    yield* sort.batches();
  } finally {
    sort.close();
  }
}

/**
 * A keys file as it is written: keys in ascending order (each once), a block at a time, then
 * `finish` with the text ids and the trailer. The event times go to a file of their own while the
 * keys come, and after the keys once their number is known: counting the rows first ran the query
 * twice (the busy day's 44M keys, written twice each way in one process: 21.0 and 21.5 s against
 * 23.1 and 24.5 s).
 */
export class KeysWriter {
  private readonly fd: number;
  private readonly evFd: number;
  /** The block being filled. */
  private block = newBlock();
  /**
   * Blocks handed to the thread pool and not yet written, oldest first: the writer goes on while
   * they are written (written on the writer's own thread, the busy day's keys held up the check
   * 3.4 s and keeping 2.3 s). `settle` bounds them.
   */
  private writing: Array<Promise<void>> = [];
  /** Blocks written and free again (a new one for each was 0.7 s more of garbage collection on the busy day). */
  private free: Block[] = [];
  private held = 0;
  private min = Number.MAX_SAFE_INTEGER;
  private max = Number.MIN_SAFE_INTEGER;
  private closed = false;
  /** Keys written so far. */
  n = 0;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'w');
    try {
      this.evFd = openSync(`${path}.events`, 'w+');
    } catch (err) {
      closeSync(this.fd);
      throw err;
    }
  }

  /** The held block to the thread pool, and a free one for the next. */
  private flush(): void {
    if (this.held === 0) return;
    const block = this.block;
    const written = Promise.all([writeAt(this.fd, block.keyBuf, this.held * 16, this.n * 16), writeAt(this.evFd, block.evBuf, this.held * 8, this.n * 8)])
      .then(() => { this.free.push(block); });
    // Handled where it is awaited (settle); until then, not an unhandled rejection.
    written.catch(() => {});
    this.writing.push(written);
    this.n += this.held;
    this.held = 0;
    this.block = this.free.pop() ?? newBlock();
  }

  /** Waits until at most `blocks` blocks are being written (0: all written); a failed write throws here. */
  async settle(blocks = 0): Promise<void> {
    while (this.writing.length > blocks) await this.writing.shift();
  }

  /**
   * Keys `from` to before `to` of `keys` (four words each) and their event times, copied a block at a
   * time (a key at a time, with its event time as a BigInt, was 10 s of the busy day's 45M keys).
   */
  addRange(keys: Uint32Array, events: BigInt64Array, from: number, to: number): void {
    const ev = new Int32Array(events.buffer, events.byteOffset, events.length * 2);
    for (let i = from; i < to;) {
      if (this.held === BLOCK_KEYS) this.flush();
      const take = Math.min(to - i, BLOCK_KEYS - this.held);
      this.block.keyWords.set(keys.subarray(i * 4, (i + take) * 4), this.held * 4);
      this.block.evWords.set(events.subarray(i, i + take), this.held);
      let min = this.min, max = this.max;
      for (let j = i; j < i + take; j++) {
        // An epoch-ms time (below 2^53) from its two words, with no BigInt made.
        const e = ev[j * 2 + 1]! * 4294967296 + (ev[j * 2]! >>> 0);
        if (e < min) min = e;
        if (e > max) max = e;
      }
      this.min = min;
      this.max = max;
      this.held += take;
      i += take;
    }
  }

  /** The event times after the keys, the ids of `textSql` (ping_id, event_ms: the counted ids that are not UUIDs; null: none) and the trailer. Returns the keys. */
  async finish(db: DuckDBConnection, textSql: string | null): Promise<number> {
    try {
      this.flush();
      await this.settle();
      const { n, fd } = this;
      const buf = this.block.keyBuf;
      for (let at = 0; at < n * 8; at += buf.length) {
        const len = readSync(this.evFd, buf, 0, Math.min(buf.length, n * 8 - at), at);
        writeSync(fd, buf, 0, len, n * 16 + at);
      }
      const text = textSql === null ? { ids: 0, bytes: 0 } : await writeText(db, textSql, fd, n * 24);
      writeSync(fd, trailerOf(n, text, n ? this.min : 0, n ? this.max : 0), 0, TRAILER, n * 24 + text.bytes);
      return n;
    } finally {
      await this.close();
    }
  }

  /**
   * Closes it once no block is being written, its event times' file removed (an unfinished keys file
   * is left for its writer to remove).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled(this.writing.splice(0));
    closeSync(this.fd);
    closeSync(this.evFd);
    rmSync(`${this.path}.events`, { force: true });
  }
}

/**
 * Writes the keys of `sql` (u: a key as uuidKeySql makes it, event_ms; its rows ordered by u, each key once) to `out`, and
 * after them the ids of `textSql` (ping_id, event_ms: the counted ids that are not UUIDs; null: none).
 * Returns how many keys it holds.
 */
export async function writeKeys(db: DuckDBConnection, sql: string, textSql: string | null, out: string): Promise<number> {
  const w = new KeysWriter(out);
  try {
    // Each chunk's keys and event times as a merge holds them, then written as a run.
    let keys = new Uint32Array(0), events = new BigInt64Array(0);
    for await (const c of keyChunks(db, sql)) {
      if (events.length < c.rows) [keys, events] = [new Uint32Array(c.rows * 4), new BigInt64Array(c.rows)];
      putKeys(c, 0, c.rows, keys, 0);
      putBytes(c.ev, events, 0);
      w.addRange(keys, events, 0, c.rows);
      await w.settle(WRITING_BLOCKS);
    }
    return await w.finish(db, textSql);
  } finally {
    await w.close();
  }
}

/**
 * Makes the keys a check kept (the keys file `kept`: the day's keys that are not repeats: window-check.ts)
 * the day's keys file `out`: those of `dropSql` left out (u, event_ms, ordered by u: keys the day does
 * not count after all, those of sessions caught as automated traffic; null: none), and the ids of
 * `textSql` after them (ping_id, event_ms). Returns how many keys it holds.
 */
export async function keepKeys(db: DuckDBConnection, kept: string, dropSql: string | null, textSql: string, out: string): Promise<number> {
  const all = new KeysFile(kept);
  if (dropSql === null) {
    // All of them: the text ids over its trailer, and the trailer after them.
    all.close();
    const fd = openSync(kept, 'r+');
    try {
      const text = await writeText(db, textSql, fd, all.n * 24);
      writeSync(fd, trailerOf(all.n, text, all.minEvent, all.maxEvent), 0, TRAILER, all.n * 24 + text.bytes);
    } finally {
      closeSync(fd);
    }
    renameSync(kept, out);
    return all.n;
  }
  // The kept keys merged against the dropped (both ascending, each key once), a block at a time.
  const w = new KeysWriter(out);
  try {
    const drops = keyChunks(db, dropSql)[Symbol.asyncIterator]();
    const drop = new Uint32Array(4);
    let chunk: KeyChunk | null = null, at = 0;
    /** The next dropped key into `drop`: false when there is none. */
    const next = async (): Promise<boolean> => {
      while (chunk === null || at >= chunk.rows) {
        const r = await drops.next();
        if (r.done) return false;
        chunk = r.value;
        at = 0;
      }
      putKeys(chunk, at++, 1, drop, 0);
      return true;
    };
    let has = await next();
    const { keyBuf, evBuf, keyWords: keys, evWords: events } = newBlock();
    for (let from = 0; from < all.n; from += BLOCK_KEYS) {
      const len = Math.min(BLOCK_KEYS, all.n - from);
      all.read(from, len, keyBuf, evBuf);
      // Each dropped key found in the block by a binary search, where every kept key was compared (few
      // are dropped: the busy day's 46.7M kept keys and 200,000 dropped, 0.95 s against 2.1-2.3 s),
      // the keys between two copied as a run.
      let run = 0;
      while (has) {
        const j = firstNotBelow(run, len, (i) => compare(keys, i, drop, 0) < 0);
        // Past the block: the dropped key is for a later one.
        if (j === len) break;
        if (compare(keys, j, drop, 0) === 0) {
          w.addRange(keys, events, run, j);
          run = j + 1;
        }
        has = await next();
      }
      w.addRange(keys, events, run, len);
      await w.settle(WRITING_BLOCKS);
    }
    await drops.return?.(undefined);
    return await w.finish(db, textSql);
  } finally {
    await w.close();
    all.close();
    rmSync(kept, { force: true });
  }
}

/** A keys file's trailer: its keys, its text ids and their bytes, the keys' least and greatest event time (0 without keys), the magic. */
function trailerOf(n: number, text: { ids: number; bytes: number }, minEvent: number, maxEvent: number): Buffer {
  const t = Buffer.alloc(TRAILER);
  t.writeBigUInt64LE(BigInt(n), 0);
  t.writeBigUInt64LE(BigInt(text.ids), 8);
  t.writeBigUInt64LE(BigInt(text.bytes), 16);
  t.writeBigInt64LE(BigInt(minEvent), 24);
  t.writeBigInt64LE(BigInt(maxEvent), 32);
  MAGIC.copy(t, 40);
  return t;
}

/** The text ids of `sql` (ping_id, event_ms) at `at` of `fd`, each its length (4 bytes), its UTF-8 and its event time. */
async function writeText(db: DuckDBConnection, sql: string, fd: number, at: number): Promise<{ ids: number; bytes: number }> {
  let ids = 0, bytes = 0;
  for await (const chunk of streamChunks(db, sql)) {
    const id = chunk.getColumnVector(0), ev = columnBytes(chunk, 1, 8);
    const parts: Buffer[] = [];
    for (let i = 0; i < chunk.rowCount; i++) {
      const text = Buffer.from(String(id.getItem(i)));
      const head = Buffer.alloc(4);
      head.writeUInt32LE(text.length, 0);
      parts.push(head, text, Buffer.from(ev.buffer, ev.byteOffset + i * 8, 8));
    }
    const block = Buffer.concat(parts);
    writeSync(fd, block, 0, block.length, at + bytes);
    bytes += block.length;
    ids += chunk.rowCount;
  }
  return { ids, bytes };
}

/**
 * Writes a ping-ids Parquet file's counted ids as keys to `out` (a file kept before keys were, or
 * written by another engine, or an adjustments' file), its other ids as text after them.
 */
export async function keysOfParquet(db: DuckDBConnection, parquet: string, out: string): Promise<void> {
  const rows = `(SELECT ping_id, ${uuidKeySql('ping_id')} AS u, event_ms FROM read_parquet(${sqlString(parquet)}) WHERE counted)`;
  await writeKeys(db, `SELECT u, event_ms FROM ${rows} WHERE u IS NOT NULL ORDER BY u`, `SELECT ping_id, event_ms FROM ${rows} WHERE u IS NULL`, out);
}

/** An open keys file: its keys read between bounds, an event time by its place. */
export class KeysFile {
  readonly n: number;
  /** Its day's counted ids that are not UUIDs, and their bytes here. */
  readonly textIds: number;
  private readonly textBytes: number;
  readonly minEvent: number;
  readonly maxEvent: number;
  private readonly fd: number;
  private readonly one = new Uint32Array(4);
  private readonly ev = Buffer.alloc(8);

  constructor(readonly path: string) {
    this.fd = openSync(path, 'r');
    const t = Buffer.alloc(TRAILER);
    const size = fstatSync(this.fd).size;
    if (size < TRAILER || readSync(this.fd, t, 0, TRAILER, size - TRAILER) !== TRAILER || !t.subarray(40).equals(MAGIC)) {
      closeSync(this.fd);
      throw new Error(`${path} is not a ping-ids keys file`);
    }
    this.n = Number(t.readBigUInt64LE(0));
    this.textIds = Number(t.readBigUInt64LE(8));
    this.textBytes = Number(t.readBigUInt64LE(16));
    this.minEvent = Number(t.readBigInt64LE(24));
    this.maxEvent = Number(t.readBigInt64LE(32));
    if (size !== this.n * 24 + this.textBytes + TRAILER) {
      closeSync(this.fd);
      throw new Error(`${path} is damaged: ${size} bytes for ${this.n} keys`);
    }
  }

  private keyAt(i: number): Uint32Array {
    const b = Buffer.from(this.one.buffer);
    readSync(this.fd, b, 0, 16, i * 16);
    return this.one;
  }

  /** The place of the first key not below key `k` of `keys`: n when there is none. */
  private seek(keys: Uint32Array, k: number): number {
    return firstNotBelow(0, this.n, (i) => compare(this.keyAt(i), 0, keys, k) < 0);
  }

  /** Keys `from` to `from + count` into `keys` (16 bytes each) and their event times into `events` (8 each). */
  read(from: number, count: number, keys: Buffer, events: Buffer): void {
    readSync(this.fd, keys, 0, count * 16, from * 16);
    readSync(this.fd, events, 0, count * 8, this.n * 16 + from * 8);
  }

  /** The event time (epoch ms) of key i. */
  eventAt(i: number): number {
    readSync(this.fd, this.ev, 0, 8, this.n * 16 + i * 8);
    return Number(this.ev.readBigInt64LE(0));
  }

  /**
   * Merges the day's sorted keys (each once: the day's dedupe), those from place `from` to before
   * `to`, against this file's: `found(dayIndex, fileIndex)` for each place of the file that holds one
   * of them (a file may hold a key more than once: each is found).
   */
  merge(day: Pick<DayKeys, 'keys' | 'n'>, found: (d: number, f: number) => void, from = 0, to = day.n): void {
    if (from >= to || this.n === 0) return;
    let f = this.seek(day.keys, from);
    const size = Math.min(BLOCK_KEYS, this.n - f), buf = Buffer.allocUnsafeSlow(size * 16);
    const block = new Uint32Array(buf.buffer, buf.byteOffset, size * 4);
    let d = from;
    while (f < this.n && d < to) {
      const len = Math.min(BLOCK_KEYS, this.n - f);
      readSync(this.fd, buf, 0, len * 16, f * 16);
      let j = 0;
      const dk = day.keys;
      while (j < len && d < to) {
        // Most keys differ in their first word's top 31 bits: those compared alone, and the place of
        // the lesser advanced with no branch. Which one it is is a coin's toss where both sides are
        // random ids as dense as each other (a real day's against its history): a branch then took
        // 35 ms a merge of 1.46M such keys against a history day's, this 23 ms (a scratch measure).
        // Their difference fits 32 bits: its sign bit says which is less.
        const diff = (dk[d * 4]! >>> 1) - (block[j * 4]! >>> 1);
        if (diff !== 0) {
          const less = diff >>> 31;
          d += less;
          j += less ^ 1;
        } else {
          const c = compare(dk, d, block, j);
          if (c < 0) d++;
          else if (c > 0) j++;
          else { found(d, f + j); j++; }
        }
      }
      f += j;
      if (j < len) break;
    }
  }

  /** Its text ids (ping_id, event_ms), a block of at most 1 MiB at a time (or one id, when larger). */
  *texts(): Generator<Array<{ id: string; event: bigint }>> {
    const start = this.n * 24, end = start + this.textBytes;
    let at = start;
    while (at < end) {
      const buf = Buffer.alloc(Math.min(BLOCK_KEYS * 16, end - at));
      readSync(this.fd, buf, 0, buf.length, at);
      const out: Array<{ id: string; event: bigint }> = [];
      let o = 0;
      while (o + 4 <= buf.length) {
        const len = buf.readUInt32LE(o);
        if (o + 4 + len + 8 > buf.length) break;
        out.push({ id: buf.toString('utf8', o + 4, o + 4 + len), event: buf.readBigInt64LE(o + 4 + len) });
        o += 4 + len + 8;
      }
      if (o === 0) {
        // One id longer than a block: read it whole.
        const len = buf.readUInt32LE(0);
        const one = Buffer.alloc(len + 8);
        readSync(this.fd, one, 0, one.length, at + 4);
        out.push({ id: one.toString('utf8', 0, len), event: one.readBigInt64LE(len) });
        o = 4 + len + 8;
      }
      at += o;
      yield out;
    }
  }

  close(): void {
    closeSync(this.fd);
  }
}
