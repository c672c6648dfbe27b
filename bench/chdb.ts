/**
 * chDB (ClickHouse in-process), the bench's second peer: installed from npm into the bench's own
 * folder (`.bench/chdb/`) on first use, pinned here, never a dependency of pingroll (~550 MB).
 */
import { BenchPackages } from './bench-packages.js';

/** The chDB release the bench measures (ClickHouse 26.7). */
export const CHDB_VERSION = '3.4.0';

const CHDB = new BenchPackages('chdb', { chdb: CHDB_VERSION }, '~550 MB from npm');

/** Installs chDB into the bench's folder unless it is there at CHDB_VERSION. */
export async function ensureChdb(): Promise<void> {
  await CHDB.ensure();
}

/** chDB's query function, from the bench's folder (ensureChdb first). */
export function loadChdb(): { query: (sql: string, format?: string) => string } {
  return CHDB.require('chdb');
}
