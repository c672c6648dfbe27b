/**
 * The production warehouse: Amazon Redshift through the Data API (no driver, no network path to
 * the cluster). A day is loaded as one BatchExecuteStatement, which Redshift runs as one transaction:
 * for each table, delete the day, then COPY it from the day's Parquet on S3. Analysts see the old
 * day or the new one. The statement is polled until it finishes, fails or is aborted, with an overall
 * timeout; a failure carries Redshift's own error text and the statement id, and leaves the previous
 * day in place.
 */
import {
  BatchExecuteStatementCommand, CancelStatementCommand, DescribeStatementCommand, ExecuteStatementCommand,
  GetStatementResultCommand, type Field, type RedshiftDataClient,
} from '@aws-sdk/client-redshift-data';
import type { S3Location } from '../../../lib/location.js';
import type { RedshiftConfig } from './redshift-config.js';
import type { Log } from '../../../lib/log.js';
import { warehouseStatements } from '../sql/ddl.js';
import type { OutputFile } from '../../day-parquet.js';
import type { Warehouse, WarehouseRollup } from '../warehouse.js';
import { CATALOG_TABLE_COLUMNS, dayRollupStatements, STAGED_FORMAT_1_TABLE_COLUMNS, STAGED_TABLE_COLUMNS } from '../../../rollup/day-rollup-sql.js';
import { STAGED_FORMAT_1_COLUMNS, stagedFormatOf } from '../../../ingest/staged-ping.js';
import { TABLES, type TableName } from '../../../rollup/day-rollup.js';

/** The columns of staged format 1's files, for the table their COPY fills. */
const FORMAT_1_NAMES = STAGED_FORMAT_1_COLUMNS.map((c) => c.name).join(', ');

/** The COPY manifests of a day's rollup (rollupDay writes them): the staged files of each format (none: no such files), the daily_runs row, the viewer key's secret, the episode catalog. */
interface RollupManifests { staged: string | null; format1: string | null; runs: string; secret: string | null; catalog: string | null }

/** How long the Data API keeps a day's session between its two batches (the second starts as soon as the first is seen finished). */
const SESSION_KEEP_ALIVE_SECONDS = 600;

export interface DataApiOptions {
  /** Give up on a statement after this long (it is cancelled). */
  timeoutMs?: number;
  /** First poll delay; each next one 1.5 times longer, up to `maxPollMs`. */
  firstPollMs?: number;
  maxPollMs?: number;
  log?: Log;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export class RedshiftStatementError extends Error {}

export class RedshiftDataApi {
  constructor(private readonly client: RedshiftDataClient, private readonly cfg: RedshiftConfig, private readonly opts: DataApiOptions = {}) {}

  private get target() {
    const t = this.cfg.target;
    return {
      Database: this.cfg.database,
      ...('workgroup' in t ? { WorkgroupName: t.workgroup } : { ClusterIdentifier: t.cluster, ...(t.dbUser && !this.cfg.secretArn ? { DbUser: t.dbUser } : {}) }),
      ...(this.cfg.secretArn ? { SecretArn: this.cfg.secretArn } : {}),
    };
  }

  /**
   * Runs statements as one transaction; resolves when Redshift says FINISHED. `session`: keep the
   * session open for `keepAliveSeconds` after, or run in the open session `id` (its temporary tables
   * still there); the session's id is returned.
   */
  async batch(sqls: string[], what: string, session: { keepAliveSeconds?: number; id?: string } = {}): Promise<{ id: string; sessionId: string | undefined }> {
    const name = { Sqls: sqls, StatementName: `pingroll ${what}`.slice(0, 500) };
    // In an open session the Data API takes its id instead of the cluster or workgroup, database and credentials.
    const r = await this.client.send(new BatchExecuteStatementCommand(session.id ? { ...name, SessionId: session.id }
      : { ...this.target, ...name, ...(session.keepAliveSeconds ? { SessionKeepAliveSeconds: session.keepAliveSeconds } : {}) }));
    await this.wait(r.Id!, what);
    return { id: r.Id!, sessionId: r.SessionId ?? session.id };
  }

