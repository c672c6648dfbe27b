/**
 * The composition root: every backend a run uses (where logs come from, where the legacy tables'
 * items come from, the store for state and outputs, the warehouse) is built here from the
 * configuration, and handed to the jobs. Tests build their own and pass them instead.
 *
 * The AWS SDK is loaded only when a location or warehouse needs it: a run on local files and DuckDB
 * starts about a quarter of a second sooner without it.
 */
import { withOutputViewerKey } from './generated-viewer-key.js';
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Warehouse } from '../export/warehouse/warehouse.js';
import { DuckDbWarehouse } from '../export/warehouse/duckdb/duckdb-warehouse.js';
import type { TableItemSources } from '../ingest/dynamodb/item-source.js';
import { DirectoryObjectSource } from '../ingest/object-source/directory-object-source.js';
import type { ObjectSource } from '../ingest/object-source/object-source.js';
import type { Location } from '../lib/location.js';
import type { Log } from '../lib/log.js';
import { DirectoryObjectStore } from '../state/object-store/directory-object-store.js';
import type { ObjectStore } from '../state/object-store/object-store.js';
import type { Config } from './config.js';
import type { PartitionCatalog } from '../export/catalog/glue-partitions.js';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { RollupEngine } from '../rollup/engine.js';
import { DuckDbRollup } from '../rollup/engines/duckdb/duckdb-rollup.js';
import { EpisodeCatalogError, MAX_CATALOG_BYTES, type EpisodeCatalogSource } from '../rollup/episode-catalog.js';

export interface Backends {
  /** The access logs (`PINGROLL_LOGS`). */
  logs: ObjectSource;
  /** State and outputs (`PINGROLL_OUTPUT`). */
  store: ObjectStore;
  /** Null when `PINGROLL_WAREHOUSE=none`. */
  warehouse: Warehouse | null;
  /** The legacy tables' items; null when `PINGROLL_DDB_TABLES` is empty. */
  items: TableItemSources | null;
  /** Where published days' partitions are registered (`PINGROLL_GLUE_DATABASE`); null or absent: nowhere. */
  catalog?: PartitionCatalog | null;
  /** The episode catalog (`PINGROLL_EPISODE_CATALOG`); null or absent: none. */
  episodes?: EpisodeCatalogSource | null;
  /**
   * What rolls days up (`PINGROLL_ROLLUP`: rollup/engines/<engine>/), made for a stage of a run with
   * the stage's own DuckDB connection (Run.withEngine: opened at its first use): DuckDB's engine works
   * in it; Redshift's only shapes files with it (LocalFiles), every figure being Redshift's.
   */
  rollup: (local: DuckDBConnection) => RollupEngine;
}

export async function buildBackends(config: Config, log: Log): Promise<Backends> {
  const store = await objectStoreAt(config.output, config);
  const warehouse = await warehouseFor(config, log, store);
  return {
    logs: await objectSourceAt(config.logs, config),
    store,
    warehouse,
    rollup: await rollupEngineFor(config, log, store, warehouse),
    items: config.ddbTables ? await itemSourcesFor(config, log) : null,
    catalog: await catalogFor(config),
    episodes: await episodeCatalogAt(config),
  };
}

/** Objects at a location (an S3 prefix or a directory), to list and stream. */
export async function objectSourceAt(location: Location, config: Config, setting = 'PINGROLL_LOGS'): Promise<ObjectSource> {
  if (location.kind !== 's3') return new DirectoryObjectSource(location.path, setting);
  const [{ S3ObjectSource }, { s3ClientConfig }] = await Promise.all([import('../ingest/object-source/s3-object-source.js'), import('./aws/s3-client.js')]);
  return S3ObjectSource.from({ client: s3ClientConfig(config), bucket: location.bucket, prefix: location.prefix, get: config.s3Get });
}

export async function objectStoreAt(location: Location, config: Config): Promise<ObjectStore> {
  if (location.kind !== 's3') return new DirectoryObjectStore(location.path);
  const [{ S3ObjectStore }, { makeS3Client }] = await Promise.all([import('../state/object-store/s3-object-store.js'), import('./aws/s3-client.js')]);
  return new S3ObjectStore(makeS3Client(config), location.bucket, location.prefix);
}

