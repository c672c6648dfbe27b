/**
 * Issue #57, item 4's own candidate: the staged rows written as Parquet from their columns by a writer
 * of pingroll's own, in JavaScript, its string columns' dictionaries built in JavaScript or in
 * WebAssembly (`wasmDictionaries`, bench/parquet-dictionary.as.ts: the same bytes either way),
 * measured beside DuckDB's writer and the libraries' (bench/staging-paths.ts). It writes what DuckDB's
 * staged files hold, as DuckDB's reader reads them:
 *
 * - each column OPTIONAL (a definition level a row: an RLE run when the page has no null, else bit-packed);
 * - a string column with a dictionary of its values in the row group (found by a hash of their bytes,
 *   no JavaScript string made), its rows as the dictionary's indices (bit-packed, or one RLE run when
 *   every row has the same value); or, when most of its values differ (a ping id, a natural key), the
 *   values as they are (PLAIN), as a dictionary would only add to them;
 * - a 64-bit column PLAIN, with its least and greatest value and nulls in the chunk's statistics;
 * - a page a column chunk, uncompressed (as the local spool writes), `rowGroupRows` rows a group.
 *
 * Pages and footer in Parquet's Thrift compact encoding (parquet-format's parquet.thrift). Not used by
 * the product: a measure of what a writer of its own costs, before one is built where the parser is.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import type { RowColumn } from './parquet-libraries.js';

/** Parquet's enums, as parquet.thrift numbers them. */
const TYPE = { INT64: 2, BYTE_ARRAY: 6 } as const;
const ENCODING = { PLAIN: 0, RLE: 3, RLE_DICTIONARY: 8 } as const;
const PAGE = { DATA: 0, DICTIONARY: 2 } as const;
const OPTIONAL = 1;
/** A column's Parquet type: 64-bit integers, or strings' bytes. */
const physicalType = (c: RowColumn): number => (c.int ? TYPE.INT64 : TYPE.BYTE_ARRAY);
const CONVERTED_UTF8 = 0;

