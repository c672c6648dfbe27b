/**
 * The staged files, written by pingroll from the staged rows' columns (issue #57, item 4): a part
 * file of staged rows (ingest/staged-ping.ts stagedRow, as the ping rules and the DynamoDB spool write
 * them) becomes one Parquet file per UTC day of its rows, with no text made or read between. The rows
 * are read into the WebAssembly module in pieces, found, split by day and read column by column there
 * (wasm/staged-columns.as.ts); the pages are put together here and go to the file as they are made.
 * Memory is the module's, fixed (about 32 MB), whatever the part's size or days.
 *
 * What DuckDB's staged files held, as DuckDB and Redshift read them (docs/decisions.md):
 * - every column OPTIONAL: a definition level a row (one RLE run when the page has no NULL, else
 *   bit-packed);
 * - a string column with a dictionary of its values in the row group, its rows as the dictionary's
 *   indices (bit-packed, or one RLE run when all are one value); or, when most of its values differ
 *   (the ping id, the natural key), the values as they are (PLAIN), as a dictionary only adds to them;
 * - a 64-bit column PLAIN, with its least and greatest value and its NULLs in the chunk's statistics
 *   (the day's filter on `event_ms` prunes by them);
 * - a page a column chunk, STAGED_ROW_GROUP_ROWS rows a group at most; Snappy (compressed in the
 *   module: wasm/snappy.as.ts) or uncompressed (lib/parquet-codec.ts stagedCodec).
 * Pages and footer in Parquet's Thrift compact encoding (parquet-format's parquet.thrift).
 */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { projectFile } from '../../lib/project-file.js';
import { moduleInstance } from '../access-log/record-reader.js';
import { ROW_STRING, STAGED_FILE_COLUMNS, STAGED_ROW_KINDS } from '../staged-ping.js';

/**
 * Rows per row group of a staged file at most. A row group is read by one of the rollup's threads;
 * at DuckDB's default (122,880 rows) a part of the small-object day (130,000 rows) was one group and
 * a sliver. A part's rows split by day, or by the pieces it is read in, make smaller groups.
 */
export const STAGED_ROW_GROUP_ROWS = 61_440;

/** Bytes of a part file read into the module at a time: at least one row (a row is at most a few hundred KB). */
const READ_BYTES = 16 << 20;
/** Rows found in one read at most (a row is at least 60 bytes: its head, lengths and flags). */
const ROWS_A_READ = READ_BYTES / 48;
/** The largest page: a read's bytes of values at most, their lengths, and the definition levels. */
const PAGE_BYTES = READ_BYTES + STAGED_ROW_GROUP_ROWS * 8 + 65_536;
/** Day files of one part kept open at once; past this they are closed and opened again as written. */
const OPEN_FILES = 32;
/** Values a string column's chunk looks at before it gives up a dictionary whose values nearly all differ. */
const PROBE = 2_048;

/** Parquet's enums, as parquet.thrift numbers them. */
const TYPE = { INT64: 2, BYTE_ARRAY: 6 } as const;
const ENCODING = { PLAIN: 0, RLE: 3, RLE_DICTIONARY: 8 } as const;
const PAGE = { DATA: 0, DICTIONARY: 2 } as const;
const CODEC = { uncompressed: 0, snappy: 1 } as const;
const OPTIONAL = 1;
const CONVERTED_UTF8 = 0;
/** Thrift compact types. */
const T = { I32: 5, I64: 6, BINARY: 8, LIST: 9, STRUCT: 12 } as const;
const MAGIC = Buffer.from('PAR1');

/** One day's staged file of a part: written, and its row count. */
export interface WrittenDay { day: number; file: string; rows: number }

/** A column chunk's place and sizes, for the footer. */
interface Chunk { column: number; encodings: number[]; start: number; dictionaryAt: number | null; dataAt: number; bytes: number; plainBytes: number; nulls: number; min: bigint | null; max: bigint | null }

