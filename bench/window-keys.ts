/**
 * Issue #56, item 7: the ping-id window in DuckDB with the id in a 16-byte form instead of its text,
 * to weigh against the merge of sorted keys outside DuckDB (bench/window-merge.ts) before either is
 * built. Each history day is N random UUIDs, and the day checked is N ids of which 2% come from the
 * history days (as the busy day's resends are). Each form is kept sorted in row groups of 100,000, as
 * the rollup keeps a day's ids, but the id alone (the rollup's files also hold event_ms, repeat and
 * counted), and checked by one semi-join of the day's ids against the history files (the rollup's
 * check joins in passes of 2M ids): a comparison of the forms, not of the rollup's own cost.
 * - text: the id as VARCHAR, zstd (what rollup/ping-window.ts writes today);
 * - UUID: the id as DuckDB's UUID (16 bytes), uncompressed (random bytes do not compress);
 * - two 64-bit halves (UBIGINT), uncompressed: what a portable SQL engine could hold;
 * - UUID unsorted: keeping without the sort (no row group can then be skipped).
 * DuckDB on 2 threads; the files are read through the page cache as they were just written.
 *
 * Usage: BENCH_PASSES=3 node dist/bench/window-keys.js [history days, default 3] [ids a day, default 10000000]
 * (the files, about 0.5 GB a day, in a new folder under TMPDIR, removed at the end).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngine, queryRows } from '../lib/duckdb-engine.js';
import { median } from './cold-run.js';

const HALVES = (id: string): string => `('0x' || substr(replace(${id}, '-', ''), 1, 16))::UBIGINT AS hi, ('0x' || substr(replace(${id}, '-', ''), 17, 16))::UBIGINT AS lo`;
const FORMS = [
  { name: 'text, sorted, zstd (today)', file: 't', keep: (t: string) => `SELECT id AS k FROM ${t} ORDER BY k`, codec: 'zstd', day: 'SELECT id AS k FROM day', on: 'k' },
  { name: 'UUID, sorted, uncompressed', file: 'u', keep: (t: string) => `SELECT id::UUID AS k FROM ${t} ORDER BY k`, codec: 'uncompressed', day: 'SELECT id::UUID AS k FROM day', on: 'k' },
  { name: 'two 64-bit halves, sorted, uncompressed', file: 'p', keep: (t: string) => `SELECT ${HALVES('id')} FROM ${t} ORDER BY hi, lo`, codec: 'uncompressed', day: `SELECT ${HALVES('id')} FROM day`, on: 'hi, lo' },
  { name: 'UUID, unsorted, uncompressed', file: 'x', keep: (t: string) => `SELECT id::UUID AS k FROM ${t}`, codec: 'uncompressed', day: 'SELECT id::UUID AS k FROM day', on: 'k' },
];

async function main(): Promise<void> {
  const days = Number(process.argv[2] ?? 3);
  const n = Number(process.argv[3] ?? 10_000_000);
  const passes = Number(process.env.BENCH_PASSES ?? 3);
  const dir = mkdtempSync(join(tmpdir(), 'pingroll-window-keys-'));
  try {
    const db = await openEngine({ memoryLimitMb: 4096, threads: 2, tempDir: join(dir, 'spill') });
    const timed = async (sql: string): Promise<number> => {
      const started = performance.now();
      await db.run(sql);
      return (performance.now() - started) / 1000;
    };
    const resent = Math.floor((n * 0.02) / days);
    for (let d = 0; d < days; d++) await db.run(`CREATE TABLE h${d} AS SELECT gen_random_uuid()::VARCHAR AS id FROM range(${n})`);
    await db.run(`CREATE TABLE day AS ${Array.from({ length: days }, (_, d) => `(SELECT id FROM h${d} USING SAMPLE ${resent} ROWS)`).join(' UNION ALL ')}
      UNION ALL (SELECT gen_random_uuid()::VARCHAR FROM range(${n - resent * days}))`);
    const keep = new Map<string, number[]>(FORMS.map((f) => [f.name, []])), check = new Map<string, number[]>(FORMS.map((f) => [f.name, []]));
    for (const f of FORMS) {
      await db.run(`CREATE TABLE day_${f.file} AS ${f.day}`);
      for (let d = 0; d < days; d++) {
        keep.get(f.name)!.push(await timed(`COPY (${f.keep(`h${d}`)}) TO '${join(dir, `${f.file}${d}.parquet`)}' (FORMAT parquet, COMPRESSION ${f.codec}, ROW_GROUP_SIZE 100000)`));
      }
    }
    const files = (f: string): string => `[${Array.from({ length: days }, (_, d) => `'${join(dir, `${f}${d}.parquet`)}'`).join(', ')}]`;
    for (let p = 0; p < passes; p++) {
      for (const f of FORMS) {
        const started = performance.now();
        const [row] = await queryRows<{ n: bigint }>(db, `SELECT count(*) AS n FROM day_${f.file} SEMI JOIN read_parquet(${files(f.file)}) h USING (${f.on})`);
        check.get(f.name)!.push((performance.now() - started) / 1000);
        if (Number(row!.n) !== resent * days) throw new Error(`${f.name}: ${row!.n} ids found, ${resent * days} resent`);
      }
    }
    const bytes = async (f: string): Promise<number> => Number((await queryRows<{ b: bigint }>(db, `SELECT sum(total_compressed_size)::BIGINT AS b FROM parquet_metadata(${files(f)})`))[0]!.b) / days;
    const text = median(check.get(FORMS[0]!.name)!);
    const lines = [
      `The ping-id window in DuckDB by the id's form: ${days} history days of ${n.toLocaleString('en-US')} ids, the day's ${n.toLocaleString('en-US')} ids (${(resent * days).toLocaleString('en-US')} of them resent, each found), DuckDB on 2 threads, keeping a day's median, the check the median of ${passes} passes (node ${process.version}):`,
      '',
      '| form | keeping a day s | MB a day | check s | history ids a second | check against text |',
      '|---|---:|---:|---:|---:|---:|',
    ];
    for (const f of FORMS) {
      const c = median(check.get(f.name)!);
      lines.push(`| ${f.name} | ${median(keep.get(f.name)!).toFixed(2)} | ${((await bytes(f.file)) / 1e6).toFixed(0)} | ${c.toFixed(2)} | ${((days * n) / c / 1e6).toFixed(1)}M | ${(c / text).toFixed(2)}x |`);
    }
    db.closeSync();
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
