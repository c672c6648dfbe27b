/** The pingroll CLI as a process of its own (from dist/: `make build` first), awaited, so that several can run at once. */
import { spawn } from 'node:child_process';
import { CLI } from './kill-run.js';

export interface CliRun { status: number | null; stdout: string; stderr: string }

/** `pingroll <args>` in `env`; DuckDB on one thread unless `env` names PINGROLL_THREADS (job-fixture.ts suiteConfig says why). */
export function cli(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PINGROLL_THREADS: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** The JSON lines a run logged (off a terminal every log line is one). */
export function events(run: CliRun): Array<Record<string, unknown>> {
  return run.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
}
