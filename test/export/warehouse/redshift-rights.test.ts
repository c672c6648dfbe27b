/**
 * The jobs' rights in Redshift, and the stand-in that holds them to it (test/support/redshift-on-postgres.ts):
 * PostgreSQL, the jobs running as a user with exactly what `pingroll warehouse bootstrap` grants, COPY
 * of Parquet by position. A run needs no right on the database but TEMP, creates no schema, and may
 * assume the COPY role for COPY and UNLOAD where no other user may.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bootstrapStatements } from '../../../export/warehouse/redshift/bootstrap.js';
import type { RedshiftConfig } from '../../../export/warehouse/redshift/redshift-config.js';
import { RedshiftDataApi, RedshiftWarehouse } from '../../../export/warehouse/redshift/redshift-warehouse.js';
import { loadConfig } from '../../../infra/config.js';
import type { DuckDBConnection } from '@duckdb/node-api';
import { DuckDBInstance } from '../../../lib/duckdb-engine.js';
import { copyManifest } from '../../../rollup/engines/redshift/copy-manifest.js';
import { dayRollupStatements, STAGED_TABLE_COLUMNS } from '../../../rollup/engines/redshift/day-rollup-sql.js';
import { TABLES, type TableName } from '../../../rollup/rules.js';
import { DirectoryObjectStore } from '../../../state/object-store/directory-object-store.js';
import { tempDir } from '../../support/job-fixture.js';
import { PG_NAME, startPostgres, type Postgres } from '../../support/postgres.js';
import { ADMIN_SECRET, JOBS_USER, redshiftOnPostgres } from '../../support/redshift-on-postgres.js';

const rs = mockClient(RedshiftDataClient);
const ROLE = 'arn:aws:iam::123456789012:role/pingroll-copy';
const cfg = (): RedshiftConfig => loadConfig({ PINGROLL_WAREHOUSE: 'redshift', PINGROLL_OUTPUT: 's3://rollups/pingroll/', PINGROLL_REDSHIFT_WORKGROUP: 'analytics',
  PINGROLL_REDSHIFT_DATABASE: 'dev', PINGROLL_REDSHIFT_IAM_ROLE: ROLE }).redshift!;
const output = { kind: 's3' as const, bucket: 'rollups', prefix: 'pingroll/', url: 's3://rollups/pingroll/' };
const DAY = '2026-11-01';

let pg: Postgres;
let duck: Awaited<ReturnType<typeof DuckDBInstance.create>>;
let c: DuckDBConnection;
let root: string;
let store: DirectoryObjectStore;
beforeEach(async () => {
  rs.reset();
  pg = await startPostgres();
  duck = await DuckDBInstance.create(':memory:');
  c = await duck.connect();
  root = tempDir();
  mkdirSync(join(root, 'out'));
  store = new DirectoryObjectStore(join(root, 'out'));
}, 60_000);
afterEach(async () => {
  c.closeSync();
  duck.closeSync();
  await pg.close();
});

/** A batch as the jobs' user (no secret: the IAM identity), or as the administrator. */
const batch = (sqls: string[], admin = false) => new RedshiftDataApi(new RedshiftDataClient({}), admin ? { ...cfg(), secretArn: ADMIN_SECRET } : cfg(), { sleep: async () => {}, firstPollMs: 1 }).batch(sqls, 'test');

