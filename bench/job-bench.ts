/**
 * `make bench` (end-to-end part): one generated day of at least 1M access-log records, delivered as
 * 3,000 objects of S3-like sizes, through `make rollup` as cron runs it (a cold process), beside
 * DuckDB running the Athena regex plus the same dedupe and rollup SQL over the same files
 * (duckdb-regex-baseline.ts), each in its own process, interleaved passes; the same records as 20,
 * 300 and 30,000 objects; then a 20M-ping day through the rollup stage (rollup-20m.ts); then a day of
 * ~2,000 small objects (~540k records, ~280 an object, as S3 server access logging writes them),
 * where fixed and per-object costs show, against the baseline and against `cat` of the same files
 * (the floor). Wall time and peak RSS per process.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { generateSample, writeSample, type Sample, type TruthRecord } from '../tools/sample/access-log-generator.js';
import { expectedDay } from '../test/support/oracle.js';
import { readDay } from '../test/support/job-fixture.js';
import { BENCH_DIR, rechunkedLogDir } from './bench-data.js';
import { measure, median, ROOT, type Measured } from './cold-run.js';
import { CHDB_VERSION, ensureChdb } from './chdb.js';

const DAY = '2026-11-01';
const node = (script: string): string => join(ROOT, script);

/**
 * A directory of log objects for DAY, at least `minRecords` records, uncompressed (DuckDB detects gzip
 * only by suffix). Its viewers come as real traffic has them (`traffic`: an address of each session's
 * own, hundreds of user agents; issue #57), or from the nine addresses and six agents of the days
 * measured before 2026-12-02 (`few`: the drift guard's, until it is pinned anew).
 */
export async function benchLogDir(minRecords: number, audience: Audience = 'traffic'): Promise<{ dir: string; records: number }> {
  const dir = join(BENCH_DIR, `logs-${DAY}-${minRecords}${audience === 'traffic' ? '-traffic' : ''}`);
  const countFile = dir + '.records';
  if (existsSync(countFile)) return { dir, records: Number(await readFile(countFile, 'utf8')) };
  await rm(dir, { recursive: true, force: true });
  let records = 0;
  for (let shard = 0; records < minRecords; shard++) {
    const s = shardSample(shard, false, audience);
    await writeSample(s, dir);
    records += s.records;
    process.stderr.write(`\rgenerating bench logs: ${records} records`);
  }
  process.stderr.write('\n');
  await writeFile(countFile, String(records));
  return { dir, records };
}

/** One shard of the bench day: the same seed gives the same bytes, and with `truth` what each record is. */
function shardSample(shard: number, truth: boolean, audience: Audience): Sample {
  return generateSample({ date: DAY, sessions: 3300, seed: 5000 + shard, gzipShare: 0, prefix: `shard-${shard}/`, truth, audience });
}

type Audience = NonNullable<Parameters<typeof generateSample>[0]['audience']>;

type DayTables = Awaited<ReturnType<typeof readDay>>;

/**
 * The bench day's three tables as the contract says they should be, from the generator's account of every
 * record it wrote (all shards at once: ids may repeat across shards), computed once (a minute) and kept.
 */
export async function expectedTables(dir: string, records: number, audience: Audience = 'traffic'): Promise<DayTables> {
  const file = dir + '.expected.json';
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8')) as DayTables;
  process.stderr.write('computing the bench day\'s expected tables from the generator\'s truth (once)\n');
  const truth: TruthRecord[] = [];
  for (let shard = 0, n = 0; n < records; shard++) {
    const s = shardSample(shard, true, audience);
    n += s.records;
    for (const t of s.truth) truth.push(t);
  }
  const want = expectedDay(truth, DAY);
  await writeFile(file, JSON.stringify(want));
  return want;
}


