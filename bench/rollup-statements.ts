/**
 * Where the day's rollup spends its time, statement by statement (rollup/engines/duckdb/day-rollup.ts):
 * the small-object day's staged files (staging-paths.ts smallDayStaged: one `make rollup`, the window
 * off), rolled up again and again in one process with DuckDB on 2 threads, each statement's wall
 * time a median over the passes. The statements that make the audience's figures (issue #57, item 5)
 * are marked. Usage: node dist/bench/rollup-statements.js [<staged.parquet> <day>] (BENCH_PASSES, default
 * 9): another day's staged files, such as rollup-20m.ts makes.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { join } from 'node:path';
import { openEngine } from '../lib/duckdb-engine.js';
import { rollupDay } from '../rollup/engines/duckdb/day-rollup.js';
import { BENCH_DIR } from './bench-data.js';
import { median, ROOT } from './cold-run.js';
import { smallDayStaged } from './staging-paths.js';

const [stagedArg, dayArg] = process.argv.slice(2);
const DAY = dayArg ?? '2026-11-01';
const PASSES = Number(process.env.BENCH_PASSES ?? 9);
/** The statements of the audience's figures: automated traffic (the rate blocks, suspect records, caught sessions, exclusions) and the country and device tables. */
const AUDIENCE = new Set(['rate_blocks', 'suspect', 'caught_sessions', 'staged_count', 'excluded', 'DELETE FROM session_blocks', 'out_countries', 'out_devices', 'out_invalid']);

const files = stagedArg ? [stagedArg] : await smallDayStaged();
const engine = await openEngine({ memoryLimitMb: 4096, threads: 2, tempDir: join(ROOT, BENCH_DIR, 'staging-out', 'spill') });
const rows = Number((await engine.runAndReadAll(`SELECT count(*) FROM read_parquet([${files.map((f) => `'${f}'`).join(', ')}])`)).getRows()[0]![0]);
const times = new Map<string, number[]>();
const totals: number[] = [];
// Each statement the rollup runs, by the table it makes (or its first words), timed where it is sent.
const timedEngine = new Proxy(engine, {
  get(target, prop) {
    const value = (target as unknown as Record<PropertyKey, unknown>)[prop];
    if (prop !== 'run' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
    return async (sql: string, ...rest: unknown[]) => {
      const name = /CREATE OR REPLACE (?:TEMP )?TABLE (?:\w+\.)?(\w+)/.exec(sql)?.[1] ?? /^\s*(DELETE FROM \w+|INSERT INTO \w+|COPY)/.exec(sql)?.[1] ?? sql.trim().slice(0, 30);
      const started = performance.now();
      const result = await (value as (...a: unknown[]) => Promise<unknown>).call(target, sql, ...rest);
      const list = times.get(name) ?? [];
      list.push(performance.now() - started);
      times.set(name, list);
      return result;
    };
  },
}) as DuckDBConnection;
for (let p = 0; p < PASSES; p++) {
  const started = performance.now();
  await rollupDay(timedEngine, DAY, files, { s3: { ping: rows } });
  totals.push(performance.now() - started);
}
const statements = [...times].map(([name, list]) => ({ name, ms: median(list) }));
const audience = statements.filter((s) => AUDIENCE.has(s.name)).reduce((n, s) => n + s.ms, 0);
process.stdout.write([
  `${stagedArg ? `The rollup of ${stagedArg}` : 'The small-object day\'s rollup'} (${rows.toLocaleString('en')} staged pings, the window off), statement by statement, ${PASSES} passes in one process, medians: ${Math.round(median(totals))} ms in all, ${Math.round(audience)} ms of it the audience's (marked *):`,
  '',
  '| statement | ms |',
  '|---|---:|',
  ...statements.map((s) => `| ${s.name}${AUDIENCE.has(s.name) ? ' *' : ''} | ${s.ms.toFixed(1)} |`),
].join('\n') + '\n');
engine.closeSync();
