/**
 * `make bench`: every benchmark, each in its own cold process, one after another; their results go
 * into .bench/benchmarks.md (no make target rewrites a tracked file), and whoever publishes them
 * copies that file over docs/benchmarks.md, which the README links. Progress goes to the terminal.
 * A benchmark that fails (or finds pingroll's output inexact) fails `make bench`.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { gitRevision } from '../infra/version.js';

const ROOT = new URL('../../', import.meta.url).pathname;

const BENCHES = [
  { title: 'Drift guard', script: 'dist/bench/drift-guard.js', about: 'The small-object day through `make rollup`, cold, against a pinned earlier commit built beside the checkout and against the DuckDB baseline, interleaved passes, and the same command again with nothing new against `node -e 0`; fails when either speed ratio is more than 10% below the figure docs/benchmarks.md records (its drift-guard line), or the run with nothing to do more than 10% above its own.' },
  { title: 'Parser', script: 'dist/bench/parser-bench.js', about: 'The access-log scanner against the regex AWS documents for Athena and against a raw newline scan (the floor), on one generated day, interleaved passes.' },
  { title: 'Daily job', script: 'dist/bench/job-bench.js', about: '`pingroll rollup` as cron runs it (a cold process) against DuckDB running the Athena regex and the same rollup SQL, on the same files, interleaved passes (on the small-object day also against ClickHouse in-process, chDB, installed into .bench/chdb/ on first use, its episodes checked against DuckDB\'s); the tables checked row for row against the generator\'s truth; then a 20M-ping day through the rollup stage.' },
  { title: 'Client addresses', script: 'dist/bench/address-cost.js', about: 'What a new client address costs (issue #57): 1M addresses drawn as the bench\'s traffic has them, each looked up once by mmdb-lib (the lookup alone) and by the parser\'s own walk of the database from the address\'s bytes, interleaved passes, the countries checked to be the same; then the small-object day of real traffic through `make rollup`, cold, against the same logs with every client address made one, interleaved passes.' },
  { title: 'Staging paths', script: 'dist/bench/staging-paths.js', about: 'How the parser\'s rows could reach the staged Parquet (issue #57, item 4), on the small-object day\'s own rows in one process: CSV to Parquet in one COPY as before item 4, and its two halves apart; the same with no bloom filters and as Parquet V2; DuckDB\'s appender fed data chunks from JavaScript; Parquet written from the rows\' columns by parquet-wasm and by hyparquet-writer (installed into .bench/ on first use), and by pingroll\'s writer (ingest/batch/staged-parquet.ts) from the staged rows, uncompressed and Snappy; and the day\'s rollup over the staged files as DuckDB wrote them, over pingroll\'s file and over the same rows without dictionaries; interleaved passes.' },
  { title: 'Snappy', script: 'dist/bench/snappy-speed.js', about: 'The staged files\' Snappy on S3 (issue #57, item 4): the module\'s own against snappyjs, on the small-object day\'s staged rows (left by the staging paths bench) in pieces of a page\'s size, each piece read back by snappyjs; interleaved passes.' },
  { title: 'Rollup statements', script: 'dist/bench/rollup-statements.js', about: 'The small-object day\'s rollup statement by statement (its staged files rolled up again and again in one process), the audience\'s statements (issue #57, item 5) marked.' },
  { title: 'Parsing threads', script: 'dist/bench/parse-threads-bench.js', about: 'The parse stage alone, without DuckDB (the job bench\'s day, 4 times over): the run\'s own thread against 1 and 2 parsing threads, each pass a cold process, interleaved passes.' },
  { title: 'S3 latency', script: 'dist/bench/s3-latency-bench.js', about: 'The daily job\'s day read over the S3 API (moto behind a proxy that answers after 25 or 50 ms) against the same files from a directory, with the default reads in flight and with 4, and through the SDK\'s GetObjectCommand.' },
  { title: 'S3 GetObject CPU', script: 'dist/bench/s3-get-bench.js', about: 'The CPU one GetObject of a small log object costs pingroll\'s process, layer by layer: the SDK\'s command, pingroll\'s lean getter, a bare signed request, an unsigned one.' },
  { title: 'Sharded ingest', script: 'dist/bench/shard-bench.js', about: 'The daily job\'s day ingested by 1 and 2 `pingroll ingest --shard I/N` processes at once, then `pingroll rollup --no-ingest`, against the one process cron runs; the tables checked to be the same.' },
  { title: 'History', script: 'dist/bench/history-bench.js', about: 'What a run costs over a log directory that holds a history, listed whole at every run: `pingroll rollup` with 100 new log objects, then a no-op run, over 10k, 200k and 1M objects of history (in the log directory and in the ledger), interleaved passes; and the listing alone.' },
  { title: 'Unique viewers', script: 'dist/bench/uniques-bench.js', about: 'The viewer datasets over a year made from one real day, their size, and `pingroll uniques` over 30 and 365 days as a cold process against `pingroll report --month`, interleaved passes; the counts checked.' },
  { title: 'Hostile input', script: 'dist/bench/hostile-bench.js', about: 'Peak memory of `pingroll rollup` (a cold process) with one large hostile object in the log directory: 500 MB with no newline, a gzip inflating to 3 GiB, 300 MB of random bytes; each must end as the contract says, under 1 GiB.' },
  { title: 'DynamoDB', script: 'dist/bench/dynamodb-bench.js', about: 'Scans of a monthly table against DynamoDB Local 3.3, and the read capacity of a month\'s backfill.' },
] as const;

const sections: string[] = [];
let failed = false;
for (const b of BENCHES) {
  process.stderr.write(`== ${b.title}: node ${b.script}\n`);
  const started = Date.now();
  const r = spawnSync(process.execPath, [join(ROOT, b.script)], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 });
  process.stdout.write(r.stdout);
  if (r.status !== 0) failed = true;
  const body = r.status === 0 ? r.stdout.trim() : `**failed** (exit ${r.status}):\n\n${r.stdout.trim()}`;
  sections.push(`## ${b.title}\n\n${b.about}\n\nCommand: \`node ${b.script}\` (${Math.round((Date.now() - started) / 1000)} s).\n\n${body}\n`);
}

const rev = gitRevision();
const OUT = join(ROOT, '.bench', 'benchmarks.md');
mkdirSync(join(ROOT, '.bench'), { recursive: true });
writeFileSync(OUT, [
  '# Benchmarks',
  '',
  `Generated by \`make bench\` (bench/run-all.ts) on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`
    + `${rev ? ` at ${rev}` : ''}: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}. `
    + 'This machine is shared and drifts by up to 2x from minute to minute: compare ratios taken within one run, not seconds across runs. Do not edit by hand; run `make bench` and copy .bench/benchmarks.md here.',
  '',
  ...sections,
].join('\n'));
process.stderr.write(`wrote .bench/benchmarks.md (to publish it: cp .bench/benchmarks.md docs/benchmarks.md)\n`);
if (failed) process.exitCode = 1;
