/**
 * The Redshift engine (PINGROLL_ROLLUP=redshift): a day rolled up inside the warehouse, in its load
 * transaction. Redshift reads the staged files where they are (COPY), runs the rollup SQL
 * (day-rollup-sql.ts), loads the day and UNLOADs each table's Parquet, which is fetched and handed on
 * like DuckDB's. The day is in the warehouse before its files are published: a run killed in between
 * leaves the day's manifest unwritten, and the next run rolls it up again (the load replaces the day).
 *
 * The statements go through a session of the Redshift Data API (infra/backends.ts builds it); the
 * month's rollup is DuckDB's (`month`).
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { S3Location } from '../../../lib/location.js';
import { parquetRowCount } from '../../../lib/parquet-file.js';
import { EARLIER_STAGED_FORMATS, stagedFormatOf } from '../../../ingest/staged-ping.js';
import type { ObjectStore } from '../../../state/object-store/object-store.js';
import { WAREHOUSE_ROLLUP } from '../../../datasets/layout.js';
import type { AdjustedDay, DayAdjustment, DayInput, IssuedStatement, LocalFiles, MonthDay, RollupEngine, RolledUpDay, RolledUpMonth, RunContext, StagedFile, StatementAsk, TooLateAsk } from '../../engine.js';
import type { EpisodeCatalog } from '../../episode-catalog.js';
import { addDays } from '../../../lib/utc-day.js';
import { localDay, localDayStartMs, localMonthMs, utcDaysOfLocalMonth, zoneSlug } from '../../../lib/time-zone.js';
import { monthRollupStatements } from './month-rollup-sql.js';
import { adjustmentsSql, changesSql, statementSql } from './statement-sql.js';
import { ADJUSTED_PING_IDS_SQL, adjustStatements } from './adjust-sql.js';
import { MONTH_TABLE, outputKey, type OutputFile } from '../../output-file.js';
import { figureChanges, TABLES, type CatalogOnly, type Outcomes, type RollupSettings, type TableName } from '../../rules.js';
import { invalidTrafficLinesSql, tooLateLinesSql } from '../../rejects-lines.js';
import { copyManifest } from './copy-manifest.js';
import { CATALOG_TABLE_COLUMNS, dayFiguresSql, dayRollupStatements, PING_IDS_TABLE_COLUMNS, STAGED_TABLE_COLUMNS, stagedTableColumns } from './day-rollup-sql.js';
import { planWindow, stateSql, WINDOW_CHECK, WINDOW_TABLE, windowRange, windowStatements, type WindowFile, type WindowPlan } from './window-table.js';
import { rowsOrNoneIfMissing } from '../../../export/warehouse/warehouse.js';
import { logWindowChecked } from '../../ping-window.js';

/** Statements run as one transaction, in a session kept open or named (the Redshift Data API's BatchExecuteStatement: export/warehouse/redshift/). */
export interface StatementBatches {
  batch(sqls: string[], what: string, session?: { keepAliveSeconds?: number; id?: string }): Promise<{ id: string; sessionId: string | undefined }>;
  /** A query's rows. */
  query(sql: string, what: string): Promise<Array<Record<string, string | number | boolean | null>>>;
}

export class RedshiftRollupError extends Error {}

/** What a rollup inside the warehouse reads and where it writes the day's Parquet (output-relative keys). */
export interface WarehouseRollup {
  /** The day's staged pings, with their sizes. */
  staged: ReadonlyArray<{ key: string; size: number }>;
  /** The day's record counts by source and outcome (the rollup adds duplicates). */
  outcomes: Outcomes;
  /** The viewer datasets' key id and the one-row Parquet file holding its secret (output-relative key, size); none: they get no rows. */
  viewers?: { keyId: string; secretKey: string; secretSize: number } | null;
  /** The platforms counted by name (PINGROLL_PLATFORMS); the defaults when not given. */
  platforms?: readonly string[] | undefined;
  /** The episode catalog as Parquet (output-relative key, size: rollup/episode-catalog.ts); none: completion figures are NULL. */
  catalog?: { key: string; size: number } | null;
  /** PINGROLL_CATALOG_ONLY: pings the catalog does not list are left out. */
  catalogOnly?: CatalogOnly | null;
  /** The day's daily_runs row, as Parquet, and its size in bytes. */
  runsKey: string;
  runsSize: number;
  /** Each table's Parquet is unloaded under `<unloadPrefix><table>/`; the COPY manifests are written there too. */
  unloadPrefix: string;
  /**
   * The ping-id window (contract §4): W, and the ping-ids files (output-relative keys, sizes; a
   * published day's own with its day and rows) of the days before and of closed days after: read from
   * the window's table (window-table.ts).
   */
  window?: { days: number; history: readonly WindowFile[]; closedAfter: readonly WindowFile[] };
}