/** A staged file of three pings (staged format 4), its columns in the staged order (ingest/staged-ping.ts), and its COPY manifest; the manifest's key. */
async function stagedFile(): Promise<string> {
  const local = join(root, 'staged.parquet');
  // The first id a canonical UUID, with its key; the others text, with none.
  await c.run(`COPY (SELECT 's3' AS source, 's1' AS series, 'e1' AS episode, 'session-' || i AS session, NULL::VARCHAR AS user_id,
      CASE WHEN i = 0 THEN '0f8fad5b-d9cb-469f-a165-70867728950e' ELSE 'p' || i END AS ping_id,
      (${Date.parse(`${DAY}T10:00:00Z`)} + i * 60000)::BIGINT AS event_ms, 'k' || i AS natural_key, 'web' AS platform, 10::BIGINT AS pos,
      'FR' AS country, 'Windows' AS os, 'desktop' AS device_type, 'Chrome' AS browser, NULL::VARCHAR AS agent_rule,
      CASE WHEN i = 0 THEN ${0x0f8fad5bd9cb469fn - 2n ** 63n} END::BIGINT AS key_hi, CASE WHEN i = 0 THEN ${0xa16570867728950en - 2n ** 63n} END::BIGINT AS key_lo FROM range(3) t(i)) TO '${local}' (FORMAT parquet)`);
  await store.put('_staging/b1/dt=2026-11-01/keyed-0.parquet', { file: local });
  const size = (await store.size('_staging/b1/dt=2026-11-01/keyed-0.parquet'))!;
  await store.put('u/staged.manifest', Buffer.from(copyManifest(output, [{ key: '_staging/b1/dt=2026-11-01/keyed-0.parquet', size }])));
  return 'u/staged.manifest';
}

