/**
 * `pingroll rollup --dry-run`: what the daily job would do, and nothing of it: the episode catalog
 * read and checked as the run would, the objects it would parse (listed as it would list them), the
 * batches staged for the day, the tables it would read, the files it would write. No lock is taken and
 * nothing is created.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { dayManifestKey } from '../datasets/layout.js';
import { MAX_BATCH_OBJECTS } from '../ingest/batch/ingest-batch.js';
import type { MonthlyTable } from '../ingest/dynamodb/monthly-tables.js';
import { openEngine } from '../lib/duckdb-engine.js';
import type { Log } from '../lib/log.js';
import { makeWorkDir } from '../lib/work-dir.js';
import { loadEpisodeCatalog } from '../rollup/episode-catalog.js';
import { outputKey } from '../rollup/output-file.js';
import { TABLES } from '../rollup/rules.js';
import { RunState } from '../state/run-state.js';
import { Lister, LISTER_RULES } from '../ingest/listing/lister.js';
import type { Backends } from '../infra/backends.js';
import type { Config } from '../infra/config.js';

export async function dryRun(config: Config, backends: Backends, opts: { day: string; log: Log; tables: MonthlyTable[]; noIngest?: boolean | undefined; rescan?: boolean | undefined; now?: Date | undefined }): Promise<void> {
  const { day, log, tables } = opts;
  const { logs, store, warehouse } = backends;
  // The episode catalog is read and checked as the run would, before anything is listed (a bad one: EpisodeCatalogError, exit 2).
  let episodeCatalog: { url: string; episodes: number } | null = null;
  if (backends.episodes) {
    const dir = await makeWorkDir('dry-run');
    const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: config.memoryLimitMb, threads: config.threads });
    try {
      const c = await loadEpisodeCatalog(engine, backends.episodes, dir);
      episodeCatalog = { url: c.url, episodes: c.episodes };
    } finally {
      engine.closeSync();
      await rm(dir, { recursive: true, force: true });
    }
  }
  const { ledger, quarantine } = await RunState.load(store, LISTER_RULES);
  const todo = { objects: 0, bytes: 0 };
  let listedDays: readonly string[] = [];
  if (!opts.noIngest) {
    const lister = await Lister.open(store, { marginMs: config.listMarginMs, schedule: config.schedule, shard: null });
    const found = await lister.newObjects(logs, { asked: [day], nowMs: (opts.now ?? new Date()).getTime(), known: { ledger, quarantine }, chunk: MAX_BATCH_OBJECTS }, async (refs) => {
      todo.objects += refs.length;
      todo.bytes += refs.reduce((n, o) => n + o.size, 0);
    });
    listedDays = found.days;
  }
  const staged = await ledger.inputsFor(day);
  log.info('dry-run', {
    day, logs: logs.url, output: store.url, deliveryDaysListedInFull: listedDays,
    objectsToParse: todo.objects, bytesToParse: todo.bytes,
    batchesStagedForDay: staged.length, stagedPings: staged.reduce((n, s) => n + s.staged.pingCount, 0),
    tables: tables.map((t) => `${t.name}: ${ledger.tableClosed(t.name) && !opts.rescan ? 'closed, scanned before; not scanned again' : 'would be scanned'}`),
    wouldWrite: TABLES.map((t) => `${store.url}${outputKey(t, day)}`).concat([`${store.url}${dayManifestKey(day)}`]),
    warehouse: warehouse?.description ?? 'none', episodeCatalog,
  });
}
