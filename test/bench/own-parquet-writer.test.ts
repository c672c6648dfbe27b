/**
 * The bench's own Parquet writer (bench/own-parquet-writer.ts, issue #57 item 4's candidate): what it
 * writes, DuckDB's reader reads back row for row, with the encodings and statistics it says.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DuckDBConnection } from '@duckdb/node-api';
import { openEngine, queryRows, sqlString } from '../../lib/duckdb-engine.js';
import { csvFieldPlaces, rowColumns } from '../../bench/parquet-libraries.js';
import { rng } from '../../tools/sample/access-log-generator.js';
import { wasmDictionaries, writeOwnParquet } from '../../bench/own-parquet-writer.js';
import { benchKernel } from '../../bench/bench-data.js';

const dir = mkdtempSync(join(tmpdir(), 'own-parquet-'));
let db: DuckDBConnection;
beforeAll(async () => { db = await openEngine({ memoryLimitMb: 512, threads: 1, tempDir: join(dir, 'spill') }); });
afterAll(() => {
  db?.closeSync();
  rmSync(dir, { recursive: true, force: true });
});

const COLUMNS = [
  { name: 'source', type: 'VARCHAR' },
  { name: 'series', type: 'VARCHAR' },
  { name: 'ping_id', type: 'VARCHAR' },
  { name: 'natural_key', type: 'VARCHAR' },
  { name: 'user_id', type: 'VARCHAR' },
  { name: 'never', type: 'VARCHAR' },
  { name: 'event_ms', type: 'BIGINT' },
  { name: 'pos', type: 'BIGINT' },
  { name: 'key_hi', type: 'BIGINT' },
] as const;

/** `rows` rows of COLUMNS: one source, 40 series (some with multi-byte letters), a unique id, a unique key or null, a user or null, a column all null, numbers with nulls, either sign and the extremes. */
function sample(rows: number, seed: number): Array<Array<string | bigint | null>> {
  const r = rng(seed);
  const extremes = [-(2n ** 63n), 2n ** 63n - 1n, -1n, 0n];
  return Array.from({ length: rows }, (_, i) => [
    's3',
    `série-${Math.floor(r() * 40)}`,
    `id-${i}-${Math.floor(r() * 1e9)}`,
    r() < 0.1 ? null : `key-${Math.floor(r() * 1e12)}`,
    r() < 0.3 ? null : `user-${Math.floor(r() * 200)}`,
    null,
    BigInt(1_793_000_000_000 + Math.floor(r() * 86_400_000)),
    r() < 0.2 ? null : BigInt(Math.floor(r() * 7200)),
    i < extremes.length ? extremes[i]! : BigInt(Math.floor((r() - 0.5) * 2 ** 52)) * 1024n,
  ]);
}

/** The rows as the bench makes its columns: as CSV (an empty field a null), its fields' places, the columns of them. */
function columnsOf(rows: Array<Array<string | bigint | null>>): ReturnType<typeof rowColumns> {
  const text = Buffer.from(rows.map((row) => row.map((v) => (v === null ? '' : String(v))).join(',') + '\n').join(''));
  const { starts, ends } = csvFieldPlaces(text, COLUMNS.length);
  return rowColumns(COLUMNS, text, starts, ends, rows.length);
}

