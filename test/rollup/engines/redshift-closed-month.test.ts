/**
 * A closed month's figures made inside Redshift (played by PostgreSQL behind the mocked Data API, COPY
 * and UNLOAD done by the stand-in against moto), held to the DuckDB engine's, row for row: the
 * statement with what a new version changed, a closed day's adjustments, a reported month's
 * statement_adjustments.
 */
import { RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedshiftDataApi, RedshiftWarehouse } from '../../../export/warehouse/redshift/redshift-warehouse.js';
import { loadConfig } from '../../../infra/config.js';
import { makeS3Client } from '../../../infra/aws/s3-client.js';
import { DuckDBInstance, sqlString } from '../../../lib/duckdb-engine.js';
import { memoryLog } from '../../../lib/log.js';
import { DuckDbRollup } from '../../../rollup/engines/duckdb/duckdb-rollup.js';
import { duckdbLocalFiles } from '../../../rollup/engines/duckdb/local-files.js';
import { RedshiftRollup } from '../../../rollup/engines/redshift/redshift-rollup.js';
import type { IssuedStatement, StagedFile, StatementAsk } from '../../../rollup/engine.js';
import type { RollupSettings } from '../../../rollup/rules.js';
import { MONTH_TABLE, writeParquet, type OutputFile } from '../../../rollup/output-file.js';
import { S3ObjectStore } from '../../../state/object-store/s3-object-store.js';
import { dirConfig, query, runDay, setEnv, tempDir, writeObjects } from '../../support/job-fixture.js';
import { DirectoryObjectStore } from '../../../state/object-store/directory-object-store.js';
import { Ledger } from '../../../state/ledger.js';
import { generateSample, sampleEpisodeCatalog } from '../../../tools/sample/access-log-generator.js';
import { join } from 'node:path';
import { copyFile, stat, writeFile } from 'node:fs/promises';
import { loadEpisodeCatalog } from '../../../rollup/episode-catalog.js';
import { startMoto, type Moto } from '../../support/moto.js';
import { insertRows, PG_NAME, startPostgres, type Postgres } from '../../support/postgres.js';
import { redshiftOnPostgres } from '../../support/redshift-on-postgres.js';
import type { DuckDBConnection, DuckDBInstance as Instance } from '@duckdb/node-api';
import { LISTER_RULES } from '../../../ingest/listing/lister.js';

const ENV = {
  PINGROLL_WAREHOUSE: 'redshift', PINGROLL_OUTPUT: 's3://rollups/pingroll/', PINGROLL_REDSHIFT_WORKGROUP: 'analytics',
  PINGROLL_REDSHIFT_DATABASE: 'dev', PINGROLL_REDSHIFT_IAM_ROLE: 'arn:aws:iam::123456789012:role/pingroll-copy',
};
const output = { kind: 's3' as const, bucket: 'rollups', prefix: 'pingroll/', url: 's3://rollups/pingroll/' };
const FIGURES = ['episodes', 'pings', 'sessions', 'viewers', 'minutes_watched', 'days_watched'] as const;
type Figures = Record<(typeof FIGURES)[number], number>;
const f = (minutes: number, pings = minutes * 8): Figures => ({ episodes: 2, pings, sessions: 3, viewers: 2, minutes_watched: minutes, days_watched: 4 });

/** Version 1 as issued (October, UTC): 'a' and 'a ' are two series (Redshift would make them one without idKey). */
const V1: Record<string, Figures> = { a: f(100), 'a ': f(50), gone: f(30), same: f(20) };
/** The month rolled up again for version 2: 'a' changed, 'gone' gone, 'new' new. */
const V2: Record<string, Figures> = { a: f(120, 900), 'a ': f(50), new: f(7), same: f(20) };