/** Where things lie in the module's memory, past its own first page. */
interface Layout { kinds: number; count: number; table: number; firstRow: number; index: number; starts: number; days: number; sorted: number; columns: number; stride: number; page: number; packed: number; rows: number; end: number }

/** The module's memory past its first page; `snappyBound`: the most a page's bytes compress to (the module's own bound). */
function layout(snappyBound: (n: number) => number): Layout {
  let end = 1 << 16;
  const take = (bytes: number): number => {
    const at = end;
    end += Math.ceil(bytes / 16) * 16;
    return at;
  };
  const stride = STAGED_ROW_GROUP_ROWS * 9;
  const l = {
    kinds: take(STAGED_ROW_KINDS.length), count: take(8), table: take(tablePlaces(STAGED_ROW_GROUP_ROWS) * 4), firstRow: take(STAGED_ROW_GROUP_ROWS * 4), index: take(STAGED_ROW_GROUP_ROWS * 4),
    starts: take(ROWS_A_READ * 4), days: take(ROWS_A_READ * 4), sorted: take(ROWS_A_READ * 4), columns: take(stride * STAGED_FILE_COLUMNS.length), stride,
    // A page: at most a read's bytes of values, with their lengths and the definition levels; then
    // the same compressed.
    page: take(PAGE_BYTES), packed: take(snappyBound(PAGE_BYTES)),
    // The rows last, with room for a 16-byte copy's overrun.
    rows: take(READ_BYTES + 64), end: 0,
  };
  l.end = end;
  return l;
}

/** A dictionary's hash table for `rows` values: a power of two, at least twice as many places (so a probe seldom walks far). */
function tablePlaces(rows: number): number {
  let places = 16;
  while (places < rows * 2) places *= 2;
  return places;
}

interface ColumnsExports {
  memory: WebAssembly.Memory;
  indexRows(rows: number, end: number, starts: number, days: number, cap: number): number;
  indexedTo(): number;
  indexedDaysDiffer(): number;
  transpose(order: number, n: number, kinds: number, columns: number, out: number, stride: number): void;
  dictionary(col: number, n: number, table: number, mask: number, firstRow: number, index: number, probe: number, count: number): number;
  definitionLevels(valid: number, n: number, out: number): number;
  nulls(): number;
  plainStrings(col: number, n: number, out: number): number;
  dictionaryValues(col: number, n: number, firstRow: number, distinct: number, out: number): number;
  packedIndices(index: number, k: number, distinct: number, out: number): number;
  plainInt64s(col: number, n: number, out: number): number;
  leastValue(): bigint;
  greatestValue(): bigint;
  snappyCompress(src: number, n: number, dst: number): number;
  snappyBound(n: number): number;
}

/** Writes staged files from part files of staged rows; one writer at a time uses its module. */
export class StagedParquetWriter {
  private readonly x: ColumnsExports;
  private readonly l: Layout;
  private readonly mem: Uint8Array;
  private readonly i32: Int32Array;
  private readonly codec: number;
  private readonly head = new Bytes();
  /** A row group's pages, written to its file in one write when the group is done. */
  private readonly out = new Bytes();

  /** `codec`: `snappy` or `uncompressed` (lib/parquet-codec.ts stagedCodec). */
  constructor(codec: string) {
    if (!(codec in CODEC)) throw new Error(`staged files are written Snappy or uncompressed, not ${codec}: a bug in pingroll`);
    this.codec = CODEC[codec as keyof typeof CODEC];
    this.x = moduleInstance().exports as unknown as ColumnsExports;
    this.l = layout(this.x.snappyBound);
    const pages = Math.ceil(this.l.end / 65_536) - this.x.memory.buffer.byteLength / 65_536;
    if (pages > 0) this.x.memory.grow(pages);
    this.mem = new Uint8Array(this.x.memory.buffer);
    this.i32 = new Int32Array(this.x.memory.buffer);
    this.mem.set(STAGED_ROW_KINDS, this.l.kinds);
  }

