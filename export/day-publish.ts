/**
 * Publishing a day: roll it up from everything staged for it, then replace its Parquet, rejects,
 * warehouse rows and manifest, whole or not at all (publish-journal.ts).
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Log } from '../lib/log.js';
import { rollupDay, TABLES, VIEWER_TABLES, type RollupSettings, type TableName } from '../rollup/day-rollup.js';
import { queryRows, sqlString } from '../lib/duckdb-engine.js';
import { rollupMonth, type StagedDayFiles } from '../rollup/month-rollup.js';
import { addDays, addMonths, daysFrom } from '../lib/utc-day.js';
import type { Ledger } from '../state/ledger.js';
import type { ObjectStore } from '../state/object-store/object-store.js';
import type { PartitionCatalog } from './catalog/glue-partitions.js';
import { REJECTS_TAGS } from './rejects-retention.js';
import { dayRejects, MONTH_TABLE, outputKey, rejectsKey, writeDayParquet, writeParquet, type OutputFile } from './day-parquet.js';
import { inputsChanged, manifestKey, readManifest, type DayManifest } from './manifest.js';
import { completeness, writeRunsParquet } from './day-runs.js';
import type { ListedDays } from '../state/listing-state.js';
import { publishWhole, recoverPublishes, type LoadWarehouse } from './publish-journal.js';
import type { Warehouse, WarehouseRollup } from './warehouse/warehouse.js';
import { WAREHOUSE_ROLLUP } from '../state/leftovers.js';
import { warehouseStatements } from './warehouse/sql/ddl.js';
import { PARQUET_CODEC } from '../lib/parquet-codec.js';
import type { Quarantine } from '../state/quarantine.js';
import { allEnded, STORE_CALLS_AT_ONCE } from '../lib/all-ended.js';
import { loadEpisodeCatalog, type EpisodeCatalog, type EpisodeCatalogSource } from '../rollup/episode-catalog.js';


/** The marker of a day published not yet complete. */
export function unsettledKey(day: string): string {
  return `${UNSETTLED}dt=${day}`;
}

/** The day's unreadable objects, as its manifest names them. */
function manifestQuarantine({ quarantined, acceptedLost }: ReturnType<Quarantine['forDay']>): Pick<DayManifest, 'quarantined' | 'acceptedLost'> {
  return {
    quarantined: quarantined.map((o) => ({ key: o.key, etag: o.etag, reason: o.reason, since: o.firstFailedAt })),
    acceptedLost: acceptedLost.map((o) => ({ key: o.key, etag: o.etag, reason: o.reason, acceptedAt: o.acceptedLostAt! })),
  };
}

export interface DayPublisherOptions {
  run: string;
  store: ObjectStore;
  warehouse: Warehouse | null;
  ledger: Ledger;
  /** A local directory for the day's files while they are made. */
  workDir: string;
  log: Log;
  /** The code's version, for the manifest. */
  version: string;
  /** Called before anything of the day is replaced; throws when the run may no longer publish. */
  fence?: () => Promise<void>;
  /** Unreadable log objects, named in the manifests of the days they may hold. */
  quarantine?: Quarantine;
  /** Roll days up inside the warehouse (PINGROLL_ROLLUP=redshift) instead of in DuckDB. */
  rollupInWarehouse?: boolean | undefined;
  /** Where each published day's partitions are registered (PINGROLL_GLUE_DATABASE); none without. */
  catalog?: PartitionCatalog | null;
  /** How days are rolled up: the viewer key (none: the viewer datasets get no rows) and the platforms counted by name. */
  settings?: RollupSettings;
  /** The episode catalog (PINGROLL_EPISODE_CATALOG), read once a run; none: completion figures are NULL. */
  episodes?: EpisodeCatalogSource | null;
}

/** What this run's ingest did, for the manifest, and what the listers know of delivery days after it (a day's completeness). */
export interface IngestReport {
  scanned: DayManifest['scannedThisRun'];
  missingTables: string[];
  listed: ListedDays;
}

