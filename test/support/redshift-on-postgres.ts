/**
 * Redshift for the tests, played by PostgreSQL through a mocked Data API (the one AWS API with no local
 * stand-in): each BatchExecuteStatement runs on Postgres, in one transaction, with COPY and UNLOAD done
 * here against the S3 store (DuckDB reading and writing the Parquet).
 *
 * As strict as Redshift where pingroll could get it wrong:
 * - Who runs a statement: a call with the administrator's secret (`adminSecret`) runs as Postgres's
 *   superuser; any other as the jobs' user (`jobsUser`, made when missing, as Redshift Serverless makes
 *   an `IAMR:` user at its first Data API call), a role with no rights but those granted to it, so a
 *   right the bootstrap does not grant fails the run. The stand-in takes TEMP on the database from
 *   PUBLIC (Redshift's default gives it): the bootstrap must grant what the runs use.
 * - COPY of Parquet loads by position (Redshift's "COPY from columnar data formats"): the file's
 *   columns in order into the table's columns in order (or the COPY's column list), as many of each,
 *   of compatible types; never by name.
 * - ASSUMEROLE (no such thing in Postgres): every user may assume every role for every command until
 *   an administrator runs `REVOKE ASSUMEROLE ON ALL FROM PUBLIC FOR ALL`; then a COPY or UNLOAD by a
 *   user needs `GRANT ASSUMEROLE ON '<role>' TO <user> FOR COPY|UNLOAD|ALL`. Any other ASSUMEROLE
 *   statement is refused as not modelled (a per-role revoke from PUBLIC is not what the docs give).
 * - Nothing is skipped. What Postgres lacks is translated, each case on its own (`forPostgres`): the
 *   external schema over a Glue database becomes an empty schema; DISTSTYLE/DISTKEY/SORTKEY are
 *   dropped from CREATE TABLE; `CREATE USER ... PASSWORD DISABLE` is a role; the database the Data API
 *   names is Postgres's one; SHA2(x, 256) is Postgres's sha256 as hex.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { BatchExecuteStatementCommand, DescribeStatementCommand, ExecuteStatementCommand, GetStatementResultCommand, RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import type { RedshiftServerlessClient } from '@aws-sdk/client-redshift-serverless';
import type { AwsStub } from 'aws-sdk-client-mock';
import { expect } from 'vitest';
import { bootstrapRedshift } from '../../export/warehouse/redshift/bootstrap.js';
import type { RedshiftConfig } from '../../export/warehouse/redshift/redshift-config.js';
import { RedshiftDataApi } from '../../export/warehouse/redshift/redshift-warehouse.js';
import { queryRows } from '../../lib/duckdb-engine.js';
import { SHA256_HEX } from '../../rollup/viewer-key.js';
import { insertRows, type Postgres } from './postgres.js';

/** The jobs' database user the stand-in runs every call without the administrator's secret as. */
export const JOBS_USER = 'IAMR:JobRole';
/** The administrator's secret: a call that names it runs as the superuser. */
export const ADMIN_SECRET = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:redshift-admin-AbCdEf';

type Tx = Pick<Postgres, 'exec' | 'query'>;
type Store = { get(key: string): Promise<Buffer | null>; size(key: string): Promise<number | null>; download(key: string, file: string): Promise<void>; put(key: string, body: { file: string }): Promise<void> };

/** ASSUMEROLE as Redshift keeps it, per Postgres (the cluster's): PUBLIC's blanket right, and each grant as `role|user|command`. */
const assumeRoles = new WeakMap<Postgres, { publicMayAssume: boolean; grants: Set<string> }>();

/** A name as Postgres quotes an identifier. */
const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/**
 * A statement as Postgres runs it: the same text, but for what Postgres lacks (each case documented
 * above). `db`: Postgres's database, which plays the one the Data API names.
 */
