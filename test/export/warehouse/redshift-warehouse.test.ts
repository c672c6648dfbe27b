/**
 * The Redshift warehouse through the Data API. The Data API has no local stand-in, so it is the one
 * thing mocked in this suite (aws-sdk-client-mock); S3 and DuckDB around it are real.
 */
import { SHA256_HEX } from '../../../rollup/viewer-key.js';
import {
  BatchExecuteStatementCommand, CancelStatementCommand, DescribeStatementCommand, ExecuteStatementCommand,
  GetStatementResultCommand, RedshiftDataClient,
} from '@aws-sdk/client-redshift-data';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { RedshiftDataApi, RedshiftStatementError, RedshiftWarehouse } from '../../../export/warehouse/redshift/redshift-warehouse.js';
import { warehouseStatements } from '../../../export/warehouse/sql/ddl.js';
import { STAGED_TABLE_COLUMNS } from '../../../rollup/engines/redshift/day-rollup-sql.js';
import { invalidTrafficLinesSql } from '../../../rollup/rejects-lines.js';
import { ConfigError, loadConfig } from '../../../infra/config.js';
import type { RedshiftConfig } from '../../../export/warehouse/redshift/redshift-config.js';
import { memoryLog } from '../../../lib/log.js';
import { reportCommand } from '../../../cli/commands/report.js';
import { uniquesCommand } from '../../../cli/commands/uniques.js';
import { generateSample, objectBody, sampleEpisodeCatalog as generatedCatalog } from '../../../tools/sample/access-log-generator.js';
import { DATASETS } from '../../../datasets/registry.js';
import { TABLES } from '../../../rollup/rules.js';
import { RedshiftRollup } from '../../../rollup/engines/redshift/redshift-rollup.js';
import type { ObjectStore } from '../../../state/object-store/object-store.js';
import { query, rm, runDay, setEnv, tempDir } from '../../support/job-fixture.js';
import { startMoto } from '../../support/moto.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { insertRows, PG_NAME, startPostgres } from '../../support/postgres.js';
import { redshiftOnPostgres } from '../../support/redshift-on-postgres.js';
import { DuckDBInstance, queryRows } from '../../../lib/duckdb-engine.js';
import type { DuckDBConnection } from '@duckdb/node-api';

const rs = mockClient(RedshiftDataClient);
beforeEach(() => rs.reset());

const ENV = {
  PINGROLL_WAREHOUSE: 'redshift', PINGROLL_OUTPUT: 's3://rollups/pingroll/', PINGROLL_REDSHIFT_WORKGROUP: 'analytics',
  PINGROLL_REDSHIFT_DATABASE: 'dev', PINGROLL_REDSHIFT_IAM_ROLE: 'arn:aws:iam::123456789012:role/pingroll-copy',
};
const cfg = (): RedshiftConfig => loadConfig(ENV).redshift!;
const output = { kind: 's3' as const, bucket: 'rollups', prefix: 'pingroll/', url: 's3://rollups/pingroll/' };
const files = ['daily_episode_stats', 'daily_series_stats', 'daily_ingest_audit'].map((table, i) => ({ table, key: `${table}/dt=2026-11-01/part-00000.parquet`, stagedKey: `_state/publish/dt=2026-11-01/r1/${table}/dt=2026-11-01/part-00000.parquet`, bytes: 1000 + i })) as never[];
/** The COPY manifests a warehouse wrote, by key. */
const manifests = new Map<string, unknown>();
const put = async (key: string, body: Buffer): Promise<void> => { manifests.set(key, JSON.parse(body.toString())); };
const fast = { sleep: async () => {}, firstPollMs: 1 };

describe('configuration', () => {
  it.each([
    [{ PINGROLL_OUTPUT: './out' }, /needs PINGROLL_OUTPUT on S3/],
    [{ PINGROLL_REDSHIFT_WORKGROUP: '' }, /exactly one of PINGROLL_REDSHIFT_WORKGROUP .* or PINGROLL_REDSHIFT_CLUSTER/],
    [{ PINGROLL_REDSHIFT_WORKGROUP: '', PINGROLL_REDSHIFT_CLUSTER: 'c1' }, /PINGROLL_REDSHIFT_CLUSTER needs PINGROLL_REDSHIFT_DB_USER/],
    [{ PINGROLL_REDSHIFT_DATABASE: '' }, /needs PINGROLL_REDSHIFT_DATABASE/],
    [{ PINGROLL_REDSHIFT_IAM_ROLE: 'pingroll-copy' }, /PINGROLL_REDSHIFT_IAM_ROLE must be the ARN/],
    [{ PINGROLL_REDSHIFT_SCHEMA: 'Bad-Name' }, /must be a lowercase identifier/],
  ])('%j is refused before any work', (over, message) => {
    expect(() => loadConfig({ ...ENV, ...over })).toThrow(ConfigError);
    expect(() => loadConfig({ ...ENV, ...over })).toThrow(message);
  });
  it('reads a cluster with a database user, and the default schema', () => {
    expect(loadConfig({ ...ENV, PINGROLL_REDSHIFT_WORKGROUP: '', PINGROLL_REDSHIFT_CLUSTER: 'c1', PINGROLL_REDSHIFT_DB_USER: 'loader' }).redshift)
      .toMatchObject({ target: { cluster: 'c1', dbUser: 'loader' }, schema: 'pingroll', database: 'dev' });
  });
});

