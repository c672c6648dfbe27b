import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll } from 'vitest';
import { buildBackends, type Backends } from '../../infra/backends.js';
import { loadConfig, type Config } from '../../infra/config.js';
import { runBackfill, type BackfillOptions, type BackfillSummary } from '../../jobs/backfill.js';
import { runDailyJob, type JobOptions, type JobSummary } from '../../jobs/daily.js';
import { runReconcile, type ReconcileOptions, type ReconcileSummary } from '../../jobs/reconcile.js';
import { runIngestJob, type IngestJobOptions, type IngestJobSummary } from '../../jobs/ingest.js';
import { runClose, type CloseOptions } from '../../jobs/close.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { objectBody, type LogObject } from '../../tools/sample/access-log-generator.js';

export function tempDir(prefix = 'pingroll-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Fresh temporary folders for one test file, all removed after it. */
export function tempRoots(): () => string {
  const roots: string[] = [];
  afterAll(async () => {
    for (const r of roots) await rm(r, { recursive: true, force: true });
  });
  return () => {
    const r = tempDir();
    roots.push(r);
    return r;
  };
}

/**
 * What a test file builds once (a month backfilled) and gives whole to each test that asks: built in
 * a working folder from `roots`, kept as a snapshot, and the working folder put back as the snapshot
 * before each later use (a file's tests run one after another). The folder keeps its path: pingroll's
 * state names it (the warehouse's path is among a day's settings, seals name the logs), so a copy
 * elsewhere would be another deployment, every day rolled up again.
 */
export function builtOnce<T extends object>(roots: () => string, build: (r: string) => Promise<T>): () => Promise<T & { r: string }> {
  let made: Promise<{ r: string; snapshot: string; value: T }> | undefined;
  let uses = 0;
  return async () => {
    made ??= (async () => {
      const r = roots();
      const value = await build(r);
      const snapshot = roots();
      await cp(r, snapshot, { recursive: true, preserveTimestamps: true });
      return { r, snapshot, value };
    })();
    const m = await made;
    if (uses++ > 0) {
      await rm(m.r, { recursive: true, force: true });
      await cp(m.snapshot, m.r, { recursive: true, preserveTimestamps: true });
    }
    return { ...m.value, r: m.r };
  };
}

export async function writeObjects(dir: string, objects: LogObject[]): Promise<void> {
  for (const o of objects) {
    const path = join(dir, o.key);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, objectBody(o));
  }
}

