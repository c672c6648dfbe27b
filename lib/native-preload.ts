/**
 * Start-up: DuckDB's native library is 70 MB, and loading it (the dynamic linker's work) is the
 * largest single cost before a run reads its first object. The commands that use DuckDB start
 * loading it on a second thread at once, while this thread loads the program; when the program then
 * loads DuckDB, the library is already mapped (or the loader waits for the thread's load to end:
 * never slower than loading it here). The thread is let go once the program has DuckDB.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** The commands whose runs open DuckDB. */
const USES_DUCKDB = new Set(['rollup', 'ingest', 'backfill']);

let worker: Worker | undefined;

/** Starts loading DuckDB's bindings on another thread when `command` uses them; a failure there is the program's to find. */
export function preloadDuckDb(command: string | undefined): void {
  if (command === undefined || !USES_DUCKDB.has(command)) return;
  try {
    const bindings = createRequire(import.meta.url).resolve('@duckdb/node-bindings');
    worker = new Worker(`require(${JSON.stringify(bindings)})`, { eval: true, stdout: true, stderr: true });
    worker.unref();
    worker.on('error', () => {});
  } catch {
    worker = undefined;
  }
}

/** Called once the program holds DuckDB: the preloading thread is no longer needed. */
export function releasePreload(): void {
  void worker?.terminate();
  worker = undefined;
}