/** `output`: the run's store for PINGROLL_OUTPUT, where Redshift's COPY manifests are written (made here when not given). */
export async function warehouseFor(config: Config, log?: Log, output?: ObjectStore): Promise<Warehouse | null> {
  if (config.warehouse.kind === 'duckdb') return new DuckDbWarehouse(config.warehouse.file);
  if (config.warehouse.kind === 'redshift' && config.redshift && config.output.kind === 's3') {
    const [{ RedshiftDataApi, RedshiftWarehouse }, { RedshiftDataClient }] = await Promise.all([
      import('../export/warehouse/redshift/redshift-warehouse.js'), import('@aws-sdk/client-redshift-data')]);
    // Region, credentials and endpoint are the SDK's own (AWS_ENDPOINT_URL_REDSHIFT_DATA, ...).
    const api = new RedshiftDataApi(new RedshiftDataClient({ maxAttempts: 5 }), config.redshift, { log, timeoutMs: config.redshiftWaitMinutes * 60_000 });
    const store = output ?? (await objectStoreAt(config.output, config));
    return new RedshiftWarehouse(api, config.redshift, config.output, (key, body) => store.put(key, body));
  }
  return null;
}

/** The engine days are rolled up by: DuckDB here, or (PINGROLL_ROLLUP=redshift) Redshift, inside the warehouse, through the Data API. */
export async function rollupEngineFor(config: Config, log: Log, store: ObjectStore, warehouse: Warehouse | null): Promise<(local: DuckDBConnection) => RollupEngine> {
  const duckdb = (local: DuckDBConnection): RollupEngine => new DuckDbRollup(local, config);
  if (config.rollup !== 'redshift' || !config.redshift || config.output.kind !== 's3' || !warehouse) return duckdb;
  const [{ RedshiftRollup }, { duckdbLocalFiles }, { RedshiftDataApi }, { RedshiftDataClient }] = await Promise.all([
    import('../rollup/engines/redshift/redshift-rollup.js'), import('../rollup/engines/duckdb/local-files.js'), import('../export/warehouse/redshift/redshift-warehouse.js'), import('@aws-sdk/client-redshift-data')]);
  const { redshift: target, output } = config;
  const batches = new RedshiftDataApi(new RedshiftDataClient({ maxAttempts: 5 }), target, { log, timeoutMs: config.redshiftWaitMinutes * 60_000 });
  return (local) => new RedshiftRollup({ batches, target, output, store, settings: config, ensureTables: () => warehouse.init() }, duckdbLocalFiles(local));
}

/** The Glue database published days are registered in (the AWS SDK's Glue client, loaded only then). */
export async function catalogFor(config: Config): Promise<PartitionCatalog | null> {
  if (!config.glueDatabase || config.output.kind !== 's3') return null;
  const [{ GluePartitions }, { GlueClient }] = await Promise.all([import('../export/catalog/glue-partitions.js'), import('@aws-sdk/client-glue')]);
  // Region, credentials and endpoint are the SDK's own (AWS_ENDPOINT_URL_GLUE, ...).
  return new GluePartitions(new GlueClient({ maxAttempts: 5 }), config.glueDatabase, config.output);
}

/**
 * The episode catalog's file, fetched to a local path (a local file copied, an S3 object downloaded),
 * never more than MAX_CATALOG_BYTES of it (counted as it is copied). One that is missing, not allowed,
 * too large or in another region is an EpisodeCatalogError (exit 2: the setting is wrong); any other
 * failure (S3's 5xx, throttling, a dropped or stalled connection: 5 minutes at most, a full work disk)
 * is a plain error (exit 1: run again).
 */