/** The COPY manifests of a day's rollup: the staged files of each format (none: no such files), the daily_runs row, the viewer key's secret, the episode catalog. */
export interface RollupManifests {
  staged: string | null; earlier: EarlierManifests; runs: string; secret: string | null; catalog: string | null;
  /**
   * The ping-id window (window-table.ts): the plan, and the manifests of the days' files it loads into
   * the window's table and of what adjustments count (none: no such file); none: the window is off.
   */
  window?: { plan: WindowPlan; load: string | null; adjusted: string | null } | null;
}

/** The COPY manifest of each earlier staged format's files (EARLIER_STAGED_FORMATS' order; none: no such files). */
type EarlierManifests = Array<string | null>;

/** Where the day's left-out records are UNLOADed, under the day's prefix. */
const EXCLUDED_RECORDS = 'invalid_traffic_records';
/** Where the day's ping ids are UNLOADed, under the day's prefix. */
const PING_IDS_UNLOAD = 'ping_ids';

/** How long the Data API keeps a day's session between its two batches (the second starts as soon as the first is seen finished). */
const SESSION_KEEP_ALIVE_SECONDS = 600;

export interface RedshiftRollupOptions {
  /** Where statements run. */
  batches: StatementBatches;
  /** The warehouse's schema, and the role Redshift assumes to COPY and UNLOAD (PINGROLL_REDSHIFT_SCHEMA, PINGROLL_REDSHIFT_IAM_ROLE). */
  target: { schema: string; iamRole: string };
  /** The output's S3 location (PINGROLL_OUTPUT), which `store` writes and Redshift reads. */
  output: S3Location;
  store: ObjectStore;
  settings: RollupSettings;
  /** Makes the warehouse's tables when missing (the warehouse's own init, once a run). */
  ensureTables: () => Promise<void>;
}

export class RedshiftRollup implements RollupEngine {
  readonly name = 'redshift';
  readonly readsLocalFiles = false;

  /**
   * @param files what is done to files on this machine (an empty table's file, the viewer key's secret
   * as a file, an UNLOADed file as rejects lines): every figure is Redshift's.
   */
  constructor(private readonly opts: RedshiftRollupOptions, private readonly files: LocalFiles) {}

