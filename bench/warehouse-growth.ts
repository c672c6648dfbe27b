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
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { BENCH_DIR } from './bench-data.js';
import { ROOT } from './cold-run.js';
import { warehouseStatements } from '../export/warehouse/sql/ddl.js';
import { daysFrom } from '../lib/utc-day.js';
import { generateSample, objectBody } from '../tools/sample/access-log-generator.js';

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

/** CPU seconds (user + system) of this process's children that have ended (Linux: /proc/self/stat's cutime and cstime, at 100 ticks a second). */
function childrenCpu(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/** `pingroll backfill` of the 31 days, a cold process: wall seconds and its CPU. */
function backfill(dir: string, warehouse: string): { seconds: number; cpu: number } {
  const cpu0 = childrenCpu();
  const started = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [join(ROOT, 'bin/pingroll.js'), 'backfill', '--from', FROM, '--to', TO], {
    cwd: dir, encoding: 'utf8',
    env: { ...process.env, PINGROLL_LOGS: join(dir, 'logs'), PINGROLL_OUTPUT: join(dir, `out-${Date.now()}`), PINGROLL_WAREHOUSE: `duckdb:${warehouse}` },
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (r.status !== 0) throw new Error(`pingroll backfill failed (exit ${r.status}): ${r.stderr.slice(-1000)}`);
  return { seconds, cpu: childrenCpu() - cpu0 };
}

async function main(): Promise<void> {
  const where = resolve(process.argv[2] ?? join(ROOT, BENCH_DIR));
  await mkdir(where, { recursive: true });
  const dir = await mkdtemp(join(where, 'warehouse-growth-'));
  for (const [i, date] of daysFrom(FROM, TO).entries()) {
    for (const o of generateSample({ date, sessions: 2, seed: 1 + i }).objects) {
      await mkdir(dirname(join(dir, o.key)), { recursive: true });
      await writeFile(join(dir, o.key), objectBody(o));
    }
  }
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
  console.log(`| none (made by the first load) | | ${empty.seconds.toFixed(1)} | ${empty.cpu.toFixed(1)} | |`);
  console.log(`| a year of daily_series_minutes, 400 series | ${mb(size)} | ${full.seconds.toFixed(1)} | ${full.cpu.toFixed(1)} | ${((full.seconds - empty.seconds) / 31).toFixed(2)} |`);
  await rm(dir, { recursive: true, force: true });
}

await main();
