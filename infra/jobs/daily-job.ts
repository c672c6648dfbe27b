/**
 * The job cron runs every night (`make rollup DATE=D`): ingest every log object not yet parsed, then
 * roll up D from everything staged for D, publish its Parquet, rejects and manifest, and load the
 * warehouse. A re-run gives the same result as one clean run; objects that arrived late are picked up
 * by the next run of their day.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { publishParquet, publishRejects, writeDayParquet } from '../../export/day-parquet.js';
import { DuckDbWarehouse } from '../../export/warehouse/duckdb/duckdb-warehouse.js';
import type { Warehouse } from '../../export/warehouse/warehouse.js';
import { ingestNewObjects, newObjects } from '../../ingest/batch/ingest-batch.js';
import { Ledger } from '../../state/ledger.js';
import { DirectoryObjectSource } from '../../ingest/object-source/directory-object-source.js';
import type { ObjectSource } from '../../ingest/object-source/object-source.js';
import { rollupDay } from '../../rollup/day-rollup.js';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DuckDBConnection } from '@duckdb/node-api';
import { tablesForDay, type MonthlyTable } from '../../ingest/dynamodb/monthly-tables.js';
import { ExportCatalog } from '../../ingest/dynamodb/table-export.js';
import type { Config, Location } from '../config.js';
import { openEngine } from '../../lib/duckdb-engine.js';
import type { Log } from '../../lib/log.js';
import { projectFile } from '../../lib/project-file.js';
import { acquireLock } from '../../state/run-lock.js';

export interface JobOptions {
  day: string;
  log: Log;
  dryRun?: boolean;
  /** Seconds to wait for another run's lock before failing. */
  waitSeconds?: number;
  concurrency?: number;
  /** Scan closed tables again even if they were scanned after their month ended. */
  rescan?: boolean;
  /** Read capacity units per second for table scans, at most. */
  maxRcu?: number;
  /** Parallel scan segments per table. */
  segments?: number;
  /** The run's clock (tables are closed relative to it); tests set it. */
  now?: Date;
  /** A DynamoDB client to use instead of the SDK's default one (tests wrap it to inject throttling). */
  dynamodb?: DynamoDBClient;
  /** Bytes of staged rows per part (a part is made Parquet while parsing goes on); tests make it small. */
  stagingPartBytes?: number;
  /** Test seams: throw from one to stop the run there, as a crash would. */
  hooks?: { afterIngest?: () => Promise<void>; beforeCommit?: () => Promise<void> };
}

export interface JobSummary {
  day: string;
  run: string;
  dryRun: boolean;
  parsedObjects: number;
  parsedRecords: number;
  /** Tables scanned by this run, with what they cost. */
  scanned: Array<{ table: string; items: number; consumedCapacity: number; throttledRetries: number }>;
  /** Tables that could hold the day and do not exist. */
  missingTables: string[];
  pings: number;
  outputs: Array<{ table: string; key: string; rows: number; bytes: number }>;
  manifest: string | null;
}

// The AWS SDK is loaded only when a location or warehouse needs it: a run on local files and DuckDB
// starts about a quarter of a second sooner without it.

/** Objects at a location (an S3 prefix or a directory), to list and stream. */
export async function logSourceAt(location: Location): Promise<ObjectSource> {
  if (location.kind !== 's3') return new DirectoryObjectSource(location.path);
  const [{ S3ObjectSource }, { makeS3Client }] = await Promise.all([import('../../ingest/object-source/s3-object-source.js'), import('../aws/s3-client.js')]);
  return new S3ObjectSource(makeS3Client(), location.bucket, location.prefix);
}

export function logSourceFor(config: Config): Promise<ObjectSource> {
  return logSourceAt(config.logs);
}

export async function outputStoreFor(config: Config): Promise<ObjectStore> {
  if (config.output.kind !== 's3') return new DirectoryObjectStore(config.output.path);
  const [{ S3ObjectStore }, { makeS3Client }] = await Promise.all([import('../../state/object-store/s3-object-store.js'), import('../aws/s3-client.js')]);
  return new S3ObjectStore(makeS3Client(), config.output.bucket, config.output.prefix);
}

