/**
 * `make bench` (sharded ingest): the job bench's day (1.1M records in 3,000 log objects) ingested by 1
 * and by 2 `pingroll ingest --shard I/N` processes at once, then `pingroll rollup --no-ingest`, beside
 * the single process cron runs (`pingroll rollup`), interleaved passes, medians. Every way must give
 * the single process's tables.
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { readDay } from '../test/support/job-fixture.js';
import { BENCH_DIR, rechunkedLogDir } from './bench-data.js';
import { benchLogDir } from './job-bench.js';
import { median, ROOT } from './cold-run.js';

const DAY = '2026-11-01';
const OUT = join(BENCH_DIR, 'shard-out');

/** `node bin/pingroll.js <args>` processes at once; resolves to the wall time of them all. */
async function together(argsList: string[][], env: Record<string, string>): Promise<number> {
  const started = process.hrtime.bigint();
  await Promise.all(argsList.map((args) => new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/pingroll.js'), ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`pingroll ${args.join(' ')} failed (exit ${code}): ${stderr.slice(-1500)}`))));
  })));
  return Number(process.hrtime.bigint() - started) / 1e9;
}

interface Run { ingest: number; rollup: number; total: number }

async function run(logs: string, shards: number | null): Promise<{ run: Run; tables: unknown }> {
  await rm(OUT, { recursive: true, force: true });
  const env = { PINGROLL_LOGS: logs, PINGROLL_OUTPUT: join(OUT, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(OUT, 'wh.duckdb')}` };
  let ingest = 0, rollup: number;
  if (shards === null) {
    rollup = await together([['rollup', '--date', DAY]], env);
  } else {
    // With the day, as cron gives it: without, a shard lists only the delivery days a run has asked for
    // (contract §8), and this day's logs, older than the listing's window, were passed over.
    ingest = await together(Array.from({ length: shards }, (_, i) => ['ingest', '--shard', `${i}/${shards}`, '--date', DAY]), env);
    rollup = await together([['rollup', '--date', DAY, '--no-ingest']], env);
  }
  return { run: { ingest, rollup, total: ingest + rollup }, tables: await readDay(join(OUT, 'out'), DAY) };
}

async function main(): Promise<void> {
  const { dir: base, records } = await benchLogDir(1_000_000);
  const logs = await rechunkedLogDir(base, 3000);
  const passes = Number(process.env.BENCH_PASSES ?? 3);
  const ways = [null, 1, 2] as const;
  const runs = new Map<(typeof ways)[number], Run[]>(ways.map((w) => [w, []]));
  let want: unknown = null;
  let exact = true;
  for (let p = 0; p < passes; p++) {
    for (const w of p % 2 ? [...ways].reverse() : ways) {
      const r = await run(logs, w);
      want ??= r.tables;
      exact &&= isDeepStrictEqual(r.tables, want);
      runs.get(w)!.push(r.run);
    }
  }
  const single = median(runs.get(null)!.map((r) => r.total));
  const row = (label: string, rs: Run[], shards: boolean): string => {
    const total = median(rs.map((r) => r.total));
    const ingest = median(rs.map((r) => r.ingest));
    return `| ${label} | ${shards ? ingest.toFixed(2) : ''} | ${shards ? Math.round(records / ingest).toLocaleString('en-US') : ''} | ${median(rs.map((r) => r.rollup)).toFixed(2)} | ${total.toFixed(2)} | ${(single / total).toFixed(2)}x |`;
  };
  console.log(`shard bench: ${records.toLocaleString('en-US')} access-log records of ${DAY} in 3,000 objects, ${passes} interleaved passes, medians, on ${(await import('node:os')).availableParallelism()} cores\n`);
  console.log('| run | ingest s (shards at once) | records/s | rollup s | total s | speed vs one process |');
  console.log('|---|---:|---:|---:|---:|---:|');
  console.log(row('`pingroll rollup` (one process: ingest and rollup)', runs.get(null)!, false));
  console.log(row('1 shard, then `rollup --no-ingest`', runs.get(1)!, true));
  console.log(row('2 shards at once, then `rollup --no-ingest`', runs.get(2)!, true));
  console.log(`\n${exact ? 'every way gave the one process\'s tables, row for row' : 'NOT EXACT: the ways gave different tables'}`);
  if (!exact) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
