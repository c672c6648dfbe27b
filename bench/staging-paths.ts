/**
 * Issue #57, item 4: the ways the parser's rows could reach the staged Parquet, measured on the
 * small-object day's own rows (`make rollup` of the job bench's day, once, into .bench/staging-out;
 * its staged files are the rows). In one process with DuckDB on 2 threads, interleaved passes, medians:
 *
 * - the path before item 4: the rows as CSV (as the parser wrote them) to Parquet in one COPY, and
 *   its two halves apart: reading the CSV into a table, and writing that table as Parquet;
 * - the same COPY with the writer's options that could make it cheaper (no bloom filters; Parquet V2);
 * - DuckDB's appender fed data chunks from JavaScript, each string set from its bytes
 *   (`vector_assign_string_element_len`), each number written into the vector: the rows as columns,
 *   with no text, through the only way @duckdb/node-api has to hand DuckDB values;
 * - Parquet written from the rows' columns by the libraries a user would pick (bench/parquet-libraries.ts:
 *   parquet-wasm, hyparquet-writer), and by pingroll's own writer (ingest/batch/staged-parquet.ts)
 *   from a part file of the staged rows as the parser writes them, uncompressed and Snappy; each file
 *   checked to hold the same rows as DuckDB's, and the rollup over pingroll's file;
 * - the rollup of the day (rollup/engines/duckdb/day-rollup.ts) over the staged files as DuckDB
 *   wrote them (dictionary pages) and over the same rows without dictionaries (PLAIN).
 *
 * Usage: node dist/bench/staging-paths.js (BENCH_PASSES, default 9).
 */
import duckdb from '@duckdb/node-bindings';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { openEngine, queryRows, sqlString } from '../lib/duckdb-engine.js';
import { STAGED_FILE_COLUMNS, stagedRow } from '../ingest/staged-ping.js';
import { dayNumber } from '../lib/utc-day.js';
import { rollupDay } from '../rollup/engines/duckdb/day-rollup.js';

import { STAGED_ROW_GROUP_ROWS } from '../ingest/batch/day-spool.js';
import { benchLogDir } from './job-bench.js';
import { BENCH_DIR, rechunkedLogDir } from './bench-data.js';
import { measure, median, ROOT } from './cold-run.js';
import { csvFieldPlaces, parquetLibraryWriters, rowColumns } from './parquet-libraries.js';
import { StagedParquetWriter } from '../ingest/batch/staged-parquet.js';

const DAY = '2026-11-01';
const PASSES = Number(process.env.BENCH_PASSES ?? 9);
const WORK = join(ROOT, BENCH_DIR, 'staging-out');
/** The staged columns as DuckDB's `read_csv(..., columns = ...)` takes them (the rows as CSV: how the parser staged them before issue #57's item 4). */
const STAGED_CSV_COLUMNS = `{${STAGED_FILE_COLUMNS.map((c) => `'${c.name}': '${c.type}'`).join(', ')}}`;

/** The small-object day's staged files of DAY (window off), made by one `make rollup` into WORK; also rollup-statements.ts's. */
export async function smallDayStaged(): Promise<string[]> {
  const { dir: shards } = await benchLogDir(540_000);
  const dir = await rechunkedLogDir(shards, 2000);
  await rm(WORK, { recursive: true, force: true });
  measure('make', ['-s', 'rollup', `DATE=${DAY}`], { PINGROLL_LOGS: dir, PINGROLL_OUTPUT: join(WORK, 'out'), PINGROLL_WAREHOUSE: 'none', PINGROLL_DEDUPE_DAYS: '0' });
  const staging = join(WORK, 'out', '_staging');
  const files = readdirSync(staging).flatMap((batch) => {
    const d = join(staging, batch, `dt=${DAY}`);
    return readdirSync(d).filter((f) => f.endsWith('.parquet')).map((f) => join(d, f));
  });
  if (!files.length) throw new Error(`no staged file of ${DAY} under ${staging}`);
  return files;
}