  /** Rows of a query, every result page. */
  async query(sql: string, what: string): Promise<Array<Record<string, string | number | boolean | null>>> {
    const r = await this.client.send(new ExecuteStatementCommand({ ...this.target, Sql: sql }));
    await this.wait(r.Id!, what);
    const rows: Array<Record<string, string | number | boolean | null>> = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(new GetStatementResultCommand({ Id: r.Id!, NextToken: token }));
      const names = (page.ColumnMetadata ?? []).map((c) => c.name ?? c.label ?? '?');
      for (const rec of page.Records ?? []) rows.push(Object.fromEntries(rec.map((f, i) => [names[i]!, fieldValue(f)])));
      token = page.NextToken;
    } while (token);
    return rows;
  }

  private async wait(id: string, what: string): Promise<void> {
    const sleep = this.opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const now = this.opts.now ?? Date.now;
    const deadline = now() + (this.opts.timeoutMs ?? 30 * 60_000);
    let delay = this.opts.firstPollMs ?? 250;
    for (let polls = 0; ; polls++) {
      const d = await this.client.send(new DescribeStatementCommand({ Id: id }));
      if (d.Status === 'FINISHED') {
        this.opts.log?.info('redshift.finished', { what, statement: id, polls });
        return;
      }
      if (d.Status === 'FAILED' || d.Status === 'ABORTED') {
        throw new RedshiftStatementError(`Redshift ${d.Status === 'FAILED' ? 'failed' : 'aborted'} ${what} (statement ${id}): ${d.Error ?? 'no error text'}; the previous data is unchanged`);
      }
      if (now() >= deadline) {
        await this.client.send(new CancelStatementCommand({ Id: id })).catch(() => {});
        throw new RedshiftStatementError(`Redshift did not finish ${what} (statement ${id}, last status ${d.Status}) within ${Math.round((this.opts.timeoutMs ?? 1_800_000) / 1000)} s; it was cancelled and the previous data is unchanged`);
      }
      this.opts.log?.progress('redshift.wait', `waiting for Redshift: ${what}, ${d.Status}`, { what, statement: id, status: d.Status });
      await sleep(delay);
      delay = Math.min(this.opts.maxPollMs ?? 5000, delay * 1.5);
    }
  }
}

function fieldValue(f: Field): string | number | boolean | null {
  if (f.isNull) return null;
  return f.stringValue ?? f.longValue ?? f.doubleValue ?? f.booleanValue ?? null;
}

export class RedshiftWarehouse implements Warehouse {
  private initialized = false;

  /** @param put writes an object of the output (output-relative key): the COPY manifests. */
  constructor(private readonly api: RedshiftDataApi, private readonly cfg: RedshiftConfig, private readonly output: S3Location,
    private readonly put: (key: string, body: Buffer) => Promise<void>, private readonly glueDatabase: string | null = null) {}

  get description(): string {
    const t = this.cfg.target;
    return `redshift:${'workgroup' in t ? t.workgroup : t.cluster}/${this.cfg.database}.${this.cfg.schema}`;
  }

  /**
   * The tables and views, in one batch; idempotent (IF NOT EXISTS, OR REPLACE). With a Glue database
   * (PINGROLL_GLUE_DATABASE), also the external schema `<schema>_lake` over it: the published Parquet,
   * through Spectrum, beside the loaded tables (docs/analysts.md).
   */
  static initStatements(schema: string, lake?: { glueDatabase: string; iamRole: string }): string[] {
    return [
      ...warehouseStatements('redshift', schema),
      ...(lake ? [`CREATE EXTERNAL SCHEMA IF NOT EXISTS ${schema}_lake FROM DATA CATALOG DATABASE '${lake.glueDatabase}' IAM_ROLE '${lake.iamRole}'`] : []),
    ];
  }

  async init(): Promise<void> {
    if (this.initialized) return;
    await this.api.batch(RedshiftWarehouse.initStatements(this.cfg.schema, this.glueDatabase ? { glueDatabase: this.glueDatabase, iamRole: this.cfg.iamRole } : undefined), 'warehouse init');
    this.initialized = true;
  }