export async function episodeCatalogAt(config: Config, opts: { fetchMs?: number } = {}): Promise<EpisodeCatalogSource | null> {
  const CATALOG_FETCH_MS = opts.fetchMs ?? 300_000;
  const at = config.episodeCatalog;
  if (!at) return null;
  const fail = (why: string): EpisodeCatalogError => new EpisodeCatalogError(`PINGROLL_EPISODE_CATALOG=${at.url} cannot be read: ${why}; point it at the catalog CSV, or unset it`);
  const tooLarge = (size: string): EpisodeCatalogError => fail(`it is ${size} bytes, over the ${MAX_CATALOG_BYTES} a catalog may have`);
  // The bytes copied, counted: past the cap the copy stops (a file or object that grew since it was sized).
  const capped = () => {
    let n = 0;
    return new Transform({
      transform(chunk: Buffer, _enc, done) {
        n += chunk.length;
        done(n > MAX_CATALOG_BYTES ? tooLarge(`more than ${MAX_CATALOG_BYTES}`) : null, chunk);
      },
    });
  };
  if (at.kind === 'file') {
    return {
      url: at.url,
      fetch: async (dest) => {
        const st = await stat(at.path).catch((err: NodeJS.ErrnoException) => { throw fail(err.code ?? err.message); });
        if (!st.isFile()) throw fail('not a regular file');
        if (st.size > MAX_CATALOG_BYTES) throw tooLarge(String(st.size));
        // A failure to read the catalog is the setting's; one to write the copy (a full disk) is this machine's: exit 1.
        const out = createWriteStream(dest);
        let writeFailed = false;
        out.on('error', () => { writeFailed = true; });
        await pipeline(createReadStream(at.path), capped(), out).catch((err: NodeJS.ErrnoException) => {
          if (err instanceof EpisodeCatalogError) throw err;
          if (writeFailed) throw new Error(`copying the episode catalog ${at.url} to ${dest} failed: ${err.code ?? err.message}; free space in the work folder and run again`);
          throw fail(err.code ?? err.message);
        });
      },
    };
  }
  const [{ makeS3Client }, { GetObjectCommand }] = await Promise.all([import('./aws/s3-client.js'), import('@aws-sdk/client-s3')]);
  const client = makeS3Client(config);
  return {
    url: at.url,
    fetch: async (dest) => {
      // Bounded: a connection that stalls ends the fetch (exit 1, run again) instead of holding the run.
      const signal = AbortSignal.timeout(CATALOG_FETCH_MS);
      let body: NodeJS.ReadableStream;
      try {
        const r = await client.send(new GetObjectCommand({ Bucket: at.bucket, Key: at.key }), { abortSignal: signal });
        if ((r.ContentLength ?? 0) > MAX_CATALOG_BYTES) {
          (r.Body as { destroy?: () => void } | undefined)?.destroy?.();
          throw tooLarge(String(r.ContentLength));
        }
        body = r.Body as NodeJS.ReadableStream;
      } catch (err) {
        if (err instanceof EpisodeCatalogError) throw err;
        const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
        const status = e.$metadata?.httpStatusCode;
        // Missing, forbidden, or in another region: the setting (or its grant) is wrong.
        if (status === 301 || status === 403 || status === 404 || ['NoSuchKey', 'NoSuchBucket', 'AccessDenied', 'NotFound', 'Forbidden', 'PermanentRedirect'].includes(e.name ?? '')) {
          throw fail(e.name && e.name !== 'Unknown' ? e.name : `HTTP ${status}`);
        }
        throw new Error(`reading the episode catalog ${at.url} failed: ${(e.message ?? String(err)).split('\n')[0]}; run again`);
      }
      await pipeline(body, capped(), createWriteStream(dest), { signal }).catch((err: Error) => {
        throw err instanceof EpisodeCatalogError ? err : new Error(`reading the episode catalog ${at.url} failed: ${err.message.split('\n')[0]}; run again`);
      });
    },
  };
}

/** The legacy tables' items: scanned with the configured segments and budget, or read from exports. */
export async function itemSourcesFor(config: Config, log: Log): Promise<TableItemSources> {
  const [{ TableItemSources }, { makeDynamoClient }] = await Promise.all([import('../ingest/dynamodb/item-source.js'), import('./aws/dynamodb-client.js')]);
  return new TableItemSources(makeDynamoClient(), config.ddbExports ? await objectSourceAt(config.ddbExports, config, 'PINGROLL_DDB_EXPORTS') : null, {
    segments: config.segments, maxRcu: config.maxRcu,
    onThrottle: (table, segment, attempt, waitMs) => log.info('table.throttled', { table, segment, attempt, waitMs }),
  });
}

/**
 * Runs `fn` with the configured backends, and releases them after (the DuckDB warehouse file above
 * all). With `makeViewerKey`, a run that publishes: once every location is known to serve, the
 * embedded default's own viewer key is made if it has none (infra/generated-viewer-key.ts), and
 * `fn` gets the configuration with it.
 */
export async function withBackends<T>(config: Config, log: Log, fn: (backends: Backends, config: Config) => Promise<T>, opts: { makeViewerKey?: boolean } = {}): Promise<T> {
  let backends = await buildBackends(config, log);
  if (opts.makeViewerKey && !config.viewerKey && config.warehouse.kind === 'duckdb' && config.output.kind === 'dir') {
    // Only where the run itself would write: its preflight's checks first (jobs/run.ts).
    await backends.logs.check();
    await backends.store.check();
    await backends.warehouse?.checkWritable();
    await backends.store.checkWritable();
    const keyed = withOutputViewerKey(config, true);
    if (keyed.viewerKey !== config.viewerKey) {
      config = keyed;
      // Of the backends, only the rollup engine reads the viewer key (RollupSettings): it alone is
      // made again. The others, checked above, are kept (an S3 bucket of logs is not asked again by a
      // client of its own).
      backends = { ...backends, rollup: await rollupEngineFor(config, log, backends.store, backends.warehouse) };
    }
  }
  try {
    return await fn(backends, config);
  } finally {
    await backends.warehouse?.close();
  }
}
