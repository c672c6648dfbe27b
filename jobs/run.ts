/**
 * What every job does around its work: the locations checked (a configuration error is found before
 * anything is created), the run lock taken (a shard's, beside its fellow shards), the ledger and the
 * quarantine loaded, a day a killed run left half published completed, what dead runs left removed;
 * then the job's work, holding a `Run`; then the work folder and the lock let go.
 */
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { DayPublisher } from '../export/publisher.js';
import { shardName, type Shard } from '../ingest/batch/shard.js';
import { lazyConnection, openEngine, type EngineSettings } from '../lib/duckdb-engine.js';
import type { Log } from '../lib/log.js';
import { makeWorkDir } from '../lib/work-dir.js';
import type { RunContext } from '../rollup/engine.js';
import { loadEpisodeCatalog, sha256Of, type EpisodeCatalog } from '../rollup/episode-catalog.js';
import { LISTER_RULES } from '../ingest/listing/lister.js';
import type { BatchWriter } from '../state/batch-writer.js';
import { acquireRunLock, type LockOptions } from '../state/run-lock.js';
import { RunState } from '../state/run-state.js';
import type { Backends } from '../infra/backends.js';
import { codeVersion } from '../infra/version.js';

/** The run's local workspace: its folder, a folder or a DuckDB connection of a stage's own, the episode catalog as fetched once. */
export interface Workspace {
  /** The run's local work folder. */
  readonly dir: string;
  /** `fn` with a folder of its own under the work folder, removed after. */
  withFolder<T>(name: string, fn: (dir: string) => Promise<T>): Promise<T>;
  /** `fn` with a DuckDB connection of its own (spilling under the work folder), closed after. */
  withEngine<T>(name: string, engine: EngineSettings, fn: (db: DuckDBConnection) => Promise<T>): Promise<T>;
  /** The episode catalog, fetched and checked the first time (a bad one: EpisodeCatalogError, exit 2); null without one. */
  episodeCatalog(db: DuckDBConnection): Promise<EpisodeCatalog | null>;
  /** The SHA-256 of the episode catalog's bytes, fetched but not checked (once a run); null without one. */
  episodeCatalogSha(): Promise<string | null>;
}

/** What a job holds while it works: its id, fence and log (RunContext), the state it loaded, its workspace, and what writes. */
export interface Run extends RunContext {
  /** The id, fence and log alone: what an engine is handed (none of the state, nor the store). */
  readonly context: RunContext;
  readonly state: RunState;
  readonly work: Workspace;
  /** Stages and commits batches and table reads (intent, staging, fence, commit, compaction). */
  readonly writer: BatchWriter;
  readonly publisher: DayPublisher;
  /** The code's version, for manifests. */
  readonly version: string;
  /** This run is a shard of a sharded ingest. */
  readonly shard: Shard | null;
}

export interface RunOptions {
  id: string;
  /** What the lock says the run is doing (`rollup 2026-11-01`). */
  command: string;
  /** The work folder's name. */
  kind: string;
  log: Log;
  waitSeconds?: number | undefined;
  /** The event that says the run started, and its fields. */
  start: [string, Record<string, unknown>];
  shard?: Shard | null | undefined;
}

export async function withRun<T>(backends: Backends, opts: RunOptions, fn: (run: Run) => Promise<T>): Promise<T> {
  const { logs, store, warehouse } = backends;
  const { id, log } = opts;
  const shard = opts.shard ?? null;
  // Preflight: the logs readable, the output and the warehouse writable, each within a bounded wait;
  // if not, a LocationError (exit 2) before the lock is taken or anything listed.
  await logs.check();
  await store.check();
  if (!shard) await warehouse?.checkWritable();
  await store.checkWritable();
  // A shard of a sharded ingest runs beside its fellow shards; every other run, alone.
  const waiting = lockOptions(log, opts.waitSeconds);
  const lock = await acquireRunLock(store, id, opts.command, shard && shardName(shard), waiting);
  const dir = await makeWorkDir(opts.kind);
  try {
    log.info(opts.start[0], { ...opts.start[1], logs: logs.url, output: store.url });
    const state = await RunState.load(store, LISTER_RULES, { migrate: true, workDir: dir });
    const fence = (): Promise<void> => lock.assertHeld();
    const publisher = new DayPublisher({ run: id, store, warehouse, workDir: dir, log, fence, catalog: backends.catalog ?? null });
    // A day a killed run left half published is completed by the next run that holds the output alone.
    if (shard === null) await publisher.recover();
    const leftovers = await state.removeLeftovers(shard ? shardName(shard) : undefined);
    if (Object.values(leftovers).some((n) => n > 0)) log.info('leftovers.removed', { ...leftovers });
    let catalog: Promise<EpisodeCatalog | null> | null = null;
    let catalogSha: Promise<string | null> | null = null;
    // The catalog's bytes as fetched once this run (fetching it fails as a bad catalog does: exit 2).
    let catalogFile: Promise<string> | null = null;
    const fetchedCatalog = (): Promise<string> => (catalogFile ??= (async () => {
      const file = join(dir, 'episode-catalog-fetched.csv');
      await backends.episodes!.fetch(file);
      return file;
    })());
    return await fn({
      id, log, fence, context: { id, log, fence }, publisher, shard, version: codeVersion(),
      state,
      writer: state.writer(fence, shard ? shardName(shard) : undefined),
      work: {
        dir,
        episodeCatalog: (db) => {
          const source = backends.episodes;
          if (!source) return Promise.resolve(null);
          // Checked from the copy fetched for its digest: one read of the catalog a run.
          catalog ??= fetchedCatalog().then((file) => loadEpisodeCatalog(db, { url: source.url, fetch: (dest) => copyFile(file, dest) }, dir)).then((c) => {
            log.info('episode_catalog.read', { url: c.url, episodes: c.episodes, sha256: c.sha256 });
            return c;
          });
          return catalog;
        },
        episodeCatalogSha: () => {
          if (!backends.episodes) return Promise.resolve(null);
          catalogSha ??= fetchedCatalog().then(sha256Of);
          return catalogSha;
        },
        withFolder: async (name, work) => {
          const folder = await mkdtemp(join(dir, `${name}-`));
          try {
            return await work(folder);
          } finally {
            await rm(folder, { recursive: true, force: true });
          }
        },
        withEngine: async (name, engine, work) => {
          // Opened at its first use: a run with nothing to do never loads DuckDB.
          const db = lazyConnection(() => openEngine({ tempDir: join(dir, `spill-${name}`), memoryLimitMb: engine.memoryLimitMb, threads: engine.threads }));
          try {
            return await work(db);
          } finally {
            db.closeSync();
          }
        },
      },
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
    await lock.release();
  }
}

/** How a job waits for, and takes over, the run lock, said in its log. */
export function lockOptions(log: Log, waitSeconds = 0): LockOptions {
  return {
    waitSeconds,
    onWait: (holder) => log.info('lock.wait', { holder: `${holder.command} pid ${holder.pid} on ${holder.host}` }),
    onTakeover: (holder, reason) => log.warn('lock.takeover', { holder: holder ? `${holder.command} run ${holder.run} pid ${holder.pid} on ${holder.host}` : 'unknown', reason }),
  };
}