/** Days published as not yet complete (provisional or incomplete): `dt=<day>`, an empty marker each, until the day is published complete (`settleStates`). */
export const UNSETTLED = '_state/unsettled/';

export interface PublishedDay {
  pings: number;
  outputs: DayManifest['outputs'];
  manifest: string;
}

export class DayPublisher {
  /** Warehouse loads one at a time: one connection, one transaction at a time. */
  private warehouseQueue: Promise<unknown> = Promise.resolve();

  private catalog: Promise<EpisodeCatalog | null> | null = null;

  constructor(private readonly opts: DayPublisherOptions) {}

  /**
   * The episode catalog, fetched and checked the first time (jobs ask before they ingest, so that a bad
   * catalog stops the run before any work); null without one. An EpisodeCatalogError (exit 2) names what to fix.
   */
  episodeCatalog(engine: DuckDBConnection): Promise<EpisodeCatalog | null> {
    const source = this.opts.episodes;
    if (!source) return Promise.resolve(null);
    this.catalog ??= loadEpisodeCatalog(engine, source, this.opts.workDir).then((c) => {
      this.opts.log.info('episode_catalog.read', { url: c.url, episodes: c.episodes, sha256: c.sha256 });
      return c;
    });
    return this.catalog;
  }

  /** Loads a day into the warehouse, one load at a time; null without a warehouse. */
  private get loadWarehouse(): LoadWarehouse {
    const { warehouse } = this.opts;
    if (!warehouse) return null;
    return (day: string, files: OutputFile[]) => {
      // A load makes the tables it needs itself: the embedded warehouse in the same change (one copy
      // of its file, not two: 40 ms a run), Redshift once a run.
      const load = this.warehouseQueue.then(() => warehouse.loadDay(day, files));
      this.warehouseQueue = load.catch(() => {});
      return load;
    };
  }

  /** Registers a published day's partitions again (a day skipped as unchanged, whose registration may have failed before); nothing without a catalog. */
  async registerPartitions(day: string): Promise<void> {
    await this.opts.catalog?.register([...TABLES, 'daily_runs'].map((table) => ({ table, dt: day })));
  }

  /** Completes the publication of days that runs killed while publishing left behind. */
  recover(): Promise<string[]> {
    return recoverPublishes(this.opts.store, this.loadWarehouse, this.opts.workDir, this.opts.log);
  }

  /**
   * Everything staged for `day`: its files (local paths, a local store's read where they are; none
   * with `download` false), their keys, outcome counts, rejects and inputs.
   */
  private async gather(day: string, dir: string, download = true) {
    const { store } = this.opts;
    const staged = await this.opts.ledger.inputsFor(day);
    const outcomes: Record<string, Record<string, number>> = {};
    const files: string[] = [];
    const rejects: string[] = [];
    // The manifest names each batch's list of log objects, with its count and digest: it does not copy
    // them (a busy day has millions; one string of them all cannot be made).
    const inputs: DayManifest['inputs'] = { objectCount: 0, objectLists: [], staged: [], tables: [], batches: staged.map((s) => s.id) };
    // Each staged file is asked for (that it is there, and its size, which the manifest and Redshift's
    // COPY manifests name) and, from a remote store, downloaded, STORE_CALLS_AT_ONCE at a time: one after
    // another, a busy day's thousands of staged files on S3 cost a round trip each.
    const wanted = staged.flatMap(({ id, staged: s, table }, i) => (s.pings ?? []).map((key, k) => ({ id, table, i, k, key })));
    const found = await allEnded(wanted.map(({ id, table, i, k, key }) => async () => {
      const size = await store.size(key);
      if (size === null) {
        throw new Error(`the staged pings ${store.url}${key} are missing, though ${table ? `the scan of ${table.name}` : `batch ${id}`} names them: `
          + (table ? `run again with --rescan, which reads the table anew` : await this.opts.ledger.reparseHint(id)));
      }
      if (!download) return { key, size, local: null };
      // Staged files never change once committed: a local store's are read where they are.
      let local = store.localFile?.(key);
      if (!local) {
        local = join(dir, `staged-${day}-${i}-${k}.parquet`);
        await store.download(key, local);
      }
      return { key, size, local };
    }), STORE_CALLS_AT_ONCE);
    for (const { key, size, local } of found) {
      inputs.staged.push({ key, size });
      if (local !== null) files.push(local);
    }
    for (const { id, staged: s, objectCount, objectsKey, objectsSha256, table } of staged) {
      for (const [src, counts] of Object.entries(s.outcomes)) {
        const into = (outcomes[src] ??= {});
        for (const [o, n] of Object.entries(counts)) into[o] = (into[o] ?? 0) + (n ?? 0);
      }
      if (s.rejects) rejects.push(s.rejects);
      inputs.objectCount += objectCount;
      if (objectCount > 0) inputs.objectLists.push({ batch: id, key: objectsKey, objects: objectCount, sha256: objectsSha256 });
      if (table) inputs.tables.push({ table: table.name, scan: table.scan, items: table.items, consumedCapacity: table.consumedCapacity, ...(table.part ? { part: table.part } : {}) });
    }
    return { staged, files, outcomes, rejects, inputs };
  }

