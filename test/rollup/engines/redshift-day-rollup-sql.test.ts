/**
 * The rollup inside Redshift (rollup/engines/redshift/day-rollup-sql.ts) run on a real PostgreSQL server (started on
 * 127.0.0.1 by the test: test/support/postgres.ts) equals DuckDB's rollup (rollup/engines/duckdb/day-rollup.ts) row
 * for row, on generated days: pings staged by the real ingest (late objects, objects delivered
 * twice) plus DynamoDB pings, some of them the same pings as S3 ones, some their own.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invalidTrafficLinesSql } from '../../../rollup/rejects-lines.js';
import { CATALOG_TABLE_COLUMNS, dayRollupStatements, PING_IDS_TABLE_COLUMNS, STAGED_TABLE_COLUMNS } from '../../../rollup/engines/redshift/day-rollup-sql.js';
import { stateSql, windowStatements } from '../../../rollup/engines/redshift/window-table.js';
import { CATALOG_COLUMNS, loadEpisodeCatalog } from '../../../rollup/episode-catalog.js';
import { writeFile } from 'node:fs/promises';
import { rollupDay } from '../../../rollup/engines/duckdb/day-rollup.js';
import { TABLES, type TableName } from '../../../rollup/rules.js';
import { warehouseStatements } from '../../../export/warehouse/sql/ddl.js';
import { DuckDBInstance, portableString, queryRows, sqlString } from '../../../lib/duckdb-engine.js';
import { memoryLog } from '../../../lib/log.js';
import { Ledger } from '../../../state/ledger.js';
import { DirectoryObjectStore } from '../../../state/object-store/directory-object-store.js';
import { STAGED_COLUMN_NAMES } from '../../../ingest/staged-ping.js';
import { generateSample, redeliver, sampleEpisodeCatalog } from '../../../tools/sample/access-log-generator.js';
import { SHA256_HEX, viewerKey } from '../../../rollup/viewer-key.js';
import { viewerKeyFor } from '../../support/oracle.js';
import { dirConfig, runDay, tempRoots, writeObjects } from '../../support/job-fixture.js';
import { insertRows, PG_NAME, startPostgres, type Postgres } from '../../support/postgres.js';
import { LISTER_RULES } from '../../../ingest/listing/lister.js';

const root = tempRoots();
const KEY = viewerKey('test-viewer-key-0123456789');
let pg: Postgres;
beforeAll(async () => { pg = await startPostgres(); }, 60_000);
afterAll(() => pg?.close());

type Row = Record<string, string | number | null>;

/** Rows as comparable values: dates and timestamps as ISO text to the millisecond, numbers as numbers, sorted. */
function normalized(rows: Array<Record<string, unknown>>): Row[] {
  const value = (v: unknown): string | number | null => {
    if (v === null || v === undefined) return null;
    if (v instanceof Date) return v.toISOString().replace(/T00:00:00\.000Z$/, '');
    if (typeof v === 'bigint') return Number(v);
    if (typeof v === 'number') return v;
    const s = String(v);
    return /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?$/.test(s) ? new Date(s.replace(' ', 'T') + 'Z').toISOString() : s;
  };
  return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, value(v)])))
    .sort((a, b) => JSON.stringify(a) < JSON.stringify(b) ? -1 : 1);
}