  async rollupDay(input: DayInput, run: RunContext): Promise<RolledUpDay> {
    const { store, settings, batches, target } = this.opts;
    const { day, dir } = input;
    const unloadPrefix = `${WAREHOUSE_ROLLUP}${run.id}/dt=${day}/`;
    // What Redshift COPYs goes under this run's prefix (removed below, or by the next run if this one
    // dies): each file's key, and its size as the COPY manifest needs it (the local file's).
    const upload = async (name: string, local: string, move = false): Promise<{ key: string; size: number }> => {
      const key = `${unloadPrefix}${name}`;
      const { size } = await stat(local);
      await store.put(key, { file: local, move });
      return { key, size };
    };
    // Only with a viewer key is there a secret to put, and to remove first.
    const secretKey = settings.viewerKey ? `${unloadPrefix}viewer-secret.parquet` : null;
    await run.fence();
    try {
      const runsFile = await upload('daily_runs.parquet', input.runs.local);
      // The viewer key's secret goes to Redshift as a file it COPYs: its statements are logged, so none may hold it.
      let viewers: WarehouseRollup['viewers'] = null;
      if (settings.viewerKey) {
        const local = join(dir, 'viewer-secret.parquet');
        await this.files.valueParquet('secret', settings.viewerKey.secret, local);
        const secret = await upload('viewer-secret.parquet', local, true);
        viewers = { keyId: settings.viewerKey.id, secretKey: secret.key, secretSize: secret.size };
      }
      // The episode catalog, as checked.
      const catalog = input.catalog ? await upload('episode-catalog.parquet', input.catalog.file) : null;
      const { window } = await this.runInWarehouse(day, { staged: input.staged, outcomes: input.outcomes, viewers, platforms: settings.platforms, catalog, catalogOnly: settings.catalogOnly ?? null,
        runsKey: runsFile.key, runsSize: runsFile.size, unloadPrefix, window: input.window });
      // The day's figures, as Redshift committed them (the run holds the day's lock): each table's rows,
      // the pings counted, and the audit's duplicates and automated traffic by source.
      const rows = new Map<string, number>();
      let pings = 0;
      const duplicates: Record<string, number> = {};
      const invalid: Record<string, number> = {};
      const repeats: Record<string, number> = {};
      for (const r of await batches.query(dayFiguresSql(target.schema, day), `the figures of ${day}`)) {
        const n = Number(r.n);
        if (r.figure === 'rows') rows.set(String(r.name), n);
        else if (r.figure === 'pings') pings = n;
        else if (r.figure === 'duplicate') duplicates[String(r.name)] = n;
        else if (r.figure === 'invalid_traffic') invalid[String(r.name)] = n;
        else if (r.figure === 'repeat') repeats[String(r.name)] = n;
      }
      for (const source of Object.keys(input.outcomes)) duplicates[source] ??= 0;
      const outputs: OutputFile[] = [];
      for (const table of TABLES) {
        // No file is a table of no rows; else a failed UNLOAD, never published as an empty day. A file
        // of other rows than the table's is one too.
        const local = join(dir, `${table}.parquet`);
        const want = rows.get(table) ?? 0;
        const got = await this.fetchUnloaded(`${unloadPrefix}${table}/`, local, `${table} for ${day}`, want === 0 ? table : null);
        if (got !== want) throw new RedshiftRollupError(`the warehouse's UNLOAD of ${table} for ${day} wrote ${got} rows, the table has ${want}; run again`);
        outputs.push({ table, key: outputKey(table, day), rows: want, bytes: (await stat(local)).size, local });
      }
      // The records left out as automated traffic, as rejects lines: UNLOADed from the session's `excluded`.
      let invalidRejects: string | null = null;
      if (Object.values(invalid).some((n) => n > 0)) {
        const local = join(dir, `${EXCLUDED_RECORDS}.parquet`);
        await this.fetchUnloaded(`${unloadPrefix}${EXCLUDED_RECORDS}/`, local, `the records ${day} left out as automated traffic`, null);
        invalidRejects = join(dir, 'invalid-traffic.jsonl.gz');
        await this.files.jsonLines(local, invalidRejects);
      }
      // The day's ping ids (contract §4), as the rollup left them in the session: what later days' windows read.
      // With W = 0 none is kept.
      const pingIds = join(dir, 'ping-ids.parquet');
      const ids = input.window.days > 0 ? { file: pingIds, rows: await this.fetchUnloaded(`${unloadPrefix}${PING_IDS_UNLOAD}/`, pingIds, `the ping ids of ${day}`, 'ping_ids') } : null;
      // What the window cost, as the DuckDB engine says it: here, the days the window's table held and those COPYed into it.
      if (window && ids) {
        logWindowChecked(run, input, ids.rows, repeats, { table: `${target.schema}.${WINDOW_TABLE}`,
          heldDays: window.read.length - window.load.length, loadedDays: window.load.map((l) => l.day), adjustmentFiles: window.adjusted.length });
      }
      return { pings, duplicates, repeats, pingIds: ids, invalid, outputs: [...outputs, input.runs], invalidRejects, loaded: true };
    } finally {
      // The secret's file first, then the rest, each whatever failed before it. What is left goes with
      // the next run's leftovers, or after a day by the bucket's lifecycle rule (deploy/); said.
      const failed: string[] = [];
      let error = '';
      const note = (err: unknown): void => { error ||= (err as Error).message.split('\n')[0]!; };
      const remove = (key: string): Promise<void> => store.delete(key).catch((err: unknown) => { failed.push(key); note(err); });
      if (secretKey) await remove(secretKey);
      for (const key of await store.list(unloadPrefix).catch((err: unknown) => { note(err); return []; })) if (key !== secretKey) await remove(key);
      if (error) run.log.warn('warehouse_rollup.cleanup_failed', { prefix: `${store.url}${unloadPrefix}`, failed, error });
    }
  }

