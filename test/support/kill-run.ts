/**
 * Runs of the CLI as cron starts them, stopped with SIGKILL at a named point of the run (kill-at.mjs)
 * or, for the soak, after a number of milliseconds; and what a day's published state is (to compare a
 * repaired day with a clean one, row for row).
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { projectFile } from '../../lib/project-file.js';
import { query, readDay } from './job-fixture.js';

// Found from the source (the tests) and from dist/ (bench/soak.ts) alike.
export const CLI = projectFile('bin/pingroll.js');

export function cliEnv(root: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '', TMPDIR: process.env.TMPDIR ?? '/tmp', PINGROLL_LOGS: join(root, 'logs'), PINGROLL_OUTPUT: join(root, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(root, 'wh.duckdb')}`,
    // One key for every output a test compares (each output would otherwise make its own: infra/generated-viewer-key.ts).
    PINGROLL_VIEWER_KEY: 'kill-test-viewer-key-0123',
    // DuckDB on one thread, as the suite's other runs (job-fixture.ts suiteConfig).
    PINGROLL_THREADS: '1' };
}

/** The preload that kills a process at a named point (PINGROLL_TEST_KILL_AT). */
export const KILL_AT = projectFile('test/support/kill-at.mjs');

/** Where a run is killed: at a named point of it (kill-at.mjs), or, for the soak, after a number of ms; null: not at all. */
export type Kill = string | number | null;

/** The environment of a run killed at `kill` (a named point), added to `env`. */
export function killedAt(env: Record<string, string>, point: string): Record<string, string> {
  return { ...env, NODE_OPTIONS: `--import ${KILL_AT}`, PINGROLL_TEST_KILL_AT: point };
}

/** `pingroll rollup --date day` (or `command`), killed as `kill` says. Resolves to its exit code, or 'killed'. */
export function runCli(root: string, day: string, kill: Kill, args: string[] = [], command: string[] = ['rollup', '--date', day]): Promise<number | 'killed'> {
  return new Promise((resolve) => {
    const env = typeof kill === 'string' ? killedAt(cliEnv(root), kill) : cliEnv(root);
    const child = spawn(process.execPath, [CLI, ...command, ...args], { env, stdio: 'ignore' });
    const timer = typeof kill === 'number' ? setTimeout(() => child.kill('SIGKILL'), kill) : null;
    child.once('exit', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve(signal === 'SIGKILL' ? 'killed' : code ?? -1);
    });
  });
}

/** What readers can see of a day: its three tables, the warehouse's rows, the manifest's counts. */
export async function publishedDay(root: string, day: string): Promise<unknown> {
  const manifest = JSON.parse(await readFile(join(root, 'out', '_runs', `dt=${day}`, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  const wh = join(root, 'wh.duckdb');
  return {
    parquet: await readDay(join(root, 'out'), day),
    warehouse: {
      episodes: await query(`SELECT * EXCLUDE (first_ping_at, last_ping_at), first_ping_at::VARCHAR AS f, last_ping_at::VARCHAR AS l, day::VARCHAR AS day FROM daily_episode_stats ORDER BY ALL`, wh),
      series: await query(`SELECT series_id, pings, sessions, viewers, minutes_watched, day::VARCHAR AS day FROM daily_series_stats ORDER BY ALL`, wh),
      audit: await query(`SELECT source, outcome, records, day::VARCHAR AS day FROM daily_ingest_audit ORDER BY ALL`, wh),
    },
    // daily_runs names the run and when it published: it differs from run to run by design.
    manifest: { pings: manifest.pings, duplicates: manifest.duplicates, outcomes: manifest.outcomes, outputs: (manifest.outputs as Array<{ table: string }>).filter((o) => o.table !== 'daily_runs') },
  };
}

/** pingroll's own files that only a run in progress should have: none once a run has finished. */
export async function inFlight(root: string): Promise<string[]> {
  const store = new DirectoryObjectStore(join(root, 'out'));
  return [...await store.list('_state/publish/')];
}