/** `make rollup` over `dir` (with `args`), into a fresh output. */
function ourRun(dir: string, args = ''): Measured {
  const out = join(BENCH_DIR, 'job-out');
  spawnSync('rm', ['-rf', out]);
  return measure('make', ['-s', 'rollup', `DATE=${DAY}`, ...(args ? [`ARGS=${args}`] : [])], {
    PINGROLL_LOGS: dir, PINGROLL_OUTPUT: join(out, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(out, 'wh.duckdb')}`,
  });
}

/** `cat` of every file of `dir` to /dev/null, a cold process: what reading the bytes costs. */
function catFloor(dir: string): number {
  const started = process.hrtime.bigint();
  const r = spawnSync('sh', ['-c', 'cat -- * > /dev/null'], { cwd: dir });
  if (r.status !== 0) throw new Error(`cat failed in ${dir}`);
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/**
 * The small-object day: the job, the baseline and the `cat` floor, interleaved; the first pass's
 * tables checked against the generator's truth. Its table's lines, and whether the tables were exact.
 */
async function smallDay(passes: number): Promise<{ lines: string[]; exact: boolean }> {
  const { dir: shards, records } = await benchLogDir(SMALL.records);
  const dir = await rechunkedLogDir(shards, SMALL.objects);
  const runs: Array<{ ours: Measured; base: Measured; clickhouse: Measured; cat: number }> = [];
  let exact = true;
  await ensureChdb();
  for (let p = 0; p < passes; p++) {
    const cat = catFloor(dir);
    runs.push({ ...pass(dir), clickhouse: clickhousePass(dir), cat });
    if (p === 0) {
      const got = await readDay(join(BENCH_DIR, 'job-out', 'out'), DAY);
      const want = await expectedTables(shards, records);
      exact = (['episodes', 'series', 'audit'] as const).every((t) => isDeepStrictEqual(got[t], want[t]));
      if (!exact) process.stderr.write('the small-object day: pingroll\'s tables differ from the truth\n');
      // The two peers do the same job: their episodes must be the same, or a ratio against them means nothing.
      if (!(await peersAgree())) {
        exact = false;
        process.stderr.write('the small-object day: the DuckDB and ClickHouse baselines counted different episodes\n');
      }
    }
    process.stderr.write(`small-object day: pass ${p + 1}/${passes}\n`);
  }
  const files = readdirSync(dir);
  const bytes = files.reduce((n, f) => n + statSync(join(dir, f)).size, 0);
  const med = (f: (r: (typeof runs)[number]) => number): number => median(runs.map(f));
  return {
    exact,
    lines: [
      `The small-object day: ${records.toLocaleString('en')} records in ${files.length.toLocaleString('en')} objects (${Math.round(bytes / 1e6)} MB, ~${Math.round(records / files.length)} records an object; smallest / median / largest: ${sizesOf(dir)}), ${passes} interleaved passes, medians; ratios within each pass:`,
      '',
      '| job | wall s | peak RSS MiB | ratio |',
      '|---|---:|---:|---|',
      `| \`make rollup\`, cold | ${med((r) => r.ours.seconds).toFixed(2)} | ${Math.round(med((r) => r.ours.maxRssMiB))} | ${med((r) => r.clickhouse.seconds / r.ours.seconds).toFixed(2)}x ClickHouse's speed (target >= 2x); ${med((r) => r.base.seconds / r.ours.seconds).toFixed(2)}x DuckDB's (target >= 5x); ${med((r) => r.ours.seconds / r.cat).toFixed(2)}x the cat floor's time (target <= 6x) |`,
      `| ClickHouse (chDB ${CHDB_VERSION}, in-process): Regexp input format with the Athena regex, the same dedupe and rules, each episode | ${med((r) => r.clickhouse.seconds).toFixed(2)} | ${Math.round(med((r) => r.clickhouse.maxRssMiB))} | ${med((r) => r.base.seconds / r.clickhouse.seconds).toFixed(2)}x DuckDB's speed |`,
      `| DuckDB: Athena regex + the same dedupe and rollup SQL | ${med((r) => r.base.seconds).toFixed(2)} | ${Math.round(med((r) => r.base.maxRssMiB))} | |`,
      `| \`cat\` of the same files to /dev/null (the floor) | ${med((r) => r.cat).toFixed(2)} | | |`,
    ],
  };
}