  /**
   * One closed day's adjustments inside Redshift (adjust-sql.ts): what the closed figures counted and
   * what is pending COPYed into two temporary tables, the day's rows worked out from them, and
   * UNLOADed as the piece's Parquet, in one batch.
   */
  async adjust(a: DayAdjustment, dir: string, catalog: EpisodeCatalog | null, run: RunContext): Promise<AdjustedDay> {
    const { store, target, output, batches } = this.opts;
    const table = 'statement_adjustments';
    const unloadPrefix = `${WAREHOUSE_ROLLUP}${run.id}/adjust=${a.reportedMonth}.${a.closedMonth}.${zoneSlug(a.tz)}.${a.day}/`;
    const s3 = s3In(output);
    const unload = unloadTo(output, target);
    const role = roleOf(target);
    const local = join(dir, `${table}.parquet`);
    try {
      await this.opts.ensureTables();
      const only = this.opts.settings.catalogOnly ?? null;
      if (only && !catalog) throw new RedshiftRollupError(`pings are kept to the episode catalog (PINGROLL_CATALOG_ONLY=${only}) but the adjustments of ${a.day} were given none`);
      let catalogManifest: string | null = null;
      if (only && catalog) {
        const key = `${unloadPrefix}episode-catalog.parquet`;
        await store.put(key, { file: catalog.file });
        catalogManifest = await this.manifest(unloadPrefix, 'episode-catalog', [{ key, size: (await stat(catalog.file)).size }]);
      }
      const [counted, pending] = await Promise.all([this.stagedManifests(unloadPrefix, a.counted, 'counted'), this.stagedManifests(unloadPrefix, a.pending, 'pending')]);
      // The ping ids of the days around it and its own (contract §4, §9).
      const around = a.window.days > 0 ? await this.manifest(unloadPrefix, 'window-around', a.window.around) : null;
      const own = a.window.own ? await this.manifest(unloadPrefix, 'window-own', [a.window.own]) : null;
      await batches.batch([
        ...(around ? ['CREATE TEMP TABLE adj_around (' + PING_IDS_TABLE_COLUMNS + ')', `COPY adj_around FROM ${s3(around)} ${role} FORMAT AS PARQUET MANIFEST`] : []),
        ...(own ? ['CREATE TEMP TABLE adj_own (' + PING_IDS_TABLE_COLUMNS + ')', `COPY adj_own FROM ${s3(own)} ${role} FORMAT AS PARQUET MANIFEST`] : []),
        ...RedshiftRollup.prepareStatements(target, output, counted, 'adj_counted_staged'),
        ...RedshiftRollup.prepareStatements(target, output, pending, 'adj_pending_staged'),
        ...(catalogManifest ? [`CREATE TEMP TABLE episode_catalog (${CATALOG_TABLE_COLUMNS})`, `COPY episode_catalog FROM ${s3(catalogManifest)} ${role} FORMAT AS PARQUET MANIFEST`] : []),
        `CREATE TEMP TABLE adj_out (LIKE ${target.schema}.${table})`,
        ...adjustStatements({ day: a, counted: 'adj_counted_staged', pending: 'adj_pending_staged', into: 'adj_out', catalog: catalogManifest ? { only: only!, table: 'episode_catalog' } : null,
          window: { days: a.window.days, around: around ? 'adj_around' : null, own: own ? 'adj_own' : null } }),
        unload(adjustmentsSql('adj_out'), `${unloadPrefix}${table}/`),
        // The ping ids its new pings count (contract §4, §9), what later days' windows read: as the DuckDB engine's adjustedPingIds.
        ...(a.window.days > 0 ? [unload(ADJUSTED_PING_IDS_SQL, `${unloadPrefix}${PING_IDS_UNLOAD}/`)] : []),
      ], `adjustments of ${a.day}`);
      // No row (nothing pending fell in the closed month) may be no file.
      const rows = await this.fetchUnloaded(`${unloadPrefix}${table}/`, local, `the adjustments of ${a.day}`, table);
      const ids = join(dir, 'adjusted-ping-ids.parquet');
      const pingIds = a.window.days > 0 ? { file: ids, rows: await this.fetchUnloaded(`${unloadPrefix}${PING_IDS_UNLOAD}/`, ids, `the ping ids the adjustments of ${a.day} count`, 'ping_ids') } : null;
      return { table, key: outputKey(table, `${a.reportedMonth}-01`), rows, bytes: (await stat(local)).size, local, dateColumn: 'reported_month', pingIds };
    } finally {
      await this.removeLeft(unloadPrefix);
    }
  }

  /**
   * The statement inside Redshift (statementSql): the versions issued before, as published (their
   * file loaded into the warehouse's monthly_statements first), and this version's rows from the
   * month's monthly_series_stats that rollupMonth has just replaced there, UNLOADed as one file, in
   * one batch; what it changed, a query of the two versions there.
   */
  async statement(ask: StatementAsk, run: RunContext): Promise<IssuedStatement> {
    const { target, output, batches } = this.opts;
    const { month, tz, version, dir } = ask;
    const unloadPrefix = `${WAREHOUSE_ROLLUP}${run.id}/statement=${month}.${zoneSlug(tz)}.${version}/`;
    const s3 = s3In(output);
    const unload = unloadTo(output, target);
    try {
      await this.opts.ensureTables();
      const sql = statementSql(target.schema, ask);
      const role = roleOf(target);
      // The versions issued before are the published file's, whatever the warehouse holds (one loaded
      // before it was Redshift lacks them): the month's rows there made the file's first, as its load does.
      const before = ask.before ? await this.manifest(`${unloadPrefix}before/`, 'monthly_statements', [ask.before]) : null;
      await batches.batch([
        ...(before ? [`DELETE FROM ${target.schema}.monthly_statements WHERE month = CAST('${month}-01' AS DATE)`,
          `COPY ${target.schema}.monthly_statements FROM ${s3(before)} ${role} FORMAT AS PARQUET MANIFEST`] : []),
        unload(sql, `${unloadPrefix}statement/`),
      ], `statement of ${month}`);
      const local = join(dir, 'monthly_statements.parquet');
      const rows = await this.fetchUnloaded(`${unloadPrefix}statement/`, local, `the statement of ${month}`, null);
      const file: OutputFile = { table: 'monthly_statements', key: outputKey('monthly_statements', `${month}-01`), rows, bytes: (await stat(local)).size, local, dateColumn: 'month' };
      const changed = version > 1 ? figureChanges(await batches.query(changesSql(target.schema, ask), `what version ${version} of ${month}'s statement changed`)) : [];
      return { file, changed };
    } finally {
      await this.removeLeft(unloadPrefix);
    }
  }

