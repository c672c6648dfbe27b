/**
 * The guard against drift (issue #42): the small-object day of real traffic (~2,000 objects, ~600k
 * records, viewers from addresses of their own: issue #57) through
 * `make rollup` as cron runs it (a cold process, a fresh output), against the same command in a
 * pinned earlier commit built beside the checkout (`.bench/pinned-<commit>/`, a git worktree), and
 * against the DuckDB baseline (duckdb-regex-baseline.ts), interleaved passes. Each ratio is a speed
 * (the other's time over this checkout's: above 1, this one is faster), the median of the passes'.
 *
 * Both checkouts run with the same viewer key (BENCH_VIEWER_KEY), so that both make the viewer
 * tables (this checkout makes a key when none is set, issue #41; the pinned commit does not): the
 * ratio compares the same tables, as issue #41's cost is measured against that commit.
 *
 * In each pass, after this checkout's run, the same command again finds nothing new (issue #42, item
 * 1): NOOP_RUNS of it, interleaved with as many `node -e 0`, give the pass's ratio of their medians
 * (times `node -e 0`: below is faster).
 *
 * It fails (exit 1) when either speed ratio is more than 10% below the figure docs/benchmarks.md
 * records for it, or the run with nothing to do more than 10% above its own, in its line
 * `<!-- drift-guard: pinned <commit> <ratio>; duckdb <ratio>; noop <ratio> -->`: each change measured
 * alone as "no slower" let the day slide 36% before (issue #42). Passes: BENCH_PASSES (5).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR, BENCH_VIEWER_KEY, rechunkedLogDir } from './bench-data.js';
import { median, ROOT } from './cold-run.js';
import { benchLogDir } from './job-bench.js';

const DAY = '2026-11-01';
/** How far below the recorded figure a ratio may fall (the run with nothing to do: above) before the guard fails. */
const TOLERANCE = 0.1;
/** Runs with nothing to do, and of `node -e 0`, in each pass (each a few tenths of a second). */
const NOOP_RUNS = 5;

export interface Figures { pinned: number; duckdb: number; noop: number }

/** The figures docs/benchmarks.md records: the pinned commit, and each ratio. */
export function recordedFigures(page: string): Figures & { commit: string } {
  const m = /<!-- drift-guard: pinned ([0-9a-f]{7,40}) ([0-9.]+); duckdb ([0-9.]+); noop ([0-9.]+) -->/.exec(page);
  if (!m) throw new Error('docs/benchmarks.md has no line <!-- drift-guard: pinned <commit> <ratio>; duckdb <ratio>; noop <ratio> -->: the guard has nothing to hold the day to');
  return { commit: m[1]!, pinned: Number(m[2]), duckdb: Number(m[3]), noop: Number(m[4]) };
}

/** Each figure's limit: the speeds' floor (recorded less TOLERANCE), the run with nothing to do's ceiling (recorded plus TOLERANCE). */
function limits(recorded: Figures): Figures {
  return { pinned: recorded.pinned * (1 - TOLERANCE), duckdb: recorded.duckdb * (1 - TOLERANCE), noop: recorded.noop * (1 + TOLERANCE) };
}

/** Whether each measured ratio is within its limit (the speeds not below it, the run with nothing to do not above). */
function held(measured: Figures, recorded: Figures): Record<keyof Figures, boolean> {
  const limit = limits(recorded);
  return { pinned: measured.pinned >= limit.pinned, duckdb: measured.duckdb >= limit.duckdb, noop: measured.noop <= limit.noop };
}

/** One line for each measured ratio not within TOLERANCE of its recorded figure. */
export function drifted(measured: Figures, recorded: Figures & { commit: string }): string[] {
  const ok = held(measured, recorded);
  const out: string[] = [];
  if (!ok.pinned) out.push(`the small-object day is ${measured.pinned.toFixed(2)}x the speed of ${recorded.commit}, below the recorded ${recorded.pinned.toFixed(2)}x by more than ${TOLERANCE * 100}%`);
  if (!ok.duckdb) out.push(`the small-object day is ${measured.duckdb.toFixed(2)}x the DuckDB baseline's speed, below the recorded ${recorded.duckdb.toFixed(2)}x by more than ${TOLERANCE * 100}%`);
  if (!ok.noop) out.push(`a run with nothing to do takes ${measured.noop.toFixed(2)}x \`node -e 0\`, above the recorded ${recorded.noop.toFixed(2)}x by more than ${TOLERANCE * 100}%`);
  return out;
}