export function forPostgres(sql: string, db: string): string {
  // The external schema over a Glue database (Spectrum): an empty schema of that name, made by whoever Redshift would let make it.
  const external = /^CREATE EXTERNAL SCHEMA IF NOT EXISTS (\w+) FROM DATA CATALOG DATABASE '[a-z0-9_]+' IAM_ROLE '[^']+'$/.exec(sql);
  if (external) return `CREATE SCHEMA IF NOT EXISTS ${external[1]}`;
  if (/EXTERNAL SCHEMA/.test(sql)) throw new Error(`the stand-in does not model this external schema: ${sql}`);
  // A database user whose password is disabled (an IAM identity's): a role that may log in (pg_user lists it), which the stand-in SETs.
  const user = /^CREATE USER ("[^"]+") PASSWORD DISABLE$/.exec(sql);
  if (user) return `CREATE ROLE ${user[1]} LOGIN`;
  // Distribution and sort: Redshift's storage, no meaning to Postgres.
  if (sql.startsWith('CREATE TABLE ')) return sql.replace(/\n\) DISTSTYLE (ALL|KEY DISTKEY \(\w+\)) SORTKEY \(\w+\)$/, '\n)');
  return sql
    .replace(/ ON DATABASE "[^"]+" /g, ` ON DATABASE ${ident(db)} `)
    // Redshift's SHA2(x, 256) is Postgres's sha256 as hex (both: the UTF-8 bytes' digest, lowercase hex).
    .replace(/SHA2\(([^()]*), 256\)/g, (_m, e: string) => SHA256_HEX.postgres(e));
}

