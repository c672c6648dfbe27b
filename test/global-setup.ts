/**
 * Before any test runs, the build is brought up to date with the source (`make dist/.built`: the
 * WebAssembly module when a `.as.ts` changed, an incremental `tsc` when a `.ts` did; nothing when
 * neither did): the CLI, the parsing threads and the scanner's module load from `dist/`, and a test
 * run must test the source as it stands, however it was started (`make test`, `npx vitest run`).
 */
import { execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

export default function setup(): void {
  execFileSync('make', ['-s', 'dist/.built'], { cwd: ROOT, stdio: 'inherit' });
}