  /**
   * A reported month's statement_adjustments inside Redshift: its pieces COPYed (through a manifest)
   * into a temporary table and UNLOADed as one file in the DuckDB engine's order, in one batch.
   */
  async adjustments(reportedMonth: string, pieces: readonly StagedFile[], dir: string, run: RunContext): Promise<OutputFile> {
    const { target, output, batches } = this.opts;
    const table = 'statement_adjustments';
    const local = join(dir, `${table}.parquet`);
    const unloadPrefix = `${WAREHOUSE_ROLLUP}${run.id}/adjustments=${reportedMonth}/`;
    const s3 = s3In(output);
    const unload = unloadTo(output, target);
    try {
      let rows = 0;
      if (pieces.length === 0) await this.files.emptyParquet(table, local);
      else {
        await this.opts.ensureTables();
        const manifest = (await this.manifest(unloadPrefix, 'pieces', pieces))!;
        const role = roleOf(target);
        await batches.batch([
          `CREATE TEMP TABLE adjustment_pieces (LIKE ${target.schema}.${table})`,
          `COPY adjustment_pieces FROM ${s3(manifest)} ${role} FORMAT AS PARQUET MANIFEST`,
          unload(adjustmentsSql('adjustment_pieces'), `${unloadPrefix}${table}/`),
        ], `adjustments reported on ${reportedMonth}`);
        rows = await this.fetchUnloaded(`${unloadPrefix}${table}/`, local, `the adjustments reported on ${reportedMonth}`, null);
      }
      return { table, key: outputKey(table, `${reportedMonth}-01`), rows, bytes: (await stat(local)).size, local, dateColumn: 'reported_month' };
    } finally {
      await this.removeLeft(unloadPrefix);
    }
  }

  /**
   * A batch's pings of an expired day as too_late rejects lines, inside Redshift: its staged files
   * COPYed into a temporary table and UNLOADed as the lines (rejects-lines.ts) in their order, in one
   * batch; the file made rejects lines here.
   */
  async tooLate(ask: TooLateAsk, run: RunContext): Promise<void> {
    const { target, output, batches } = this.opts;
    const unloadPrefix = `${WAREHOUSE_ROLLUP}${run.id}/too-late=${ask.day}.${ask.batch}/`;
    const unload = unloadTo(output, target);
    try {
      const manifests = await this.stagedManifests(unloadPrefix, ask.staged);
      const lines = tooLateLinesSql('too_late_staged', ask.batch, ask.reason);
      await batches.batch([
        ...RedshiftRollup.prepareStatements(target, output, manifests, 'too_late_staged'),
        unload(lines, `${unloadPrefix}lines/`),
      ], `too-late records of ${ask.day} (batch ${ask.batch})`);
      const local = join(ask.dir, 'too-late.parquet');
      // The batch's staged pings are some: no file is a failed UNLOAD.
      await this.fetchUnloaded(`${unloadPrefix}lines/`, local, `the too-late records of ${ask.day}`, null);
      await this.files.jsonLines(local, ask.out);
    } finally {
      await this.removeLeft(unloadPrefix);
    }
  }