/** A Parquet column's type (as DuckDB describes it) that Redshift's COPY loads into a column of this Postgres type. */
function loads(parquet: string, column: string): boolean {
  if (parquet === 'VARCHAR') return /^(character varying|text|character)\b/.test(column);
  if (/^(BIGINT|INTEGER|SMALLINT)$/.test(parquet)) return /^(bigint|integer|smallint)$/.test(column);
  if (/^(DOUBLE|FLOAT)$/.test(parquet)) return /^(double precision|real)$/.test(column);
  if (parquet === 'DATE') return column === 'date';
  if (/^TIMESTAMP(_MS|_NS|_S)?$/.test(parquet)) return column === 'timestamp without time zone';
  if (parquet === 'BOOLEAN') return column === 'boolean';
  return false;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * Redshift, played by PostgreSQL: COPY and UNLOAD (no local stand-in) are done here, against moto,
 * with DuckDB reading and writing the Parquet; every other statement runs on Postgres as sent (but
 * for `forPostgres`), as the caller's user. What was sent, the files each COPY read, the sessions
 * opened; and `bootstrap`, pingroll's own `warehouse bootstrap` run against it as the administrator.
 */
export function redshiftOnPostgres(rs: AwsStub<any, any, any>, pg: Postgres, store: Store, c: DuckDBConnection, root: string, lost: string | null = null,
  who: { jobsUser?: string; adminSecret?: string } = {}) {
  const jobsUser = who.jobsUser ?? JOBS_USER;
  const adminSecret = who.adminSecret ?? ADMIN_SECRET;
  const key = (url: string): string => url.replace(/^s3:\/\/rollups\/pingroll\//, '');
  const sent: string[][] = [];
  const copies: number[] = [];
  const sessions: string[] = [];
  /** Each session's user (a batch in a session runs as the user who opened it). */
  const sessionUsers = new Map<string, string | null>();
  const results = new Map<string, Array<Record<string, unknown>>>();
  if (!assumeRoles.has(pg)) assumeRoles.set(pg, { publicMayAssume: true, grants: new Set() });
  const assume = assumeRoles.get(pg)!;
  let ready: Promise<string> | null = null;
  /** Postgres's database, once TEMP is taken from PUBLIC on it. */
  const database = (): Promise<string> => ready ??= (async () => {
    const [{ db }] = (await pg.query<{ db: string }>('SELECT current_database() AS db')).rows as [{ db: string }];
    await pg.exec(`REVOKE TEMP ON DATABASE ${ident(db)} FROM PUBLIC`);
    return db;
  })();
  /** The database user a call runs as: null for the administrator (the superuser). */
  const userOf = async (input: { SecretArn?: string; SessionId?: string }): Promise<string | null> => {
    if (input.SessionId) return sessionUsers.get(input.SessionId)!;
    if (input.SecretArn === adminSecret) return null;
    if (input.SecretArn) throw new Error(`the stand-in knows no database user for secret ${input.SecretArn}`);
    // Redshift Serverless makes an IAM identity's user at its first call, with no rights.
    if (!(await pg.query(`SELECT 1 FROM pg_roles WHERE rolname = '${jobsUser.replace(/'/g, "''")}'`)).rows.length) await pg.exec(`CREATE ROLE ${ident(jobsUser)} LOGIN`);
    return jobsUser;
  };
  /** Whether `user` may assume `role` for `command` (the superuser always may). */
  const mayAssume = (user: string | null, role: string, command: 'COPY' | 'UNLOAD'): boolean =>
    user === null || assume.publicMayAssume || assume.grants.has(`${role}|${user}|${command}`) || assume.grants.has(`${role}|${user}|ALL`);
  const refuse = (user: string | null, role: string): never => { throw new Error(`ERROR: User ${user} is not authorized to assume IAM Role ${role}`); };

  /** Runs statements in one transaction as `user`; ASSUMEROLE's changes take effect when it commits. */
  const run = async (sqls: string[], user: string | null): Promise<Array<Record<string, unknown>>> => {
    const db = await database();
    const pending: Array<() => void> = [];
    let last: Array<Record<string, unknown>> = [];
    await pg.transaction(async (tx) => {
      if (user !== null) await tx.exec(`SET LOCAL ROLE ${ident(user)}`);
      for (const sql of sqls) {
        const copy = /^COPY (\S+?)(?: \(([^)]*)\))? FROM 's3:\/\/([^']+)' IAM_ROLE '([^']+)' FORMAT AS PARQUET( MANIFEST)?$/.exec(sql);
        const unload = /^UNLOAD \('(.*)'\) TO 's3:\/\/([^']+)' IAM_ROLE '([^']+)' FORMAT AS PARQUET PARALLEL OFF ALLOWOVERWRITE$/s.exec(sql);
        if (/ASSUMEROLE/.test(sql)) {
          if (user !== null) throw new Error('ERROR: permission denied: only a superuser may grant or revoke ASSUMEROLE');
          if (sql === 'REVOKE ASSUMEROLE ON ALL FROM PUBLIC FOR ALL') {
            pending.push(() => { assume.publicMayAssume = false; });
            continue;
          }
          const grant = /^GRANT ASSUMEROLE ON '([^']+)' TO "([^"]+)" FOR ((?:COPY|UNLOAD|ALL)(?:, (?:COPY|UNLOAD|ALL))*)$/.exec(sql);
          if (!grant) throw new Error(`the stand-in does not model this ASSUMEROLE statement (Redshift's docs give REVOKE ASSUMEROLE ON ALL FROM PUBLIC FOR ALL, then GRANTs): ${sql}`);
          for (const command of grant[3]!.split(', ')) pending.push(() => { assume.grants.add(`${grant[1]}|${grant[2]}|${command}`); });
        } else if (copy) {
          if (!mayAssume(user, copy[4]!, 'COPY')) refuse(user, copy[4]!);
          await copyParquet(tx, copy[1]!, copy[2] ? copy[2].split(',').map((s) => s.trim()) : null, `s3://${copy[3]}`, Boolean(copy[5]));
        } else if (unload) {
          if (!mayAssume(user, unload[3]!, 'UNLOAD')) refuse(user, unload[3]!);
          await unloadParquet(tx, unload[1]!.replace(/''/g, "'"), `s3://${unload[2]}`, unload[1]!);
        } else {
          const text = forPostgres(sql, db);
          if (/^\s*(SELECT|WITH)\b/i.test(text)) last = (await tx.query<Record<string, unknown>>(text)).rows;
          else await tx.exec(text);
        }
      }
    });
    for (const change of pending) change();
    return last;
  };

  /** COPY of Parquet, by position: the file's columns in order into `columns` (else the table's, in order). */
  const copyParquet = async (tx: Tx, table: string, list: string[] | null, url: string, manifest: boolean): Promise<void> => {
    // A manifest names the files, each with its size (which must be right); else the URL is the file.
    const urls = manifest ? (JSON.parse((await store.get(key(url)))!.toString()) as { entries: Array<{ url: string; mandatory: boolean; meta: { content_length: number } }> }).entries
      : [{ url, mandatory: true, meta: { content_length: -1 } }];
    copies.push(urls.length);
    const all = (await tx.query<{ name: string; type: string }>(`SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
      WHERE attrelid = '${table}'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`)).rows;
    const targets = list ? list.map((name) => all.find((t) => t.name === name) ?? (() => { throw new Error(`ERROR: column "${name}" of relation "${table}" does not exist`); })()) : all;
    for (const entry of urls) {
      expect(entry.mandatory).toBe(true);
      if (manifest) expect(entry.meta.content_length).toBe(await store.size(key(entry.url)));
      const local = join(root, 'copy.parquet');
      await store.download(key(entry.url), local);
      const file = await queryRows<{ column_name: string; column_type: string }>(c, `DESCRIBE SELECT * FROM read_parquet('${local}')`);
      if (file.length !== targets.length) {
        throw new Error(`ERROR: COPY ${table}: ${entry.url} has ${file.length} columns, the ${list ? 'column list' : 'table'} ${targets.length}: COPY from Parquet loads by position, and the numbers must match`);
      }
      file.forEach((f, i) => {
        if (!loads(f.column_type, targets[i]!.type)) throw new Error(`ERROR: Spectrum Scan Error: incompatible Parquet schema for column '${targets[i]!.name}' of ${table} (position ${i + 1}): column type ${targets[i]!.type}, Parquet column '${f.column_name}' ${f.column_type} (${entry.url})`);
      });
      const rows = await queryRows<Record<string, unknown>>(c, `SELECT * FROM read_parquet('${local}')`);
      await insertRows(tx, table, rows.map((r) => Object.fromEntries(file.map((f, i) => [targets[i]!.name, r[f.column_name]]))), targets.map((t) => t.name));
    }
  };

  /** UNLOAD of a query as one Parquet file (PARALLEL OFF), of the columns it selects, typed as their table has them. */
  const unloadParquet = async (tx: Tx, query: string, url: string, quoted: string): Promise<void> => {
    const rows = (await tx.query<Record<string, unknown>>(query)).rows;
    // Whether Redshift's UNLOAD of no rows writes a file is not documented: here it writes none (pingroll makes the empty file).
    // `lost`: an UNLOAD that wrote nothing though the table has rows (pingroll must fail, not publish it empty).
    if (rows.length === 0 || quoted.includes(`pingroll.${lost} `)) return;
    // (Timestamps come as Postgres writes them, or as Dates from PGlite.)
    const json = join(root, 'unload.json');
    await writeFile(json, rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v instanceof Date ? v.toISOString().replace('Z', '') : v])))).join('\n'));
    // A table of the schema, or the session's temporary one; the columns the query selected, in its order.
    const [, schema, table] = /\bFROM (pingroll\.)?(\w+)/.exec(query)!;
    const all = (await tx.query<{ column_name: string; data_type: string }>(`SELECT column_name, data_type FROM information_schema.columns
      WHERE ${schema ? "table_schema = 'pingroll'" : "table_schema LIKE 'pg_temp%'"} AND table_name = '${table}' ORDER BY ordinal_position`)).rows;
    // A column the query makes (a literal, a CASE of them) is text, or boolean where Postgres gives one (TRUE, FALSE), as Redshift types them.
    const types = Object.keys(rows[0]!).map((name) => all.find((t) => t.column_name === name)
      ?? { column_name: name, data_type: typeof rows[0]![name] === 'boolean' ? 'boolean' : 'text' });
    const cols = types.map((t) => `'${t.column_name}': '${t.data_type.startsWith('timestamp') ? 'TIMESTAMP' : t.data_type === 'date' ? 'DATE' : t.data_type === 'bigint' ? 'BIGINT' : t.data_type === 'double precision' ? 'DOUBLE' : t.data_type === 'boolean' ? 'BOOLEAN' : 'VARCHAR'}'`).join(', ');
    const out = join(root, 'unload.parquet');
    await c.run(`COPY (SELECT * FROM read_json('${json}', format = 'newline_delimited', columns = {${cols}})) TO '${out}' (FORMAT parquet)`);
    await store.put(`${key(url)}0000_part_00.parquet`, { file: out });
  };

  rs.on(BatchExecuteStatementCommand).callsFake(async (input: { Sqls: string[]; SessionId?: string; SessionKeepAliveSeconds?: number; SecretArn?: string }) => {
    sent.push(input.Sqls);
    const user = await userOf(input);
    // A batch runs in the session it names (here: Postgres's one connection, whose temporary tables stay), or opens one.
    if (input.SessionId) expect(sessions).toContain(input.SessionId);
    else if (input.SessionKeepAliveSeconds) {
      sessions.push(`session-${sessions.length + 1}`);
      sessionUsers.set(sessions.at(-1)!, user);
      // A new session starts with no temporary tables (Postgres's one connection plays every session).
      await pg.exec('DISCARD TEMP');
    }
    try {
      await run(input.Sqls, user);
    } finally {
      // A batch outside a session is a session of its own: its SET search_path and temporary tables end with it.
      if (!input.SessionId && !input.SessionKeepAliveSeconds) await pg.exec('RESET search_path; DISCARD TEMP');
    }
    return { Id: `b-${sent.length}`, SessionId: input.SessionId ?? (input.SessionKeepAliveSeconds ? sessions.at(-1) : undefined) };
  });
  // A query, as its user; its rows kept for GetStatementResult.
  rs.on(ExecuteStatementCommand).callsFake(async (input: { Sql: string; SecretArn?: string }) => {
    const id = `q-${results.size + 1}`;
    results.set(id, await run([input.Sql], await userOf(input)));
    return { Id: id };
  });
  rs.on(GetStatementResultCommand).callsFake(async (input: { Id: string }) => {
    const rows = results.get(input.Id)!;
    const names = rows.length ? Object.keys(rows[0]!) : [];
    const field = (v: unknown) => (v === null ? { isNull: true } : typeof v === 'number' ? { longValue: v } : { stringValue: String(v) });
    return { ColumnMetadata: names.map((name) => ({ name })), Records: rows.map((r) => names.map((n) => field(r[n]))) };
  });
  // A failed statement fails its BatchExecuteStatement call here (above), never a FINISHED.
  rs.on(DescribeStatementCommand).resolves({ Status: 'FINISHED' });

  /**
   * pingroll's `warehouse bootstrap --grant-to <jobsUser>` against the stand-in, as the administrator
   * (the namespace's API answered here: the COPY role attached, the namespace AVAILABLE).
   */
  const bootstrap = async (cfg: RedshiftConfig, glueDatabase: string | null = null): Promise<void> => {
    const admin = { ...cfg, secretArn: adminSecret };
    const serverless = { send: async (command: { constructor: { name: string } }) => (command.constructor.name === 'GetWorkgroupCommand'
      ? { workgroup: { namespaceName: 'stand-in' } } : { namespace: { status: 'AVAILABLE', iamRoles: [cfg.iamRole] } }) } as unknown as RedshiftServerlessClient;
    await bootstrapRedshift(new RedshiftDataApi(new RedshiftDataClient({}), admin, { sleep: async () => {}, firstPollMs: 1 }), serverless, admin, jobsUser, { glueDatabase });
  };
  return { sent, copies, sessions, bootstrap, jobsUser };
}