export function dirConfig(root: string, extra: Record<string, string> = {}): Config {
  return loadConfig({ PINGROLL_LOGS: join(root, 'logs'), PINGROLL_OUTPUT: join(root, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(root, 'wh.duckdb')}`, ...extra });
}

/** Rows of a query in a fresh in-memory DuckDB, with dates and timestamps as text, numbers as numbers. */
export async function query<T = Record<string, unknown>>(sql: string, file?: string): Promise<T[]> {
  const instance = await DuckDBInstance.create(file ?? ':memory:', file ? { access_mode: 'READ_ONLY' } : {});
  const c = await instance.connect();
  try {
    const r = await c.runAndReadAll(sql);
    return r.getRowObjectsJson().map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) && k !== 'series_id' && k !== 'episode_id' ? Number(v) : v]))) as T[];
  } finally {
    c.closeSync();
    instance.closeSync();
  }
}

/** A day's Parquet output, read back. */
export async function readDay(out: string, day: string): Promise<{ episodes: unknown[]; series: unknown[]; audit: unknown[] }> {
  // Without hive_partitioning, DuckDB would add the path's dt= as a column.
  const file = (t: string): string => `read_parquet('${join(out, t, `dt=${day}`, 'part-00000.parquet')}', hive_partitioning = false)`;
  return {
    episodes: await query(`SELECT day::VARCHAR AS day, * EXCLUDE (day, first_ping_at, last_ping_at), first_ping_at::VARCHAR AS first_ping_at, last_ping_at::VARCHAR AS last_ping_at FROM ${file('daily_episode_stats')}`),
    series: await query(`SELECT day::VARCHAR AS day, * EXCLUDE (day, first_ping_at, last_ping_at), first_ping_at::VARCHAR AS first_ping_at, last_ping_at::VARCHAR AS last_ping_at FROM ${file('daily_series_stats')}`),
    audit: await query(`SELECT day::VARCHAR AS day, * EXCLUDE (day) FROM ${file('daily_ingest_audit')} ORDER BY source, outcome`),
  };
}

/** A day's tables as published on an object store (S3), downloaded into `into` and read as readDay reads a directory's. */
export async function readStoreDay(store: Pick<ObjectStore, 'download'>, day: string, into: string): ReturnType<typeof readDay> {
  for (const t of ['daily_episode_stats', 'daily_series_stats', 'daily_ingest_audit']) {
    const key = `${t}/dt=${day}/part-00000.parquet`;
    await mkdir(join(into, t, `dt=${day}`), { recursive: true });
    await store.download(key, join(into, key));
  }
  return readDay(into, day);
}

/** Sets environment variables for a test suite; returns what puts them back. */
export function setEnv(vars: Record<string, string>): () => void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}

export { rm };

type Wrap = (b: Backends) => Backends;

/** `fn` on the configured backends, as `wrap` may replace them (to inject faults), released after. */
export async function onBackends<T>(config: Config, log: JobOptions['log'], wrap: Wrap, fn: (b: Backends) => Promise<T>): Promise<T> {
  const backends = wrap(await buildBackends(config, log));
  try {
    return await fn(backends);
  } finally {
    await backends.warehouse?.close();
  }
}

/**
 * How the suite runs a job: DuckDB on one thread in each engine, unless the configuration names its
 * threads (PINGROLL_THREADS). Two test files run at once on two cores (vitest.config.ts), and an
 * engine of one thread per core in each oversubscribed them: five job files took about 0.91x the
 * wall time and 0.93x the CPU this way (docs/decisions.md). The tests that name their threads keep them
 * (daily.test.ts runs DuckDB on two in its threaded run).
 */
export function suiteConfig(config: Config): Config {
  return config.threads === null ? { ...config, threads: 1 } : config;
}

/** The daily job on the configured backends. */
export function runDay(config: Config, opts: JobOptions, wrap: Wrap = (b) => b): Promise<JobSummary> {
  return onBackends(config, opts.log, wrap, (b) => runDailyJob(suiteConfig(config), b, opts));
}

/** A backfill on the configured backends. */
export function runDays(config: Config, opts: BackfillOptions, wrap: Wrap = (b) => b): Promise<BackfillSummary> {
  return onBackends(config, opts.log, wrap, (b) => runBackfill(suiteConfig(config), b, opts));
}

/** `pingroll ingest` (a shard of one, with `shard`) on the configured backends. */
export function runIngest(config: Config, opts: IngestJobOptions, wrap: Wrap = (b) => b): Promise<IngestJobSummary> {
  return onBackends(config, opts.log, wrap, (b) => runIngestJob(suiteConfig(config), b, opts));
}

/** `pingroll reconcile` on the configured backends. */
export function runReconcileDays(config: Config, opts: ReconcileOptions, wrap: Wrap = (b) => b): Promise<ReconcileSummary> {
  return onBackends(config, opts.log, wrap, (b) => runReconcile(suiteConfig(config), b, opts));
}

/** `pingroll close` on the configured backends. */
export function runCloseMonth(config: Config, opts: CloseOptions, wrap: Wrap = (b) => b): Promise<Awaited<ReturnType<typeof runClose>>> {
  return onBackends(config, opts.log, wrap, (b) => runClose(suiteConfig(config), b, opts));
}

type StoreOp = 'get' | 'put' | 'move' | 'list';

/**
 * A store that fails, as a crash at that instant would, at the first read or write whose key
 * `crashAt` picks; every other call goes to `inner`. (A `crashAt` that never picks one sees every call.)
 */
export function crashingStore(inner: ObjectStore, crashAt: (op: StoreOp, key: string) => boolean, message: string | (() => Error) = 'simulated crash'): ObjectStore {
  let crashed = false;
  const check = (op: StoreOp, key: string): void => {
    if (!crashed && crashAt(op, key)) {
      crashed = true;
      throw typeof message === 'string' ? new Error(message) : message();
    }
  };
  return Object.assign(Object.create(inner) as ObjectStore, {
    get: async (key: string) => (check('get', key), inner.get(key)),
    put: async (key: string, body: Buffer | { file: string }) => (check('put', key), inner.put(key, body)),
    // A seal is a put too (one the store need not sync).
    putMarker: async (key: string) => (check('put', key), inner.putMarker(key)),
    putUnsynced: async (key: string, body: Buffer) => (check('put', key), inner.putUnsynced(key, body)),
    move: async (from: string, to: string) => (check('move', to), inner.move(from, to)),
    list: async (prefix: string) => (check('list', prefix), inner.list(prefix)),
  });
}

/**
 * A log object as S3 names it with PartitionedPrefix by EventTime: in the date folder of its event
 * day, every name at `00-00-00`, then a unique part of 16 uppercase hex digits (here a hash of the day
 * and `n`). A record with no time belongs to the day its name says.
 */
export function inEventTimeFolder(o: LogObject, day: string, n: number, account = '123456789012', bucket = 'site'): LogObject {
  const unique = createHash('sha1').update(`${day}/${n}`).digest('hex').slice(0, 16).toUpperCase();
  return {
    ...o, key: `${account}/us-east-1/${bucket}/${day.replace(/-/g, '/')}/${day}-00-00-00-${unique}`,
    truth: o.truth.map((t) => (Number.isNaN(t.eventTimeMs) ? { ...t, day } : t)),
  };
}