describe('DDL', () => {
  it('declares the registry\'s tables in its column order, sorted by day (the monthly one by month), distributed by series (the small ones to every node), and parses as SQL', async () => {
    const statements = RedshiftWarehouse.initStatements('pingroll');
    expect(DATASETS).toHaveLength(17);
    for (const d of DATASETS) {
      const create = statements.find((s) => s.startsWith(`CREATE TABLE IF NOT EXISTS pingroll.${d.name} `))!;
      const body = create.slice(create.indexOf('(') + 1, create.lastIndexOf(')'));
      expect(body.split(',\n').map((l) => l.trim().split(/\s+/)[0])).toEqual(d.columns.map((c) => c.name));
      expect(create).toMatch(d.name === 'statement_adjustments' ? /DISTKEY \(series_id\) SORTKEY \(reported_month\)$/ : d.name.startsWith('monthly_') ? /DISTKEY \(series_id\) SORTKEY \(month\)$/ : ['daily_ingest_audit', 'daily_hourly_stats', 'daily_runs'].includes(d.name) ? /DISTSTYLE ALL SORTKEY \(day\)$/ : /DISTKEY \(series_id\) SORTKEY \(day\)$/);
      // Redshift counts VARCHAR in bytes: room for 256 characters of UTF-8.
      if (d.columns.some((c) => c.name === 'series_id')) expect(create).toMatch(/series_id\s+VARCHAR\(1024\) NOT NULL/);
    }
    // The same tables and views, as DuckDB runs them, must run: a typo in the shared file fails here.
    await query(`${warehouseStatements('duckdb').join(';\n')}; SELECT 1 AS ok`);
    expect(statements).toContain('SET search_path TO pingroll');
    expect(statements.filter((s) => s.startsWith('CREATE OR REPLACE VIEW'))).toHaveLength(4);
    // No schema: the schema and the external one over the published files are the bootstrap's (redshift-bootstrap.test.ts).
    expect(statements.some((s) => /\bSCHEMA\b/.test(s))).toBe(false);
  });
});