/** Smallest / median / largest object of a directory. */
function sizesOf(dir: string): string {
  const s = readdirSync(dir).map((f) => statSync(join(dir, f)).size).sort((a, b) => a - b);
  const kb = (b: number): string => (b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(1)} MB` : `${Math.max(1, Math.round(b / 1024))} KB`);
  return `${kb(s[0]!)} / ${kb(s[s.length >> 1]!)} / ${kb(s[s.length - 1]!)}`;
}

/** The day of small objects: ~540k records as ~2,000 objects. */
const SMALL = { records: 540_000, objects: 2000 };

/** `make rollup` over `dir`, and the baseline over the same files: one pass. */
function pass(dir: string): { ours: Measured; base: Measured } {
  const ours = ourRun(dir);
  spawnSync('rm', ['-rf', join(BENCH_DIR, 'baseline-out')]);
  const base = measure('node', [node('dist/bench/duckdb-regex-baseline.js'), dir, DAY, join(BENCH_DIR, 'baseline-out')]);
  return { ours, base };
}

/** ClickHouse (chDB) over the same files, in its own process (clickhouse-baseline.ts). */
function clickhousePass(dir: string): Measured {
  spawnSync('rm', ['-rf', join(BENCH_DIR, 'clickhouse-out')]);
  return measure('node', [node('dist/bench/clickhouse-baseline.js'), dir, DAY, join(BENCH_DIR, 'clickhouse-out')]);
}

/** Whether the two peers counted the same episodes (series, episode, pings, sessions, viewers, minutes watched), from their last runs' files. */
async function peersAgree(): Promise<boolean> {
  const { openEngine, queryRows, sqlString } = await import('../lib/duckdb-engine.js');
  const engine = await openEngine({ tempDir: join(BENCH_DIR, 'peers-spill'), memoryLimitMb: 512 });
  const cols = 'series_id, episode_id, pings::BIGINT AS pings, sessions::BIGINT AS sessions, viewers::BIGINT AS viewers, minutes_watched::BIGINT AS minutes_watched';
  const rows = async (from: string): Promise<string[]> => (await queryRows(engine, `SELECT ${cols} FROM ${from} ORDER BY ALL`)).map((r) => JSON.stringify(r, (_, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)));
  try {
    const duckdb = await rows(`read_parquet(${sqlString(join(BENCH_DIR, 'baseline-out', 'daily_episode_stats.parquet'))})`);
    const clickhouse = await rows(`read_json(${sqlString(join(BENCH_DIR, 'clickhouse-out', 'daily_episode_stats.jsonl'))}, format = 'newline_delimited')`);
    return duckdb.length > 0 && isDeepStrictEqual(duckdb, clickhouse);
  } finally {
    engine.closeSync();
  }
}

const SHAPE = 3000;
const SWEEP = [20, 300, 3000, 30000];

async function main(): Promise<void> {
  await mkdir(BENCH_DIR, { recursive: true });
  // BENCH_SMALL_ONLY=1: the small-object day alone.
  if (process.env.BENCH_SMALL_ONLY) {
    const small = await smallDay(Number(process.env.BENCH_PASSES ?? 5));
    process.stdout.write(small.lines.join('\n') + '\n');
    if (!small.exact) process.exitCode = 1;
    return;
  }
  const { dir: shards, records } = await benchLogDir(1_000_000);
  const dirs = new Map<number, string>();
  for (const n of SWEEP) dirs.set(n, await rechunkedLogDir(shards, n));
  const passes = Number(process.env.BENCH_PASSES ?? 5);
  const runs = new Map<number, Array<{ ours: Measured; base: Measured }>>(SWEEP.map((n) => [n, []]));
  let exact = true;
  for (let p = 0; p < passes; p++) {
    for (const n of p % 2 ? [...SWEEP].reverse() : SWEEP) {
      // The sweep's other shapes take three passes; the bench's own day every pass.
      if (n !== SHAPE && p >= 3) continue;
      runs.get(n)!.push(pass(dirs.get(n)!));
      // Exact, not only fast: the three tables against the generator's truth, at every shape.
      if (runs.get(n)!.length === 1) {
        const got = await readDay(join(BENCH_DIR, 'job-out', 'out'), DAY);
        const want = await expectedTables(shards, records);
        const same = (['episodes', 'series', 'audit'] as const).every((t) => isDeepStrictEqual(got[t], want[t]));
        if (!same) process.stderr.write(`${n} objects: pingroll's tables differ from the truth\n`);
        exact &&= same;
      }
    }
    process.stderr.write(`pass ${p + 1}/${passes}\n`);
  }
  if (!exact) process.exitCode = 1;
  const main = runs.get(SHAPE)!;
  const oursPings = Number(/: (\d+) pings/.exec(main[0]!.ours.stdout)?.[1]);
  const basePings = (JSON.parse(main[0]!.base.stdout) as { pings: number }).pings;
  const ratio = (rs: Array<{ ours: Measured; base: Measured }>): number => median(rs.map((r) => r.base.seconds / r.ours.seconds));
  const sizes = (n: number): string => sizesOf(dirs.get(n)!);

  // Parsing threads: none (the run's own thread), one, two; interleaved, against none in the same pass.
  const THREADS = [0, 1, 2];
  const byThreads = THREADS.map(() => [] as Measured[]);
  for (let p = 0; p < 3; p++) for (const [i, t] of (p % 2 ? [...THREADS.entries()].reverse() : [...THREADS.entries()])) byThreads[i]!.push(ourRun(dirs.get(SHAPE)!, `--parse-threads ${t}`));

  const staged = join(BENCH_DIR, 'staged-20m.parquet');
  spawnSync(process.execPath, [node('dist/bench/rollup-20m.js'), staged, DAY, join(BENCH_DIR, 'big-out'), '20000000'], { env: { ...process.env, BENCH_MAKE_ONLY: '1' }, stdio: 'inherit' });
  await rm(join(BENCH_DIR, 'big-out'), { recursive: true, force: true });
  const big = measure('node', [node('dist/bench/rollup-20m.js'), staged, DAY, join(BENCH_DIR, 'big-out'), '20000000']);
  const bigOut = JSON.parse(big.stdout) as { pings: number; duplicates: Record<string, number> };

  const small = await smallDay(passes);
  if (!small.exact) process.exitCode = 1;

  const row = (name: string, ms: Measured[], pings: number): string =>
    `| ${name} | ${median(ms.map((m) => m.seconds)).toFixed(2)} | ${Math.round(median(ms.map((m) => m.maxRssMiB)))} | ${pings.toLocaleString('en')} |`;
  process.stdout.write([
    `job bench: ${records.toLocaleString('en')} access-log records of ${DAY} (uncompressed) in ${SHAPE.toLocaleString('en')} objects (smallest / median / largest: ${sizes(SHAPE)}), node ${process.version}, ${main.length} interleaved passes, medians`,
    '',
    '| job | wall s | peak RSS MiB | pings counted |',
    '|---|---:|---:|---:|',
    row('`make rollup` (ingest, rollup, Parquet, DuckDB warehouse), cold', main.map((r) => r.ours), oursPings),
    row('DuckDB: Athena regex + the same dedupe and rollup SQL', main.map((r) => r.base), basePings),
    '',
    `pingroll is ${ratio(main).toFixed(2)}x the speed of the DuckDB-regex baseline, and counts ${(oursPings - basePings).toLocaleString('en')} pings the regex loses`,
    exact ? 'pingroll\'s three tables equal the ones the generator\'s truth gives, row for row, at every object count' : 'pingroll\'s tables DIFFER from the generator\'s truth: a bug',
    '',
    'The same records as more or fewer objects (3 passes each, the 3,000 every pass):',
    '',
    '| objects | smallest / median / largest | `make rollup` s | baseline s | ratio | peak RSS MiB |',
    '|---:|---|---:|---:|---:|---:|',
    ...SWEEP.map((n) => {
      const rs = runs.get(n)!;
      return `| ${n.toLocaleString('en')} | ${sizes(n)} | ${median(rs.map((r) => r.ours.seconds)).toFixed(2)} | ${median(rs.map((r) => r.base.seconds)).toFixed(2)} | ${ratio(rs).toFixed(2)}x | ${Math.round(median(rs.map((r) => r.ours.maxRssMiB)))} |`;
    }),
    '',
    'Parsing threads (`--parse-threads`), the 3,000-object day, 3 interleaved passes:',
    '',
    '| parsing threads | `make rollup` s | vs none | peak RSS MiB |',
    '|---:|---:|---:|---:|',
    ...THREADS.map((t, i) => `| ${t === 0 ? '0 (the run\'s own thread)' : t} | ${median(byThreads[i]!.map((m) => m.seconds)).toFixed(2)} | ${median(byThreads[i]!.map((m, p) => byThreads[0]![p]!.seconds / m.seconds)).toFixed(2)}x | ${Math.round(median(byThreads[i]!.map((m) => m.maxRssMiB)))} |`),
    '',
    `20M-ping day, rollup stage (dedupe, both aggregates, Parquet): ${big.seconds.toFixed(1)} s, peak RSS ${Math.round(big.maxRssMiB)} MiB, ${bigOut.pings.toLocaleString('en')} pings after ${Object.values(bigOut.duplicates)[0]?.toLocaleString('en')} duplicates`,
    '',
    ...small.lines,
  ].join('\n') + '\n');
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
