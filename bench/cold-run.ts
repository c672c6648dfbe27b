/**
 * What every benchmark measures a command with: a cold process, its wall time, and the peak RSS and
 * CPU of its node process (reported by report-rss.mjs; through NODE_OPTIONS when `make` starts node).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR } from './bench-data.js';

export const ROOT = new URL('../../', import.meta.url).pathname;

export interface Measured { seconds: number; maxRssMiB: number; cpuSeconds: number; stdout: string; stderr: string }

/** `node <args>` (with the reporter loaded) or `make <args>`, in the project's root; throws with its stderr when it fails. */
export function measure(command: 'node' | 'make', args: string[], env: Record<string, string> = {}, opts: { showStderr?: boolean } = {}): Measured {
  const report = join(BENCH_DIR, `report-${process.pid}.json`);
  const reporter = join(ROOT, 'bench/report-rss.mjs');
  const viaMake = command === 'make';
  const started = process.hrtime.bigint();
  const r = spawnSync(viaMake ? 'make' : process.execPath, viaMake ? args : ['--import', reporter, ...args], {
    cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', opts.showStderr ? 'inherit' : 'pipe'],
    env: { ...process.env, ...env, BENCH_REPORT: report, ...(viaMake ? { NODE_OPTIONS: `--import ${reporter}` } : {}) },
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${r.status}): ${(r.stderr ?? '').slice(-2000)}`);
  const rep = JSON.parse(readFileSync(report, 'utf8')) as { maxRssKiB: number; cpuSeconds: number };
  return { seconds, maxRssMiB: rep.maxRssKiB / 1024, cpuSeconds: rep.cpuSeconds, stdout: r.stdout, stderr: r.stderr ?? '' };
}

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