describe(`a closed month's figures inside Redshift (played by ${PG_NAME})`, () => {
  const rs = mockClient(RedshiftDataClient);
  let moto: Moto;
  let pg: Postgres;
  let restore: () => void;
  let duck: Instance;
  let c: DuckDBConnection;
  let local: DuckDBConnection;
  const root = tempDir();

  beforeAll(async () => {
    [moto, pg] = await Promise.all([startMoto(['rollups']), startPostgres()]);
    restore = setEnv(moto.env);
    duck = await DuckDBInstance.create(':memory:');
    [c, local] = await Promise.all([duck.connect(), duck.connect()]);
  }, 120_000);
  afterAll(async () => {
    c?.closeSync();
    local?.closeSync();
    duck?.closeSync();
    restore?.();
    rs.restore();
    await Promise.all([pg?.close(), moto?.stop()]);
  });

  /**
   * Both engines over the stand-in (bootstrapped once), the Redshift one as the jobs' user; what the
   * stand-in was sent (until engines is called again: the Data API's mock then answers the new one);
   * and the run they work for.
   */
  let bootstrapped = false;
  const engines = async (id: string, settings: RollupSettings = {}) => {
    const store = new S3ObjectStore(makeS3Client({ s3EndpointOverride: true }), 'rollups', 'pingroll/');
    const cfg = loadConfig(ENV).redshift!;
    const { bootstrap, sent } = redshiftOnPostgres(rs, pg, store, c, root);
    if (!bootstrapped) await bootstrap(cfg);
    bootstrapped = true;
    const api = new RedshiftDataApi(new RedshiftDataClient({}), cfg, { sleep: async () => {}, firstPollMs: 1 });
    const warehouse = new RedshiftWarehouse(api, cfg, output, (key, body) => store.put(key, body));
    await warehouse.init();
    const redshift = new RedshiftRollup({ batches: api, target: cfg, output, store, settings, ensureTables: () => warehouse.init() }, duckdbLocalFiles(local));
    return { store, sent, redshift, duckdb: new DuckDbRollup(local, settings), run: { id, fence: async () => {}, log: memoryLog() } };
  };

  it('is the DuckDB engine\'s statement row for row (every other version and zone kept, shares, ids that differ by a trailing blank), and says the same of what version 2 changed', async () => {
    const { store, sent, redshift, duckdb, run } = await engines('run-1');

    // What was issued before: version 1 of October in UTC and in New York, published (a file); the
    // warehouse holds New York's only (it became Redshift since). October's monthly_series_stats in
    // UTC as rolled up for version 2, in the warehouse and as a file.
    const issued = (tz: string, rows: Record<string, Figures>) => Object.entries(rows).map(([series_id, x]) => ({ month: '2026-10-01', tz, version: 1, closed_at: '2026-11-10 00:00:00', series_id, ...x,
      share_of_month: x.minutes_watched / Object.values(rows).reduce((n, r) => n + r.minutes_watched, 0) }));
    const before = [...issued('UTC', V1), ...issued('America/New_York', { a: f(99) })];
    const monthly = Object.entries(V2).map(([series_id, x]) => ({ month: '2026-10-01', series_id, ...x, tz: 'UTC' }));
    await insertRows(pg, 'pingroll.monthly_statements', before.filter((r) => r.tz !== 'UTC'));
    await insertRows(pg, 'pingroll.monthly_series_stats', monthly);
    const beforeFile = await writeParquet(local, valuesOf(before, { month: 'DATE', closed_at: 'TIMESTAMP', share_of_month: 'DOUBLE' }), 'monthly_statements', '2026-10-01', tempDir(), 'month');
    await store.put(beforeFile.key, { file: beforeFile.local });
    const monthlyFile: OutputFile = await writeParquet(local, valuesOf(monthly, { month: 'DATE' }), MONTH_TABLE, '2026-10-01', tempDir(), 'month', 'UTC');

    const ask = (dir: string, fetched: boolean): StatementAsk => ({ month: '2026-10', tz: 'UTC', version: 2, closedAt: '2026-12-02T06:00:00.000Z', monthly: monthlyFile,
      before: { key: beforeFile.key, size: beforeFile.bytes, local: fetched ? beforeFile.local : null }, dir });
    sent.splice(0);
    const ours = await redshift.statement(ask(tempDir(), false), run);
    const theirs = await duckdb.statement(ask(tempDir(), true));
    // One batch: the published versions loaded in the warehouse's table, the statement UNLOADed
    // (what changed is a query of the warehouse): no file of the month was read here.
    expect(sent.map((b) => b.map((q) => q.split(' ')[0]))).toEqual([['DELETE', 'COPY', 'UNLOAD']]);
    const rows = (s: IssuedStatement) => query(`SELECT month::VARCHAR AS month, tz, version, closed_at::VARCHAR AS closed_at, series_id, ${FIGURES.join(', ')}, round(share_of_month, 12) AS share FROM read_parquet('${s.file.local}')`);
    expect(await rows(ours)).toEqual(await rows(theirs));
    expect(ours.file.rows).toBe(theirs.file.rows);
    expect(ours.file.rows).toBe(4 + 1 + 4);
    expect(ours.file.key).toBe(theirs.file.key);
    // 'a' and 'a ' are two series, each with its own share; this version's shares add up to 1.
    const mine = (await rows(ours)).filter((r) => Number(r.version) === 2);
    expect(mine.map((r) => r.series_id)).toEqual(['a', 'a ', 'new', 'same']);
    expect(mine.reduce((n, r) => n + Number(r.share), 0)).toBeCloseTo(1, 9);
    expect(ours.changed).toEqual(theirs.changed);
    expect(ours.changed).toEqual([
      { series_id: 'a', field: 'pings', from: 800, to: 900 }, { series_id: 'a', field: 'minutes_watched', from: 100, to: 120 },
      ...FIGURES.map((field) => ({ series_id: 'gone', field, from: V1.gone![field], to: null })),
      ...FIGURES.map((field) => ({ series_id: 'new', field, from: null, to: V2.new![field] })),
    ]);
    // What it UNLOADed under the run's folder is gone.
    expect(await store.list('_warehouse-rollup/')).toEqual([]);
  }, 120_000);

  it('makes a closed day\'s adjustments as the DuckDB engine does, from what the closed figures counted and what came since (duplicates of counted pings, new pings in counted minutes), in UTC and in a zone whose month ends inside the day (Honolulu\'s October: until 10:00 UTC)', async () => {
    // The day staged by two runs: every other log object (counted when the month closed), then the
    // rest and copies of some first-half objects (S3 logs twice).
    const r = tempDir();
    const sample = generateSample({ date: '2026-11-01', sessions: 10, seed: 91, recordsPerObject: 30, lateShare: 0, automated: 5 });
    const [first, second] = [sample.objects.filter((_, i) => i % 2 === 0), sample.objects.filter((_, i) => i % 2 === 1)];
    const copies = first.filter((_, i) => i % 3 === 0).map((o) => ({ ...o, key: `${o.key}-again` }));
    const out = new DirectoryObjectStore(join(r, 'out'));
    const inputsNow = async () => (await Ledger.load(out, LISTER_RULES)).inputsFor('2026-11-01');
    await writeObjects(join(r, 'logs'), first);
    await runDay(dirConfig(r, { PINGROLL_WAREHOUSE: 'none' }), { day: '2026-11-01', log: memoryLog() });
    const closedWith = new Set((await inputsNow()).map((i) => i.id));
    await writeObjects(join(r, 'logs'), [...second, ...copies]);
    await runDay(dirConfig(r, { PINGROLL_WAREHOUSE: 'none' }), { day: '2026-11-01', log: memoryLog() });
    const inputs = await inputsNow();
    expect(inputs.length).toBeGreaterThan(closedWith.size);
    // Every staged file, on S3 too (where Redshift COPYs it from).
    const { store, sent, redshift, duckdb, run } = await engines('run-3');
    const filesOf = async (picked: typeof inputs): Promise<StagedFile[]> => Promise.all(picked.flatMap((i) => (i.staged.pings ?? []).map(async (key) => {
      const local = join(r, 'out', key);
      await store.put(key, { file: local });
      return { key, size: (await stat(local)).size, local };
    })));
    const counted = await filesOf(inputs.filter((i) => closedWith.has(i.id)));
    const pending = await filesOf(inputs.filter((i) => !closedWith.has(i.id)));
    const rows = (file: string) => query(`SELECT * EXCLUDE (reported_month, closed_month, day), reported_month::VARCHAR AS reported_month, closed_month::VARCHAR AS closed_month, day::VARCHAR AS day FROM read_parquet('${file}')`);
    const late: Record<string, number> = {};
    let utcRows: Array<Record<string, unknown>> = [];
    // The ping-id window (contract §4, §9): a published day two days before counts a third of the
    // pending ids (a repeat, never an adjustment), and one 40 days before another third (too far: still new).
    const aroundFile = join(r, 'around.parquet');
    const pendingFiles = pending.map((f) => `'${f.local}'`).join(', ');
    await local.run(`COPY (SELECT ping_id, event_ms - (CASE WHEN hash(ping_id) % 3 = 0 THEN 2 ELSE 40 END) * 86400000::BIGINT AS event_ms, false AS "repeat", true AS counted
      FROM read_parquet([${pendingFiles}], union_by_name = true) WHERE ping_id IS NOT NULL AND hash(ping_id) % 3 <> 2) TO '${aroundFile}' (FORMAT parquet)`);
    const aroundKey = '_state/ping-ids/dt=2026-10-30/test.parquet';
    await store.put(aroundKey, { file: aroundFile });
    const around = { key: aroundKey, size: (await stat(aroundFile)).size, local: aroundFile };
    const window = { days: 30, around: [around], own: null };
    const noWindow = { days: 30, around: [], own: null };
    for (const [tz, closedMonth, reportedMonth] of [['UTC', '2026-11', '2026-12'], ['Pacific/Honolulu', '2026-10', '2026-11']] as const) {
      const a = { reportedMonth, closedMonth, tz, day: '2026-11-01' };
      sent.splice(0);
      const ours = await redshift.adjust({ ...a, counted: counted.map((f) => ({ ...f, local: null })), pending: pending.map((f) => ({ ...f, local: null })), window: { ...window, around: [{ ...around, local: null }] } }, tempDir(), null, run);
      const theirs = await duckdb.adjust({ ...a, counted, pending, window }, tempDir(), null);
      const without = await rows((await duckdb.adjust({ ...a, counted, pending, window: noWindow }, tempDir(), null)).local);
      // One batch: the inputs COPYed, the day worked out, the piece and its ping ids UNLOADed.
      expect(sent).toHaveLength(1);
      expect(sent[0]!.at(-1)).toMatch(/^UNLOAD /);
      const [mine, reference] = [await rows(ours.local), await rows(theirs.local)];
      expect(mine, tz).toEqual(reference);
      expect(ours.rows).toBe(theirs.rows);
      expect(ours.key).toBe(theirs.key);
      // Not a vacuous comparison: late pings, duplicates among them, and minutes the closed figures lacked.
      const sum = (k: string) => reference.reduce((n, x) => n + Number(x[k]), 0);
      expect(sum('after_close_records'), tz).toBeGreaterThan(0);
      expect(sum('duplicates'), tz).toBeGreaterThan(0);
      expect(sum('pings'), tz).toBeGreaterThan(0);
      expect(sum('minutes_watched'), tz).toBeGreaterThan(0);
      // (UTC's whole day: some new pings fell in minutes the closed figures had.)
      if (tz === 'UTC') expect(sum('minutes_watched')).toBeLessThan(sum('pings'));
      // The repeats are no adjustment: fewer pings than without the window, as many records.
      const sumOf = (rs: Array<Record<string, unknown>>, k: string) => rs.reduce((n, x) => n + Number(x[k]), 0);
      expect(sum('pings'), tz).toBeLessThan(sumOf(without, 'pings'));
      expect(sum('after_close_records'), tz).toBe(sumOf(without, 'after_close_records'));
      // The ids its new pings count, what later days' windows read: the same, one for each of its pings with an id (some of the sample's have none).
      const ids = async (f: { file: string } | null) => query(`SELECT * FROM read_parquet('${f!.file}') ORDER BY ping_id`);
      expect(sent[0]!.at(-2)).toMatch(/^UNLOAD /);
      expect(await ids(ours.pingIds), tz).toEqual(await ids(theirs.pingIds));
      expect(ours.pingIds!.rows, tz).toBe(theirs.pingIds!.rows);
      expect(ours.pingIds!.rows, tz).toBeGreaterThan(0);
      expect(ours.pingIds!.rows, tz).toBeLessThanOrEqual(sum('pings'));
      expect((await ids(theirs.pingIds)).every((x) => x.counted === true && x.repeat === false), tz).toBe(true);
      late[tz] = sum('after_close_records');
      if (tz === 'UTC') utcRows = reference;
    }
    // Honolulu's October ends at 10:00 UTC on Nov 1: its piece holds the late records of those hours only.
    expect(late['Pacific/Honolulu']).toBeLessThan(late.UTC!);

    // Kept to an episode catalog that does not list one episode that had late pings (PINGROLL_CATALOG_ONLY=episodes): the same again, that episode nowhere.
    const [series, episode] = [String(utcRows[0]!.series_id), String(utcRows[0]!.episode_id)];
    const csv = join(r, 'catalog.csv');
    await writeFile(csv, sampleEpisodeCatalog().split('\n').filter((l) => !(l.startsWith(`${series},`) && new RegExp(`,${episode},\\d+$`).test(l))).join('\n'));
    const kept = await engines('run-4', { catalogOnly: 'episodes' });
    const catalog = await loadEpisodeCatalog(local, { url: csv, fetch: (dest) => copyFile(csv, dest) }, tempDir());
    const a = { reportedMonth: '2026-12', closedMonth: '2026-11', tz: 'UTC', day: '2026-11-01' };
    const ours = await kept.redshift.adjust({ ...a, counted: counted.map((f) => ({ ...f, local: null })), pending: pending.map((f) => ({ ...f, local: null })), window: noWindow }, tempDir(), catalog, run);
    const theirs = await kept.duckdb.adjust({ ...a, counted, pending, window: noWindow }, tempDir(), catalog);
    const [mine, reference] = [await rows(ours.local), await rows(theirs.local)];
    expect(mine).toEqual(reference);
    expect(reference.length).toBeGreaterThan(0);
    expect(reference.filter((x) => x.series_id === series && x.episode_id === episode)).toEqual([]);
    expect(late.UTC).toBeGreaterThan(reference.reduce((n, x) => n + Number(x.after_close_records), 0));
    expect(await store.list('_warehouse-rollup/')).toEqual([]);
  }, 180_000);

  it('makes a reported month\'s statement_adjustments from its pieces as the DuckDB engine does: the same rows in the same order, and an empty file of none', async () => {
    const { store, sent, redshift, duckdb, run } = await engines('run-2');
    // Two pieces (two closed days), their rows out of order, with ids that differ by a trailing blank.
    const row = (day: string, series: string, episode: string, pings: number) => ({ reported_month: '2026-11-01', closed_month: '2026-10-01', tz: 'UTC', day, series_id: series, episode_id: episode,
      pings, sessions: 1, viewers: 1, minutes_watched: pings, after_close_records: pings + 1, duplicates: 1 });
    const dates = { reported_month: 'DATE', closed_month: 'DATE', day: 'DATE' };
    const pieces = [[row('2026-10-31', 's', 'e ', 2), row('2026-10-31', 's', 'e', 3), row('2026-10-31', 'a ', 'e', 1)], [row('2026-10-02', 'z', 'e', 5), row('2026-10-02', 'a', 'e', 4)]];
    const files = [];
    for (const [i, rows] of pieces.entries()) {
      const f = await writeParquet(local, valuesOf(rows, dates), 'statement_adjustments', '2026-11-01', tempDir(), 'reported_month');
      const key = `_state/adjustments/2026-11/piece-${i}.parquet`;
      await store.put(key, { file: f.local });
      files.push({ key, size: f.bytes, local: f.local });
    }
    sent.splice(0);
    const ours = await redshift.adjustments('2026-11', files.map((f) => ({ ...f, local: null })), tempDir(), run);
    const theirs = await duckdb.adjustments('2026-11', files, tempDir());
    expect(sent).toHaveLength(1);
    expect(sent[0]!.map((q) => q.split(' ')[0])).toEqual(['CREATE', 'COPY', 'UNLOAD']);
    const rows = (file: string) => query(`SELECT * EXCLUDE (reported_month, closed_month, day), reported_month::VARCHAR AS reported_month, closed_month::VARCHAR AS closed_month, day::VARCHAR AS day FROM read_parquet('${file}')`);
    expect(await rows(ours.local)).toEqual(await rows(theirs.local));
    expect((await rows(ours.local)).map((r) => `${r.day} ${r.series_id}|${r.episode_id}`)).toEqual(['2026-10-02 a|e', '2026-10-02 z|e', '2026-10-31 a |e', '2026-10-31 s|e', '2026-10-31 s|e ']);
    expect({ ...ours, local: '', bytes: 0 }).toEqual({ ...theirs, local: '', bytes: 0 });
    // No piece: an empty file of the table's columns, and nothing asked of the warehouse.
    sent.splice(0);
    const none = await redshift.adjustments('2026-12', [], tempDir(), run);
    expect(sent).toEqual([]);
    expect(none.rows).toBe(0);
    expect(await query(`SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet('${none.local}'))`)).toEqual(await query(`SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet('${theirs.local}'))`));
    expect(await store.list('_warehouse-rollup/')).toEqual([]);
  }, 120_000);
});

/** A query of `rows` (numbers BIGINT, strings VARCHAR but as `types` says). */
function valuesOf(rows: Array<Record<string, unknown>>, types: Record<string, string>): string {
  return `SELECT * FROM (VALUES ${rows.map((r) => `(${Object.entries(r).map(([k, v]) => (v === null ? `NULL::${types[k] ?? 'VARCHAR'}` : typeof v === 'number' ? `${v}::${types[k] ?? 'BIGINT'}` : `${sqlString(String(v))}::${types[k] ?? 'VARCHAR'}`)).join(', ')})`).join(', ')}) t(${Object.keys(rows[0]!).join(', ')})`;
}