/** Thrift compact types. */
const T = { I32: 5, I64: 6, BINARY: 8, LIST: 9, STRUCT: 12 } as const;

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
    this.buf[this.at++] = v & 255;
    this.buf[this.at++] = (v >>> 8) & 255;
    this.buf[this.at++] = (v >>> 16) & 255;
    this.buf[this.at++] = (v >>> 24) & 255;
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
  /** A zigzag varint of a 64-bit integer. */
  zigzag(v: bigint): void {
    let z = v >= 0n ? v << 1n : ((-v) << 1n) - 1n;
    this.room(10);
    while (z >= 0x80n) {
      this.buf[this.at++] = Number(z & 0x7fn) | 0x80;
      z >>= 7n;
    }
    this.buf[this.at++] = Number(z);
  }

  // Thrift compact: a field's header carries its id's distance from the last field of its struct.
  field(id: number, type: number): void {
    const last = this.last[this.last.length - 1]!;
    const delta = id - last;
    if (delta > 0 && delta <= 15) this.byte((delta << 4) | type);
    else {
      this.byte(type);
      this.zigzag(BigInt(id));
    }
    this.last[this.last.length - 1] = id;
  }
  i32(id: number, v: number): void {
    this.field(id, T.I32);
    this.zigzag(BigInt(v));
  }
  i64(id: number, v: number | bigint): void {
    this.field(id, T.I64);
    this.zigzag(BigInt(v));
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

/** A column chunk's place and sizes, for the footer. */
interface Chunk { column: number; encodings: number[]; values: number; start: number; dictionaryAt: number | null; dataAt: number; bytes: number; nulls: number; min: bigint | null; max: bigint | null }

/** Writes `columns` (of `rowCount` rows) to `to` as Parquet, `rowGroupRows` rows a group; the string columns' dictionaries built here, or by `dictionaryOf`. */
export function writeOwnParquet(columns: RowColumn[], rowCount: number, to: string, rowGroupRows: number, dictionaryOf?: DictionaryOf): void {
  // The pages go to the file as they are made; the footer is made after them.
  const file = new FileOut(to);
  try {
    file.write(MAGIC, MAGIC.length);
    const groups: Array<{ rows: number; chunks: Chunk[] }> = [];
    const page = new Bytes();
    const scratch = new Scratch();
    for (let from = 0; from < rowCount; from += rowGroupRows) {
      const rows = Math.min(rowGroupRows, rowCount - from);
      const chunks: Chunk[] = [];
      for (const [i, c] of columns.entries()) {
        chunks.push(c.int ? int64Chunk(file, page, c, i, from, rows) : stringChunk(file, page, dictionaryOf ? dictionaryOf(i, from, rows) : jsDictionary(scratch, c, from, rows), c, i, from, rows));
      }
      groups.push({ rows, chunks });
    }
    const out = new Bytes();
    out.structBody(() => {
      out.i32(1, 1);
      out.list(2, T.STRUCT, columns.length + 1, (i) => out.structBody(() => {
        if (i === 0) {
          out.string(4, 'schema');
          out.i32(5, columns.length);
          return;
        }
        const c = columns[i - 1]!;
        out.i32(1, physicalType(c));
        out.i32(3, OPTIONAL);
        out.string(4, c.name);
        if (!c.int) out.i32(6, CONVERTED_UTF8);
      }));
      out.i64(3, rowCount);
      out.list(4, T.STRUCT, groups.length, (g) => out.structBody(() => {
        const group = groups[g]!;
        out.list(1, T.STRUCT, group.chunks.length, (k) => out.structBody(() => {
          const ch = group.chunks[k]!;
          out.i64(2, ch.start);
          out.struct(3, () => {
            out.i32(1, physicalType(columns[ch.column]!));
            out.list(2, T.I32, ch.encodings.length, (e) => out.zigzag(BigInt(ch.encodings[e]!)));
            out.list(3, T.BINARY, 1, () => {
              const name = Buffer.from(columns[ch.column]!.name);
              out.varint(name.length);
              out.raw(name);
            });
            out.i32(4, 0);
            out.i64(5, ch.values);
            out.i64(6, ch.bytes);
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
        out.i64(2, group.chunks.reduce((n, ch) => n + ch.bytes, 0));
        out.i64(3, group.rows);
      }));
      out.string(6, 'pingroll');
    });
    out.u32le(out.at);
    out.raw(MAGIC);
    file.write(out.buf, out.at);
  } finally {
    file.close();
  }
}

function int64Bytes(v: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, v, true);
  return b;
}

/** Whether row `r` of a column has a value. */
function isValid(valid: Uint8Array, r: number): boolean {
  return (valid[r >> 3]! & (1 << (r & 7))) !== 0;
}

const MAGIC = Buffer.from('PAR1');

/** The file written: its pages as they are made (`at`: where the next goes). */
class FileOut {
  at = 0;
  private readonly fd: number;
  readonly head = new Bytes();
  constructor(path: string) {
    this.fd = openSync(path, 'w');
  }
  write(buf: Uint8Array, len: number): void {
    for (let done = 0; done < len;) done += writeSync(this.fd, buf, done, len - done);
    this.at += len;
  }
  close(): void {
    closeSync(this.fd);
  }
}

/** A page's header and body, from `body`'s bytes. */
function writePage(out: FileOut, body: Bytes, header: (h: Bytes) => void): void {
  out.head.at = 0;
  out.head.structBody(() => header(out.head));
  out.write(out.head.buf, out.head.at);
  out.write(body.buf, body.at);
}

/** The definition levels of rows [from, from + rows) (bit width 1), 4-byte length first: one RLE run of 1 when none is null, else bit-packed. */
function defLevels(page: Bytes, valid: Uint8Array, from: number, rows: number, nulls: number): void {
  const lengthAt = page.at;
  page.u32le(0);
  const start = page.at;
  if (nulls === 0) {
    page.varint(rows * 2);
    page.byte(1);
  } else {
    const groups = Math.ceil(rows / 8);
    page.varint(groups * 2 + 1);
    page.room(groups);
    for (let g = 0; g < groups; g++) {
      let b = 0;
      for (let j = 0; j < 8; j++) {
        const r = g * 8 + j;
        if (r < rows && isValid(valid, from + r)) b |= 1 << j;
      }
      page.buf[page.at++] = b;
    }
  }
  const n = page.at - start;
  page.buf[lengthAt] = n & 255;
  page.buf[lengthAt + 1] = (n >>> 8) & 255;
  page.buf[lengthAt + 2] = (n >>> 16) & 255;
  page.buf[lengthAt + 3] = (n >>> 24) & 255;
}

/** The nulls among rows [from, from + rows). */
function nullsIn(valid: Uint8Array, from: number, rows: number): number {
  let nulls = 0;
  for (let r = from; r < from + rows; r++) if (!isValid(valid, r)) nulls++;
  return nulls;
}

function int64Chunk(out: FileOut, page: Bytes, c: Extract<RowColumn, { int: true }>, column: number, from: number, rows: number): Chunk {
  const start = out.at;
  const nulls = nullsIn(c.valid, from, rows);
  page.at = 0;
  defLevels(page, c.valid, from, rows, nulls);
  page.room((rows - nulls) * 8);
  // The values' bytes copied as they lie (little-endian, as Parquet's: the machines Node runs on), a
  // run of rows with values at a time; the least and greatest found by their two 32-bit words (the
  // high one signed), with no BigInt made a row.
  const src = new Uint8Array(c.values.buffer, c.values.byteOffset, c.values.byteLength);
  const words = new Int32Array(c.values.buffer, c.values.byteOffset, c.values.length * 2);
  let lo = -1, hi = -1;
  for (let r = from; r < from + rows;) {
    if (!isValid(c.valid, r)) {
      r++;
      continue;
    }
    let end = r + 1;
    while (end < from + rows && isValid(c.valid, end)) end++;
    page.buf.set(src.subarray(r * 8, end * 8), page.at);
    page.at += (end - r) * 8;
    if (lo === -1) lo = hi = r;
    let lh = words[lo * 2 + 1]!, ll = words[lo * 2]! >>> 0, hh = words[hi * 2 + 1]!, hl = words[hi * 2]! >>> 0;
    for (let k = r; k < end; k++) {
      const h = words[k * 2 + 1]!, l = words[k * 2]! >>> 0;
      if (h < lh || (h === lh && l < ll)) {
        lo = k;
        lh = h;
        ll = l;
      }
      if (h > hh || (h === hh && l > hl)) {
        hi = k;
        hh = h;
        hl = l;
      }
    }
    r = end;
  }
  const min = lo === -1 ? null : c.values[lo]!, max = hi === -1 ? null : c.values[hi]!;
  writePage(out, page, (h) => dataHeader(h, page.at, rows, ENCODING.PLAIN));
  return { column, encodings: [ENCODING.PLAIN, ENCODING.RLE], values: rows, start, dictionaryAt: null, dataAt: start, bytes: out.at - start, nulls, min, max };
}

/** A string column's dictionary as it is built: a hash table of first rows, and each row's index. */
class Scratch {
  table = new Int32Array(0);
  firstRow = new Int32Array(0);
  index = new Int32Array(0);
  size(rows: number): void {
    if (this.index.length < rows) {
      this.index = new Int32Array(rows);
      this.firstRow = new Int32Array(rows);
    }
    const places = tablePlaces(rows);
    if (places !== this.table.length) this.table = new Int32Array(places);
  }
}

/** A dictionary's hash table for `rows` values: a power of two, at least twice as many places (so a probe seldom walks far). */
function tablePlaces(rows: number): number {
  let places = 16;
  while (places < rows * 2) places *= 2;
  return places;
}

/** Values a string column's chunk looks at before it gives up a dictionary whose values nearly all differ. */
const PROBE = 2_048;

/**
 * A string column's group as a dictionary: each value's entry (`index`, `n` values, nulls skipped),
 * each entry's first row (`firstRow`), `distinct` entries; or `plain` when its first PROBE values
 * nearly all differ (then `n` is how far it looked).
 */
export interface GroupDictionary { plain: boolean; distinct: number; n: number; index: Int32Array; firstRow: Int32Array }

/** Where a string column's group's dictionary is built: `column` is its place among the columns written. */
export type DictionaryOf = (column: number, from: number, rows: number) => GroupDictionary;

/** A group's dictionary, built here in JavaScript. */
function jsDictionary(s: Scratch, c: Extract<RowColumn, { int: false }>, from: number, rows: number): GroupDictionary {
  const { valid, offsets, bytes } = c;
  s.size(rows);
  const { table, firstRow, index } = s;
  const mask = table.length - 1;
  table.fill(-1);
  let distinct = 0, n = 0;
  for (let r = from; r < from + rows; r++) {
    if (!isValid(valid, r)) continue;
    // A column whose first values nearly all differ (an id) is written PLAIN, and not hashed on.
    if (n === PROBE && distinct * 4 > PROBE * 3) return { plain: true, distinct, n, index, firstRow };
    const a = offsets[r]!, b = offsets[r + 1]!;
    // A multiplicative hash of the value's bytes, four at a time, then the rest and the length.
    let h = 0x811c9dc5, i = a;
    for (; i + 4 <= b; i += 4) h = Math.imul(h ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)), 0x01000193);
    for (; i < b; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
    h = Math.imul(h ^ (h >>> 15) ^ (b - a), 0x2c1b3c6d);
    let slot = (h ^ (h >>> 13)) & mask;
    for (;;) {
      const e = table[slot]!;
      if (e === -1) {
        table[slot] = distinct;
        firstRow[distinct] = r;
        index[n++] = distinct++;
        break;
      }
      const f = firstRow[e]!, fa = offsets[f]!, len = offsets[f + 1]! - fa;
      if (len === b - a) {
        let same = true;
        for (let i = 0; i < len; i++) {
          if (bytes[fa + i] !== bytes[a + i]) {
            same = false;
            break;
          }
        }
        if (same) {
          index[n++] = e;
          break;
        }
      }
      slot = (slot + 1) & mask;
    }
  }
  return { plain: false, distinct, n, index, firstRow };
}

/** A string column's chunk: with a dictionary when at most half its values differ, else PLAIN. */
function stringChunk(out: FileOut, page: Bytes, d: GroupDictionary, c: Extract<RowColumn, { int: false }>, column: number, from: number, rows: number): Chunk {
  const start = out.at;
  const { valid, offsets, bytes } = c;
  const { plain, distinct, n, index, firstRow } = d;
  let nulls = rows - n;
  page.at = 0;
  if (plain || distinct * 2 > n) {
    // PLAIN: each value its length and bytes.
    if (plain) nulls = nullsIn(valid, from, rows);
    defLevels(page, valid, from, rows, nulls);
    for (let r = from; r < from + rows; r++) {
      if (!isValid(valid, r)) continue;
      plainValue(page, bytes, offsets[r]!, offsets[r + 1]!);
    }
    writePage(out, page, (h) => dataHeader(h, page.at, rows, ENCODING.PLAIN));
    return { column, encodings: [ENCODING.PLAIN, ENCODING.RLE], values: rows, start, dictionaryAt: null, dataAt: start, bytes: out.at - start, nulls, min: null, max: null };
  }
  // The dictionary page: its values PLAIN, in index order.
  for (let e = 0; e < distinct; e++) {
    const f = firstRow[e]!;
    plainValue(page, bytes, offsets[f]!, offsets[f + 1]!);
  }
  writePage(out, page, (h) => {
    h.i32(1, PAGE.DICTIONARY);
    h.i32(2, page.at);
    h.i32(3, page.at);
    h.struct(7, () => {
      h.i32(1, distinct);
      h.i32(2, ENCODING.PLAIN);
    });
  });
  const dataAt = out.at;
  page.at = 0;
  defLevels(page, valid, from, rows, nulls);
  // The indices: a byte of their bit width, then one RLE run when all are one value, else bit-packed in groups of 8.
  const width = Math.max(1, 32 - Math.clz32(distinct - 1));
  page.byte(width);
  if (distinct === 1) {
    page.varint(n * 2);
    page.room(Math.ceil(width / 8));
    for (let k = 0; k < Math.ceil(width / 8); k++) page.buf[page.at++] = 0;
  } else {
    const groups = Math.ceil(n / 8);
    page.varint(groups * 2 + 1);
    page.room(groups * width);
    const buf = page.buf;
    let at = page.at, acc = 0, bits = 0;
    for (let k = 0; k < groups * 8; k++) {
      acc |= (k < n ? index[k]! : 0) << bits;
      bits += width;
      while (bits >= 8) {
        buf[at++] = acc & 255;
        acc >>>= 8;
        bits -= 8;
      }
    }
    page.at = at;
  }
  writePage(out, page, (h) => dataHeader(h, page.at, rows, ENCODING.RLE_DICTIONARY));
  return { column, encodings: [ENCODING.PLAIN, ENCODING.RLE, ENCODING.RLE_DICTIONARY], values: rows, start, dictionaryAt: start, dataAt, bytes: out.at - start, nulls, min: null, max: null };
}

/** A string value PLAIN: its length, then its bytes [a, b) (copied a byte at a time: a subarray a value cost more). */
function plainValue(page: Bytes, bytes: Uint8Array, a: number, b: number): void {
  page.room(4 + b - a);
  page.u32le(b - a);
  const buf = page.buf;
  let at = page.at;
  for (let i = a; i < b; i++) buf[at++] = bytes[i]!;
  page.at = at;
}

function dataHeader(h: Bytes, size: number, rows: number, encoding: number): void {
  h.i32(1, PAGE.DATA);
  h.i32(2, size);
  h.i32(3, size);
  h.struct(5, () => {
    h.i32(1, rows);
    h.i32(2, encoding);
    h.i32(3, ENCODING.RLE);
    h.i32(4, ENCODING.RLE);
  });
}

/**
 * The string columns' dictionaries built in WebAssembly (bench/parquet-dictionary.as.ts, compiled to
 * `kernel`): each string column's validity, offsets and bytes copied into the module's memory first,
 * as a parser of columns would hold them there, so that a call reads no JavaScript memory.
 */
export function wasmDictionaries(kernel: string, columns: RowColumn[], rowGroupRows: number): DictionaryOf {
  const instance = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(kernel)), { env: { abort: () => {} } });
  const memory = instance.exports.memory as WebAssembly.Memory;
  const dictionary = instance.exports.dictionary as (...args: number[]) => number;
  const places = tablePlaces(rowGroupRows);
  // Past the module's first page (its stack): the count, the table, the entries' first rows, the indices, then the columns.
  let end = 65_536;
  const take = (bytes: number): number => {
    const at = end;
    end += Math.ceil(bytes / 8) * 8;
    return at;
  };
  const COUNT = take(8), TABLE = take(places * 4), FIRST = take(rowGroupRows * 4), INDEX = take(rowGroupRows * 4);
  const at = columns.map((c) => (c.int ? null : { valid: take(c.valid.length), offsets: take(c.offsets.byteLength), bytes: take(c.bytes.length) }));
  memory.grow(Math.max(0, Math.ceil(end / 65_536) - memory.buffer.byteLength / 65_536));
  const mem = new Uint8Array(memory.buffer);
  for (const [i, c] of columns.entries()) {
    const p = at[i];
    if (c.int || !p) continue;
    mem.set(c.valid, p.valid);
    mem.set(new Uint8Array(c.offsets.buffer, c.offsets.byteOffset, c.offsets.byteLength), p.offsets);
    mem.set(c.bytes, p.bytes);
  }
  const index = new Int32Array(memory.buffer, INDEX, rowGroupRows), firstRow = new Int32Array(memory.buffer, FIRST, rowGroupRows);
  const count = new Int32Array(memory.buffer, COUNT, 1);
  return (column, from, rows) => {
    const p = at[column]!;
    const distinct = dictionary(p.bytes, p.offsets, p.valid, from, rows, TABLE, places - 1, FIRST, INDEX, PROBE, COUNT);
    return { plain: distinct === -1, distinct: Math.max(0, distinct), n: count[0]!, index, firstRow };
  };
}