describe('loading a day', () => {
  it(`rolls up a day staged partly before \`platform\`, the audience columns and the id's key existed (its statements run on ${PG_NAME}): format 1 to 3 files COPYed into tables of their columns and added without; three batches in one session, each within 40 statements`, async () => {
    rs.on(BatchExecuteStatementCommand).resolves({ Id: 'b-1', SessionId: 'session-1' });
    rs.on(DescribeStatementCommand).resolves({ Status: 'FINISHED' });
    // What the window's table holds (rollup/engines/redshift/window-table.ts): the day before, as planned.
    rs.on(ExecuteStatementCommand).resolves({ Id: 'q-held' });
    rs.on(GetStatementResultCommand, { Id: 'q-held', NextToken: undefined }).resolves({
      ColumnMetadata: [{ name: 'day' }, { name: 'file' }, { name: 'n' }], Records: [[{ stringValue: '2026-10-31' }, { stringValue: 'p/dt=2026-10-31/r.parquet' }, { longValue: 4 }]] });
    manifests.clear();
    const api = new RedshiftDataApi(new RedshiftDataClient({}), cfg(), fast);
    const wh = new RedshiftWarehouse(api, cfg(), output, put);
    // The Redshift engine (rollup/engines/redshift/): its COPY manifests go to the output through its store.
    // runInWarehouse works in the warehouse only: a local file it made would fail the test.
    const noLocal = (): Promise<void> => Promise.reject(new Error('runInWarehouse made a local file'));
    const engine = new RedshiftRollup({ batches: api, target: cfg(), output, store: { put } as unknown as ObjectStore, settings: {}, ensureTables: () => wh.init() },
      { emptyParquet: noLocal, valueParquet: noLocal, jsonLines: noLocal });
    const staged = [{ key: '_staging/b1/dt=2026-11-01/part-0.parquet', size: 10 }, { key: '_staging/b2/dt=2026-11-01/pings-0.parquet', size: 20 }, { key: '_staging/b2/dt=2026-11-01/pings-1.parquet', size: 30 },
      { key: '_staging/b3/dt=2026-11-01/staged-0.parquet', size: 40 }, { key: '_staging/b4/dt=2026-11-01/keyed-0.parquet', size: 50 }];
    await engine.runInWarehouse('2026-11-01', { staged, outcomes: { s3: { ping: 3 } }, viewers: { keyId: 'abcdef01', secretKey: 'u/viewer-secret.parquet', secretSize: 5 },
      catalog: { key: 'u/episode-catalog.parquet', size: 9 }, runsKey: 'u/daily_runs.parquet', runsSize: 7, unloadPrefix: 'u/',
      // The window's worst case: a day held, a day to load, what adjustments count, and a closed day after.
      window: { days: 30, history: [{ key: 'p/dt=2026-10-30/r.parquet', size: 11, own: { day: '2026-10-30', rows: 3 } }, { key: 'p/adjusted/dt=2026-10-31/a.parquet', size: 12 },
        { key: 'p/dt=2026-10-31/r.parquet', size: 13, own: { day: '2026-10-31', rows: 4 } }], closedAfter: [{ key: 'p/dt=2026-11-02/r.parquet', size: 14, own: { day: '2026-11-02', rows: 5 } }] } });
    const entries = (k: string): string[] => (manifests.get(k) as { entries: Array<{ url: string }> }).entries.map((e) => e.url.replace('s3://rollups/pingroll/', ''));
    expect(entries('u/staged.manifest')).toEqual([staged[4]!.key]);
    expect(entries('u/staged-format-3.manifest')).toEqual([staged[3]!.key]);
    expect(entries('u/staged-format-2.manifest')).toEqual([staged[1]!.key, staged[2]!.key]);
    expect(entries('u/staged-format-1.manifest')).toEqual([staged[0]!.key]);
    expect(entries('u/episode-catalog.manifest')).toEqual(['u/episode-catalog.parquet']);
    expect(entries('u/window-load.manifest')).toEqual(['p/dt=2026-10-30/r.parquet', 'p/dt=2026-11-02/r.parquet']);
    expect(entries('u/window-adjusted.manifest')).toEqual(['p/adjusted/dt=2026-10-31/a.parquet']);
    // The init, then the day's inputs in a session kept open, then the day's transaction in that session
    // (its temporary tables there), then the day's UNLOADs in it too.
    const calls = rs.commandCalls(BatchExecuteStatementCommand).map((c) => c.args[0].input);
    expect(calls).toHaveLength(4);
    expect(calls[1]).toMatchObject({ WorkgroupName: 'analytics', Database: 'dev', SessionKeepAliveSeconds: 600 });
    for (const call of calls.slice(2)) {
      expect(call).toMatchObject({ SessionId: 'session-1' });
      for (const absent of ['WorkgroupName', 'Database', 'ClusterIdentifier', 'SecretArn', 'DbUser', 'SessionKeepAliveSeconds']) expect(call, absent).not.toHaveProperty(absent);
    }
    const [sqls, day, unload] = [calls[1]!.Sqls!, calls[2]!.Sqls!, calls[3]!.Sqls!];
    // The worst case: format 1 to 3 files, a viewer key, a catalog and the window.
    expect(sqls.length).toBeLessThanOrEqual(40);
    expect(day.length).toBeLessThanOrEqual(40);
    expect(day.filter((q) => q.startsWith('UNLOAD'))).toHaveLength(0);
    // Each table's, the records left out as automated traffic (the day's rejects have them), and the day's
    // ping ids (the window is on: 30 days, none of them published).
    expect(unload).toHaveLength(TABLES.length + 2);
    expect(unload.at(-1)).toMatch(/^UNLOAD \('SELECT \* FROM day_ping_ids ORDER BY ping_id'\)/);
    expect(unload.every((q) => q.startsWith('UNLOAD'))).toBe(true);
    expect(day.some((q) => q.startsWith('CREATE TEMP TABLE staged_pings') || q.startsWith('COPY staged_pings'))).toBe(false);
    const role = "IAM_ROLE 'arn:aws:iam::123456789012:role/pingroll-copy'";
    expect(sqls.slice(11)).toEqual([
      'CREATE TEMP TABLE viewer_secret (secret VARCHAR(256))',
      `COPY viewer_secret FROM 's3://rollups/pingroll/u/viewer-secret.manifest' ${role} FORMAT AS PARQUET MANIFEST`,
      `CREATE TEMP TABLE episode_catalog (series_id VARCHAR(1024), episode_id VARCHAR(1024), duration_seconds BIGINT)`,
      `COPY episode_catalog FROM 's3://rollups/pingroll/u/episode-catalog.manifest' ${role} FORMAT AS PARQUET MANIFEST`,
      expect.stringMatching(/^CREATE TABLE IF NOT EXISTS pingroll\.window_ping_ids \(/),
      expect.stringMatching(/^CREATE TEMP TABLE window_load \(/),
      `COPY window_load FROM 's3://rollups/pingroll/u/window-load.manifest' ${role} FORMAT AS PARQUET MANIFEST`,
      expect.stringMatching(/^CREATE TEMP TABLE window_adjusted \(/),
      `COPY window_adjusted FROM 's3://rollups/pingroll/u/window-adjusted.manifest' ${role} FORMAT AS PARQUET MANIFEST`,
      'CREATE TEMP TABLE window_ids_as_planned (window_ids_as_planned INTEGER NOT NULL)',
      // The window's table brought to the plan: the two days not held replaced, the days before the window dropped.
      'LOCK pingroll.window_ping_ids',
      "DELETE FROM pingroll.window_ping_ids WHERE day IN (DATE '2026-10-30', DATE '2026-11-02') OR day < DATE '2026-10-02'",
      expect.stringMatching(/^INSERT INTO pingroll\.window_ping_ids \(day, file, ping_id, event_ms, "repeat", counted\) SELECT CASE WHEN event_ms >= \d+ AND event_ms < \d+ THEN DATE '2026-10-30' WHEN .* FROM window_load$/),
    ]);
    // The day's transaction checks the plan first, before any figure.
    expect(day[0]).toMatch(/^INSERT INTO window_ids_as_planned SELECT CASE WHEN /);
    expect(sqls.slice(0, 11)).toEqual([
      `CREATE TEMP TABLE staged_pings (${STAGED_TABLE_COLUMNS})`,
      `COPY staged_pings FROM 's3://rollups/pingroll/u/staged.manifest' ${role} FORMAT AS PARQUET MANIFEST`,
      `CREATE TEMP TABLE staged_pings_format_1 (${STAGED_TABLE_COLUMNS.replace(/, platform VARCHAR\(1024\), .*$/, '')})`,
      `COPY staged_pings_format_1 FROM 's3://rollups/pingroll/u/staged-format-1.manifest' ${role} FORMAT AS PARQUET MANIFEST`,
      'INSERT INTO staged_pings (source, series, episode, session, user_id, ping_id, event_ms, natural_key) SELECT source, series, episode, session, user_id, ping_id, event_ms, natural_key FROM staged_pings_format_1',
      `CREATE TEMP TABLE staged_pings_format_2 (${STAGED_TABLE_COLUMNS.replace(/, country VARCHAR\(1024\), .*$/, '')})`,
      `COPY staged_pings_format_2 FROM 's3://rollups/pingroll/u/staged-format-2.manifest' ${role} FORMAT AS PARQUET MANIFEST`,
      'INSERT INTO staged_pings (source, series, episode, session, user_id, ping_id, event_ms, natural_key, platform, pos) SELECT source, series, episode, session, user_id, ping_id, event_ms, natural_key, platform, pos FROM staged_pings_format_2',
      `CREATE TEMP TABLE staged_pings_format_3 (${STAGED_TABLE_COLUMNS.replace(/, key_hi BIGINT, key_lo BIGINT$/, '')})`,
      `COPY staged_pings_format_3 FROM 's3://rollups/pingroll/u/staged-format-3.manifest' ${role} FORMAT AS PARQUET MANIFEST`,
      'INSERT INTO staged_pings (source, series, episode, session, user_id, ping_id, event_ms, natural_key, platform, pos, country, os, device_type, browser, agent_rule) SELECT source, series, episode, session, user_id, ping_id, event_ms, natural_key, platform, pos, country, os, device_type, browser, agent_rule FROM staged_pings_format_3',
    ]);
    // The current format's files go straight into the table: its last columns are the id's key.
    expect(STAGED_TABLE_COLUMNS).toMatch(/, agent_rule VARCHAR\(1024\), key_hi BIGINT, key_lo BIGINT$/);
    // Those statements run on PostgreSQL, and the rows of format 1 get no platform, and of format 3 no key.
    const pg = await startPostgres();
    try {
      await pg.transaction(async (tx) => {
        await tx.exec(sqls[0]!);
        await tx.exec(sqls[2]!);
        await tx.exec(`INSERT INTO staged_pings_format_1 VALUES ('s3', 's', 'e', 'x', NULL, NULL, 1, 'r:1')`);
        await tx.exec(sqls[4]!);
        await tx.exec(sqls[5]!);
        await tx.exec(`INSERT INTO staged_pings_format_2 VALUES ('s3', 't', 'e', 'y', NULL, NULL, 2, 'r:2', 'web', 60)`);
        await tx.exec(sqls[7]!);
        await tx.exec(sqls[8]!);
        await tx.exec(`INSERT INTO staged_pings_format_3 VALUES ('s3', 'u', 'e', 'z', NULL, '0f8fad5b-d9cb-469f-a165-70867728950e', 3, 'r:3', 'web', 60, 'FR', 'iOS', 'mobile', 'Safari', NULL)`);
        await tx.exec(sqls[10]!);
        expect((await tx.query('SELECT series, platform, CAST(pos AS INTEGER) AS pos, country, agent_rule, key_hi FROM staged_pings ORDER BY series')).rows).toEqual([
          { series: 's', platform: null, pos: null, country: null, agent_rule: null, key_hi: null }, { series: 't', platform: 'web', pos: 60, country: null, agent_rule: null, key_hi: null },
          { series: 'u', platform: 'web', pos: 60, country: 'FR', agent_rule: null, key_hi: null }]);
      });
    } finally {
      await pg.close();
    }
  });

  it('makes its tables at its first load; then sends one batch per load: delete then COPY for each table, in order, and waits for FINISHED', async () => {
    rs.on(BatchExecuteStatementCommand).resolvesOnce({ Id: 'i-1' }).resolves({ Id: 'b-1' });
    rs.on(DescribeStatementCommand).resolvesOnce({ Status: 'FINISHED' }).resolvesOnce({ Status: 'SUBMITTED' }).resolvesOnce({ Status: 'STARTED' }).resolves({ Status: 'FINISHED' });
    const waits: number[] = [];
    const api = new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { sleep: async (ms) => { waits.push(ms); }, firstPollMs: 100 });
    const wh = new RedshiftWarehouse(api, cfg(), output, put);
    await wh.loadDay('2026-11-01', files);
    let batches = rs.commandCalls(BatchExecuteStatementCommand);
    expect(batches).toHaveLength(2);
    expect(batches[0]!.args[0].input.Sqls).toEqual(RedshiftWarehouse.initStatements('pingroll'));
    expect(batches[1]!.args[0].input).toMatchObject({ WorkgroupName: 'analytics', Database: 'dev' });
    // Each COPY through a manifest that names the staged file with its size: COPY from Parquet runs on
    // Spectrum, which skips _-prefixed names when it lists; a manifest lists nothing.
    const staged = (t: string): string => `_state/publish/dt=2026-11-01/r1/${t}/dt=2026-11-01/part-00000.parquet`;
    expect(batches[1]!.args[0].input.Sqls).toEqual(['daily_episode_stats', 'daily_series_stats', 'daily_ingest_audit'].flatMap((t) => [
      `DELETE FROM pingroll.${t} WHERE day = '2026-11-01'`,
      `COPY pingroll.${t} FROM 's3://rollups/pingroll/${staged(t)}.manifest' IAM_ROLE 'arn:aws:iam::123456789012:role/pingroll-copy' FORMAT AS PARQUET MANIFEST`,
    ]));
    ['daily_episode_stats', 'daily_series_stats', 'daily_ingest_audit'].forEach((t, i) => expect(manifests.get(`${staged(t)}.manifest`)).toEqual({
      entries: [{ url: `s3://rollups/pingroll/${staged(t)}`, mandatory: true, meta: { content_length: 1000 + i } }],
    }));
    expect(rs.commandCalls(DescribeStatementCommand)).toHaveLength(4);
    expect(waits.slice(-2)).toEqual([100, 150]); // backoff grows
    // The tables are made once: the next load is its own batch alone.
    await wh.loadDay('2026-11-02', files);
    batches = rs.commandCalls(BatchExecuteStatementCommand);
    expect(batches).toHaveLength(3);
    expect(batches[2]!.args[0].input.Sqls![0]).toBe("DELETE FROM pingroll.daily_episode_stats WHERE day = '2026-11-02'");
  });

  it.each([['FAILED', /Redshift failed load of 2026-11-01 \(statement b-2\): S3ServiceException: Access Denied; the previous data is unchanged/], ['ABORTED', /Redshift aborted load of 2026-11-01 \(statement b-2\)/]])(
    'fails loudly on %s, with Redshift\'s text and the statement id', async (status, message) => {
      // The first batch makes the tables (FINISHED); the load's fails.
      rs.on(BatchExecuteStatementCommand).resolvesOnce({ Id: 'i-1' }).resolves({ Id: 'b-2' });
      rs.on(DescribeStatementCommand).resolvesOnce({ Status: 'FINISHED' }).resolves({ Status: status as 'FAILED', Error: status === 'FAILED' ? 'S3ServiceException: Access Denied' : undefined });
      const wh = new RedshiftWarehouse(new RedshiftDataApi(new RedshiftDataClient({}), cfg(), fast), cfg(), output, put);
      await expect(wh.loadDay('2026-11-01', files)).rejects.toThrow(RedshiftStatementError);
      await expect(wh.loadDay('2026-11-01', files)).rejects.toThrow(message);
    });

  it('says to run the bootstrap when its init finds no schema, or no right to create in it (the runs make no schema)', async () => {
    for (const error of ['ERROR: schema "pingroll" does not exist', 'ERROR: permission denied for schema pingroll']) {
      rs.reset();
      rs.on(BatchExecuteStatementCommand).resolves({ Id: 'i-1' });
      rs.on(DescribeStatementCommand).resolves({ Status: 'FAILED', Error: error });
      const wh = new RedshiftWarehouse(new RedshiftDataApi(new RedshiftDataClient({}), cfg(), fast), cfg(), output, put);
      await expect(wh.loadDay('2026-11-01', files)).rejects.toThrow(new RegExp(`^Redshift's schema pingroll is missing, or the jobs' user may not create tables in it: run pingroll warehouse bootstrap --grant-to <the jobs' user> as a Redshift administrator first \\(Redshift failed warehouse init \\(statement i-1\\): ${error.replace(/[()]/g, '\\$&')};`));
      expect(rs.commandCalls(BatchExecuteStatementCommand)).toHaveLength(1);
    }
  });

  it('gives up after its timeout, cancelling the statement', async () => {
    rs.on(BatchExecuteStatementCommand).resolvesOnce({ Id: 'i-1' }).resolves({ Id: 'b-3' });
    rs.on(DescribeStatementCommand).resolvesOnce({ Status: 'FINISHED' }).resolves({ Status: 'STARTED' });
    rs.on(CancelStatementCommand).resolves({ Status: true });
    let now = 0;
    const api = new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { timeoutMs: 60_000, now: () => now, sleep: async (ms) => { now += ms; } });
    await expect(new RedshiftWarehouse(api, cfg(), output, put).loadDay('2026-11-01', files)).rejects.toThrow(/did not finish load of 2026-11-01 \(statement b-3, last status STARTED\) within 60 s; it was cancelled/);
    expect(rs.commandCalls(CancelStatementCommand)[0]!.args[0].input).toEqual({ Id: 'b-3' });
  });
});

describe('the licensors\' statement from Redshift', () => {
  it('reads every result page, and names the days daily_runs does not have complete', async () => {
    // Each query answered by what it reads: the month is not closed (no statement) and has no adjustments.
    rs.on(ExecuteStatementCommand).callsFake((input: { Sql: string }) => ({ Id: /monthly_statements|statement_adjustments/.test(input.Sql) ? 'q-none' : /monthly_series_stats/.test(input.Sql) ? 'q-1' : 'q-2' }));
    rs.on(GetStatementResultCommand, { Id: 'q-none', NextToken: undefined }).resolves({ ColumnMetadata: [], Records: [] });
    rs.on(GetStatementResultCommand, { Id: 'q-2', NextToken: undefined }).resolves({
      ColumnMetadata: [{ name: 'day' }, { name: 'state' }],
      Records: [[{ stringValue: '2026-11-01' }, { stringValue: 'complete' }], [{ stringValue: '2026-11-02' }, { stringValue: 'incomplete' }]],
    });
    rs.on(DescribeStatementCommand).resolves({ Status: 'FINISHED' });
    const cols = ['series_id', 'minutes_watched', 'share_of_month', 'pings', 'days_watched'].map((name) => ({ name }));
    rs.on(GetStatementResultCommand, { Id: 'q-1', NextToken: undefined }).resolves({
      ColumnMetadata: cols, NextToken: 'p2',
      Records: [[{ stringValue: 'The Crown' }, { longValue: 3000 }, { doubleValue: 0.75 }, { longValue: 3100 }, { longValue: 30 }]],
    });
    rs.on(GetStatementResultCommand, { Id: 'q-1', NextToken: 'p2' }).resolves({
      ColumnMetadata: cols, Records: [[{ stringValue: 's2' }, { longValue: 1000 }, { doubleValue: 0.25 }, { longValue: 1010 }, { longValue: 12 }]],
    });
    rs.on(BatchExecuteStatementCommand).resolves({ Id: 'init' });
    const restore = setEnv(ENV);
    try {
      const text = await reportCommand(loadConfig(process.env), { month: '2026-11' }, new Date('2026-11-04T12:00:00Z'));
      expect(text).toMatch(/The Crown\s+3,000\s+75\.0000\s+3,100/);
      expect(text).toMatch(/s2\s+1,000\s+25\.0000\s+1,010/);
      expect(text).toMatch(/total \(2 series\)\s+4,000/);
      expect(rs.commandCalls(GetStatementResultCommand).filter((c) => c.args[0].input.Id === 'q-1')).toHaveLength(2);
      expect(text).toContain('Not final: 1 of 3 days of 2026-11 so far are published complete; not published: 2026-11-03; incomplete: 2026-11-02');
      // A closed month's statement first (none here), its adjustments, the month's own table (it answered here), daily_runs.
      expect(rs.commandCalls(ExecuteStatementCommand).map((c) => /FROM pingroll\.(\w+)/.exec(c.args[0].input.Sql!)![1])).toEqual(['monthly_statements', 'statement_adjustments', 'monthly_series_stats', 'daily_runs']);
      expect(rs.commandCalls(ExecuteStatementCommand)[3]!.args[0].input.Sql).toMatch(/FROM pingroll\.daily_runs WHERE day >= DATE '2026-11-01' AND day < DATE '2026-12-01'/);
      expect(rs.commandCalls(ExecuteStatementCommand)[2]!.args[0].input.Sql).toMatch(/FROM pingroll\.monthly_series_stats WHERE month = DATE '2026-11-01' AND COALESCE\(tz, 'UTC'\) = 'UTC'/);
      expect(text).toMatch(/\nfigures from +redshift:.* \(monthly_series_stats\)\n/);
      // A report only reads: no DDL batch is sent.
      expect(rs.commandCalls(BatchExecuteStatementCommand)).toHaveLength(0);
    } finally {
      restore();
    }
  });
});

describe('make rollup with Redshift configured', () => {
  const roots: string[] = [];
  afterAll(async () => { for (const r of roots) await rm(r, { recursive: true, force: true }); });

  it('publishes Parquet to S3 and sends exactly one load batch for the day, after the tables are in place', async () => {
    const s3 = await startMoto(['logs', 'rollups']);
    const restore = setEnv(s3.env);
    try {
      const { makeS3Client } = await import('../../../infra/aws/s3-client.js');
      const { PutObjectCommand } = await import('@aws-sdk/client-s3');
      const client = makeS3Client({ s3EndpointOverride: true });
      for (const o of generateSample({ date: '2026-11-01', sessions: 30, seed: 9 }).objects) {
        await client.send(new PutObjectCommand({ Bucket: 'logs', Key: o.key, Body: objectBody(o) }));
      }
      rs.on(BatchExecuteStatementCommand).resolves({ Id: 'b' });
      rs.on(DescribeStatementCommand).resolves({ Status: 'FINISHED' });
      const root = tempDir();
      roots.push(root);
      const summary = await runDay(loadConfig({ ...ENV, ...s3.env, PINGROLL_LOGS: 's3://logs/logs/' }), { day: '2026-11-01', log: memoryLog() });
      const batches = rs.commandCalls(BatchExecuteStatementCommand).map((c) => c.args[0].input.Sqls!);
      expect(batches).toHaveLength(2);
      expect(batches[0]!.some((s) => s.startsWith('CREATE TABLE IF NOT EXISTS'))).toBe(true);
      // The day's tables and daily_runs, in one transaction.
      expect(batches[1]!.filter((s) => s.startsWith('COPY'))).toHaveLength(TABLES.length + 1);
      expect(batches[1]!.filter((s) => s.startsWith('COPY')).every((q) => q.endsWith(' FORMAT AS PARQUET MANIFEST'))).toBe(true);
      // COPY reads what the run published.
      const { S3ObjectStore } = await import('../../../state/object-store/s3-object-store.js');
      const store = new S3ObjectStore(client, 'rollups', 'pingroll/');
      expect(await store.size('daily_episode_stats/dt=2026-11-01/part-00000.parquet')).toBe(summary.outputs[0]!.bytes);
      const manifest = JSON.parse((await store.get('_runs/dt=2026-11-01/manifest.json'))!.toString());
      expect(manifest.warehouse).toBe('redshift:analytics/dev.pingroll');
    } finally {
      restore();
      await s3.stop();
    }
  });

  it.each([['with', true, null], ['without', false, null], ['with an UNLOAD that wrote nothing for daily_peaks, and', true, 'daily_peaks']] as const)(`rolls the day up inside Redshift (played by ${PG_NAME}) with PINGROLL_ROLLUP=redshift: the staged Parquet COPYed, the rollup SQL in the load transaction and the UNLOADs after it; the same day as DuckDB's rollup (%s a viewer key)`, async (_with, keyed, lost) => {
    const s3 = await startMoto(['logs', 'rollups']);
    const restore = setEnv(s3.env);
    const pg = await startPostgres();
    try {
      const { makeS3Client } = await import('../../../infra/aws/s3-client.js');
      const { PutObjectCommand } = await import('@aws-sdk/client-s3');
      const { S3ObjectStore } = await import('../../../state/object-store/s3-object-store.js');
      const client = makeS3Client({ s3EndpointOverride: true });
      const sample = generateSample({ date: '2026-11-01', sessions: 60, seed: 19, lateShare: 0.2, recordsPerObject: 200 });
      for (const o of sample.objects) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: o.key, Body: objectBody(o) }));
      const root = tempDir();
      roots.push(root);
      // The reference: DuckDB's rollup of the same logs, into another output.
      // With a key, also an episode catalog on S3 (read from there by both runs): completion figures from it; without, NULL.
      const viewerKey: Record<string, string> = keyed ? { PINGROLL_VIEWER_KEY: 'redshift-test-viewer-key-0123', PINGROLL_EPISODE_CATALOG: 's3://logs/catalog/episodes.csv' } : {};
      if (keyed) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: 'catalog/episodes.csv', Body: generatedCatalog() }));
      await runDay(loadConfig({ ...s3.env, ...viewerKey, PINGROLL_LOGS: 's3://logs/logs/', PINGROLL_OUTPUT: 's3://rollups/duckdb/', PINGROLL_WAREHOUSE: 'none' }), { day: '2026-11-01', log: memoryLog() });

      // Redshift, played by Postgres: COPY and UNLOAD (no local stand-in) are done here, against moto,
      // with DuckDB reading and writing the Parquet; every other statement runs on Postgres as sent.
      const store = new S3ObjectStore(client, 'rollups', 'pingroll/');
      const duck = await DuckDBInstance.create(':memory:');
      const c = await duck.connect();
      // Bootstrapped as the administrator; the run as the jobs' user, with the rights that gave it.
      const { sent, copies, sessions, bootstrap } = redshiftOnPostgres(rs, pg, store, c, root, lost);
      await bootstrap(cfg());
      sent.splice(0);
      const ran = runDay(loadConfig({ ...ENV, ...s3.env, ...viewerKey, PINGROLL_LOGS: 's3://logs/logs/', PINGROLL_ROLLUP: 'redshift' }), { day: '2026-11-01', log: memoryLog(), stagingPartBytes: 64 << 10 });
      await ran.catch(() => {}).finally(() => {
        c.closeSync();
        duck.closeSync();
      });
      if (lost) {
        await expect(ran).rejects.toThrow(/the warehouse's UNLOAD of daily_peaks for 2026-11-01 wrote 0 files under s3:\/\/rollups\/pingroll\/_warehouse-rollup\/.*\/dt=2026-11-01\/daily_peaks\/, not one; run again/);
        expect(await store.get('_runs/dt=2026-11-01/manifest.json')).toBeNull();
        expect(await store.list('_warehouse-rollup/')).toEqual([]);
        return;
      }
      const summary = await ran;

      // One init batch, then the day's three in one session: its inputs COPYed; the rollup and the daily_runs row; the UNLOADs.
      expect(sent).toHaveLength(4);
      expect(sessions).toEqual(['session-1']);
      const [inputs, day, unloads] = [sent[1]!, sent[2]!, sent[3]!];
      expect(inputs[0]).toMatch(/^CREATE TEMP TABLE staged_pings \(source VARCHAR\(16\), series VARCHAR\(1024\)/);
      // One COPY through a manifest of every staged file of the day, and the day's daily_runs row.
      // Every COPY reads through a manifest (no location listed: see loadStatements).
      expect([...inputs, ...day].filter((q) => q.startsWith('COPY')).every((q) => q.endsWith(' FORMAT AS PARQUET MANIFEST'))).toBe(true);
      // The staged pings, the viewer key's secret (from a file: no statement holds it), the catalog; the daily_runs row.
      expect(inputs.filter((q) => q.startsWith('COPY')).map((q) => q.split(' ')[1])).toEqual(keyed ? ['staged_pings', 'viewer_secret', 'episode_catalog'] : ['staged_pings']);
      expect(day.filter((q) => q.startsWith('COPY')).map((q) => q.split(' ')[1])).toEqual(['pingroll.daily_runs']);
      if (keyed) expect([...inputs, ...day].join('\n')).not.toContain(viewerKey.PINGROLL_VIEWER_KEY);
      expect(inputs.filter((q) => q.startsWith('COPY staged_pings'))).toEqual([`COPY staged_pings FROM 's3://rollups/pingroll/_warehouse-rollup/${summary.run}/dt=2026-11-01/staged.manifest' IAM_ROLE 'arn:aws:iam::123456789012:role/pingroll-copy' FORMAT AS PARQUET MANIFEST`]);
      expect(copies[0]).toBeGreaterThan(1);
      expect(day.length).toBeLessThanOrEqual(40);
      expect(day.filter((q) => q.startsWith('UNLOAD'))).toEqual([]);
      expect(unloads).toEqual([...TABLES.map((t) =>
        `UNLOAD ('SELECT * FROM pingroll.${t} WHERE day = ''2026-11-01''') TO 's3://rollups/pingroll/_warehouse-rollup/${summary.run}/dt=2026-11-01/${t}/' IAM_ROLE 'arn:aws:iam::123456789012:role/pingroll-copy' FORMAT AS PARQUET PARALLEL OFF ALLOWOVERWRITE`),
        // The records left out as automated traffic, from the session's temporary table: for the day's rejects.
        `UNLOAD ('${invalidTrafficLinesSql('excluded').replace(/'/g, "''")}') TO 's3://rollups/pingroll/_warehouse-rollup/${summary.run}/dt=2026-11-01/invalid_traffic_records/' IAM_ROLE 'arn:aws:iam::123456789012:role/pingroll-copy' FORMAT AS PARQUET PARALLEL OFF ALLOWOVERWRITE`,
        // The day's ping ids, sorted by id, from the session's temporary table: what later days' windows read (contract §4).
        `UNLOAD ('SELECT * FROM day_ping_ids ORDER BY ping_id') TO 's3://rollups/pingroll/_warehouse-rollup/${summary.run}/dt=2026-11-01/ping_ids/' IAM_ROLE 'arn:aws:iam::123456789012:role/pingroll-copy' FORMAT AS PARQUET PARALLEL OFF ALLOWOVERWRITE`]);
      // The day's ping ids are DuckDB's, id for id (the manifest names each).
      const ids = await Promise.all([store, new S3ObjectStore(client, 'rollups', 'duckdb/')].map(async (st, i) => {
        const m = JSON.parse((await st.get('_runs/dt=2026-11-01/manifest.json'))!.toString()) as { pingIds: { key: string; rows: number } };
        const local = join(root, `ping-ids-${i}.parquet`);
        await st.download(m.pingIds.key, local);
        return { rows: m.pingIds.rows, got: await query(`SELECT * FROM read_parquet('${local}') ORDER BY ALL`) };
      }));
      expect(ids[0]!.rows).toBeGreaterThan(100);
      expect(ids[0]).toEqual(ids[1]);
      // The day's rejects are the same lines either way, automated traffic among them, each with its rule.
      const rejectLines = async (st: { get(key: string): Promise<Buffer | null> }) => gunzipSync((await st.get('_runs/dt=2026-11-01/rejects.jsonl.gz'))!).toString().split('\n').filter(Boolean).sort();
      const [ours, reference] = [await rejectLines(store), await rejectLines(new S3ObjectStore(client, 'rollups', 'duckdb/'))];
      expect(ours).toEqual(reference);
      expect(ours.filter((l) => l.includes('"outcome":"invalid_traffic"')).length).toBe(JSON.parse((await store.get('_runs/dt=2026-11-01/manifest.json'))!.toString()).outcomes.s3.invalid_traffic);
      expect(ours.some((l) => l.includes('"rule":"bot_list"'))).toBe(true);
      // The published day equals DuckDB's rollup, file for file (read back by DuckDB).
      const duckdbStore = new S3ObjectStore(client, 'rollups', 'duckdb/');
      for (const t of TABLES) {
        const files = await Promise.all([store, duckdbStore].map(async (st, i) => {
          const local = join(root, `${t}-${i}.parquet`);
          await st.download(`${t}/dt=2026-11-01/part-00000.parquet`, local);
          return local;
        }));
        const [a, b] = await Promise.all(files.map((f) => query(`SELECT * EXCLUDE (day), day::VARCHAR AS day FROM read_parquet('${f}') ORDER BY ALL`)));
        expect(a, t).toEqual(b);
        // Without a key the viewer tables have no rows: UNLOADed as no file, made empty by pingroll.
        if (keyed || !t.endsWith('_viewers')) expect(a!.length, t).toBeGreaterThan(0);
        else expect(a, t).toEqual([]);
        // Completion: figures for the catalog's episodes with it (e12 is not in it: NULL), none without.
        if (t === 'daily_episode_completion') {
          const rows = a as Array<{ episode_id: string; duration_seconds: number | null; reached_25: number | null; avg_share_watched: number | null }>;
          expect(rows.some((r) => r.episode_id !== 'e12' && r.reached_25! > 0 && r.avg_share_watched! > 0), t).toBe(keyed);
          expect(rows.filter((r) => r.duration_seconds !== null).every((r) => r.episode_id !== 'e12')).toBe(true);
          if (!keyed) expect(rows.every((r) => r.duration_seconds === null && r.reached_25 === null && r.avg_share_watched === null)).toBe(true);
        }
      }
      expect(summary.pings).toBeGreaterThan(0);
      const manifest = JSON.parse((await store.get('_runs/dt=2026-11-01/manifest.json'))!.toString());
      expect(manifest.pings).toBe(summary.pings);
      // The warehouse has the day, and nothing of the UNLOAD is left behind.
      expect((await pg.query('SELECT count(*)::int AS n FROM pingroll.daily_runs')).rows).toEqual([{ n: 1 }]);
      expect(await store.list('_warehouse-rollup/')).toEqual([]);

      // pingroll uniques on Redshift (its queries run on Postgres as sent, as the jobs' user): the
      // viewers DuckDB counts in the reference's published file, per series and over all series.
      const uniquesOf = () => uniquesCommand(loadConfig({ ...ENV, ...s3.env, ...viewerKey }), { from: '2026-10-31', to: '2026-11-01', format: 'json' });
      if (!keyed) await expect(uniquesOf()).rejects.toThrow(/1 day\(s\) of 2026-10-31\.\.2026-11-01 were rolled up without PINGROLL_VIEWER_KEY \(2026-11-01\)/);
      else {
        const uniques = JSON.parse(await uniquesOf()) as { rows: Array<{ series_id: string; viewers: number; days: number }>; allSeries: { viewers: number }; unpublished: string[] };
        const reference = join(root, 'reference-viewers.parquet');
        await duckdbStore.download('daily_series_viewers/dt=2026-11-01/part-00000.parquet', reference);
        expect(uniques.rows).toEqual((await query(`SELECT series_id, count(DISTINCT viewer_key)::INT AS viewers, 1 AS days FROM read_parquet('${reference}') GROUP BY ALL ORDER BY series_id`)));
        expect(uniques.allSeries.viewers).toBe((await query(`SELECT count(DISTINCT viewer_key)::INT AS n FROM read_parquet('${reference}')`))[0]!.n);
        expect(uniques.rows.length).toBeGreaterThan(1);
        expect(uniques.unpublished).toEqual(['2026-10-31']);
      }
    } finally {
      await pg.close();
      restore();
      await s3.stop();
    }
  });
});