  /**
   * The month inside Redshift too (month-rollup-sql.ts): its staged pings COPYed (no task downloads a
   * month), its rows replaced in the warehouse, and UNLOADed as its Parquet, in one transaction.
   */
  async rollupMonth(month: string, tz: string, days: MonthDay[], dir: string, run: RunContext, catalog: EpisodeCatalog | null): Promise<RolledUpMonth> {
    const { store, target, output } = this.opts;
    const unloadPrefix = `${WAREHOUSE_ROLLUP}${run.id}/month=${month}.${zoneSlug(tz)}/`;
    const table = `${target.schema}.${MONTH_TABLE}`;
    await run.fence();
    try {
      await this.opts.ensureTables();
      const staged = days.flatMap((d) => d.staged.map(({ key, size }) => ({ key, size })));
      const manifests = await this.stagedManifests(unloadPrefix, staged);
      const idsManifest = await this.manifest(unloadPrefix, 'ping-ids', days.flatMap((d) => (d.pingIds ? [{ key: d.pingIds.key, size: d.pingIds.size }] : [])));
      // With PINGROLL_CATALOG_ONLY, the catalog as checked, COPYed as the day's rollup has it.
      const only = this.opts.settings.catalogOnly ?? null;
      if (only && !catalog) throw new RedshiftRollupError(`pings are kept to the episode catalog (PINGROLL_CATALOG_ONLY=${only}) but the rollup of ${month} was given none`);
      let catalogManifest: string | null = null;
      if (only && catalog) {
        const key = `${unloadPrefix}episode-catalog.parquet`;
        await store.put(key, { file: catalog.file });
        catalogManifest = await this.manifest(unloadPrefix, 'episode-catalog', [{ key, size: (await stat(catalog.file)).size }]);
      }
      const { startMs, endMs } = localMonthMs(month, tz);
      const localDays: Array<{ day: string; startMs: number; endMs: number }> = [];
      for (let start = startMs; start < endMs;) {
        const day = localDay(start, tz);
        const end = Math.min(endMs, localDayStartMs(addDays(day, 1), tz));
        localDays.push({ day, startMs: start, endMs: end });
        start = end;
      }
      const s3 = s3In(output);
      const unload = unloadTo(output, target);
      const statements = [
        ...monthRollupStatements({ month, tz, staged: 'staged_pings', table, utcDays: utcDaysOfLocalMonth(month, tz), localDays, catalog: catalogManifest ? { only: only!, table: 'episode_catalog' } : null,
          pingIds: idsManifest ? 'month_ping_ids' : null }),
        unload(`SELECT * FROM ${table} WHERE month = '${month}-01' AND COALESCE(tz, 'UTC') = '${tz}'`, `${unloadPrefix}${MONTH_TABLE}/`),
      ];
      const prepare = [
        ...RedshiftRollup.prepareStatements(target, output, manifests),
        // The days' ping ids: each day's repeats (contract §4) are left out as its rollup left them out.
        ...(idsManifest ? ['CREATE TEMP TABLE month_ping_ids (' + PING_IDS_TABLE_COLUMNS + ')', `COPY month_ping_ids FROM ${s3(idsManifest)} ${roleOf(target)} FORMAT AS PARQUET MANIFEST`] : []),
        ...(catalogManifest ? [`CREATE TEMP TABLE episode_catalog (${CATALOG_TABLE_COLUMNS})`, `COPY episode_catalog FROM ${s3(catalogManifest)} ${roleOf(target)} FORMAT AS PARQUET MANIFEST`] : []),
      ];
      await this.inSession(`rollup of ${month}${tz === 'UTC' ? '' : ` (${tz})`}`, prepare, statements);
      const local = join(dir, `${MONTH_TABLE}-${zoneSlug(tz)}.parquet`);
      const rows = await this.fetchUnloaded(`${unloadPrefix}${MONTH_TABLE}/`, local, `${MONTH_TABLE} for ${month}`, MONTH_TABLE);
      return { file: { table: MONTH_TABLE, key: outputKey(MONTH_TABLE, `${month}-01`, tz), rows, bytes: (await stat(local)).size, local, dateColumn: 'month', zone: tz }, loaded: true };
    } finally {
      await this.removeLeft(unloadPrefix);
    }
  }

  /**
   * The one file an UNLOAD (PARALLEL OFF) wrote under `folder`, fetched to `local`; its rows (as its footer says). None
   * written is an empty file of `empty`'s columns, made here, where the result may have no rows
   * (whether Redshift's UNLOAD of no rows writes a file is not documented); else a failed UNLOAD.
   */
  private async fetchUnloaded(folder: string, local: string, what: string, empty: Parameters<LocalFiles['emptyParquet']>[0] | null): Promise<number> {
    const { store } = this.opts;
    const unloaded = (await store.list(folder)).filter((k) => !k.endsWith('/'));
    if (unloaded.length > 1 || (unloaded.length === 0 && empty === null)) {
      throw new RedshiftRollupError(`the warehouse's UNLOAD of ${what} wrote ${unloaded.length} files under ${store.url}${folder}, not one; run again`);
    }
    if (unloaded.length === 0) await this.files.emptyParquet(empty!, local);
    else await store.download(unloaded[0]!, local);
    return parquetRowCount(local);
  }

  /**
   * Removes what a statement's files left under `prefix` (manifests, inputs, UNLOADed files), each key
   * whatever failed before it: what stays goes with the next run's leftovers, or by the bucket's lifecycle rule.
   */
  private async removeLeft(prefix: string): Promise<void> {
    const { store } = this.opts;
    for (const key of await store.list(prefix).catch(() => [])) await store.delete(key).catch(() => {});
  }

  /** The COPY manifests of staged files, of each format (none: no such files). */
  private async stagedManifests(prefix: string, staged: ReadonlyArray<{ key: string; size: number }>, name = 'staged'): Promise<Pick<RollupManifests, 'staged' | 'earlier'>> {
    const earlier: EarlierManifests = [];
    for (const { format } of EARLIER_STAGED_FORMATS) earlier.push(await this.manifest(prefix, `${name}-format-${format}`, staged.filter((f) => stagedFormatOf(f.key) === format)));
    return { staged: await this.manifest(prefix, name, staged.filter((f) => stagedFormatOf(f.key) === 4)), earlier };
  }

  /** A COPY manifest under `prefix`; none for no files. */
  private async manifest(prefix: string, name: string, files: ReadonlyArray<{ key: string; size: number }>): Promise<string | null> {
    if (!files.length) return null;
    const key = `${prefix}${name}.manifest`;
    await this.opts.store.put(key, Buffer.from(copyManifest(this.opts.output, files)));
    return key;
  }