/** CPU milliseconds of this process (DuckDB's threads included) and wall milliseconds of `f`. */
async function timed(f: () => Promise<void> | void): Promise<{ wall: number; cpu: number }> {
  const wall0 = performance.now(), cpu0 = process.cpuUsage();
  await f();
  const cpu = process.cpuUsage(cpu0);
  return { wall: performance.now() - wall0, cpu: (cpu.user + cpu.system) / 1000 };
}

if (import.meta.url === `file://${process.argv[1]}`) await main();

async function main(): Promise<void> {
  /** `--append`: one pass of the appender in this process (see appended), over the CSV the run before it made. */
  const appendOnly = process.argv[2] === '--append';
  const csv = join(WORK, 'rows.csv');
  const files = appendOnly ? [] : await smallDayStaged();
  const engine = await openEngine({ memoryLimitMb: 4096, threads: 2, tempDir: join(WORK, 'spill') });
  const plainFiles: string[] = [];
  if (!appendOnly) {
    const staged = `read_parquet([${files.map(sqlString).join(', ')}], hive_partitioning = false)`;
    // The rows as the parser writes them: CSV, quoted only where a field must be (DuckDB's CSV writer does the same).
    await engine.run(`COPY (SELECT * FROM ${staged}) TO ${sqlString(csv)} (HEADER false)`);
    await engine.run(`CREATE TABLE rows AS SELECT * FROM ${staged}`);
    const plainDir = join(WORK, 'plain');
    await mkdir(plainDir, { recursive: true });
    for (const [i, f] of files.entries()) {
      const to = join(plainDir, `staged-${i}.parquet`);
      await engine.run(`COPY (SELECT * FROM read_parquet(${sqlString(f)}, hive_partitioning = false)) TO ${sqlString(to)} (FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE ${STAGED_ROW_GROUP_ROWS}, DICTIONARY_SIZE_LIMIT 1, WRITE_BLOOM_FILTER false)`);
      plainFiles.push(to);
    }
  }

  const readCsv = `read_csv(${sqlString(csv)}, header = false, delim = ',', quote = '"', escape = '"', auto_detect = false, columns = ${STAGED_CSV_COLUMNS})`;
  const toParquet = (from: string, opts = ''): string => `COPY (SELECT * FROM ${from}) TO ${sqlString(join(WORK, 'out.parquet'))} (FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE ${STAGED_ROW_GROUP_ROWS}${opts})`;

  /** The rows as columns in memory, as a parser of columns would hold them: each field's bytes and offsets, each number. */
  const text = readFileSync(csv);
  const { rowCount, starts, ends } = csvFieldPlaces(text, STAGED_FILE_COLUMNS.length);

  /**
   * DuckDB's appender fed data chunks of 2,048 rows, every value set from JavaScript, into a table of
   * its own database. In a process of its own each pass (`--append`: the bindings' chunks do not
   * outlive a pass safely), timed from the first chunk to the appender's close.
   */
  async function appended(): Promise<{ wall: number; cpu: number }> {
    const config = duckdb.create_config();
    duckdb.set_config(config, 'threads', '2');
    const db = await duckdb.open(':memory:', config);
    const con = await duckdb.connect(db);
    await duckdb.query(con, `CREATE TABLE t (${STAGED_FILE_COLUMNS.map((c) => `${c.name} ${c.type}`).join(', ')})`);
    const types = STAGED_FILE_COLUMNS.map((c) => duckdb.create_logical_type(c.type === 'BIGINT' ? duckdb.Type.BIGINT : duckdb.Type.VARCHAR));
    const app = duckdb.appender_create(con, null, 't');
    const chunk = duckdb.create_data_chunk(types);
    const n = STAGED_FILE_COLUMNS.length;
    return timed(() => {
      for (let base = 0; base < rowCount; base += 2048) {
        const m = Math.min(2048, rowCount - base);
        duckdb.data_chunk_reset(chunk);
        for (let col = 0; col < n; col++) {
          const vec = duckdb.data_chunk_get_vector(chunk, col);
          duckdb.vector_ensure_validity_writable(vec);
          const validity = duckdb.vector_get_validity(vec, Math.ceil(m / 64) * 8);
          const data = STAGED_FILE_COLUMNS[col]!.type === 'BIGINT' ? duckdb.vector_get_data(vec, m * 8) : null;
          const values = data ? new BigInt64Array(data.buffer, data.byteOffset, m) : null;
          for (let i = 0; i < m; i++) {
            const k = (base + i) * n + col, s = starts[k]!, e = ends[k]!;
            if (s === e) {
              duckdb.validity_set_row_invalid(validity, i);
              continue;
            }
            if (values) {
              let v = 0;
              for (let j = s; j < e; j++) v = v * 10 + text[j]! - 0x30;
              values[i] = BigInt(v);
            } else {
              duckdb.vector_assign_string_element_len(vec, i, text.subarray(s, e));
            }
          }
        }
        duckdb.data_chunk_set_size(chunk, m);
        duckdb.append_data_chunk(app, chunk);
      }
      duckdb.appender_close_sync(app);
    });
  }

  if (appendOnly) {
    process.stdout.write(JSON.stringify(await appended()) + '\n');
    process.exit(0);
  }

  // The rows as columns (each field's bytes and offsets, each number), as a parser of columns would
  // hand them over: made before the passes, as the parser's writing them is not what is measured.
  const columns = rowColumns(STAGED_FILE_COLUMNS, text, starts, ends, rowCount);
  const libraries = await parquetLibraryWriters(STAGED_ROW_GROUP_ROWS);
  // pingroll's writer (ingest/batch/staged-parquet.ts) reads a part file of staged rows, as the
  // parser writes them: made before the passes from the same rows.
  const part = join(WORK, 'rows.staged');
  writeFileSync(part, Buffer.concat((await queryRows<Record<string, unknown>>(engine, 'SELECT * FROM rows')).map((r) => stagedRow({
    source: r.source as 's3', series: r.series as string, episode: r.episode as string, session: r.session as string, user: r.user_id as string | null, pingId: r.ping_id as string | null,
    eventTimeMs: Number(r.event_ms), naturalKey: r.natural_key as string, platform: r.platform as string | null, pos: r.pos === null ? null : Number(r.pos),
    country: r.country as string, os: r.os as string, deviceType: r.device_type as string, browser: r.browser as string, agentRule: r.agent_rule as string | null,
  }))));
  const pingroll = { uncompressed: new StagedParquetWriter('uncompressed'), snappy: new StagedParquetWriter('snappy') };
  const dayFile = (name: string): string => join(WORK, name, `keyed-${dayNumber(DAY)}.parquet`);
  const writers = {
    ...libraries,
    pingroll: async () => { await pingroll.uncompressed.write([part], join(WORK, 'pingroll', 'keyed')); },
    'pingroll-snappy': async () => { await pingroll.snappy.write([part], join(WORK, 'pingroll-snappy', 'keyed')); },
  };
  // Each writer's file, in a folder of its own as a format 4 staged file (the rollup reads pingroll's as it reads the staged ones).
  const fileOf = Object.fromEntries(Object.keys(writers).map((name) => [name, dayFile(name)])) as Record<keyof typeof writers, string>;
  for (const [name, write] of Object.entries(writers)) {
    // Each file holds the rows DuckDB's does, value for value.
    const to = fileOf[name as keyof typeof writers];
    await mkdir(dirname(to), { recursive: true });
    await write(columns, rowCount, to);
    const [diff] = await queryRows<{ n: bigint }>(engine, `SELECT count(*) AS n FROM ((SELECT * FROM rows EXCEPT ALL SELECT * FROM read_parquet(${sqlString(to)})) UNION ALL (SELECT * FROM read_parquet(${sqlString(to)}) EXCEPT ALL SELECT * FROM rows))`);
    if (Number(diff!.n) !== 0) throw new Error(`${name}'s file differs from the staged rows in ${diff!.n} rows`);
  }

  const ways: Record<string, () => Promise<void | { wall: number; cpu: number }>> = {
    'CSV to Parquet, one COPY (before item 4)': async () => { await engine.run(toParquet(readCsv)); },
    'CSV read into a table': async () => { await engine.run(`CREATE OR REPLACE TABLE read_back AS SELECT * FROM ${readCsv}`); },
    'a table written as Parquet': async () => { await engine.run(toParquet('rows')); },
    'CSV to Parquet, no bloom filters': async () => { await engine.run(toParquet(readCsv, ', WRITE_BLOOM_FILTER false')); },
    'CSV to Parquet, Parquet V2': async () => { await engine.run(toParquet(readCsv, ', PARQUET_VERSION V2')); },
    'the appender, data chunks set from JavaScript (no Parquet)': async () => {
      const r = spawnSync(process.execPath, [process.argv[1]!, '--append'], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`the appender's pass failed (exit ${r.status}): ${r.stderr}`);
      return JSON.parse(r.stdout) as { wall: number; cpu: number };
    },
    'Parquet from the staged rows by pingroll\'s writer (ingest/batch/staged-parquet.ts; uncompressed, as in a local directory)': async () => { await writers.pingroll(); },
    'the same, Snappy (as on S3)': async () => { await writers['pingroll-snappy'](); },
    'Parquet from the columns by parquet-wasm (arrow-rs in WebAssembly; dictionaries)': async () => { writers['parquet-wasm'](columns, rowCount, fileOf['parquet-wasm']); },
    'Parquet from the columns by hyparquet-writer (JavaScript; each string made first)': async () => { writers['hyparquet-writer'](columns, rowCount, fileOf['hyparquet-writer']); },
    'the day\'s rollup, over the staged files the run made': async () => { await rollupDay(engine, DAY, files, { s3: { ping: rowCount } }); },
    'the day\'s rollup, the same rows as pingroll\'s writer writes them': async () => { await rollupDay(engine, DAY, [fileOf.pingroll], { s3: { ping: rowCount } }); },
    'the day\'s rollup, the same rows without dictionaries': async () => { await rollupDay(engine, DAY, plainFiles, { s3: { ping: rowCount } }); },
  };
  const runs = new Map<string, Array<{ wall: number; cpu: number }>>();
  for (let p = 0; p < PASSES; p++) {
    for (const [name, f] of Object.entries(ways)) {
      const list = runs.get(name) ?? [];
      process.stderr.write(`  ${name}\n`);
      let own: { wall: number; cpu: number } | void = undefined;
      const t = await timed(async () => { own = await f(); });
      list.push(own ?? t);
      runs.set(name, list);
    }
    process.stderr.write(`staging paths: pass ${p + 1}/${PASSES}\n`);
  }
  const mb = (list: string[]): string => `${Math.round(list.reduce((n, f) => n + statSync(f).size, 0) / 1e6)} MB`;
  const out = [
    `Staging paths (issue #57, item 4): the small-object day's ${rowCount.toLocaleString('en')} staged rows (CSV ${mb([csv])}; staged Parquet ${mb(files)}, without dictionaries ${mb(plainFiles)}), DuckDB on 2 threads, ${PASSES} interleaved passes, medians:`,
    '',
    '| way | wall ms | CPU ms |',
    '|---|---:|---:|',
    ...[...runs].map(([name, list]) => `| ${name} | ${Math.round(median(list.map((r) => r.wall)))} | ${Math.round(median(list.map((r) => r.cpu)))} |`),
  ];
  process.stdout.write(out.join('\n') + '\n');
  engine.closeSync();
  await rm(join(WORK, 'spill'), { recursive: true, force: true });
}