describe("the bench's own Parquet writer", () => {
  it('tells apart values of which one begins the other, each its own dictionary entry', async () => {
    // 200 values, each the one before it and a letter more, twice each: in a table of 1,024 places some
    // meet, and only their lengths and bytes tell them apart.
    const values = Array.from({ length: 400 }, (_, i) => 'a'.repeat((i % 200) + 1));
    const rows = values.map((v, i) => ['s3', v, `id-${i}`, null, null, null, BigInt(i), null, null]);
    const file = join(dir, 'prefixes.parquet');
    writeOwnParquet(columnsOf(rows), rows.length, file, 400);
    const back = await queryRows<{ series: string }>(db, `SELECT series FROM read_parquet(${sqlString(file)}) ORDER BY event_ms`);
    expect(back.map((r) => r.series)).toEqual(values);
    const [meta] = await queryRows<{ encodings: string }>(db, `SELECT encodings FROM parquet_metadata(${sqlString(file)}) WHERE path_in_schema = 'series'`);
    expect(meta!.encodings).toMatch(/RLE_DICTIONARY/);
  });

  it('writes what DuckDB reads back row for row, over row groups, with dictionaries where values repeat', async () => {
    const rows = sample(2_500, 7);
    const file = join(dir, 'rows.parquet');
    writeOwnParquet(columnsOf(rows), rows.length, file, 1_000);
    const back = await queryRows<Record<string, unknown>>(db, `SELECT * FROM read_parquet(${sqlString(file)}) ORDER BY ping_id`);
    const expected = rows.map((row) => Object.fromEntries(COLUMNS.map((c, i) => [c.name, row[i]]))).sort((a, b) => (String(a.ping_id) < String(b.ping_id) ? -1 : 1));
    expect(back).toEqual(expected);
    const [types] = await queryRows<{ types: string }>(db, `SELECT string_agg(DISTINCT name || ' ' || type, ', ' ORDER BY name || ' ' || type) AS types FROM parquet_schema(${sqlString(file)}) WHERE type IS NOT NULL`);
    expect(types!.types).toBe('event_ms INT64, key_hi INT64, natural_key BYTE_ARRAY, never BYTE_ARRAY, ping_id BYTE_ARRAY, pos INT64, series BYTE_ARRAY, source BYTE_ARRAY, user_id BYTE_ARRAY');
    const meta = await queryRows<{ row_group_id: bigint; path_in_schema: string; encodings: string; stats_min_value: string | null; stats_max_value: string | null; stats_null_count: bigint; num_values: bigint }>(db,
      `SELECT row_group_id, path_in_schema, encodings, stats_min_value, stats_max_value, stats_null_count, num_values FROM parquet_metadata(${sqlString(file)}) ORDER BY row_group_id, column_id`);
    expect(meta.map((m) => Number(m.row_group_id))).toEqual([0, 1, 2].flatMap((g) => COLUMNS.map(() => g)));
    expect(meta.filter((m) => Number(m.row_group_id) === 2).map((m) => Number(m.num_values))).toEqual(COLUMNS.map(() => 500));
    const enc = (name: string): string => meta.find((m) => m.path_in_schema === name)!.encodings;
    // Values that repeat take a dictionary; a unique id does not.
    for (const name of ['source', 'series', 'user_id']) expect(enc(name)).toMatch(/RLE_DICTIONARY/);
    for (const name of ['ping_id', 'natural_key']) expect(enc(name)).not.toMatch(/DICTIONARY/);
    // Each group's least and greatest number, and its nulls.
    for (const [g, group] of [rows.slice(0, 1000), rows.slice(1000, 2000), rows.slice(2000)].entries()) {
      for (const [i, c] of COLUMNS.entries()) {
        const m = meta.find((x) => Number(x.row_group_id) === g && x.path_in_schema === c.name)!;
        const values = group.map((row) => row[i]);
        expect(Number(m.stats_null_count), `${c.name} in group ${g}`).toBe(values.filter((v) => v === null).length);
        if (c.type !== 'BIGINT') continue;
        const nums = values.filter((v): v is bigint => v !== null);
        expect(BigInt(m.stats_min_value!), `${c.name} in group ${g}`).toBe(nums.reduce((a, b) => (b < a ? b : a)));
        expect(BigInt(m.stats_max_value!), `${c.name} in group ${g}`).toBe(nums.reduce((a, b) => (b > a ? b : a)));
      }
    }
  });

  it('writes the same bytes with its dictionaries built in WebAssembly', () => {
    const rows = [...sample(5_000, 11), ...Array.from({ length: 300 }, (_, i) => ['s3', 'a'.repeat((i % 150) + 1), `p-${i}`, null, null, null, BigInt(i), null, null])];
    const columns = columnsOf(rows);
    const js = join(dir, 'js.parquet'), wasm = join(dir, 'wasm.parquet');
    writeOwnParquet(columns, rows.length, js, 2_500);
    writeOwnParquet(columns, rows.length, wasm, 2_500, wasmDictionaries(benchKernel(join(import.meta.dirname, '..', '..'), 'parquet-dictionary', dir), columns, 2_500));
    expect(readFileSync(wasm).equals(readFileSync(js))).toBe(true);
  });

  it('writes a group of one row, and a column of one value in every row', async () => {
    const rows = sample(1, 3);
    const file = join(dir, 'one.parquet');
    writeOwnParquet(columnsOf(rows), 1, file, 1_000);
    expect(await queryRows(db, `SELECT * FROM read_parquet(${sqlString(file)})`)).toEqual([Object.fromEntries(COLUMNS.map((c, i) => [c.name, rows[0]![i]]))]);
    // A group past the values a chunk looks at before it gives a dictionary up: the ids written PLAIN, every row as it was.
    const many = sample(4_000, 5);
    const big = join(dir, 'many.parquet');
    writeOwnParquet(columnsOf(many), many.length, big, 4_000);
    const back = await queryRows<Record<string, unknown>>(db, `SELECT * FROM read_parquet(${sqlString(big)}) ORDER BY ping_id`);
    expect(back).toEqual(many.map((row) => Object.fromEntries(COLUMNS.map((c, i) => [c.name, row[i]]))).sort((a, b) => (String(a.ping_id) < String(b.ping_id) ? -1 : 1)));
    const encodings = await queryRows<{ path_in_schema: string; encodings: string; stats_null_count: bigint }>(db, `SELECT path_in_schema, encodings, stats_null_count FROM parquet_metadata(${sqlString(big)}) WHERE path_in_schema IN ('natural_key', 'ping_id', 'source', 'user_id') ORDER BY path_in_schema`);
    expect(encodings.map((e) => [e.path_in_schema, /DICTIONARY/.test(e.encodings)])).toEqual([['natural_key', false], ['ping_id', false], ['source', true], ['user_id', true]]);
    expect(Number(encodings[0]!.stats_null_count)).toBe(many.filter((row) => row[3] === null).length);
    expect(Number(encodings[3]!.stats_null_count)).toBe(many.filter((row) => row[4] === null).length);
  });
});