  /**
   * Writes the rows of the part files `parts` as Parquet, a file per UTC day, `<base>-<day number>.parquet`.
   * Yields to the event loop between reads (the run's fetches and parsers go on meanwhile).
   */
  async write(parts: readonly string[], base: string): Promise<WrittenDay[]> {
    const files = new Map<number, DayFile>();
    try {
      for (const part of parts) await this.writePart(part, base, files);
      const written: WrittenDay[] = [];
      for (const [day, file] of files) {
        this.footer(file);
        written.push({ day, file: file.path, rows: file.rows });
      }
      return written;
    } finally {
      for (const file of files.values()) file.close();
    }
  }

  /** One part file's rows, to the files of their days. */
  private async writePart(part: string, base: string, files: Map<number, DayFile>): Promise<void> {
    const fd = openSync(part, 'r');
    try {
      const { l, x } = this;
      let carry = 0;
      for (;;) {
        const n = readSync(fd, this.mem, l.rows + carry, READ_BYTES - carry, null);
        const end = l.rows + carry + n;
        const rows = x.indexRows(l.rows, end, l.starts, l.days, ROWS_A_READ);
        if (rows === 0 && n === 0) {
          if (carry > 0) throw new Error(`${part} ends inside a staged row (${carry} bytes): this is a bug in pingroll`);
          break;
        }
        const { order, runs } = this.byDay(rows);
        for (const { day, from, to } of runs) {
          let file = files.get(day);
          if (!file) files.set(day, file = new DayFile(`${base}-${day}.parquet`, files.size < OPEN_FILES));
          for (let g = from; g < to; g += STAGED_ROW_GROUP_ROWS) this.group(file, order + g * 4, Math.min(STAGED_ROW_GROUP_ROWS, to - g));
        }
        const to = x.indexedTo();
        carry = end - to;
        this.mem.copyWithin(l.rows, to, end);
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      closeSync(fd);
    }
  }

  /**
   * The read's rows' starts in day order, and each day's run of them: as found when all are of one day
   * (nearly every part), else sorted by day (stable) into `sorted`.
   */
  private byDay(rows: number): { order: number; runs: Array<{ day: number; from: number; to: number }> } {
    const { l, i32 } = this;
    const days = l.days >> 2, starts = l.starts >> 2, sorted = l.sorted >> 2;
    if (!this.x.indexedDaysDiffer()) return { order: l.starts, runs: rows === 0 ? [] : [{ day: i32[days]!, from: 0, to: rows }] };
    // A counting sort over the days present.
    const counts = new Map<number, number>();
    for (let r = 0; r < rows; r++) counts.set(i32[days + r]!, (counts.get(i32[days + r]!) ?? 0) + 1);
    const runs: Array<{ day: number; from: number; to: number }> = [];
    const next = new Map<number, number>();
    let at = 0;
    for (const day of [...counts.keys()].sort((a, b) => a - b)) {
      runs.push({ day, from: at, to: at + counts.get(day)! });
      next.set(day, at);
      at += counts.get(day)!;
    }
    for (let r = 0; r < rows; r++) {
      const d = i32[days + r]!;
      const k = next.get(d)!;
      i32[sorted + k] = i32[starts + r]!;
      next.set(d, k + 1);
    }
    return { order: l.sorted, runs };
  }

  /** One row group of `n` rows, their starts at `order`, to `file`. */
  private group(file: DayFile, order: number, n: number): void {
    const { l, x } = this;
    x.transpose(order, n, l.kinds, STAGED_FILE_COLUMNS.length, l.columns, l.stride);
    this.out.at = 0;
    const chunks: Chunk[] = [];
    for (let c = 0; c < STAGED_FILE_COLUMNS.length; c++) {
      const at = l.columns + c * l.stride;
      chunks.push(STAGED_ROW_KINDS[c] === ROW_STRING ? this.stringChunk(file, c, at, n) : this.int64Chunk(file, c, at, n));
    }
    file.write(this.out.buf, this.out.at);
    file.groups.push({ rows: n, chunks });
    file.rows += n;
  }

  /**
   * The page the module wrote (`size` bytes at `page`) after the group's pages, with its header: its
   * body compressed by the writer's codec. Returns the bytes it would take uncompressed.
   */
  private writePage(size: number, header: (h: Bytes, size: number, stored: number) => void): number {
    const { l, mem } = this;
    const plain = mem.subarray(l.page, l.page + size);
    const body = this.codec === CODEC.snappy ? mem.subarray(l.packed, l.packed + this.x.snappyCompress(l.page, size, l.packed)) : plain;
    const head = this.head;
    head.at = 0;
    head.structBody(() => header(head, plain.length, body.length));
    this.out.raw(head.buf.subarray(0, head.at));
    this.out.raw(body);
    return head.at + plain.length;
  }

  /** Where the next page goes in `file`. */
  private at(file: DayFile): number {
    return file.at + this.out.at;
  }

  /** A 64-bit column's chunk: PLAIN, with its least and greatest value. */
  private int64Chunk(file: DayFile, column: number, at: number, n: number): Chunk {
    const { l, x } = this;
    const start = this.at(file);
    let size = x.definitionLevels(at + n * 8, n, l.page);
    const nulls = x.nulls();
    size += x.plainInt64s(at, n, l.page + size);
    const plainBytes = this.writePage(size, (h, size, stored) => dataHeader(h, size, stored, n, ENCODING.PLAIN));
    const [min, max] = nulls === n ? [null, null] : [x.leastValue(), x.greatestValue()];
    return { column, encodings: [ENCODING.PLAIN, ENCODING.RLE], start, dictionaryAt: null, dataAt: start, bytes: this.at(file) - start, plainBytes, nulls, min, max };
  }

  /** A string column's chunk: with a dictionary when at most half its values differ, else PLAIN. */
  private stringChunk(file: DayFile, column: number, at: number, n: number): Chunk {
    const { l, x, i32 } = this;
    const start = this.at(file);
    const distinct = x.dictionary(at, n, l.table, tablePlaces(n) - 1, l.firstRow, l.index, PROBE, l.count);
    const indexed = i32[l.count >> 2]!;
    if (distinct === -1 || distinct * 2 > indexed) {
      let size = x.definitionLevels(at + n * 8, n, l.page);
      const nulls = x.nulls();
      size += x.plainStrings(at, n, l.page + size);
      const plainBytes = this.writePage(size, (h, size, stored) => dataHeader(h, size, stored, n, ENCODING.PLAIN));
      return { column, encodings: [ENCODING.PLAIN, ENCODING.RLE], start, dictionaryAt: null, dataAt: start, bytes: this.at(file) - start, plainBytes, nulls, min: null, max: null };
    }
    // The dictionary page: its values PLAIN, in index order.
    let plainBytes = this.writePage(x.dictionaryValues(at, n, l.firstRow, distinct, l.page), (h, size, stored) => {
      h.i32(1, PAGE.DICTIONARY);
      h.i32(2, size);
      h.i32(3, stored);
      h.struct(7, () => {
        h.i32(1, distinct);
        h.i32(2, ENCODING.PLAIN);
      });
    });
    const dataAt = this.at(file);
    let size = x.definitionLevels(at + n * 8, n, l.page);
    const nulls = x.nulls();
    size += x.packedIndices(l.index, indexed, distinct, l.page + size);
    plainBytes += this.writePage(size, (h, size, stored) => dataHeader(h, size, stored, n, ENCODING.RLE_DICTIONARY));
    return { column, encodings: [ENCODING.PLAIN, ENCODING.RLE, ENCODING.RLE_DICTIONARY], start, dictionaryAt: start, dataAt, bytes: this.at(file) - start, plainBytes, nulls, min: null, max: null };
  }

  /** The file's footer (its schema, row groups and chunks), its length and the magic bytes. */
  private footer(file: DayFile): void {
    const out = new Bytes();
    const codec = this.codec;
    out.structBody(() => {
      out.i32(1, 1);
      out.list(2, T.STRUCT, STAGED_FILE_COLUMNS.length + 1, (i) => out.structBody(() => {
        if (i === 0) {
          out.string(4, 'schema');
          out.i32(5, STAGED_FILE_COLUMNS.length);
          return;
        }
        const c = STAGED_FILE_COLUMNS[i - 1]!;
        out.i32(1, physicalType(i - 1));
        out.i32(3, OPTIONAL);
        out.string(4, c.name);
        if (STAGED_ROW_KINDS[i - 1] === ROW_STRING) out.i32(6, CONVERTED_UTF8);
      }));
      out.i64(3, file.rows);
      out.list(4, T.STRUCT, file.groups.length, (g) => out.structBody(() => {
        const group = file.groups[g]!;
        out.list(1, T.STRUCT, group.chunks.length, (k) => out.structBody(() => {
          const ch = group.chunks[k]!;
          out.i64(2, ch.start);
          out.struct(3, () => {
            out.i32(1, physicalType(ch.column));
            out.list(2, T.I32, ch.encodings.length, (e) => out.zigzag(ch.encodings[e]!));
            out.list(3, T.BINARY, 1, () => {
              const name = Buffer.from(STAGED_FILE_COLUMNS[ch.column]!.name);
              out.varint(name.length);
              out.raw(name);
            });
            out.i32(4, codec);
            out.i64(5, group.rows);
            out.i64(6, ch.plainBytes);
            out.i64(7, ch.bytes);
            out.i64(9, ch.dataAt);
            if (ch.dictionaryAt !== null) out.i64(11, ch.dictionaryAt);
            out.struct(12, () => {
              out.i64(3, ch.nulls);
              if (ch.min !== null && ch.max !== null) {
                out.binary(5, int64Bytes(ch.max));
                out.binary(6, int64Bytes(ch.min));
              }
            });
          });
        }));
        out.i64(2, group.chunks.reduce((n, ch) => n + ch.plainBytes, 0));
        out.i64(3, group.rows);
      }));
      out.string(6, 'pingroll');
    });
    out.u32le(out.at);
    out.raw(MAGIC);
    file.write(out.buf, out.at);
  }
}

const WORKER = 'dist/bundle/staged-writer-worker.cjs';

/**
 * A StagedParquetWriter in a thread of its own (staged-writer-worker.ts), started on the first write:
 * the run's thread parses a small batch itself, and the parts are written beside it on the other core,
 * as DuckDB's conversions were. One write at a time.
 */
export class StagedWriterThread {
  private worker: Worker | null = null;

