/**
 * `make bench` (end-to-end part): one generated day of at least 1M access-log records through
 * `pingroll rollup`, beside DuckDB running the Athena regex plus the same dedupe and rollup SQL over
 * the same files (duckdb-regex-baseline.ts), each in its own process, interleaved over 7 passes;
 * then a 20M-ping day through the rollup stage (rollup-20m.ts). Wall time and peak RSS per process.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { generateSample, writeSample, type Sample, type TruthRecord } from '../tools/sample/access-log-generator.js';
import { expectedDay } from '../test/helpers/oracle.js';
import { readDay } from '../test/helpers/job-fixture.js';
import { BENCH_DIR } from './bench-data.js';

const DAY = '2026-11-01';
const ROOT = new URL('../../', import.meta.url).pathname;
const node = (script: string): string => join(ROOT, script);

/** A directory of log objects for DAY, at least `minRecords` records, uncompressed (DuckDB detects gzip only by suffix). */
async function benchLogDir(minRecords: number): Promise<{ dir: string; records: number }> {
  const dir = join(BENCH_DIR, `logs-${DAY}-${minRecords}`);
  const countFile = dir + '.records';
  if (existsSync(countFile)) return { dir, records: Number(await readFile(countFile, 'utf8')) };
  await rm(dir, { recursive: true, force: true });
  let records = 0;
  for (let shard = 0; records < minRecords; shard++) {
    const s = shardSample(shard, false);
    await writeSample(s, dir);
    records += s.records;
    process.stderr.write(`\rgenerating bench logs: ${records} records`);
  }
  process.stderr.write('\n');
  await writeFile(countFile, String(records));
  return { dir, records };
}

/** One shard of the bench day: the same seed gives the same bytes, and with `truth` what each record is. */
function shardSample(shard: number, truth: boolean): Sample {
  return generateSample({ date: DAY, sessions: 3300, seed: 5000 + shard, gzipShare: 0, prefix: `shard-${shard}/`, truth });
}

type DayTables = Awaited<ReturnType<typeof readDay>>;

/**
 * The bench day's three tables as the contract says they should be, from the generator's account of every
 * record it wrote (all shards at once: ids may repeat across shards), computed once (a minute) and kept.
 */
async function expectedTables(dir: string, records: number): Promise<DayTables> {
  const file = dir + '.expected.json';
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8')) as DayTables;
  process.stderr.write('computing the bench day\'s expected tables from the generator\'s truth (once)\n');
  const truth: TruthRecord[] = [];
  for (let shard = 0, n = 0; n < records; shard++) {
    const s = shardSample(shard, true);
    n += s.records;
    for (const t of s.truth) truth.push(t);
  }
  const want = expectedDay(truth, DAY);
  await writeFile(file, JSON.stringify(want));
  return want;
}

interface Measured { seconds: number; maxRssMiB: number; stdout: string }

function measure(args: string[], env: Record<string, string> = {}): Measured {
  const report = join(BENCH_DIR, `report-${process.pid}.json`);
  const r = spawnSync(process.execPath, ['--import', node('bench/report-rss.mjs'), ...args], {
    env: { ...process.env, ...env, BENCH_REPORT: report }, encoding: 'utf8', maxBuffer: 1 << 26,
  });
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed: ${r.stderr.slice(-2000)}`);
  const rep = JSON.parse(readFileSync(report, 'utf8')) as { maxRssKiB: number; seconds: number };
  return { seconds: rep.seconds, maxRssMiB: rep.maxRssKiB / 1024, stdout: r.stdout };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  await mkdir(BENCH_DIR, { recursive: true });
  const { dir, records } = await benchLogDir(1_000_000);
  const passes = Number(process.env.BENCH_PASSES ?? 7);
  const ours: Measured[] = [], base: Measured[] = [];
  for (let p = 0; p < passes; p++) {
    const out = join(BENCH_DIR, 'job-out');
    await rm(out, { recursive: true, force: true });
    ours.push(measure([node('bin/pingroll.js'), 'rollup', '--date', DAY], {
      PINGROLL_LOGS: dir, PINGROLL_OUTPUT: join(out, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(out, 'wh.duckdb')}`,
    }));
    await rm(join(BENCH_DIR, 'baseline-out'), { recursive: true, force: true });
    base.push(measure([node('dist/bench/duckdb-regex-baseline.js'), dir, DAY, join(BENCH_DIR, 'baseline-out')]));
    process.stderr.write(`pass ${p + 1}/${passes}\n`);
  }
  const oursPings = Number(/: (\d+) pings/.exec(ours[0]!.stdout)?.[1]);
  // Exact, not only fast: the last pass's three tables against the generator's truth.
  const got = await readDay(join(BENCH_DIR, 'job-out', 'out'), DAY);
  const want = await expectedTables(dir, records);
  const exact = (['episodes', 'series', 'audit'] as const).every((t) => isDeepStrictEqual(got[t], want[t]));
  if (!exact) process.exitCode = 1;
  const basePings = (JSON.parse(base[0]!.stdout) as { pings: number }).pings;
  const ratio = median(base.map((b, i) => b.seconds / ours[i]!.seconds));

  const staged = join(BENCH_DIR, 'staged-20m.parquet');
  spawnSync(process.execPath, [node('dist/bench/rollup-20m.js'), staged, DAY, join(BENCH_DIR, 'big-out'), '20000000'], { env: { ...process.env, BENCH_MAKE_ONLY: '1' }, stdio: 'inherit' });
  await rm(join(BENCH_DIR, 'big-out'), { recursive: true, force: true });
  const big = measure([node('dist/bench/rollup-20m.js'), staged, DAY, join(BENCH_DIR, 'big-out'), '20000000']);
  const bigOut = JSON.parse(big.stdout) as { pings: number; duplicates: Record<string, number> };

  const row = (name: string, ms: Measured[], pings: number): string =>
    `| ${name} | ${median(ms.map((m) => m.seconds)).toFixed(2)} | ${Math.round(median(ms.map((m) => m.maxRssMiB)))} | ${pings.toLocaleString('en')} |`;
  process.stdout.write([
    `job bench: ${records.toLocaleString('en')} access-log records of ${DAY} (uncompressed), node ${process.version}, ${passes} interleaved passes, medians`,
    '',
    '| job | wall s | peak RSS MiB | pings counted |',
    '|---|---:|---:|---:|',
    row('pingroll rollup (ingest, rollup, Parquet, DuckDB warehouse)', ours, oursPings),
    row('DuckDB: Athena regex + the same dedupe and rollup SQL', base, basePings),
    '',
    `pingroll is ${ratio.toFixed(2)}x the speed of the DuckDB-regex baseline, and counts ${(oursPings - basePings).toLocaleString('en')} pings the regex loses`,
    exact ? 'pingroll\'s three tables equal the ones the generator\'s truth gives, row for row' : 'pingroll\'s tables DIFFER from the generator\'s truth: a bug',
    '',
    `20M-ping day, rollup stage (dedupe, both aggregates, Parquet): ${big.seconds.toFixed(1)} s, peak RSS ${Math.round(big.maxRssMiB)} MiB, ${bigOut.pings.toLocaleString('en')} pings after ${Object.values(bigOut.duplicates)[0]?.toLocaleString('en')} duplicates`,
  ].join('\n') + '\n');
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