async function stagedDay(seed: number, day: string): Promise<{ files: string[]; outcomes: Record<string, Record<string, number>> }> {
  const r = root();
  // Five sessions of automated traffic: four on the bot list, one in a loop (contract §10); and four
  // viewing sessions with bursts, two of them caught minute by minute.
  const sample = generateSample({ date: day, sessions: 150, seed, recordsPerObject: 300, lateShare: 0.3, automated: 5, bursts: 4 });
  const twice = sample.objects.filter((_, i) => i % 4 === 1).map((o) => redeliver(o, o.deliveredMs + 3_600_000));
  await writeObjects(join(r, 'logs'), [...sample.objects, ...twice]);
  await runDay(dirConfig(r), { day, log: memoryLog() });
  const store = new DirectoryObjectStore(join(r, 'out'));
  const files: string[] = [];
  const outcomes: Record<string, Record<string, number>> = {};
  for (const input of await (await Ledger.load(store, LISTER_RULES)).inputsFor(day)) {
    for (const key of input.staged.pings ?? []) files.push(store.localFile!(key)!);
    for (const [src, counts] of Object.entries(input.staged.outcomes)) {
      for (const [o, n] of Object.entries(counts)) (outcomes[src] ??= {})[o] = ((outcomes[src] ??= {})[o] ?? 0) + (n ?? 0);
    }
  }
  // DynamoDB's pings: every 9th S3 ping again (the same ping id: S3 must win) at a later and an
  // earlier time, and pings of its own; written as a staged file like a table scan's.
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const dynamo = join(r, 'dynamodb.parquet');
  const from = `read_parquet([${files.map(sqlString).join(', ')}])`;
  await c.run(`COPY (
      SELECT 'dynamodb' AS source, series, episode, session, user_id, ping_id, event_ms + (CASE WHEN hash(natural_key) % 2 = 0 THEN 1000 ELSE -1000 END) AS event_ms, 'ddb:' || natural_key AS natural_key,
             -- The losing copy's playhead further on: it must not count.
             pos + 600 AS pos
      FROM ${from} WHERE ping_id IS NOT NULL AND hash(natural_key) % 9 = 0
      UNION ALL
      SELECT 'dynamodb', series, episode, 'ddb-' || session, NULL, 'ddb-' || natural_key, event_ms + 30000, 'ddb-own:' || natural_key, pos
      FROM ${from} WHERE hash(natural_key) % 13 = 0
      UNION ALL
      -- Ids that differ from others only by trailing blanks (Redshift's VARCHAR comparison ignores them; the contract does not).
      SELECT 'dynamodb', series || ' ', episode || ' ', session || ' ', user_id || ' ', ping_id || ' ', event_ms, 'blank:' || natural_key, pos
      FROM ${from} WHERE hash(natural_key) % 11 = 0
    ) TO ${sqlString(dynamo)} (FORMAT parquet)`);
  const [{ n }] = (await queryRows<{ n: bigint }>(c, `SELECT count(*) AS n FROM read_parquet(${sqlString(dynamo)}) WHERE event_ms // 86400000 = ${Date.parse(day) / 86_400_000}`)) as [{ n: bigint }];
  c.closeSync();
  db.closeSync();
  outcomes.dynamodb = { ping: Number(n) };
  return { files: [...files, dynamo], outcomes };
}

