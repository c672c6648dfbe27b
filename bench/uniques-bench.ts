/**
 * Unique viewers over a range (#28): the viewer datasets' size, and `pingroll uniques` over 30 and
 * 365 days as an analyst runs it (a cold process) against `pingroll report --month` over the same
 * warehouse (the yardstick: a cold command reading a month of small daily rows), interleaved passes.
 *
 * The year is made from one real day: the small-object day of the job bench, rolled up by
 * `pingroll rollup` with PINGROLL_VIEWER_KEY; its viewer rows repeated for every day of 2026, each
 * viewer keeping its key on a day when SHA-256(key || day) starts with 6 to f (returning, 10 days in
 * 16) and getting a key of that day's own otherwise (a new viewer). The viewers over 30 and 365 days
 * that `pingroll uniques` counts are checked against the same construction computed here, apart from
 * SQL.
 */
import { readdirSync, statSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { DuckDBInstance, queryRows, sqlString } from '../lib/duckdb-engine.js';
import { addDays, daysFrom } from '../lib/utc-day.js';
import { BENCH_DIR, BENCH_VIEWER_KEY, rechunkedLogDir } from './bench-data.js';
import { measure, median } from './cold-run.js';
import { benchLogDir } from './job-bench.js';

const BASE_DAY = '2026-11-01';

function duBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? duBytes(join(dir, e.name)) : statSync(join(dir, e.name)).size;
  return n;
}

