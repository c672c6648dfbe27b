/**
 * `make bench` (parsing threads): the parse stage alone, without DuckDB, over the job bench's 3,000
 * objects (4 times over): the run's own thread against 1 and 2 parsing threads (parse-pool.ts), each pass in a cold
 * process, interleaved passes, medians. It answers what the job bench cannot on two cores: whether
 * the parse itself scales with threads (in the job, DuckDB's conversions take the second core). The
 * part files the parsers write are counted and deleted as they come; every pass must count the same
 * records and rows. Usage: node dist/bench/parse-threads-bench.js [passes, default 5]
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../infra/config.js';
import { parsers } from '../ingest/batch/parse-pool.js';
import { DirectoryObjectSource } from '../ingest/object-source/directory-object-source.js';
import type { ObjectRef } from '../ingest/object-source/object-source.js';
import { BENCH_DIR, rechunkedLogDir } from './bench-data.js';
import { measure, median } from './cold-run.js';

const DAY = '2026-11-01';
/** Times the day is parsed in one pass. */
const ROUNDS = 4;

/** One parse of every object in `dir` with `threads` parsing threads: seconds, records and staged row bytes. */
async function parseAll(dir: string, threads: number): Promise<{ seconds: number; records: number; rowBytes: number }> {
  const source = new DirectoryObjectSource(dir);
  const refs: ObjectRef[] = [];
  for await (const ref of source.list()) refs.push(ref);
  // The day ROUNDS times over, so that starting the threads (~50 ms each) is not most of what is timed.
  const tasks = Array.from({ length: ROUNDS }, () => refs).flat();
  const work = mkdtempSync(join(tmpdir(), 'pingroll-bench-'));
  let rowBytes = 0;
  const started = process.hrtime.bigint();
  const pool = parsers(threads, {
    pingKeys: defaultConfig().pingKeys, dir: work, partBytes: 32 << 20, source,
    onPart: (path) => {
      rowBytes += statSync(path).size;
      rmSync(path);
    },
  });
  let records = 0;
  try {
    // As the job hands them out: as many in hand as the pool has slots.
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < tasks.length; i = next++) {
        const ref = tasks[i]!;
        const parsed = await pool.parse({ index: i, key: ref.key, day: DAY, file: source.localFile(ref), size: ref.size });
        records += parsed.records;
      }
    };
    await Promise.all(Array.from({ length: pool.slots }, worker));
    await pool.flush();
  } finally {
    await pool.close();
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  rmSync(work, { recursive: true, force: true });
  return { seconds, records, rowBytes };
}

async function main(): Promise<void> {
  if (process.argv[2] === '--one') {
    const r = await parseAll(process.argv[3]!, Number(process.argv[4]));
    process.stdout.write(JSON.stringify(r));
    return;
  }
  const passes = Number(process.argv[2] ?? 5);
  const dir = await rechunkedLogDir(join(BENCH_DIR, `logs-${DAY}-1000000`), 3000);
  const objects = readdirSync(dir).length;
  const runs = new Map<number, Array<{ seconds: number; records: number; rowBytes: number }>>([[0, []], [1, []], [2, []]]);
  for (let p = 0; p < passes; p++) {
    for (const threads of runs.keys()) {
      // A cold process each; the parse times itself (measure's wall time would add the start-up).
      const r = measure('node', [new URL(import.meta.url).pathname, '--one', dir, String(threads)]);
      runs.get(threads)!.push(JSON.parse(r.stdout) as { seconds: number; records: number; rowBytes: number });
    }
  }
  const all = [...runs.values()].flat();
  if (all.some((r) => r.records !== all[0]!.records || r.rowBytes !== all[0]!.rowBytes)) throw new Error('the passes counted different records or rows: a bug');
  const none = median(runs.get(0)!.map((r) => r.seconds));
  const lines = [
    `parse threads bench: the parse stage alone (no DuckDB): the job bench's ${objects.toLocaleString('en')} objects ${ROUNDS} times over, ${all[0]!.records.toLocaleString('en')} records a pass, each pass a cold process, ${passes} interleaved passes, medians, on ${cpus().length} cores`,
    '',
    '| parsing | s | records/s | vs the run\'s own thread |',
    '|---|---:|---:|---:|',
    ...[...runs].map(([threads, rs]) => {
      const s = median(rs.map((r) => r.seconds));
      return `| ${threads === 0 ? 'the run\'s own thread' : `${threads} thread${threads > 1 ? 's' : ''}`} | ${s.toFixed(2)} | ${Math.round(all[0]!.records / s).toLocaleString('en')} | ${(none / s).toFixed(2)}x |`;
    }),
    '',
    'every pass counted the same records and staged the same bytes of rows',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

await main();
