/**
 * Before any test runs, the build is brought up to date with the source (`make dist/.built`: the
 * WebAssembly module when a `.as.ts` changed, an incremental `tsc` when a `.ts` did; nothing when
 * neither did): the CLI, the parsing threads and the scanner's module load from `dist/`, and a test
 * run must test the source as it stands, however it was started (`make test`, `npx vitest run`).
 *
 * Every temporary folder of the run (the tests' own, the DuckDB spill folders, the pingroll runs' work
 * folders, PostgreSQL's data) is made in one folder of the run's, its TMPDIR, removed when the run
 * ends. The test workers inherit it, and the processes they start with their environment. A process a
 * test starts with an environment of its own (as cron or a deployed task would: PATH and pingroll's
 * settings) uses the machine's TMPDIR, and removes its work folder itself. A run killed before its
 * teardown leaves its folder, named after its process (`pingroll-suite-<pid>-`), and the next run
 * removes it, as pingroll removes a dead run's work folder.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDeadWorkDirs } from '../lib/work-dir.js';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

export default async function setup(): Promise<() => void> {
  execFileSync('make', ['-s', 'dist/.built'], { cwd: ROOT, stdio: 'inherit' });
  await removeDeadWorkDirs();
  const dir = mkdtempSync(join(tmpdir(), `pingroll-suite-${process.pid}-`));
  // Others may pass through it, not list it: PostgreSQL runs as nobody when the suite runs as root, in a folder made its own there.
  chmodSync(dir, 0o711);
  process.env.TMPDIR = dir;
  return () => {
    // Retried: a process a test started may still be letting go of a file in it.
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };
}