export async function warehouseFor(config: Config, log?: Log): Promise<Warehouse | null> {
  if (config.warehouse.kind === 'duckdb') return new DuckDbWarehouse(config.warehouse.file);
  if (config.warehouse.kind === 'redshift' && config.redshift && config.output.kind === 's3') {
    const [{ RedshiftDataApi, RedshiftWarehouse }, { RedshiftDataClient }] = await Promise.all([
      import('../../export/warehouse/redshift/redshift-warehouse.js'), import('@aws-sdk/client-redshift-data')]);
    // Region, credentials and endpoint are the SDK's own (AWS_ENDPOINT_URL_REDSHIFT_DATA, ...).
    const api = new RedshiftDataApi(new RedshiftDataClient({ maxAttempts: 5 }), config.redshift, { log });
    return new RedshiftWarehouse(api, config.redshift, config.output);
  }
  return null;
}

export function codeVersion(): string {
  try {
    return (JSON.parse(readFileSync(projectFile('package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

export async function runDailyJob(config: Config, opts: JobOptions): Promise<JobSummary> {
  const { day, log } = opts;
  const run = randomUUID();
  const source = await logSourceFor(config);
  const store = await outputStoreFor(config);
  const warehouse = await warehouseFor(config, log);
  const summary: JobSummary = { day, run, dryRun: Boolean(opts.dryRun), parsedObjects: 0, parsedRecords: 0, scanned: [], missingTables: [], pings: 0, outputs: [], manifest: null };
  const tables = config.ddbTables ? tablesForDay(config.ddbTables, day) : [];

  if (opts.dryRun) {
    const ledger = await Ledger.load(store);
    const todo = await newObjects(source, ledger);
    const staged = ledger.inputsFor(day);
    log.info('dry-run', {
      day, logs: source.url, output: store.url,
      objectsToParse: todo.length, bytesToParse: todo.reduce((n, o) => n + o.size, 0),
      batchesStagedForDay: staged.length, stagedPings: staged.reduce((n, s) => n + s.staged.pingCount, 0),
      tables: tables.map((t) => `${t.name}: ${ledger.latestScan(t.name)?.closed && !opts.rescan ? 'closed, scanned before; not scanned again' : 'would be scanned'}`),
      wouldWrite: ['daily_episode_stats', 'daily_series_stats', 'daily_ingest_audit'].map((t) => `${store.url}${t}/dt=${day}/part-00000.parquet`)
        .concat([`${store.url}_runs/dt=${day}/manifest.json`]),
      warehouse: warehouse?.description ?? 'none',
    });
    return summary;
  }

  const release = await acquireLock(store, run, `rollup ${day}`, opts.waitSeconds ?? 0,
    (holder) => log.info('lock.wait', { holder: `${holder.command} pid ${holder.pid} on ${holder.host}` }));
  const dir = await mkdtemp(join(tmpdir(), 'pingroll-run-'));
  const engine = await openEngine({ tempDir: join(dir, 'spill') });
  try {
    log.info('run.start', { run, day, logs: source.url, output: store.url });
    const ctx: RunContext = { run, config, source, store, warehouse, ledger: await Ledger.load(store), dir, log, opts, warehouseQueue: Promise.resolve() };
    await ingestEverything(ctx, engine, tables, summary);
    await opts.hooks?.afterIngest?.();
    const result = await publishDay(ctx, engine, day, summary.scanned, summary.missingTables);
    Object.assign(summary, result);
    log.info('run.done', { run, day, pings: summary.pings, parsedObjects: summary.parsedObjects, scanned: summary.scanned.map((t) => t.table) });
    return summary;
  } finally {
    engine.closeSync();
    await warehouse?.close();
    await rm(dir, { recursive: true, force: true });
    await release();
  }
}

/** What the phases of a run share. */
export interface RunContext {
  run: string;
  config: Config;
  source: ObjectSource;
  store: ObjectStore;
  warehouse: Warehouse | null;
  ledger: Ledger;
  dir: string;
  log: Log;
  opts: Omit<JobOptions, 'day' | 'log'>;
  /** Warehouse loads one at a time: one connection, one transaction at a time. */
  warehouseQueue: Promise<unknown>;
}

/** Phase 1: parse every new log object (one batch) and scan the tables that need it. */
export async function ingestEverything(ctx: RunContext, engine: DuckDBConnection, tables: MonthlyTable[],
  summary: Pick<JobSummary, 'parsedObjects' | 'parsedRecords' | 'scanned' | 'missingTables'>): Promise<void> {
  const { log, opts } = ctx;
  const ingest = await ingestNewObjects({
    source: ctx.source, store: ctx.store, ledger: ctx.ledger, pingKeys: ctx.config.pingKeys, engine, concurrency: opts.concurrency, partBytes: opts.stagingPartBytes,
    onProgress: (done, total, records) => log.progress('ingest.progress', `parsing log objects ${done}/${total}, ${records} records`, { done, total, records }),
    hooks: { beforeCommit: opts.hooks?.beforeCommit },
  });
  summary.parsedObjects = ingest.objects;
  summary.parsedRecords = ingest.records;
  log.info('ingest.done', { objects: ingest.objects, records: ingest.records, batch: ingest.commit?.batch ?? null,
    days: ingest.commit ? Object.keys(ingest.commit.days) : [] });
  if (tables.length) await scanTables(ctx.config, tables, ctx.ledger, ctx.store, engine, { ...opts, log }, summary);
}

/** The ids of the batches and scans a day's rollup would read now. */
export function inputIds(ledger: Ledger, day: string): string[] {
  return ledger.inputsFor(day).map((i) => i.id);
}

/** Phase 2: roll up a day from everything staged for it; publish Parquet, rejects, warehouse rows, manifest. */
export async function publishDay(ctx: RunContext, engine: DuckDBConnection, day: string,
  scanned: JobSummary['scanned'] = [], missingTables: string[] = []): Promise<Pick<JobSummary, 'pings' | 'outputs' | 'manifest'>> {
  const { store, warehouse, log, run } = ctx;
  const started = new Date().toISOString();
  const dir = await mkdtemp(join(ctx.dir, `day-${day}-`));
  try {
    const staged = ctx.ledger.inputsFor(day);
    const outcomes: Record<string, Record<string, number>> = {};
    const files: string[] = [];
    const rejects: string[] = [];
    const inputs: Array<{ key: string; size: number; etag: string }> = [];
    const tableInputs: Array<{ table: string; scan: string; items: number; consumedCapacity: number }> = [];
    for (const [i, { staged: s, objects, table }] of staged.entries()) {
      for (const [src, counts] of Object.entries(s.outcomes)) {
        const into = (outcomes[src] ??= {});
        for (const [o, n] of Object.entries(counts)) into[o] = (into[o] ?? 0) + (n ?? 0);
      }
      for (const [k, key] of (s.pings ?? []).entries()) {
        if ((await store.size(key)) === null) {
          throw new Error(`the staged pings ${store.url}${key} are missing, though a batch commit names them: delete the commits `
            + `that name files under _staging/dt=${day}/ from _state/batches/ and run again, which parses their log objects anew`);
        }
        // Staged files never change once committed: a local store's are read where they are.
        let local = store.localFile?.(key);
        if (!local) {
          local = join(dir, `staged-${i}-${k}.parquet`);
          await store.download(key, local);
        }
        files.push(local);
      }
      if (s.rejects) rejects.push(s.rejects);
      for (const o of objects) inputs.push({ key: o.key, size: o.size, etag: o.etag });
      if (table) tableInputs.push({ table: table.name, scan: table.scan, items: table.items, consumedCapacity: table.consumedCapacity });
    }
    if (staged.length === 0) log.warn('day.empty', { day, hint: 'no record of this day has been read; check PINGROLL_LOGS, PINGROLL_DDB_TABLES and the date' });

    const rollup = await rollupDay(engine, day, files, outcomes);
    const outputs = await writeDayParquet(engine, day, rollup, dir);
    await publishParquet(store, outputs);
    const rejectsFile = await publishRejects(store, day, rejects);
    if (warehouse) {
      const load = ctx.warehouseQueue.then(async () => {
        await warehouse.init();
        await warehouse.loadDay(day, outputs);
      });
      ctx.warehouseQueue = load.catch(() => {});
      await load;
    }
    const outputSummary = outputs.map(({ table, key, rows, bytes }) => ({ table, key, rows, bytes }));
    const manifest = {
      run, day, version: codeVersion(), startedAt: started, finishedAt: new Date().toISOString(),
      inputs: { objects: inputs, tables: tableInputs, batches: staged.map((s) => s.id) },
      scannedThisRun: scanned, missingTables,
      outcomes, pings: rollup.pings, duplicates: rollup.duplicates,
      outputs: outputSummary, rejects: rejectsFile, warehouse: warehouse?.description ?? 'none',
    };
    const manifestKey = `_runs/dt=${day}/manifest.json`;
    await store.put(manifestKey, Buffer.from(JSON.stringify(manifest, null, 2) + '\n'));
    log.info('day.done', { run, day, pings: rollup.pings, duplicates: rollup.duplicates, outputs: outputSummary.map((o) => `${o.table}:${o.rows}`) });
    return { pings: rollup.pings, outputs: outputSummary, manifest: manifestKey };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Scans the tables that can hold the day. A table scanned after its month closed is not scanned
 * again (nothing more can arrive) unless `rescan`; a live table is scanned on every run, its new
 * scan replacing the last. A missing table is reported, not fatal.
 */
async function scanTables(config: Config, tables: MonthlyTable[], ledger: Ledger, store: ObjectStore, engine: DuckDBConnection,
  opts: Omit<JobOptions, 'day'>, summary: Pick<JobSummary, 'scanned' | 'missingTables'>): Promise<void> {
  const [{ isClosed, scanAndStage }, { DescribeTableCommand }] = await Promise.all([
    import('../../ingest/batch/scan-batch.js'), import('@aws-sdk/client-dynamodb')]);
  const client = opts.dynamodb ?? (await import('../aws/dynamodb-client.js')).makeDynamoClient();
  // The exports location is read once, and only if a closed table may need it.
  let catalog: Promise<ExportCatalog> | null = null;
  const exports = (): Promise<ExportCatalog> => (catalog ??= logSourceAt(config.ddbExports!).then((source) => ExportCatalog.load(source)));
  const now = opts.now ?? new Date();
  for (const table of tables) {
    const last = ledger.latestScan(table.name);
    if (last?.closed && !opts.rescan) {
      opts.log.info('table.skip', { table: table.name, reason: `closed; read ${last.scannedAt} (${last.export ? `export ${last.export}` : `scan ${last.scan}`}); --rescan to read again` });
      continue;
    }
    // A closed table with a full export taken after it closed is read from the export: no read capacity.
    const exp = config.ddbExports && isClosed(table, now) ? await (await exports()).find(table, table.monthEndMs + 86_400_000) : null;
    if (exp) {
      opts.log.info('table.export', { table: table.name, export: exp.exportArn, exportTime: exp.exportTime, files: exp.dataFiles.length });
      const scan = await scanAndStage({
        client, table, store, ledger, engine, now, exportArn: exp.exportArn,
        read: async (onItems) => ({ items: await (await exports()).read(exp, onItems), pages: exp.dataFiles.length, consumedCapacity: 0, throttledRetries: 0 }),
      });
      summary.scanned.push({ table: table.name, items: scan.items, consumedCapacity: 0, throttledRetries: 0 });
      continue;
    }
    try {
      await client.send(new DescribeTableCommand({ TableName: table.name }));
    } catch (err) {
      if ((err as { name?: string }).name === 'ResourceNotFoundException') {
        summary.missingTables.push(table.name);
        opts.log.warn('table.missing', { table: table.name, month: table.month });
        continue;
      }
      throw err;
    }
    opts.log.info('table.scan', { table: table.name, segments: opts.segments ?? 4, maxRcu: opts.maxRcu ?? null });
    const scan = await scanAndStage({
      client, table, store, ledger, engine, segments: opts.segments, maxRcu: opts.maxRcu, now: opts.now,
      onThrottle: (segment, attempt, waitMs) => opts.log.info('table.throttled', { table: table.name, segment, attempt, waitMs }),
    });
    summary.scanned.push({ table: table.name, items: scan.items, consumedCapacity: scan.consumedCapacity, throttledRetries: scan.throttledRetries });
    opts.log.info('table.scanned', { table: table.name, items: scan.items, consumedCapacity: scan.consumedCapacity, closed: scan.closed, days: Object.keys(scan.days) });
  }
}