describe(`the jobs' rights, on ${PG_NAME} as the jobs' user`, () => {
  it('are enough after the bootstrap: the runs\' init (tables and views) twice, a day\'s rollup with its temporary tables, COPY and UNLOAD', async () => {
    const standIn = redshiftOnPostgres(rs, pg, store, c, root);
    await standIn.bootstrap(cfg(), 'pingroll_prod');
    // The bootstrap ran as the administrator: the schema and the external one (an empty schema here) are its.
    expect((await pg.query<{ nspname: string; owner: string }>(`SELECT nspname, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname LIKE 'pingroll%' ORDER BY 1`)).rows)
      .toEqual([{ nspname: 'pingroll', owner: 'postgres' }, { nspname: 'pingroll_lake', owner: 'postgres' }]);
    const wh = new RedshiftWarehouse(new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { sleep: async () => {}, firstPollMs: 1 }), cfg(), output, (k, b) => store.put(k, b));
    await wh.init();
    await new RedshiftWarehouse(new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { sleep: async () => {}, firstPollMs: 1 }), cfg(), output, (k, b) => store.put(k, b)).init();
    // The jobs' user made (and owns) the tables and views.
    expect((await pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'pingroll' AND tableowner = '${JOBS_USER}'`)).rows).toEqual([{ n: 17 }]);
    expect((await pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_views WHERE schemaname = 'pingroll' AND viewowner = '${JOBS_USER}'`)).rows).toEqual([{ n: 4 }]);
    const manifest = await stagedFile();
    const tables = Object.fromEntries(TABLES.map((t) => [t, `pingroll.${t}`])) as Record<TableName, string>;
    await batch([`CREATE TEMP TABLE staged_pings (${STAGED_TABLE_COLUMNS})`, `COPY staged_pings FROM 's3://rollups/pingroll/${manifest}' IAM_ROLE '${ROLE}' FORMAT AS PARQUET MANIFEST`,
      ...dayRollupStatements({ day: DAY, staged: 'staged_pings', tables, outcomes: { s3: { ping: 3 } } }),
      `UNLOAD ('SELECT * FROM pingroll.daily_episode_stats WHERE day = ''${DAY}''') TO 's3://rollups/pingroll/u/daily_episode_stats/' IAM_ROLE '${ROLE}' FORMAT AS PARQUET PARALLEL OFF ALLOWOVERWRITE`]);
    expect((await pg.query('SELECT series_id, pings FROM pingroll.daily_episode_stats')).rows).toEqual([{ series_id: 's1', pings: 3 }]);
    expect(await store.size('u/daily_episode_stats/0000_part_00.parquet')).toBeGreaterThan(0);
  });

  it('never include making a schema: the init of before (CREATE SCHEMA IF NOT EXISTS of a schema that exists) is refused to the jobs\' user', async () => {
    const { bootstrap } = redshiftOnPostgres(rs, pg, store, c, root);
    await bootstrap(cfg());
    await expect(batch(['CREATE SCHEMA IF NOT EXISTS pingroll'])).rejects.toThrow(/permission denied for database/);
    await expect(batch(["CREATE EXTERNAL SCHEMA IF NOT EXISTS pingroll_lake FROM DATA CATALOG DATABASE 'pingroll_prod' IAM_ROLE '" + ROLE + "'"])).rejects.toThrow(/permission denied for database/);
  });

  it('fail a run on a warehouse never bootstrapped, saying to run the bootstrap', async () => {
    redshiftOnPostgres(rs, pg, store, c, root);
    const wh = new RedshiftWarehouse(new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { sleep: async () => {}, firstPollMs: 1 }), cfg(), output, (k, b) => store.put(k, b));
    await expect(wh.init()).rejects.toThrow(/^Redshift's schema pingroll is missing, or the jobs' user may not create tables in it: run pingroll warehouse bootstrap --grant-to <the jobs' user> as a Redshift administrator first \(.*schema "pingroll" does not exist/);
  });

  it('fail a run when the bootstrap leaves a grant out (here TEMP: the rollup\'s inputs are temporary tables)', async () => {
    const { sent } = redshiftOnPostgres(rs, pg, store, c, root);
    await batch([`CREATE USER "${JOBS_USER}" PASSWORD DISABLE`, ...bootstrapStatements(cfg(), JOBS_USER).filter((q) => !q.startsWith('GRANT TEMP'))], true);
    await expect(batch([`CREATE TEMP TABLE staged_pings (${STAGED_TABLE_COLUMNS})`])).rejects.toThrow(/permission denied/);
    await batch([`GRANT TEMP ON DATABASE "dev" TO "${JOBS_USER}"`], true);
    await batch([`CREATE TEMP TABLE staged_pings (${STAGED_TABLE_COLUMNS})`]);
    expect(sent).toHaveLength(4);
  });

  it('let only the jobs\' user assume the COPY role once bootstrapped, as Redshift\'s REVOKE ASSUMEROLE ON ALL FROM PUBLIC FOR ALL makes it; before, anyone may', async () => {
    const manifest = await stagedFile();
    const copy = [`CREATE TEMP TABLE staged_pings (${STAGED_TABLE_COLUMNS})`, `COPY staged_pings FROM 's3://rollups/pingroll/${manifest}' IAM_ROLE '${ROLE}' FORMAT AS PARQUET MANIFEST`];
    const asJobs = () => redshiftOnPostgres(rs, pg, store, c, root);
    const asOther = () => redshiftOnPostgres(rs, pg, store, c, root, null, { jobsUser: 'IAMR:SomeoneElse' });
    // Every right but ASSUMEROLE's, to the jobs' user and another.
    asJobs();
    await batch([`CREATE USER "${JOBS_USER}" PASSWORD DISABLE`, 'CREATE USER "IAMR:SomeoneElse" PASSWORD DISABLE',
      ...bootstrapStatements(cfg(), JOBS_USER).filter((q) => !q.includes('ASSUMEROLE')), 'GRANT TEMP ON DATABASE "dev" TO "IAMR:SomeoneElse"'], true);
    // Redshift's default: every user may assume every attached role.
    await batch(copy);
    asOther();
    await batch(copy);
    await asJobs().bootstrap(cfg());
    await batch(copy);
    // Another user (not granted) may not, now.
    asOther();
    await expect(batch(copy)).rejects.toThrow(`ERROR: User IAMR:SomeoneElse is not authorized to assume IAM Role ${ROLE}`);
    // Nor may a user grant it; and a revoke of one role from PUBLIC is not what Redshift's docs give.
    await expect(batch([`GRANT ASSUMEROLE ON '${ROLE}' TO "IAMR:SomeoneElse" FOR COPY`])).rejects.toThrow(/only a superuser/);
    await expect(batch([`REVOKE ASSUMEROLE ON '${ROLE}' FROM PUBLIC FOR ALL`], true)).rejects.toThrow(/does not model this ASSUMEROLE statement/);
  });
});