function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): number {
  const started = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 1 << 26, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} in ${cwd} failed (exit ${r.status}): ${(r.stderr ?? '').slice(-1500)}`);
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** The pinned commit checked out and built beside the checkout, once (its own `npm ci`, from its own lock). */
function pinnedCheckout(commit: string): string {
  const dir = join(ROOT, BENCH_DIR, `pinned-${commit}`);
  if (existsSync(join(dir, 'dist', '.built'))) return dir;
  if (spawnSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: ROOT }).status !== 0) {
    throw new Error(`commit ${commit} (docs/benchmarks.md's drift-guard line) is not in this clone's history; fetch it (git fetch --unshallow) and run again`);
  }
  spawnSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT });
  run('git', ['worktree', 'add', '--detach', dir, commit], ROOT);
  process.stderr.write(`drift guard: building ${commit} in ${dir} (once)\n`);
  run('make', ['-s', 'build'], dir);
  return dir;
}

/** `make rollup` of the day in `checkout`, cold, into `out` (a fresh one unless `again`): its wall time. */
function rollup(checkout: string, logs: string, out: string, again = false): number {
  if (!again) spawnSync('rm', ['-rf', out]);
  return run('make', ['-s', 'rollup', `DATE=${DAY}`], checkout, {
    PINGROLL_LOGS: logs, PINGROLL_OUTPUT: join(out, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(out, 'wh.duckdb')}`, PINGROLL_VIEWER_KEY: BENCH_VIEWER_KEY,
  });
}

async function main(): Promise<void> {
  const recorded = recordedFigures(readFileSync(join(ROOT, 'docs', 'benchmarks.md'), 'utf8'));
  const pinned = pinnedCheckout(recorded.commit);
  // The small-object day of real traffic (issue #57: each session an address of its own, hundreds of user agents).
  const { dir: shards } = await benchLogDir(540_000);
  const logs = join(ROOT, await rechunkedLogDir(shards, 2000));
  const passes = Number(process.env.BENCH_PASSES ?? 5);
  const ratios: Array<Figures & { ours: number; idle: number }> = [];
  for (let p = 0; p < passes; p++) {
    const ours = rollup(ROOT, logs, join(ROOT, BENCH_DIR, 'drift-ours'));
    // The same command again: nothing new.
    const idle: number[] = [], bare: number[] = [];
    for (let i = 0; i < NOOP_RUNS; i++) {
      idle.push(rollup(ROOT, logs, join(ROOT, BENCH_DIR, 'drift-ours'), true));
      bare.push(run(process.execPath, ['-e', '0'], ROOT));
    }
    const then = rollup(pinned, logs, join(ROOT, BENCH_DIR, 'drift-pinned'));
    spawnSync('rm', ['-rf', join(ROOT, BENCH_DIR, 'drift-baseline')]);
    const duckdb = run(process.execPath, [join(ROOT, 'dist/bench/duckdb-regex-baseline.js'), logs, DAY, join(ROOT, BENCH_DIR, 'drift-baseline')], ROOT);
    ratios.push({ ours, pinned: then / ours, duckdb: duckdb / ours, idle: median(idle), noop: median(idle) / median(bare) });
    process.stderr.write(`drift guard: pass ${p + 1}/${passes}\n`);
  }
  const measured = { pinned: median(ratios.map((r) => r.pinned)), duckdb: median(ratios.map((r) => r.duckdb)), noop: median(ratios.map((r) => r.noop)) };
  const failures = drifted(measured, recorded);
  const ok = held(measured, recorded);
  const limit = limits(recorded);
  const verdict = (k: keyof Figures): string => (ok[k] ? 'held' : '**drifted**');
  process.stdout.write([
    `The small-object day through \`make rollup\`, cold, ${passes} interleaved passes, medians of each pass's ratio (above 1: this checkout is faster):`,
    '',
    '| against | speed ratio | recorded | floor (recorded less 10%) | |',
    '|---|---:|---:|---:|---|',
    `| ${recorded.commit} (built in .bench/pinned-${recorded.commit}/) | ${measured.pinned.toFixed(2)}x | ${recorded.pinned.toFixed(2)}x | ${limit.pinned.toFixed(2)}x | ${verdict('pinned')} |`,
    `| DuckDB: Athena regex + the same dedupe and rollup SQL | ${measured.duckdb.toFixed(2)}x | ${recorded.duckdb.toFixed(2)}x | ${limit.duckdb.toFixed(2)}x | ${verdict('duckdb')} |`,
    '',
    `This checkout's run: ${median(ratios.map((r) => r.ours)).toFixed(2)} s.`,
    '',
    `The same command again, nothing new (${NOOP_RUNS} runs a pass, interleaved with \`node -e 0\`; issue #42's target: 2.5x):`,
    '',
    '| run with nothing to do | x `node -e 0` | recorded | ceiling (recorded plus 10%) | |',
    '|---|---:|---:|---:|---|',
    `| ${median(ratios.map((r) => r.idle)).toFixed(3)} s | ${measured.noop.toFixed(2)}x | ${recorded.noop.toFixed(2)}x | ${limit.noop.toFixed(2)}x | ${verdict('noop')} |`,
  ].join('\n') + '\n');
  for (const f of failures) process.stderr.write(`drift guard: ${f}; find the change with git bisect, or record the new figure in docs/benchmarks.md's drift-guard line if it was meant\n`);
  if (failures.length) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
