/**
 * Issue #57, item 4's library candidates: the staged rows written as Parquet from their columns by
 * the npm packages a user would pick instead of DuckDB's writer, installed into `.bench/parquet-libraries/`
 * on first use (bench-packages.ts), never dependencies of pingroll:
 * - `parquet-wasm` (arrow-rs's writer compiled to WebAssembly), fed an Arrow table made over the
 *   columns' own buffers (`apache-arrow`'s makeData: offsets and bytes as a parser would hold them, no
 *   JavaScript string made), with dictionaries, as DuckDB writes the staged files;
 * - `hyparquet-writer` (JavaScript), which takes each column as an array of JavaScript values, so
 *   each string is made from its bytes first.
 */
import { writeFileSync } from 'node:fs';
import { BenchPackages } from './bench-packages.js';

export const PARQUET_LIBRARIES = new BenchPackages('parquet-libraries', { 'apache-arrow': '21.2.0', 'parquet-wasm': '0.8.0', 'hyparquet-writer': '0.17.0' });

/** A staged column as a parser of columns would hold it: a validity bit a row, and each row's bytes (offsets) or number. */
export type RowColumn = { name: string; valid: Uint8Array; nulls: number } & (
  | { int: true; values: BigInt64Array }
  | { int: false; offsets: Int32Array; bytes: Uint8Array });

/**
 * Where each field of CSV rows of `fields` fields lies in `text`: the rows, and each field's first
 * byte and end (row by row); a quoted field's bytes are those inside its quotes (the staged rows'
 * fields hold no quote to undouble).
 */
export function csvFieldPlaces(text: Uint8Array, fields: number): { rowCount: number; starts: Int32Array; ends: Int32Array } {
  let rowCount = 0;
  for (let i = text.indexOf(0x0a); i >= 0; i = text.indexOf(0x0a, i + 1)) rowCount++;
  const starts = new Int32Array(rowCount * fields), ends = new Int32Array(rowCount * fields);
  let r = 0, f = 0, s = 0, quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === 0x22) quoted = !quoted;
    if (quoted || (c !== 0x2c && c !== 0x0a)) continue;
    const q = text[s] === 0x22 ? 1 : 0;
    starts[r * fields + f] = s + q;
    ends[r * fields + f] = i - q;
    s = i + 1;
    if (c === 0x0a) { r++; f = 0; } else f++;
  }
  if (r !== rowCount) throw new Error(`the CSV's ${rowCount} lines hold ${r} rows`);
  return { rowCount, starts, ends };
}

/**
 * The columns of `rowCount` CSV rows, from each field's bytes (`starts`/`ends` into `text`, a row's
 * fields after one another); an empty field is a null, as the staged CSV writes one.
 */
export function rowColumns(columns: ReadonlyArray<{ name: string; type: string }>, text: Uint8Array, starts: Int32Array, ends: Int32Array, rowCount: number): RowColumn[] {
  const n = columns.length;
  return columns.map((c, col): RowColumn => {
    const valid = new Uint8Array(Math.ceil(rowCount / 8));
    let nulls = 0;
    if (c.type === 'BIGINT') {
      const values = new BigInt64Array(rowCount);
      for (let r = 0; r < rowCount; r++) {
        const s = starts[r * n + col]!, e = ends[r * n + col]!;
        if (s === e) { nulls++; continue; }
        valid[r >> 3]! |= 1 << (r & 7);
        values[r] = int64Of(text, s, e);
      }
      return { name: c.name, int: true, values, valid, nulls };
    }
    const offsets = new Int32Array(rowCount + 1);
    let size = 0;
    for (let r = 0; r < rowCount; r++) size += ends[r * n + col]! - starts[r * n + col]!;
    const bytes = new Uint8Array(size);
    let at = 0;
    for (let r = 0; r < rowCount; r++) {
      const s = starts[r * n + col]!, e = ends[r * n + col]!;
      if (s === e) nulls++;
      else valid[r >> 3]! |= 1 << (r & 7);
      bytes.set(text.subarray(s, e), at);
      at += e - s;
      offsets[r + 1] = at;
    }
    return { name: c.name, int: false, offsets, bytes, valid, nulls };
  });
}

/** A signed 64-bit field's value (staged format 4's keys are negative and past 2^53): a double's sum while it is exact, else BigInt's parse. */
function int64Of(text: Uint8Array, s: number, e: number): bigint {
  const minus = text[s] === 0x2d ? 1 : 0;
  if (e - s - minus > 15) return BigInt(Buffer.from(text.buffer, text.byteOffset + s, e - s).toString('latin1'));
  let v = 0;
  for (let j = s + minus; j < e; j++) v = v * 10 + text[j]! - 0x30;
  return BigInt(minus ? -v : v);
}

type Writer = (columns: RowColumn[], rowCount: number, to: string) => void;

/** parquet-wasm's writer and hyparquet-writer's, each writing `columns` to a file with dictionaries, uncompressed, `rowGroupRows` rows a group. */
/* The bench-only packages are loaded untyped (`any`). */
export async function parquetLibraryWriters(rowGroupRows: number): Promise<Record<'parquet-wasm' | 'hyparquet-writer', Writer>> {
  await PARQUET_LIBRARIES.ensure();
  const arrow = await PARQUET_LIBRARIES.import<any>('apache-arrow');
  const pw = await PARQUET_LIBRARIES.import<any>('parquet-wasm/node');
  const hw = await PARQUET_LIBRARIES.import<any>('hyparquet-writer');
  return {
    'parquet-wasm': (columns, rowCount, to) => {
      const children = columns.map((c) => c.int
        ? arrow.makeData({ type: new arrow.Int64(), length: rowCount, nullCount: c.nulls, nullBitmap: c.nulls ? c.valid : null, data: c.values })
        : arrow.makeData({ type: new arrow.Utf8(), length: rowCount, nullCount: c.nulls, nullBitmap: c.nulls ? c.valid : null, valueOffsets: c.offsets, data: c.bytes }));
      const fields = columns.map((c, i) => new arrow.Field(c.name, children[i].type, true));
      const schema = new arrow.Schema(fields);
      const batch = new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(fields), length: rowCount, nullCount: 0, children }));
      const table = pw.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table(schema, [batch]), 'stream'));
      const props = new pw.WriterPropertiesBuilder().setCompression(pw.Compression.UNCOMPRESSED).setDictionaryEnabled(true).setMaxRowGroupSize(rowGroupRows).build();
      // writeParquet takes the table (its memory is the module's to free).
      writeFileSync(to, pw.writeParquet(table, props));
    },
    'hyparquet-writer': (columns, rowCount, to) => {
      const decoder = new TextDecoder();
      const columnData = columns.map((c) => {
        const data = new Array<string | bigint | null>(rowCount);
        for (let r = 0; r < rowCount; r++) {
          if (!(c.valid[r >> 3]! & (1 << (r & 7)))) data[r] = null;
          else data[r] = c.int ? c.values[r]! : decoder.decode(c.bytes.subarray(c.offsets[r]!, c.offsets[r + 1]!));
        }
        return { name: c.name, data, type: c.int ? 'INT64' : 'STRING', nullable: true };
      });
      writeFileSync(to, new Uint8Array(hw.parquetWriteBuffer({ columnData, rowGroupSize: rowGroupRows, codec: 'UNCOMPRESSED' })));
    },
  };
}