  /**
   * Delete the day and COPY it, for each table, as one transaction. COPY reads the file where it waits
   * to be published (its staged key), or where it is published, always through a manifest that names
   * it with its size (`manifestKey`): COPY from Parquet runs on Redshift Spectrum, which skips files
   * under names beginning with `_` or `.` when it lists a location, and the staged files sit under
   * `_state/`; a manifest names each file outright, so no listing rule applies (docs/running-on-aws.md).
   */
  static loadStatements(cfg: RedshiftConfig, output: S3Location, day: string, files: Array<Pick<OutputFile, 'table' | 'key' | 'stagedKey' | 'dateColumn'>>): string[] {
    return files.flatMap((f) => [
      `DELETE FROM ${cfg.schema}.${f.table} WHERE ${f.dateColumn ?? 'day'} = '${day}'`,
      `COPY ${cfg.schema}.${f.table} FROM 's3://${output.bucket}/${output.prefix}${RedshiftWarehouse.manifestKey(day, f)}' IAM_ROLE '${cfg.iamRole}' FORMAT AS PARQUET MANIFEST`,
    ]);
  }

  /** Where a loaded file's COPY manifest is written: beside the staged file (removed with it), else under _state/load-manifests/. */
  static manifestKey(day: string, f: Pick<OutputFile, 'table' | 'key' | 'stagedKey'>): string {
    return f.stagedKey ? `${f.stagedKey}.manifest` : `_state/load-manifests/${day}/${f.table}.manifest`;
  }

  /**
   * The day rolled up inside Redshift (PINGROLL_ROLLUP=redshift), as two batches in one Data API
   * session (a batch takes at most 40 statements):
   * - `prepare`: the inputs COPYed into temporary tables: the day's staged Parquet (one COPY through a
   *   manifest, whatever the number of files), the viewer key's secret, the episode catalog. Nothing a
   *   reader sees; a run that dies after it leaves nothing (temporary tables go with the session).
   * - `rollup`, one transaction: the rollup SQL (rollup/day-rollup-sql.ts: each table's day deleted,
   *   then inserted), the day's daily_runs row COPYed, and each table's day UNLOADed as Parquet
   *   (Snappy, as pingroll's own files) under `unloadPrefix`, from inside the transaction: what it
   *   writes is what the transaction commits. One file per table (PARALLEL OFF: a day's rollup is far
   *   below UNLOAD's 6.2 GB per file); pingroll then publishes the files as its own (day-publish.ts).
   *   Analysts see the old day or the new one.
   */
  static rollupStatements(cfg: RedshiftConfig, output: S3Location, day: string, input: Omit<WarehouseRollup, 'staged' | 'put'>, manifests: RollupManifests): { prepare: string[]; rollup: string[] } {
    const s3 = (key: string): string => `'s3://${output.bucket}/${output.prefix}${key}'`;
    const role = `IAM_ROLE '${cfg.iamRole}'`;
    const tables = Object.fromEntries(TABLES.map((t) => [t, `${cfg.schema}.${t}`])) as Record<TableName, string>;
    const catalog = manifests.catalog ? 'episode_catalog' : null;
    return {
      prepare: [
        `CREATE TEMP TABLE staged_pings (${STAGED_TABLE_COLUMNS})`,
        ...(manifests.staged ? [`COPY staged_pings FROM ${s3(manifests.staged)} ${role} FORMAT AS PARQUET MANIFEST`] : []),
        // Files staged before `platform` (format 1) have columns fewer, and COPY takes exactly a file's
        // columns: into a table of theirs, then added with no platform or playhead.
        ...(manifests.format1 ? [
          `CREATE TEMP TABLE staged_pings_format_1 (${STAGED_FORMAT_1_TABLE_COLUMNS})`,
          `COPY staged_pings_format_1 FROM ${s3(manifests.format1)} ${role} FORMAT AS PARQUET MANIFEST`,
          `INSERT INTO staged_pings (${FORMAT_1_NAMES}) SELECT ${FORMAT_1_NAMES} FROM staged_pings_format_1`,
        ] : []),
        // The viewer key's secret from its file, so that no statement holds it (Redshift logs statements).
        ...(manifests.secret ? ['CREATE TEMP TABLE viewer_secret (secret VARCHAR(256))', `COPY viewer_secret FROM ${s3(manifests.secret)} ${role} FORMAT AS PARQUET MANIFEST`] : []),
        ...(catalog ? [`CREATE TEMP TABLE ${catalog} (${CATALOG_TABLE_COLUMNS})`, `COPY ${catalog} FROM ${s3(manifests.catalog!)} ${role} FORMAT AS PARQUET MANIFEST`] : []),
      ],
      rollup: [
        ...dayRollupStatements({ day, staged: 'staged_pings', tables, outcomes: input.outcomes, viewers: input.viewers ? { keyId: input.viewers.keyId, secretTable: 'viewer_secret' } : null, platforms: input.platforms, catalogTable: catalog }),
        `DELETE FROM ${cfg.schema}.daily_runs WHERE day = '${day}'`,
        `COPY ${cfg.schema}.daily_runs FROM ${s3(manifests.runs)} ${role} FORMAT AS PARQUET MANIFEST`,
        ...TABLES.map((t) => `UNLOAD ('SELECT * FROM ${tables[t]} WHERE day = ''${day}''') TO ${s3(`${input.unloadPrefix}${t}/`)} ${role} FORMAT AS PARQUET PARALLEL OFF ALLOWOVERWRITE`),
      ],
    };
  }