describe(`the rollup inside Redshift, on ${PG_NAME}`, () => {
  it.each([[71, '2026-11-01', null, false], [72, '2026-12-31', null, false], [73, '2026-11-01', 'episodes', false], [74, '2026-11-01', null, true]] as const)('equals DuckDB\'s rollup row for row (seed %i, %s, PINGROLL_CATALOG_ONLY=%s, with earlier days\' ping ids: %s), and replaces the day in place', async (seed, day, catalogOnly, withWindow) => {
    const { files, outcomes } = await stagedDay(seed, day);

    // DuckDB's rollup, as the daily job runs it.
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    // The ping-id window (contract §4): ids of the day's records counted before (1, 5 and exactly 30
    // days before; 30 days and a millisecond, too early; some not counted there), and on a closed day
    // 3 days after; among them ids that differ from the day's only by a trailing blank, and ids of the
    // session in a loop (its repeats are automated traffic). None of the bursts': a repeat is left out
    // before the session rate is judged, and they would no longer be caught.
    const idsDir = root();
    // (A pass of the check at most 300 of the day's ids: the ranges, and their edges, are exercised.)
    // (The other days' files are kept without keys: the check makes them, as for a day the Redshift engine rolled up.)
    const window = withWindow ? { days: 30, history: [{ parquet: join(idsDir, 'history.parquet'), keys: null }], closedAfter: [{ parquet: join(idsDir, 'closed-after.parquet'), keys: null }],
      out: join(idsDir, 'day.parquet'), outKeys: join(idsDir, 'day.keys'), dir: idsDir, passIds: 300 } : null;
    if (window) {
      const staged = `read_parquet([${files.map(sqlString).join(', ')}], union_by_name = true)`;
      await c.run(`COPY (SELECT ping_id, event_ms - (CASE hash(ping_id) % 4 WHEN 0 THEN 86400000 WHEN 1 THEN 2592000000 WHEN 2 THEN 2592000001 ELSE 432000000 END) AS event_ms,
          false AS "repeat", hash(ping_id) % 5 <> 0 AS counted FROM ${staged} WHERE ping_id IS NOT NULL AND hash(natural_key) % 6 = 0 AND session NOT LIKE 'burst-%') TO ${sqlString(window.history[0]!.parquet)} (FORMAT parquet)`);
      await c.run(`COPY (SELECT ping_id, event_ms + 259200000 AS event_ms, false AS "repeat", true AS counted FROM ${staged} WHERE ping_id IS NOT NULL AND hash(natural_key) % 6 = 1)
        TO ${sqlString(window.closedAfter[0]!.parquet)} (FORMAT parquet)`);
    }
    // An episode catalog, and an episode whose ids differ from another's only by trailing blanks (a
    // checked catalog refuses such ids; the SQL must keep them apart all the same).
    const dir = root();
    const checked = await loadEpisodeCatalog(c, { url: 'test', fetch: (dest) => writeFile(dest, sampleEpisodeCatalog()) }, dir);
    const catalog = { ...checked, file: join(dir, 'c.parquet') };
    await c.run(`COPY (SELECT * FROM read_parquet(${sqlString(checked.file)}) UNION ALL SELECT 's1000 ', 'e1 ', 61) TO ${sqlString(catalog.file)} (FORMAT parquet)`);
    const rollup = await rollupDay(c, day, files, outcomes, { viewerKey: KEY, catalogFile: catalog.file, catalogOnly, window });
    const wantIds = window ? normalized(await queryRows(c, `SELECT * FROM read_parquet(${sqlString(window.out)})`)) : [];
    if (window) {
      expect(rollup.repeats.s3).toBeGreaterThan(10);
      // Repeats and counted survivors both.
      for (const [repeat, counted] of [['true', 'false'], ['false', 'true']]) expect(wantIds.some((r) => r.repeat === repeat && r.counted === counted), `${repeat} ${counted}`).toBe(true);
    }
    const want = {} as Record<TableName, Row[]>;
    for (const t of TABLES) want[t] = normalized(await queryRows(c, `SELECT * FROM ${rollup.tables[t]}`));
    // The records left out, each as its rejects line has it.
    const wantExcluded = normalized(await queryRows(c, invalidTrafficLinesSql(rollup.excluded)));
    expect(want.daily_episode_stats.length).toBeGreaterThan(10);
    if (window) expect(want.daily_ingest_audit).toContainEqual(expect.objectContaining({ source: 's3', outcome: 'repeat' }));
    expect(wantExcluded.length).toBe(want.daily_ingest_audit.filter((r) => r.outcome === 'invalid_traffic').reduce((n, r) => n + (r.records as number), 0));
    expect(want.daily_ingest_audit).toContainEqual(expect.objectContaining({ source: 'dynamodb', outcome: 'duplicate' }));
    expect(want.daily_ingest_audit).toContainEqual(expect.objectContaining({ source: 's3', outcome: 'duplicate' }));
    expect(want.daily_episode_stats.some((r) => (r.dynamodb_pings as number) > 0)).toBe(true);
    // The viewer datasets: one key per distinct viewer of each series (and episode), from the staged
    // rows of the day (a duplicate has the series and viewer of the ping it copies) and the documented
    // key; a row a user agent on the bot list sent is no viewer's, nor is any of the session in a loop,
    // nor of a session with a minute of 6 pings (the caught bursts).
    const start = Date.parse(`${day}T00:00:00Z`);
    const viewers = await queryRows<{ series: string; viewer: string }>(c, `SELECT DISTINCT series, coalesce(user_id, 'session:' || session) AS viewer
      FROM read_parquet([${files.map(sqlString).join(', ')}], union_by_name = true) WHERE event_ms >= ${start} AND event_ms < ${start + 86_400_000} AND agent_rule IS NULL AND session NOT IN ('bot-${seed}-4', 'burst-${seed}-0', 'burst-${seed}-2')`);
    expect(new Set(want.daily_invalid_traffic.map((r) => r.rule))).toEqual(new Set(['bot_list', 'session_rate', ...(catalogOnly ? ['not_in_catalog'] : [])]));
    if (!catalogOnly && !window) expect(want.daily_series_viewers).toEqual(normalized(viewers.map((v) => ({ day, series_id: v.series, viewer_key: viewerKeyFor(KEY.secret, v.viewer) }))));
    expect(want.daily_episode_viewers.length).toBeGreaterThan(want.daily_series_viewers.length);
    expect(want.daily_episode_completion.filter((r) => r.reached_50 !== null && (r.reached_50 as number) > 0).length).toBeGreaterThan(10);
    expect(want.daily_episode_completion.some((r) => r.series_id === 's1000 ' && r.episode_id === 'e1 ' && r.duration_seconds === 61)).toBe(true);

    // The staged pings loaded into Postgres another way than COPY (which has no local stand-in).
    const schema = `s${seed}`;
    for (const sql of warehouseStatements('postgres', schema)) await pg.exec(sql);
    await pg.exec(`CREATE TABLE ${schema}.staged (${STAGED_TABLE_COLUMNS})`);
    // (By name: the DynamoDB file above is of staged format 1, without `platform`.)
    const rows = await queryRows<Record<string, unknown>>(c, `SELECT * FROM read_parquet([${files.map(sqlString).join(', ')}], union_by_name = true)`);
    const catalogRows = await queryRows<Record<string, unknown>>(c, `SELECT * FROM read_parquet(${sqlString(catalog.file)})`);
    c.closeSync();
    db.closeSync();
    await insertRows(pg, `${schema}.staged`, rows, [...STAGED_COLUMN_NAMES]);
    await pg.exec(`CREATE TABLE ${schema}.episode_catalog (${CATALOG_TABLE_COLUMNS})`);
    await insertRows(pg, `${schema}.episode_catalog`, catalogRows, [...CATALOG_COLUMNS]);
    const idTables = window ? { history: `${schema}.window_history`, closedAfter: `${schema}.window_closed_after` } : null;
    if (window && idTables) {
      for (const [table, file] of [[idTables.history, window.history[0]!.parquet], [idTables.closedAfter, window.closedAfter[0]!.parquet]] as const) {
        await pg.exec(`CREATE TABLE ${table} (${PING_IDS_TABLE_COLUMNS})`);
        const d2 = await DuckDBInstance.create(':memory:');
        const c2 = await d2.connect();
        await insertRows(pg, table, await queryRows<Record<string, unknown>>(c2, `SELECT * FROM read_parquet(${sqlString(file)})`));
        c2.closeSync();
        d2.closeSync();
      }
    }
    const windowSql = window && idTables ? { days: window.days, ...idTables } : null;
    // A day published before, and its neighbour: the day is replaced, the neighbour left alone.
    await pg.exec(`INSERT INTO ${schema}.daily_hourly_stats VALUES ('${day}', 3, 999), ('1999-01-01', 3, 7)`);

    const tables = Object.fromEntries(TABLES.map((t) => [t, `${schema}.${t}`])) as Record<TableName, string>;
    expect(Number.parseInt((await pg.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version, 10)).toBeGreaterThanOrEqual(15);
    await pg.transaction(async (tx) => {
      // The secret in a table, as Redshift gets it (COPY from a file): no statement holds it.
      // (One per seed: the seeds share a session, and a temporary table lives as long as it.)
      await tx.exec(`CREATE TEMP TABLE viewer_secret_${seed} (secret VARCHAR(256))`);
      await tx.exec(`INSERT INTO viewer_secret_${seed} VALUES ('${KEY.secret}')`);
      const statements = dayRollupStatements({ day, staged: `${schema}.staged`, tables, outcomes, viewers: { keyId: KEY.id, secretTable: `viewer_secret_${seed}` }, sha256Hex: SHA256_HEX.postgres, catalogTable: `${schema}.episode_catalog`, catalogOnly, window: windowSql });
      expect(statements.join('\n')).not.toContain(KEY.secret);
      for (const sql of statements) await tx.exec(sql);
    });
    expect(normalized((await pg.query<Record<string, unknown>>(invalidTrafficLinesSql('excluded'))).rows), 'excluded').toEqual(wantExcluded);
    if (window) expect(normalized((await pg.query<Record<string, unknown>>('SELECT * FROM day_ping_ids')).rows), 'the day\'s ping ids').toEqual(wantIds);
    // The temporary tables go with the session (Redshift's is the batch's); the seeds share this one.
    await pg.exec('DISCARD TEMP');
    for (const t of TABLES) {
      const got = normalized((await pg.query<Record<string, unknown>>(`SELECT * FROM ${schema}.${t} WHERE day = '${day}'`)).rows);
      expect(got, t).toEqual(want[t]);
    }
    expect((await pg.query(`SELECT * FROM ${schema}.daily_hourly_stats WHERE day = '1999-01-01'`)).rows).toHaveLength(1);

    // The same text runs on DuckDB too, with the same rows: one SQL for the three engines.
    const duck = await DuckDBInstance.create(':memory:');
    const d = await duck.connect();
    try {
      for (const sql of warehouseStatements('duckdb')) await d.run(sql);
      await d.run(`CREATE TABLE staged AS SELECT * FROM read_parquet([${files.map(sqlString).join(', ')}], union_by_name = true)`);
      const plain = Object.fromEntries(TABLES.map((t) => [t, t])) as Record<TableName, string>;
      await d.run(`CREATE TEMP TABLE viewer_secret AS SELECT '${KEY.secret}' AS secret`);
      await d.run(`CREATE TABLE episode_catalog AS SELECT * FROM read_parquet(${sqlString(catalog.file)})`);
      if (window) {
        await d.run(`CREATE TABLE window_history AS SELECT * FROM read_parquet(${sqlString(window.history[0]!.parquet)})`);
        await d.run(`CREATE TABLE window_closed_after AS SELECT * FROM read_parquet(${sqlString(window.closedAfter[0]!.parquet)})`);
      }
      for (const sql of dayRollupStatements({ day, staged: 'staged', tables: plain, outcomes, viewers: { keyId: KEY.id, secretTable: 'viewer_secret' }, sha256Hex: SHA256_HEX.duckdb, catalogTable: 'episode_catalog', catalogOnly,
        window: window ? { days: window.days, history: 'window_history', closedAfter: 'window_closed_after' } : null })) await d.run(sql);
      for (const t of TABLES) expect(normalized(await queryRows(d, `SELECT * FROM ${t}`)), `${t} on DuckDB`).toEqual(want[t]);
      if (window) expect(normalized(await queryRows(d, 'SELECT * FROM day_ping_ids')), 'the day\'s ping ids on DuckDB').toEqual(wantIds);
    } finally {
      d.closeSync();
      duck.closeSync();
    }
  });

  it('runs no function Redshift lacks', () => {
    const text = dayRollupStatements({ day: '2026-11-01', staged: 'staged', tables: Object.fromEntries(TABLES.map((t) => [t, `pingroll.${t}`])) as Record<TableName, string>, outcomes: { s3: { ping: 1 } }, viewers: { keyId: KEY.id, secretTable: 'viewer_secret' }, catalogTable: 'episode_catalog' }).join('\n');
    // Viewer keys by Redshift's SHA2 (hex, like DuckDB's sha256 and the tests' Postgres expression).
    expect(text).toMatch(/SHA2\(k\.secret \|\| v\.viewer, 256\)/);
    // Postgres and DuckDB have these; Redshift does not (or not the same): the one text must avoid them.
    // And the ping-id window's table (window-table.ts), loading, pruning and checked.
    const plan = { read: [{ day: '2026-10-31', key: 'k.parquet', rows: 2 }], replace: ['2026-10-31'], load: [{ day: '2026-10-31', key: 'k.parquet', size: 9 }], adjusted: [{ key: 'a.parquet', size: 9 }] };
    const win = windowStatements('pingroll', '2026-11-01', 30, plan, { role: "IAM_ROLE 'r'", loadManifest: "'s3://b/m'", adjustedManifest: "'s3://b/n'" });
    // (Its quoted text left out: the COPYs' S3 URLs hold a //.)
    const windowText = [stateSql('pingroll', '2026-10-02', '2026-11-30'), ...win.prepare, ...win.rollup, win.ids].join('\n').replace(/'[^']*'/g, "''");
    for (const absent of [/\bFILTER\s*\(/i, /\bbit_count\b/i, /\bmake_timestamp\b/i, /\/\//, /\bGETDATE\b/i, /\bDATEADD\b/i, /\bNVL\b/i, /::/, /\bVALUES\b/]) {
      expect(text).not.toMatch(absent);
      expect(windowText).not.toMatch(absent);
    }
    // Ids are grouped, partitioned and counted by their CHR(1)-suffixed forms only: Redshift ignores
    // trailing blanks when it compares VARCHARs, so 'a' and 'a ' would be one series, session or ping.
    // The same of the analysts' views and of the commands' SQL (their sources, read as text).
    const sources = ['export/warehouse/sql/views.sql', 'cli/commands/uniques.ts', 'cli/commands/html-report.ts']
      .map((f) => readFileSync(join(import.meta.dirname, '../../..', f), 'utf8'));
    for (const sql of [text, ...sources]) {
      expect(sql).not.toMatch(/\b(GROUP BY|PARTITION BY|DISTINCT|ORDER BY)\s+([\w.()]+(\s+(DESC|ASC))?\s*,\s*)*(series|episode|session|user_id|ping_id|natural_key|series_id|episode_id)\b(?!\)?\s*\|\|)/);
      expect(sql).not.toMatch(/COUNT\(DISTINCT (COALESCE\()?(series|episode|session|user_id|series_id|episode_id)\b/);
      expect(sql).not.toMatch(/\b(series_id|episode_id) = /);
    }
    // Every id key is CHR(1) as a VARCHAR (Redshift's CHR returns a CHAR, with CHAR's blank rules).
    // (Comment lines left out: they name CHR(1) in words.)
    const code = [text, ...sources].join('\n').split('\n').filter((l) => !/^\s*(\/\/|\/?\*|--)/.test(l)).join('\n');
    expect(code).toContain('CAST(CHR(1) AS VARCHAR(1))');
    expect(code).not.toMatch(/CHR\(1\)(?! AS VARCHAR\(1\)\))/);
  });

  it('quotes ids from the data so that they read the same on every engine: no backslash in the text, which Redshift reads as an escape', async () => {
    const duck = await DuckDBInstance.create(':memory:');
    const d = await duck.connect();
    try {
      for (const id of ['plain', 'a\\', '\\', "it's \\'quoted\\'", 'a\\\\b', 'é\\n']) {
        const expr = portableString(id);
        expect(expr, id).not.toContain('\\');
        expect((await pg.query<{ v: string }>(`SELECT ${expr} AS v`)).rows[0]!.v, id).toBe(id);
        expect((await queryRows<{ v: string }>(d, `SELECT ${expr} AS v`))[0]!.v, id).toBe(id);
      }
    } finally {
      d.closeSync();
      duck.closeSync();
    }
  });
});