  /**
   * Rolls up a month (`monthly_series_stats`) from every day of it that has staged data, and
   * publishes it whole like a day: its Parquet at `monthly_series_stats/dt=<month>-01/`, and its rows
   * in the warehouse, in one transaction.
   */
  async publishMonth(engine: DuckDBConnection, month: string): Promise<{ series: number; days: number }> {
    const dir = await mkdtemp(join(this.opts.workDir, `month-${month}-`));
    try {
      const days: StagedDayFiles[] = [];
      for (const day of daysFrom(`${month}-01`, addDays(addMonths(`${month}-01`, 1), -1))) {
        const g = await this.gather(day, dir);
        if (g.staged.length) days.push({ day, files: g.files, outcomes: g.outcomes });
      }
      const table = await rollupMonth(engine, month, days);
      const first = `${month}-01`;
      const file = await writeParquet(engine, `SELECT * FROM ${table}`, MONTH_TABLE, first, dir, 'month');
      await publishWhole(this.opts.store, { run: this.opts.run, day: first, journal: `month=${month}`, tables: [file], others: [] }, this.loadWarehouse, this.opts.fence);
      await this.opts.catalog?.register([{ table: MONTH_TABLE, dt: first }]);
      this.opts.log.info('month.done', { run: this.opts.run, month, series: file.rows, days: days.length });
      return { series: file.rows, days: days.length };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /**
   * The days published not yet complete whose state has changed since, with nothing new staged for
   * them (a delivery day's final listing found nothing more, or an unreadable object was accepted as
   * lost): published again as they are now, their `daily_runs` row and manifest alone, so that
   * `daily_runs`, the manifest and `pingroll status` say the same. A day with new staged data is
   * stale, and left to its next rollup (`make rollup-stale`). The days whose state changed.
   */
  async settleStates(engine: DuckDBConnection, listed: ListedDays): Promise<string[]> {
    const { store, ledger, run, log } = this.opts;
    const changed: string[] = [];
    for (const key of await store.list(UNSETTLED)) {
      const day = key.slice(UNSETTLED.length).replace(/^dt=/, '');
      const manifest = await readManifest(store, day);
      if (!manifest) {
        await store.delete(key);
        continue;
      }
      if (inputsChanged(manifest, (await ledger.inputsFor(day)).map((i) => i.id)) !== null) continue;
      const held = this.opts.quarantine?.forDay(day) ?? { quarantined: [], acceptedLost: [] };
      const now = new Date();
      const state = completeness(held.quarantined.map((o) => o.key), manifest.missingTables ?? [], listed.waitingFor(day), now.getTime());
      if (state.state !== manifest.state) {
        const dir = await mkdtemp(join(this.opts.workDir, `state-${day}-`));
        try {
          const runs = await writeRunsParquet(engine, {
            day, run, publishedAt: now, codeVersion: this.opts.version, objectsRead: manifest.inputs.objectCount, tablesRead: manifest.inputs.tables.length,
            quarantinedObjects: held.quarantined.length, state: state.state,
          }, dir);
          const next: DayManifest = { ...manifest, ...manifestQuarantine(held), state: state.state, finalAt: state.finalAt, stateSetBy: { run, at: now.toISOString() },
            outputs: manifest.outputs.map((o) => (o.table === runs.table ? { table: runs.table, key: runs.key, rows: runs.rows, bytes: runs.bytes } : o)) };
          await publishWhole(store, { run, day, tables: [runs], others: [{ key: manifestKey(day), body: Buffer.from(JSON.stringify(next, null, 2) + '\n') }] }, this.loadWarehouse, this.opts.fence);
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
        log.info('day.settled', { run, day, was: manifest.state ?? null, state: state.state, ...(state.finalAt ? { finalAt: state.finalAt } : {}) });
        changed.push(day);
      }
      if (state.state === 'complete') await store.delete(key);
    }
    return changed;
  }

  /** Rolls up `day` from everything staged for it and publishes it; `engine` is the day's own. */
  async publish(engine: DuckDBConnection, day: string, ingest: IngestReport): Promise<PublishedDay> {
    const { store, warehouse, log, run } = this.opts;
    const started = new Date().toISOString();
    const dir = await mkdtemp(join(this.opts.workDir, `day-${day}-`));
    try {
      const inWarehouse = this.opts.rollupInWarehouse === true && warehouse?.rollupDay !== undefined;
      const { staged, files, outcomes, rejects, inputs } = await this.gather(day, dir, !inWarehouse);
      if (staged.length === 0) log.warn('day.empty', { day, hint: 'no record of this day has been read; check PINGROLL_LOGS, PINGROLL_DDB_TABLES and the date' });

      const held = this.opts.quarantine?.forDay(day) ?? { quarantined: [], acceptedLost: [] };
      const publishedAt = new Date();
      const state = completeness(held.quarantined.map((o) => o.key), ingest.missingTables, ingest.listed.waitingFor(day), publishedAt.getTime());
      const runs = await writeRunsParquet(engine, {
        day, run, publishedAt, codeVersion: this.opts.version, objectsRead: inputs.objectCount, tablesRead: inputs.tables.length,
        quarantinedObjects: held.quarantined.length, state: state.state,
      }, dir);
      const catalog = await this.episodeCatalog(engine);
      const rollup = inWarehouse ? await this.rollupInWarehouse(engine, day, inputs.staged, outcomes, runs, dir, catalog) : await this.rollupHere(engine, day, files, outcomes, dir, catalog);
      const outputs = [...rollup.outputs, runs];
      const rejectsFile = await dayRejects(store, rejects, dir);
      const outputSummary = outputs.map(({ table, key, rows, bytes }) => ({ table, key, rows, bytes }));
      const manifest: DayManifest = {
        run, day, version: this.opts.version, startedAt: started, finishedAt: new Date().toISOString(),
        inputs, scannedThisRun: ingest.scanned, missingTables: ingest.missingTables,
        outcomes, pings: rollup.pings, duplicates: rollup.duplicates,
        outputs: outputSummary, rejects: rejectsFile ? { key: rejectsKey(day), bytes: rejectsFile.bytes } : null,
        warehouse: warehouse?.description ?? 'none',
        viewerKey: this.opts.settings?.viewerKey?.id ?? null,
        episodeCatalog: catalog && { url: catalog.url, sha256: catalog.sha256, episodes: catalog.episodes },
        ...manifestQuarantine(held),
        state: state.state, finalAt: state.finalAt,
      };
      // A day published not yet complete is marked first, so that no crash can leave it unmarked (and
      // never settled); the mark goes once a publication says complete.
      if (state.state !== 'complete') await store.putMarker(unsettledKey(day));
      await publishWhole(store, {
        run, day, tables: outputs,
        others: [{ key: rejectsKey(day), body: rejectsFile && { file: rejectsFile.file }, tags: REJECTS_TAGS }, { key: manifestKey(day), body: Buffer.from(JSON.stringify(manifest, null, 2) + '\n') }],
      }, inWarehouse ? null : this.loadWarehouse, this.opts.fence);
      // Records that are not pings (every outcome but ping, both sources): the day's rejects.
      let dayRecords = 0, rejectedRecords = 0;
      for (const bySource of Object.values(outcomes)) {
        for (const [outcome, n] of Object.entries(bySource)) {
          dayRecords += n;
          if (outcome !== 'ping') rejectedRecords += n;
        }
      }
      if (state.state === 'complete') await store.delete(unsettledKey(day));
      await this.opts.catalog?.register(outputs.map((o) => ({ table: o.table, dt: day })));
      log.info('day.done', { run, day, state: state.state, ...(state.finalAt ? { finalAt: state.finalAt } : {}), pings: rollup.pings, duplicates: rollup.duplicates, records: dayRecords, rejects: rejectedRecords, outputs: outputSummary.map((o) => `${o.table}:${o.rows}`) });
      return { pings: rollup.pings, outputs: outputSummary, manifest: manifestKey(day) };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** The day rolled up by DuckDB, here, and its tables written as Parquet. */
  private async rollupHere(engine: DuckDBConnection, day: string, files: string[], outcomes: Record<string, Record<string, number>>, dir: string, catalog: EpisodeCatalog | null) {
    const rollup = await rollupDay(engine, day, files, outcomes, { ...this.opts.settings, catalogFile: catalog?.file ?? null });
    return { pings: rollup.pings, duplicates: rollup.duplicates, outputs: await writeDayParquet(engine, day, rollup, dir) };
  }

  /**
   * The day rolled up inside the warehouse, in its load transaction (PINGROLL_ROLLUP=redshift): it
   * reads the staged files where they are, loads the day, and UNLOADs each table's Parquet, which is
   * then published like DuckDB's. The day is in the warehouse before its files are published: a run
   * killed in between leaves the day's manifest unwritten, and the next run rolls it up again (the
   * load replaces the day).
   */
  private async rollupInWarehouse(engine: DuckDBConnection, day: string, staged: Array<{ key: string; size: number }>, outcomes: Record<string, Record<string, number>>, runs: OutputFile, dir: string,
    catalog: EpisodeCatalog | null) {
    const { store, run } = this.opts;
    const unloadPrefix = `${WAREHOUSE_ROLLUP}${run}/dt=${day}/`;
    // What Redshift COPYs goes under this run's prefix (removed below, or by the next run if this one
    // dies): each file's key, and its size as the COPY manifest needs it (the local file's).
    const upload = async (name: string, local: string, move = false): Promise<{ key: string; size: number }> => {
      const key = `${unloadPrefix}${name}`;
      const { size } = await stat(local);
      await store.put(key, { file: local, move });
      return { key, size };
    };
    // Only with a viewer key is there a secret to put, and to remove first.
    const secretKey = this.opts.settings?.viewerKey ? `${unloadPrefix}viewer-secret.parquet` : null;
    await this.opts.fence?.();
    try {
      const runsFile = await upload('daily_runs.parquet', runs.local);
      // The viewer key's secret goes to Redshift as a file it COPYs: its statements are logged, so none may hold it.
      let viewers: WarehouseRollup['viewers'] = null;
      const viewerKey = this.opts.settings?.viewerKey;
      if (viewerKey) {
        const local = join(dir, 'viewer-secret.parquet');
        await engine.run(`COPY (SELECT ${sqlString(viewerKey.secret)}::VARCHAR AS secret) TO ${sqlString(local)} (FORMAT parquet)`);
        const secret = await upload('viewer-secret.parquet', local, true);
        viewers = { keyId: viewerKey.id, secretKey: secret.key, secretSize: secret.size };
      }
      // The episode catalog, as checked.
      const episodes = catalog ? await upload('episode-catalog.parquet', catalog.file) : null;
      await this.opts.warehouse!.rollupDay!(day, { staged, outcomes, viewers, platforms: this.opts.settings?.platforms, catalog: episodes, runsKey: runsFile.key, runsSize: runsFile.size, unloadPrefix, put: (key, body) => store.put(key, body) });
      const outputs: OutputFile[] = [];
      // Which tables must have no rows: the viewer tables without a key; every table but the audit on
      // a day with no ping; the audit on a day with no record.
      const counts = Object.values(outcomes).flatMap((o) => Object.entries(o));
      const stagedPings = counts.reduce((n, [outcome, k]) => n + (outcome === 'ping' ? k : 0), 0);
      const mustBeEmpty = (t: TableName): boolean => (t === 'daily_ingest_audit' ? counts.every(([, k]) => k === 0) : stagedPings === 0 || (!viewers && VIEWER_TABLES.includes(t)));
      for (const table of TABLES) {
        const unloaded = (await store.list(`${unloadPrefix}${table}/`)).filter((k) => !k.endsWith('/'));
        // One file; or none for a table that must be empty (whether Redshift's UNLOAD of no rows
        // writes a file is not documented), made here of the table's columns. None for any other is a
        // failed UNLOAD, never published as an empty day.
        if (unloaded.length > 1 || (unloaded.length === 0 && !mustBeEmpty(table))) {
          throw new Error(`the warehouse's UNLOAD of ${table} for ${day} wrote ${unloaded.length} files under ${store.url}${unloadPrefix}${table}/, not one; run again`);
        }
        const local = join(dir, `${table}.parquet`);
        if (unloaded.length === 0) await emptyParquet(engine, table, local);
        else await store.download(unloaded[0]!, local);
        const [{ n }] = (await queryRows<{ n: bigint }>(engine, `SELECT count(*) AS n FROM read_parquet(${sqlString(local)})`)) as [{ n: bigint }];
        outputs.push({ table, key: outputKey(table, day), rows: Number(n), bytes: (await stat(local)).size, local });
      }
      const file = (t: TableName): string => sqlString(outputs.find((o) => o.table === t)!.local);
      const [{ pings }] = (await queryRows<{ pings: bigint | null }>(engine, `SELECT sum(pings) AS pings FROM read_parquet(${file('daily_episode_stats')})`)) as [{ pings: bigint | null }];
      const duplicates: Record<string, number> = {};
      for (const r of await queryRows<{ source: string; records: bigint }>(engine, `SELECT source, records FROM read_parquet(${file('daily_ingest_audit')}) WHERE outcome = 'duplicate'`)) duplicates[r.source] = Number(r.records);
      for (const source of Object.keys(outcomes)) duplicates[source] ??= 0;
      return { pings: Number(pings ?? 0n), duplicates, outputs };
    } finally {
      // The secret's file first, then the rest, each whatever failed before it. What is left goes with
      // the next run's leftovers, or after a day by the bucket's lifecycle rule (deploy/); said.
      const failed: string[] = [];
      let error = '';
      const note = (err: unknown): void => { error ||= (err as Error).message.split('\n')[0]!; };
      const remove = (key: string): Promise<void> => store.delete(key).catch((err: unknown) => { failed.push(key); note(err); });
      if (secretKey) await remove(secretKey);
      for (const key of await store.list(unloadPrefix).catch((err: unknown) => { note(err); return []; })) if (key !== secretKey) await remove(key);
      if (error) this.opts.log.warn('warehouse_rollup.cleanup_failed', { prefix: `${store.url}${unloadPrefix}`, failed, error });
    }
  }
}

/**
 * An empty Parquet file of a warehouse table's columns (the DDL's own, made in a schema of the day's
 * engine the first time), for a table the warehouse UNLOADed no file of.
 */
async function emptyParquet(engine: DuckDBConnection, table: TableName, file: string): Promise<void> {
  const [{ n }] = (await queryRows<{ n: bigint }>(engine, `SELECT count(*) AS n FROM information_schema.schemata WHERE schema_name = 'unload_shapes'`)) as [{ n: bigint }];
  if (n === 0n) for (const sql of warehouseStatements('postgres', 'unload_shapes')) await engine.run(sql);
  await engine.run(`COPY (SELECT * FROM unload_shapes.${table}) TO ${sqlString(file)} (FORMAT parquet, COMPRESSION ${PARQUET_CODEC})`);
}
