/**
 * chDB (ClickHouse in-process), the bench's second peer: installed from npm into the bench's own
 * folder (`.bench/chdb/`) on first use, pinned here, never a dependency of pingroll (~550 MB).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { BENCH_DIR } from './bench-data.js';

/** The chDB release the bench measures (ClickHouse 26.7). */
export const CHDB_VERSION = '3.4.0';

const FOLDER = resolve(BENCH_DIR, 'chdb');

/** Installs chDB into the bench's folder unless it is there at CHDB_VERSION. */
export async function ensureChdb(): Promise<void> {
  const manifest = join(FOLDER, 'node_modules', 'chdb', 'package.json');
  if (existsSync(manifest) && (createRequire(import.meta.url)(manifest) as { version: string }).version === CHDB_VERSION) return;
  await mkdir(FOLDER, { recursive: true });
  await writeFile(join(FOLDER, 'package.json'), JSON.stringify({ name: 'pingroll-bench-chdb', private: true }) + '\n');
  process.stderr.write(`bench: installing chdb@${CHDB_VERSION} into ${FOLDER} (once, ~550 MB from npm)\n`);
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', `chdb@${CHDB_VERSION}`], { cwd: FOLDER, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`installing chdb@${CHDB_VERSION} into ${FOLDER} failed (exit ${r.status}); check the npm registry is reachable, and run again`);
}

/** chDB's query function, from the bench's folder (ensureChdb first). */
export function loadChdb(): { query: (sql: string, format?: string) => string } {
  return createRequire(join(FOLDER, 'package.json'))('chdb') as { query: (sql: string, format?: string) => string };
}