  /** Two batches in one Data API session: the inputs COPYed into temporary tables, then the transaction that reads them. */
  private async inSession(what: string, prepare: string[], statements: string[], unload: string[] = []): Promise<void> {
    const session = await this.opts.batches.batch(prepare, `${what}: its inputs`, { keepAliveSeconds: SESSION_KEEP_ALIVE_SECONDS });
    if (!session.sessionId) throw new RedshiftRollupError(`the Redshift Data API gave no session for the ${what}'s inputs (statement ${session.id}); run again`);
    await this.opts.batches.batch(statements, what, { id: session.sessionId });
    if (unload.length) await this.opts.batches.batch(unload, `${what}: its files`, { id: session.sessionId });
  }

  /** The staged pings COPYed into the temporary table `table` (earlier formats' files each through a table of their own columns). */
  static prepareStatements(target: { iamRole: string }, output: S3Location, manifests: Pick<RollupManifests, 'staged' | 'earlier'>, table = 'staged_pings'): string[] {
    const s3 = s3In(output);
    const role = roleOf(target);
    return [
      `CREATE TEMP TABLE ${table} (${STAGED_TABLE_COLUMNS})`,
      ...(manifests.staged ? [`COPY ${table} FROM ${s3(manifests.staged)} ${role} FORMAT AS PARQUET MANIFEST`] : []),
      // Files of an earlier format have columns fewer, and COPY takes exactly a file's columns: into a
      // table of theirs, then added with none of the later ones (no platform or playhead before format
      // 2, no audience before 3: country ZZ, device unknown, no bot rule; no id's key before 4: the SQL
      // here reads the id's text).
      ...EARLIER_STAGED_FORMATS.flatMap(({ format, columns }, i) => {
        const manifest = manifests.earlier[i];
        if (!manifest) return [];
        const names = columns.map((c) => c.name).join(', ');
        return [
          `CREATE TEMP TABLE ${table}_format_${format} (${stagedTableColumns(columns)})`,
          `COPY ${table}_format_${format} FROM ${s3(manifest)} ${role} FORMAT AS PARQUET MANIFEST`,
          `INSERT INTO ${table} (${names}) SELECT ${names} FROM ${table}_format_${format}`,
        ];
      }),
    ];
  }

  /** Writes the day's COPY manifests under `unloadPrefix`, then runs the day's batches in one session (`statements`); says what the window's table was planned to hold (none: the window is off). */
  async runInWarehouse(day: string, input: WarehouseRollup): Promise<{ window: WindowPlan | null }> {
    const { output, target } = this.opts;
    await this.opts.ensureTables();
    // Each COPY's manifest, under unloadPrefix; none for no files.
    const prefix = input.unloadPrefix;
    const manifests: RollupManifests = {
      ...(await this.stagedManifests(prefix, input.staged)),
      runs: (await this.manifest(prefix, 'daily_runs', [{ key: input.runsKey, size: input.runsSize }]))!,
      secret: await this.manifest(prefix, 'viewer-secret', input.viewers ? [{ key: input.viewers.secretKey, size: input.viewers.secretSize }] : []),
      catalog: await this.manifest(prefix, 'episode-catalog', input.catalog ? [input.catalog] : []),
      window: await this.windowPlan(day, prefix, input.window),
    };
    const { prepare, rollup, unload } = RedshiftRollup.statements(target, output, day, input, manifests);
    try {
      await this.inSession(`rollup of ${day}`, prepare, rollup, unload);
      return { window: manifests.window?.plan ?? null };
    } catch (err) {
      if (String((err as Error).message).includes(WINDOW_CHECK)) {
        throw new RedshiftRollupError(`the ping ids in ${target.schema}.${WINDOW_TABLE} changed between the plan of the rollup of ${day} and its transaction (another run's statements?); nothing was written: run again`);
      }
      throw err;
    }
  }

  /** What the window's table holds of the day's window, and so what the rollup loads into it and reads (window-table.ts); none with the window off. */
  private async windowPlan(day: string, prefix: string, window: WarehouseRollup['window']): Promise<RollupManifests['window']> {
    if (!window || window.days === 0) return null;
    const { from, to } = windowRange(day, window.days);
    const held = await rowsOrNoneIfMissing(this.opts.batches.query(stateSql(this.opts.target.schema, from, to), `the window's ping ids ${this.opts.target.schema}.${WINDOW_TABLE} holds for ${day}`));
    const plan = planWindow([...window.history, ...window.closedAfter], held.map((r) => ({ day: String(r.day), file: String(r.file), n: Number(r.n) })));
    return { plan, load: await this.manifest(prefix, 'window-load', plan.load), adjusted: await this.manifest(prefix, 'window-adjusted', plan.adjusted) };
  }