describe(`the stand-in's COPY of Parquet, on ${PG_NAME}`, () => {
  /** `os` and `browser` of the day's daily_device_stats, its staged pings COPYed into a table of these columns. */
  async function deviceRows(columns: string): Promise<unknown[]> {
    const manifest = await stagedFile();
    const tables = Object.fromEntries(TABLES.map((t) => [t, `pingroll.${t}`])) as Record<TableName, string>;
    await batch([`CREATE TEMP TABLE staged_pings (${columns})`, `COPY staged_pings FROM 's3://rollups/pingroll/${manifest}' IAM_ROLE '${ROLE}' FORMAT AS PARQUET MANIFEST`,
      ...dayRollupStatements({ day: DAY, staged: 'staged_pings', tables, outcomes: { s3: { ping: 3 } } })]);
    return (await pg.query('SELECT os, device_type, browser, pings FROM pingroll.daily_device_stats')).rows;
  }

  it('loads by position, as Redshift does: a staging table with `os` and `browser` swapped gets each other\'s values, and the day\'s rows are wrong (a COPY by name hid it)', async () => {
    const { bootstrap } = redshiftOnPostgres(rs, pg, store, c, root);
    await bootstrap(cfg());
    await new RedshiftWarehouse(new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { sleep: async () => {}, firstPollMs: 1 }), cfg(), output, (k, b) => store.put(k, b)).init();
    const right = await deviceRows(STAGED_TABLE_COLUMNS);
    expect(right).toEqual([{ os: 'Windows', device_type: 'desktop', browser: 'Chrome', pings: 3 }]);
    const swapped = STAGED_TABLE_COLUMNS.replace('os VARCHAR(1024)', 'OS_').replace('browser VARCHAR(1024)', 'os VARCHAR(1024)').replace('OS_', 'browser VARCHAR(1024)');
    expect(swapped).not.toBe(STAGED_TABLE_COLUMNS);
    expect(await deviceRows(swapped)).not.toEqual(right);
    expect(await deviceRows(swapped)).toEqual([{ os: 'Chrome', device_type: 'desktop', browser: 'Windows', pings: 3 }]);
  });

  it('refuses a table of other columns than the file\'s: fewer, or of a type the Parquet column cannot load into; and loads a column list by position too', async () => {
    const { bootstrap } = redshiftOnPostgres(rs, pg, store, c, root);
    await bootstrap(cfg());
    const manifest = await stagedFile();
    const from = `FROM 's3://rollups/pingroll/${manifest}' IAM_ROLE '${ROLE}' FORMAT AS PARQUET MANIFEST`;
    await expect(batch([`CREATE TEMP TABLE t (${STAGED_TABLE_COLUMNS.replace(/, key_lo BIGINT$/, '')})`, `COPY t ${from}`])).rejects.toThrow(/has 17 columns, the table 16: COPY from Parquet loads by position/);
    const swappedTypes = STAGED_TABLE_COLUMNS.replace('event_ms BIGINT', 'X_').replace('natural_key VARCHAR(65535)', 'event_ms BIGINT').replace('X_', 'natural_key VARCHAR(65535)');
    await expect(batch([`CREATE TEMP TABLE t (${swappedTypes})`, `COPY t ${from}`])).rejects.toThrow(/incompatible Parquet schema for column 'natural_key' of t \(position 7\)/);
    // A column list: the file's columns in order into the list's, whatever the table's order.
    const names = STAGED_TABLE_COLUMNS.split(', ').map((col) => col.split(' ')[0]!);
    await batch([`CREATE TABLE pingroll.t (extra BIGINT, ${STAGED_TABLE_COLUMNS.replace('os VARCHAR(1024)', 'OS_').replace('browser VARCHAR(1024)', 'os VARCHAR(1024)').replace('OS_', 'browser VARCHAR(1024)')})`,
      `COPY pingroll.t (${names.join(', ')}) ${from}`]);
    expect((await pg.query('SELECT DISTINCT extra, os, browser FROM pingroll.t')).rows).toEqual([{ extra: null, os: 'Windows', browser: 'Chrome' }]);
  });
});