  /**
   * A COPY manifest of staged files (keys relative to the output, with their sizes). Parquet needs each
   * entry's `meta.content_length` ("Using a manifest to specify data files",
   * https://docs.aws.amazon.com/redshift/latest/dg/loading-data-files-using-manifest.html).
   */
  static copyManifest(output: S3Location, files: Array<{ key: string; size: number }>): string {
    return JSON.stringify({ entries: files.map((f) => ({ url: `s3://${output.bucket}/${output.prefix}${f.key}`, mandatory: true, meta: { content_length: f.size } })) });
  }

  /** Writes the day's COPY manifests under `unloadPrefix`, then runs the day's two batches in one session (rollupStatements). */
  async rollupDay(day: string, input: WarehouseRollup): Promise<void> {
    await this.init();
    // Each COPY's manifest, under unloadPrefix; none for no files.
    const manifest = async (name: string, files: Array<{ key: string; size: number }>): Promise<string | null> => {
      if (!files.length) return null;
      const key = `${input.unloadPrefix}${name}.manifest`;
      await input.put(key, Buffer.from(RedshiftWarehouse.copyManifest(this.output, files)));
      return key;
    };
    const manifests: RollupManifests = {
      staged: await manifest('staged', input.staged.filter((f) => stagedFormatOf(f.key) === 2)),
      format1: await manifest('staged-format-1', input.staged.filter((f) => stagedFormatOf(f.key) === 1)),
      runs: (await manifest('daily_runs', [{ key: input.runsKey, size: input.runsSize }]))!,
      secret: await manifest('viewer-secret', input.viewers ? [{ key: input.viewers.secretKey, size: input.viewers.secretSize }] : []),
      catalog: await manifest('episode-catalog', input.catalog ? [input.catalog] : []),
    };
    const { prepare, rollup } = RedshiftWarehouse.rollupStatements(this.cfg, this.output, day, input, manifests);
    const session = await this.api.batch(prepare, `rollup of ${day}: its inputs`, { keepAliveSeconds: SESSION_KEEP_ALIVE_SECONDS });
    if (!session.sessionId) throw new RedshiftStatementError(`the Redshift Data API gave no session for the rollup of ${day}'s inputs (statement ${session.id}); run again`);
    await this.api.batch(rollup, `rollup of ${day}`, { id: session.sessionId });
  }

  async loadDay(day: string, files: OutputFile[]): Promise<void> {
    await this.init();
    for (const f of files) await this.put(RedshiftWarehouse.manifestKey(day, f), Buffer.from(RedshiftWarehouse.copyManifest(this.output, [{ key: f.stagedKey ?? f.key, size: f.bytes }])));
    await this.api.batch(RedshiftWarehouse.loadStatements(this.cfg, this.output, day, files), `load of ${day}`);
  }

  async query<T>(sql: string): Promise<T[]> {
    return (await this.api.query(sql, 'query')) as T[];
  }

  async close(): Promise<void> {}
}