  /**
   * The day's three batches in one Data API session (a batch takes at most 40 statements):
   * - `prepare`: the inputs COPYed into temporary tables: the day's staged Parquet (one COPY through a
   *   manifest, whatever the number of files), the viewer key's secret, the episode catalog. Nothing a
   *   reader sees; a run that dies after it leaves nothing (temporary tables go with the session).
   * - `rollup`, one transaction: the rollup SQL (day-rollup-sql.ts: each table's day deleted, then
   *   inserted) and the day's daily_runs row COPYed. Analysts see the old day or the new one.
   * - `unload`: each table's day as committed, UNLOADed as Parquet (Snappy, as pingroll's own files)
   *   under `unloadPrefix`, one file per table (PARALLEL OFF: a day's rollup is far below UNLOAD's
   *   6.2 GB per file). The run holds the day's lock, so nothing else writes the day in between; an
   *   UNLOAD that fails fails the run before anything is published, and the next run rolls the day up
   *   again (the transaction is a replace). The UNLOADs were in the transaction until the day's
   *   tables outgrew one batch (17 tables: 47 statements with them).
   */
  static statements(target: { schema: string; iamRole: string }, output: S3Location, day: string, input: Omit<WarehouseRollup, 'staged'>, manifests: RollupManifests): { prepare: string[]; rollup: string[]; unload: string[] } {
    const s3 = s3In(output);
    const unload = unloadTo(output, target);
    const role = roleOf(target);
    const tables = Object.fromEntries(TABLES.map((t) => [t, `${target.schema}.${t}`])) as Record<TableName, string>;
    const catalog = manifests.catalog ? 'episode_catalog' : null;
    // The window's days before and closed days after are one set of ids: the rollup SQL reads each by its event times.
    const win = manifests.window && input.window
      ? windowStatements(target.schema, day, input.window.days, manifests.window.plan, { role, loadManifest: manifests.window.load ? s3(manifests.window.load) : null, adjustedManifest: manifests.window.adjusted ? s3(manifests.window.adjusted) : null })
      : null;
    return {
      prepare: [
        ...RedshiftRollup.prepareStatements(target, output, manifests),
        // The viewer key's secret from its file, so that no statement holds it (Redshift logs statements).
        ...(manifests.secret ? ['CREATE TEMP TABLE viewer_secret (secret VARCHAR(256))', `COPY viewer_secret FROM ${s3(manifests.secret)} ${role} FORMAT AS PARQUET MANIFEST`] : []),
        ...(catalog ? [`CREATE TEMP TABLE ${catalog} (${CATALOG_TABLE_COLUMNS})`, `COPY ${catalog} FROM ${s3(manifests.catalog!)} ${role} FORMAT AS PARQUET MANIFEST`] : []),
        // The ping ids of the window's days (contract §4): its table brought to the plan, and what adjustments count.
        ...(win?.prepare ?? []),
      ],
      rollup: [
        // The window's table checked to hold the plan, in the transaction that reads it.
        ...(win?.rollup ?? []),
        ...dayRollupStatements({ day, staged: 'staged_pings', tables, outcomes: input.outcomes, viewers: input.viewers ? { keyId: input.viewers.keyId, secretTable: 'viewer_secret' } : null,
          platforms: input.platforms, catalogTable: catalog, catalogOnly: input.catalogOnly ?? null,
          window: { days: input.window?.days ?? 0, history: win?.ids ?? null, closedAfter: win?.ids ?? null } }),
        `DELETE FROM ${target.schema}.daily_runs WHERE day = '${day}'`,
        `COPY ${target.schema}.daily_runs FROM ${s3(manifests.runs)} ${role} FORMAT AS PARQUET MANIFEST`,
      ],
      unload: [
        ...TABLES.map((t) => unload(`SELECT * FROM ${tables[t]} WHERE day = '${day}'`, `${input.unloadPrefix}${t}/`)),
        // The session's temporary table of the records left out as automated traffic: the day's rejects have them.
        unload(invalidTrafficLinesSql('excluded'), `${input.unloadPrefix}${EXCLUDED_RECORDS}/`),
        // The session's temporary table of the day's ping ids, sorted by id (rollup/ping-window.ts).
        ...((input.window?.days ?? 0) > 0 ? [unload('SELECT * FROM day_ping_ids ORDER BY ping_id', `${input.unloadPrefix}${PING_IDS_UNLOAD}/`)] : []),
      ],
    };
  }
}

/** How statements name an output key: its quoted S3 URL. */
function s3In(output: S3Location): (key: string) => string {
  return (key) => `'s3://${output.bucket}/${output.prefix}${key}'`;
}

/**
 * An UNLOAD of a query's rows as one Parquet file (PARALLEL OFF: sorted as the query says) under an
 * output key, the query quoted as UNLOAD takes it.
 */
function unloadTo(output: S3Location, target: { iamRole: string }): (sql: string, key: string) => string {
  const s3 = s3In(output);
  return (sql, key) => `UNLOAD ('${sql.replace(/'/g, "''")}') TO ${s3(key)} ${roleOf(target)} FORMAT AS PARQUET PARALLEL OFF ALLOWOVERWRITE`;
}

/** The role COPY and UNLOAD assume, as statements say it. */
function roleOf(target: { iamRole: string }): string {
  return `IAM_ROLE '${target.iamRole}'`;
}