describe('the month inside Redshift', () => {
  const roots: string[] = [];
  afterAll(async () => { for (const r of roots) await rm(r, { recursive: true, force: true }); });
  it(`rolls a month up in Redshift (played by ${PG_NAME}) from its staged Parquet, COPYed where it is (no staged file downloaded), UTC and Asia/Kolkata, and kept to the episode catalog (PINGROLL_CATALOG_ONLY): the same month as DuckDB's`, async () => {
    const s3 = await startMoto(['logs', 'rollups']);
    const restore = setEnv(s3.env);
    const pg = await startPostgres();
    const duck = await DuckDBInstance.create(':memory:');
    const c = await duck.connect();
    try {
      const { makeS3Client } = await import('../../../infra/aws/s3-client.js');
      const { PutObjectCommand } = await import('@aws-sdk/client-s3');
      const { S3ObjectStore } = await import('../../../state/object-store/s3-object-store.js');
      const { runMonthRollup } = await import('../../../jobs/month.js');
      const { onBackends, runIngest } = await import('../../support/job-fixture.js');
      const client = makeS3Client({ s3EndpointOverride: true });
      // The UTC days that hold Kolkata's November, the ends busier.
      for (const [i, date] of ['2026-10-31', '2026-11-01', '2026-11-14', '2026-11-30'].entries()) {
        const sample = generateSample({ date, sessions: 25, seed: 60 + i, recordsPerObject: 200 });
        for (const o of sample.objects) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: o.key, Body: objectBody(o) }));
      }
      const root = tempDir();
      roots.push(root);
      const base = { ...s3.env, PINGROLL_LOGS: 's3://logs/logs/', PINGROLL_WAREHOUSE: 'none' };
      const now = new Date('2026-12-05T00:00:00Z');
      for (const output of ['s3://rollups/duckdb/', 's3://rollups/pingroll/']) await runIngest(loadConfig({ ...base, PINGROLL_OUTPUT: output }), { shard: null, log: memoryLog(), days: ['2026-11-30'], now });
      const store = new S3ObjectStore(client, 'rollups', 'pingroll/');
      const { sent, bootstrap } = redshiftOnPostgres(rs, pg, store, c, root);
      await bootstrap(cfg());
      const downloaded: string[] = [];
      // With PINGROLL_CATALOG_ONLY too: a catalog of the generator's episodes but e1 (the month's rows must lose its pings).
      await client.send(new PutObjectCommand({ Bucket: 'logs', Key: 'catalog/episodes.csv', Body: generatedCatalog().split('\n').filter((l) => !/,e1,/.test(l)).join('\n') }));
      const only = { PINGROLL_EPISODE_CATALOG: 's3://logs/catalog/episodes.csv', PINGROLL_CATALOG_ONLY: 'episodes' };
      const pings: number[] = [];
      for (const [tz, catalogOnly] of [['UTC', false], ['Asia/Kolkata', false], ['UTC', true]] as const) {
        const also = catalogOnly ? only : {};
        await onBackends(loadConfig({ ...base, ...also, PINGROLL_OUTPUT: 's3://rollups/duckdb/' }), memoryLog(), (b) => b, (b) => runMonthRollup(loadConfig({ ...base, ...also, PINGROLL_OUTPUT: 's3://rollups/duckdb/' }), b, { month: '2026-11', tz, log: memoryLog() }));
        const config = loadConfig({ ...ENV, ...s3.env, ...also, PINGROLL_LOGS: 's3://logs/logs/', PINGROLL_ROLLUP: 'redshift' });
        await onBackends(config, memoryLog(), (b) => ({ ...b, store: Object.assign(Object.create(b.store) as typeof b.store, { download: async (k: string, f: string) => { downloaded.push(k); return b.store.download(k, f); } }) }),
          (b) => runMonthRollup(config, b, { month: '2026-11', tz, log: memoryLog() }));
        const name = tz === 'UTC' ? 'part-00000.parquet' : 'part-tz-Asia.Kolkata.parquet';
        const files = await Promise.all(['duckdb/', 'pingroll/'].map(async (prefix, i) => {
          const local = join(root, `month-${tz.replace('/', '.')}-${i}.parquet`);
          await new S3ObjectStore(client, 'rollups', prefix).download(`monthly_series_stats/dt=2026-11-01/${name}`, local);
          return local;
        }));
        const [a, b] = await Promise.all(files.map((f) => query(`SELECT * EXCLUDE (month), month::VARCHAR AS month FROM read_parquet('${f}') ORDER BY series_id`)));
        expect(a, tz).toEqual(b);
        expect(a!.length, tz).toBeGreaterThan(0);
        expect((await pg.query(`SELECT count(*)::int AS n FROM pingroll.monthly_series_stats WHERE tz = '${tz}'`)).rows).toEqual([{ n: a!.length }]);
        if (tz === 'UTC') pings.push((a as Array<{ pings: number | bigint }>).reduce((n, r) => n + Number(r.pings), 0));
      }
      // Kept to the catalog, the month lost the unlisted episode's pings, and only them.
      expect(pings[1]).toBeLessThan(pings[0]!);
      expect(pings[1]).toBeGreaterThan(0);
      expect(sent.flat().some((q) => q.startsWith('COPY episode_catalog'))).toBe(true);
      // The month's inputs were COPYed, never fetched to the task.
      expect(downloaded.filter((k) => k.startsWith('_staging/'))).toEqual([]);
      expect(sent.flat().filter((q) => q.startsWith('COPY staged_pings')).length).toBeGreaterThanOrEqual(2);
      expect(sent.flat().some((q) => q.includes('UNLOAD') && q.includes('monthly_series_stats'))).toBe(true);
      expect(await store.list('_warehouse-rollup/')).toEqual([]);
    } finally {
      c.closeSync();
      duck.closeSync();
      await pg.close();
      restore();
      await s3.stop();
    }
  }, 120_000);
});