async function main(): Promise<void> {
  // The job bench's small-object day (made when missing).
  const logs = await rechunkedLogDir((await benchLogDir(540_000)).dir, 2000);
  const root = join(BENCH_DIR, 'uniques');
  await rm(root, { recursive: true, force: true });
  const env = { PINGROLL_LOGS: logs, PINGROLL_OUTPUT: join(root, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(root, 'wh.duckdb')}`, PINGROLL_VIEWER_KEY: BENCH_VIEWER_KEY };
  const base = measure('node', ['bin/pingroll.js', 'rollup', '--date', BASE_DAY], env);
  process.stderr.write(`rolled up the base day: ${base.seconds.toFixed(1)} s\n`);

  // The year: every day of 2026 from the base day's rows (the base day itself included once).
  const days = daysFrom('2026-01-01', '2026-12-31');
  const db = await DuckDBInstance.create(join(root, 'wh.duckdb'));
  const c = await db.connect();
  const churn = (col: string, d: string): string => `CASE WHEN left(sha256(${col} || ${sqlString(d)}), 1) < '6' THEN left(${col}, 8) || left(sha256(${col} || ${sqlString(`${d}new`)}), 24) ELSE ${col} END`;
  for (const t of ['daily_series_viewers', 'daily_episode_viewers', 'daily_series_stats', 'daily_runs']) {
    await c.run(`CREATE TEMP TABLE base_${t} AS SELECT * FROM ${t} WHERE day = DATE ${sqlString(BASE_DAY)}`);
    await c.run(`DELETE FROM ${t}`);
  }
  for (const d of days) {
    await c.run(`INSERT INTO daily_series_viewers SELECT DATE ${sqlString(d)}, series_id, ${churn('viewer_key', d)} FROM base_daily_series_viewers`);
    await c.run(`INSERT INTO daily_episode_viewers SELECT DATE ${sqlString(d)}, series_id, episode_id, ${churn('viewer_key', d)} FROM base_daily_episode_viewers`);
    await c.run(`INSERT INTO daily_series_stats SELECT DATE ${sqlString(d)}, * EXCLUDE (day) FROM base_daily_series_stats`);
    await c.run(`INSERT INTO daily_runs SELECT DATE ${sqlString(d)}, * EXCLUDE (day) FROM base_daily_runs`);
  }
  const count = async (sql: string): Promise<number> => Number(((await queryRows<{ n: bigint }>(c, sql))[0]!).n);
  const rowsPerDay = await count(`SELECT count(*) AS n FROM base_daily_series_viewers`);
  const episodeRowsPerDay = await count(`SELECT count(*) AS n FROM base_daily_episode_viewers`);
  if (rowsPerDay === 0) throw new Error(`the base day ${BASE_DAY} has no viewer rows: was it rolled up with PINGROLL_VIEWER_KEY?`);
  // What the construction gives, computed here: the distinct keys over the last 30 days and the year.
  const baseKeys = (await queryRows<{ k: string }>(c, `SELECT DISTINCT viewer_key AS k FROM base_daily_series_viewers`)).map((r) => r.k);
  const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
  const from30 = addDays('2026-12-31', -29);
  const distinct = (range: string[]): number => {
    const keys = new Set<string>();
    for (const d of range) for (const k of baseKeys) keys.add(sha(k + d) < '6' ? k.slice(0, 8) + sha(`${k}${d}new`).slice(0, 24) : k);
    return keys.size;
  };
  const want30 = distinct(daysFrom(from30, '2026-12-31'));
  const want365 = distinct(days);
  // The Parquet as pingroll publishes it (one file a day and table), for its size.
  await mkdir(join(root, 'parquet'), { recursive: true });
  for (const t of ['daily_series_viewers', 'daily_episode_viewers']) {
    await c.run(`COPY (SELECT *, strftime(day, '%Y-%m-%d') AS dt FROM ${t}) TO ${sqlString(join(root, 'parquet', t))} (FORMAT parquet, COMPRESSION snappy, PARTITION_BY (dt))`);
  }
  c.closeSync();
  db.closeSync();
  const parquetMiB = (t: string): number => duBytes(join(root, 'parquet', t)) / (1 << 20);

  const passes = Number(process.env.BENCH_PASSES ?? 5);
  const runs: Array<{ d30: number; d365: number; base: number }> = [];
  let exact = true;
  for (let p = 0; p < passes; p++) {
    const a = measure('node', ['bin/pingroll.js', 'uniques', '--from', from30, '--to', '2026-12-31', '--format', 'json'], env);
    const b = measure('node', ['bin/pingroll.js', 'uniques', '--from', '2026-01-01', '--to', '2026-12-31', '--format', 'json'], env);
    const y = measure('node', ['bin/pingroll.js', 'report', '--month', '2026-12'], env);
    const all = (m: { stdout: string }): number => (JSON.parse(m.stdout) as { allSeries: { viewers: number } }).allSeries.viewers;
    const final = (m: { stdout: string }): boolean => (JSON.parse(m.stdout) as { unpublished: string[] }).unpublished.length === 0;
    exact &&= all(a) === want30 && all(b) === want365 && final(a) && final(b);
    runs.push({ d30: a.seconds, d365: b.seconds, base: y.seconds });
    process.stderr.write(`uniques: pass ${p + 1}/${passes}\n`);
  }
  const med = (f: (r: (typeof runs)[number]) => number): number => median(runs.map(f));
  const lines = [
    `One real day (${rowsPerDay.toLocaleString('en')} series-viewer rows, ${episodeRowsPerDay.toLocaleString('en')} episode-viewer rows: the small-object day) made a year of 2026 (10 in 16 of each day's viewers returning, the rest new), ${passes} interleaved passes, medians, ratios within each pass:`,
    '',
    '| dataset, a year | rows | Parquet (one file a day, Snappy) |',
    '|---|---:|---:|',
    `| \`daily_series_viewers\` | ${(rowsPerDay * days.length).toLocaleString('en')} | ${parquetMiB('daily_series_viewers').toFixed(0)} MiB (${(parquetMiB('daily_series_viewers') * 1024 / days.length).toFixed(0)} KiB a day) |`,
    `| \`daily_episode_viewers\` | ${(episodeRowsPerDay * days.length).toLocaleString('en')} | ${parquetMiB('daily_episode_viewers').toFixed(0)} MiB (${(parquetMiB('daily_episode_viewers') * 1024 / days.length).toFixed(0)} KiB a day) |`,
    `| the DuckDB warehouse file (the two tables and a year of \`daily_series_stats\` and \`daily_runs\`) | | ${(statSync(join(root, 'wh.duckdb')).size / (1 << 20)).toFixed(0)} MiB |`,
    '',
    '| command (a cold process) | wall s | against `report --month` |',
    '|---|---:|---:|',
    `| \`pingroll uniques\` over 30 days (${want30.toLocaleString('en')} viewers) | ${med((r) => r.d30).toFixed(2)} | ${med((r) => r.d30 / r.base).toFixed(2)}x |`,
    `| \`pingroll uniques\` over 365 days (${want365.toLocaleString('en')} viewers) | ${med((r) => r.d365).toFixed(2)} | ${med((r) => r.d365 / r.base).toFixed(2)}x |`,
    `| \`pingroll report --month\` (the yardstick) | ${med((r) => r.base).toFixed(2)} | 1.00x |`,
  ];
  lines.push('', exact ? 'pingroll uniques gave the distinct keys of the construction, computed apart from SQL, over both ranges, and no day unpublished'
    : '**pingroll uniques disagreed with the distinct keys of the construction**');
  process.stdout.write(lines.join('\n') + '\n');
  if (!exact) {
    process.stderr.write('pingroll uniques disagreed with the year\'s distinct keys\n');
    process.exitCode = 1;
  }
}

await main();