  constructor(private readonly codec: string) {}

  write(parts: readonly string[], base: string): Promise<WrittenDay[]> {
    const worker = (this.worker ??= new Worker(projectFile(WORKER), { workerData: { codec: this.codec } }));
    const written = new Promise<WrittenDay[]>((resolve, reject) => {
      const done = (msg: { written?: WrittenDay[]; failed?: string }): void => {
        worker.off('error', failed);
        worker.off('exit', exited);
        if (msg.failed !== undefined) reject(new Error(msg.failed));
        else resolve(msg.written!);
      };
      const failed = (err: Error): void => {
        worker.off('message', done);
        worker.off('exit', exited);
        this.worker = null;
        reject(err);
      };
      const exited = (code: number): void => failed(new Error(`the staged writer's thread stopped (exit code ${code})`));
      worker.once('message', done);
      worker.once('error', failed);
      worker.once('exit', exited);
    });
    worker.postMessage({ parts, base });
    return written;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    worker?.removeAllListeners('exit');
    await worker?.terminate();
  }
}

/** A column's Parquet type: 64-bit integers, or strings' bytes. */
function physicalType(column: number): number {
  return STAGED_ROW_KINDS[column] === ROW_STRING ? TYPE.BYTE_ARRAY : TYPE.INT64;
}

function dataHeader(h: Bytes, size: number, stored: number, rows: number, encoding: number): void {
  h.i32(1, PAGE.DATA);
  h.i32(2, size);
  h.i32(3, stored);
  h.struct(5, () => {
    h.i32(1, rows);
    h.i32(2, encoding);
    h.i32(3, ENCODING.RLE);
    h.i32(4, ENCODING.RLE);
  });
}

function int64Bytes(v: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, v, true);
  return b;
}

