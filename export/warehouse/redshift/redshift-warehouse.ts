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
import { LOAD_MANIFESTS } from '../../../datasets/layout.js';
import type { S3Location } from '../../../lib/location.js';
import type { RedshiftConfig } from './redshift-config.js';
import type { Log } from '../../../lib/log.js';
import { warehouseStatements } from '../sql/ddl.js';
import type { OutputFile } from '../../../rollup/output-file.js';
import type { Warehouse } from '../warehouse.js';
import { copyManifest } from '../../../rollup/engines/redshift/copy-manifest.js';

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

/**
 * The error to give for an init that failed because the warehouse was never bootstrapped: the schema
 * missing, or the jobs' user without its rights on it (Redshift's and PostgreSQL's texts); null for any
 * other failure.
 */
export function notBootstrapped(err: unknown, schema: string): RedshiftStatementError | null {
  const text = String((err as Error)?.message ?? err);
  if (!new RegExp(`schema "?${schema}"? does not exist|permission denied for schema "?${schema}"?`).test(text)) return null;
  return new RedshiftStatementError(`Redshift's schema ${schema} is missing, or the jobs' user may not create tables in it: run pingroll warehouse bootstrap --grant-to <the jobs' user> as a Redshift administrator first (${text.split('\n')[0]})`);
}

export class RedshiftWarehouse implements Warehouse {
  private initialized = false;

  /** @param put writes an object of the output (output-relative key): the COPY manifests. */
  constructor(private readonly api: RedshiftDataApi, private readonly cfg: RedshiftConfig, private readonly output: S3Location,
    private readonly put: (key: string, body: Buffer) => Promise<void>) {}

  get description(): string {
    const t = this.cfg.target;
    return `redshift:${'workgroup' in t ? t.workgroup : t.cluster}/${this.cfg.database}.${this.cfg.schema}`;
  }

  /**
   * The tables and views, in one batch; idempotent (IF NOT EXISTS, OR REPLACE). Only what the jobs'
   * user may make in the schema: the schema itself, and the external schema `<schema>_lake`, are the
   * bootstrap's (bootstrap.ts), since making a schema takes CREATE on the database.
   */
  static initStatements(schema: string): string[] {
    return warehouseStatements('redshift', schema);
  }

  /**
   * The preflight: the tables made when missing (init), which is what the jobs' user needs the
   * schema for; a schema not bootstrapped, or a user without CREATE on it, fails here with what to do,
   * before any work. Once a process: the load after it does not ask again.
   */
  async checkWritable(): Promise<void> {
    await this.init();
  }

  async init(): Promise<void> {
    if (this.initialized) return;
    try {
      await this.api.batch(RedshiftWarehouse.initStatements(this.cfg.schema), 'warehouse init');
    } catch (err) {
      throw notBootstrapped(err, this.cfg.schema) ?? err;
    }
    this.initialized = true;
  }

  /**
   * Delete the day and COPY it, for each table, as one transaction. COPY reads the file where it waits
   * to be published (its staged key), or where it is published, always through a manifest that names
   * it with its size (`manifestKey`): COPY from Parquet runs on Redshift Spectrum, which skips files
   * under names beginning with `_` or `.` when it lists a location, and the staged files sit under
   * pingroll's state (PUBLISH_PREFIX, datasets/layout.ts); a manifest names each file outright, so no
   * listing rule applies (docs/running-on-aws.md).
   */
  static loadStatements(cfg: RedshiftConfig, output: S3Location, day: string, files: Array<Pick<OutputFile, 'table' | 'key' | 'stagedKey' | 'dateColumn' | 'zone'>>): string[] {
    return files.flatMap((f) => [
      `DELETE FROM ${cfg.schema}.${f.table} WHERE ${f.dateColumn ?? 'day'} = '${day}'${f.zone ? ` AND COALESCE(tz, 'UTC') = '${f.zone}'` : ''}`,
      `COPY ${cfg.schema}.${f.table} FROM 's3://${output.bucket}/${output.prefix}${RedshiftWarehouse.manifestKey(day, f)}' IAM_ROLE '${cfg.iamRole}' FORMAT AS PARQUET MANIFEST`,
    ]);
  }

  /** Where a loaded file's COPY manifest is written: beside the staged file (removed with it), else under LOAD_MANIFESTS. */
  static manifestKey(day: string, f: Pick<OutputFile, 'table' | 'key' | 'stagedKey'>): string {
    return f.stagedKey ? `${f.stagedKey}.manifest` : `${LOAD_MANIFESTS}${day}/${f.table}.manifest`;
  }

  async loadDay(day: string, files: OutputFile[]): Promise<void> {
    await this.init();
    for (const f of files) await this.put(RedshiftWarehouse.manifestKey(day, f), Buffer.from(copyManifest(this.output, [{ key: f.stagedKey ?? f.key, size: f.bytes }])));
    await this.api.batch(RedshiftWarehouse.loadStatements(this.cfg, this.output, day, files), `load of ${day}`);
  }

  async query<T>(sql: string): Promise<T[]> {
    return (await this.api.query(sql, 'query')) as T[];
  }

  async close(): Promise<void> {}
}
