/**
 * What the embedded warehouse's history costs a load (a script, not part of `make bench`; about 4
 * minutes): each load writes a copy of the warehouse file beside it and renames it over
 * (export/warehouse/duckdb/duckdb-warehouse.ts), so a load reads and writes the whole file where the
 * file system cannot clone it. `pingroll backfill` of 31 small days (each a load) as a cold process,
 * into an empty warehouse and into one that already holds a year of `daily_series_minutes` for 400
 * series (210,240,000 rows), each into a fresh output. Usage: node dist/bench/warehouse-growth.js
 * [folder, default .bench: on the file system to measure; the bench works in a new folder inside it
 * and removes only that]
 */
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { BENCH_DIR } from './bench-data.js';
import { measure, ROOT, type Measured } from './cold-run.js';
import { warehouseStatements } from '../export/warehouse/sql/ddl.js';
import { daysFrom } from '../lib/utc-day.js';
import { generateSample, writeSample } from '../tools/sample/access-log-generator.js';

const FROM = '2026-10-01';
const TO = '2026-10-31';

/** A warehouse file with the tables and views, and a year of 2025 in `daily_series_minutes`: 400 series, every minute. */
async function yearWarehouse(file: string): Promise<void> {
  const instance = await DuckDBInstance.create(file, { threads: '2' });
  const db = await instance.connect();
  for (const sql of warehouseStatements('duckdb')) await db.run(sql);
  await db.run(`INSERT INTO daily_series_minutes SELECT DATE '2025-01-01' + d::INT, 's' || (1000 + s)::VARCHAR,
    TIMESTAMP '2025-01-01' + to_minutes((d * 1440 + m)::BIGINT), (hash(d, s, m) % 50)::BIGINT
    FROM range(365) t1(d), range(400) t2(s), range(1440) t3(m)`);
  await db.run('CHECKPOINT');
  db.closeSync();
  instance.closeSync();
}

/** `pingroll backfill` of the 31 days, a cold process, into a fresh output. */
function backfill(dir: string, warehouse: string): Measured {
  return measure('node', [join(ROOT, 'bin/pingroll.js'), 'backfill', '--from', FROM, '--to', TO],
    { PINGROLL_LOGS: join(dir, 'logs'), PINGROLL_OUTPUT: join(dir, `out-${Date.now()}`), PINGROLL_WAREHOUSE: `duckdb:${warehouse}` });
}

async function main(): Promise<void> {
  const where = resolve(process.argv[2] ?? join(ROOT, BENCH_DIR));
  await mkdir(where, { recursive: true });
  const dir = await mkdtemp(join(where, 'warehouse-growth-'));
  for (const [i, date] of daysFrom(FROM, TO).entries()) await writeSample(generateSample({ date, sessions: 2, seed: 1 + i }), dir);
  const year = join(dir, 'year.duckdb');
  process.stderr.write('making a year of daily_series_minutes...\n');
  await yearWarehouse(year);
  const size = (await stat(year)).size;
  const empty = backfill(dir, join(dir, 'empty.duckdb'));
  const full = backfill(dir, year);
  const mb = (n: number): string => (n / 2 ** 20).toFixed(0);
  console.log(`warehouse growth: pingroll backfill ${FROM}..${TO} (31 loads), a cold process, in ${dir}`);
  console.log('');
  console.log('| warehouse before | file MiB | wall s | CPU s (user + system) | a load\'s extra wall s |');
  console.log('|---|---:|---:|---:|---:|');
  console.log(`| none (made by the first load) | | ${empty.seconds.toFixed(1)} | ${empty.cpuSeconds.toFixed(1)} | |`);
  console.log(`| a year of daily_series_minutes, 400 series | ${mb(size)} | ${full.seconds.toFixed(1)} | ${full.cpuSeconds.toFixed(1)} | ${((full.seconds - empty.seconds) / 31).toFixed(2)} |`);
  await rm(dir, { recursive: true, force: true });
}

await main();