/** One day's file of a part: written as its pages are made; its row groups, for the footer. */
class DayFile {
  at = 0;
  rows = 0;
  readonly groups: Array<{ rows: number; chunks: Chunk[] }> = [];
  private fd: number | null;

  /** `keepOpen`: hold the file open between writes (the first OPEN_FILES days of a part). */
  constructor(readonly path: string, private readonly keepOpen: boolean) {
    this.fd = openSync(path, 'w');
    if (!keepOpen) this.close();
    this.write(MAGIC, MAGIC.length);
  }

  write(buf: Uint8Array, len: number): void {
    const fd = this.fd ?? openSync(this.path, 'r+');
    try {
      for (let done = 0; done < len;) done += writeSync(fd, buf, done, len - done, this.at + done);
      this.at += len;
    } finally {
      if (this.keepOpen) this.fd = fd;
      else closeSync(fd);
    }
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

/** A growing byte buffer, with Thrift's compact encoding on top. */
class Bytes {
  buf = new Uint8Array(1 << 16);
  at = 0;
  private last: number[] = [0];

  room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.at + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.at));
    this.buf = next;
  }
  byte(b: number): void {
    this.room(1);
    this.buf[this.at++] = b;
  }
  raw(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.at);
    this.at += b.length;
  }
  u32le(v: number): void {
    this.room(4);
    for (let k = 0; k < 4; k++) this.buf[this.at++] = (v >>> (8 * k)) & 255;
  }
  /** An unsigned varint (up to 2^53). */
  varint(v: number): void {
    this.room(10);
    while (v >= 0x80) {
      this.buf[this.at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.at++] = v;
  }
  /** A zigzag varint of an integer (up to 2^52 either way). */
  zigzag(v: number): void {
    this.varint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  // Thrift compact: a field's header carries its id's distance from the last field of its struct.
  field(id: number, type: number): void {
    const last = this.last[this.last.length - 1]!;
    const delta = id - last;
    if (delta > 0 && delta <= 15) this.byte((delta << 4) | type);
    else {
      this.byte(type);
      this.zigzag(id);
    }
    this.last[this.last.length - 1] = id;
  }
  i32(id: number, v: number): void {
    this.field(id, T.I32);
    this.zigzag(v);
  }
  i64(id: number, v: number): void {
    this.field(id, T.I64);
    this.zigzag(v);
  }
  binary(id: number, b: Uint8Array): void {
    this.field(id, T.BINARY);
    this.varint(b.length);
    this.raw(b);
  }
  string(id: number, s: string): void {
    this.binary(id, Buffer.from(s));
  }
  /** A struct field: `body` writes its fields. */
  struct(id: number, body: () => void): void {
    this.field(id, T.STRUCT);
    this.structBody(body);
  }
  structBody(body: () => void): void {
    this.last.push(0);
    body();
    this.byte(0);
    this.last.pop();
  }
  list(id: number, type: number, n: number, each: (i: number) => void): void {
    this.field(id, T.LIST);
    if (n < 15) this.byte((n << 4) | type);
    else {
      this.byte(0xf0 | type);
      this.varint(n);
    }
    for (let i = 0; i < n; i++) each(i);
  }
}
