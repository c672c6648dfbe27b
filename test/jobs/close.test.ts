/**
 * Closing a month (contract §9) as cron and an operator would: a month backfilled and closed, late
 * objects for a closed day, the next night's run. The closed figures never move; the adjustments equal
 * every ping minus what was closed (an independent recomputation, test/support/oracle.ts); a reopen
 * issues the next version with what changed; the daily job closes a month itself when told to.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { monthStatement, reportCommand } from '../../cli/commands/report.js';
import { RedshiftDataApi, RedshiftWarehouse } from '../../export/warehouse/redshift/redshift-warehouse.js';
import type { Warehouse } from '../../export/warehouse/warehouse.js';
import type { Backends } from '../../infra/backends.js';
import { loadConfig } from '../../infra/config.js';
import { DuckDBInstance } from '../../lib/duckdb-engine.js';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { PG_NAME, startPostgres } from '../support/postgres.js';
import { redshiftOnPostgres } from '../support/redshift-on-postgres.js';
import { dataset, duckdbType } from '../../datasets/registry.js';
import { statusCommand } from '../../cli/commands/status.js';
import { memoryLog } from '../../lib/log.js';
import { daysFrom } from '../../lib/utc-day.js';
import { CloseRefusedError, CloseUsageError } from '../../state/closes.js';
import { generateSample, type LogObject, type TruthRecord } from '../../tools/sample/access-log-generator.js';
import { builtOnce, dirConfig, query, readDay, runCloseMonth, runDay, runDays, tempRoots, writeObjects } from '../support/job-fixture.js';
import { expectedAdjustments, expectedMonth } from '../support/oracle.js';
import { inFlight, runCli } from '../support/kill-run.js';

const root = tempRoots();
const OCT = daysFrom('2026-10-01', '2026-10-31');
const NOV_10 = new Date('2026-11-10T06:00:00Z');

/**
 * A month of small days, backfilled as of Nov 10 (every delivery day's final listing done): its truth
 * and its root, as each test finds it (backfilled once a file: a month of days takes half a minute).
 */
const octoberBackfilled = builtOnce(root, async (r) => {
  const samples = OCT.map((date, i) => generateSample({ date, sessions: 3, seed: 700 + i, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 60 }));
  const objects = samples.flatMap((s) => s.objects);
  await writeObjects(join(r, 'logs'), objects);
  const summary = await runDays(dirConfig(r), { from: OCT[0]!, to: OCT.at(-1)!, log: memoryLog(), now: NOV_10 });
  expect(summary.failed).toEqual([]);
  return { truth: samples.flatMap((s) => s.truth), objects };
});

const statementCols = 'month::VARCHAR AS month, series_id, episodes, pings, sessions, viewers, minutes_watched, days_watched';

/**
 * Redshift beside the run's own warehouse, played by PostgreSQL (test/support/redshift-on-postgres.ts),
 * bootstrapped: a wrap of the runs' backends under which every load also goes to Redshift, as the
 * jobs' user (DELETE, then COPY of the files the run publishes: closes, statements and adjustments
 * among them), and Postgres to read it back.
 */
async function alsoIntoRedshift(r: string): Promise<{ wrap: (b: Backends) => Backends; pg: Awaited<ReturnType<typeof startPostgres>> }> {
  const rs = mockClient(RedshiftDataClient);
  const pg = await startPostgres();
  const duck = await DuckDBInstance.create(':memory:');
  const c = await duck.connect();
  onTestFinished(async () => {
    rs.restore();
    c.closeSync();
    duck.closeSync();
    await pg.close();
  });
  const store = new DirectoryObjectStore(join(r, 'out'));
  const cfg = loadConfig({ PINGROLL_WAREHOUSE: 'redshift', PINGROLL_OUTPUT: 's3://rollups/pingroll/', PINGROLL_REDSHIFT_WORKGROUP: 'analytics', PINGROLL_REDSHIFT_DATABASE: 'dev', PINGROLL_REDSHIFT_IAM_ROLE: 'arn:aws:iam::123456789012:role/pingroll-copy' }).redshift!;
  const standIn = redshiftOnPostgres(rs, pg, store, c, r);
  await standIn.bootstrap(cfg);
  const output = { kind: 's3' as const, bucket: 'rollups', prefix: 'pingroll/', url: 's3://rollups/pingroll/' };
  const wrap = (b: Backends): Backends => {
    const own = b.warehouse!;
    const redshift = new RedshiftWarehouse(new RedshiftDataApi(new RedshiftDataClient({}), cfg, { sleep: async () => {}, firstPollMs: 1 }), cfg, output, (key, body) => store.put(key, body));
    const both: Warehouse = {
      description: own.description,
      checkWritable: async () => { await own.checkWritable(); await redshift.checkWritable(); },
      init: async () => { await own.init(); await redshift.init(); },
      loadDay: async (day, files) => { await own.loadDay(day, files); await redshift.loadDay(day, files); },
      close: () => own.close(),
    };
    return { ...b, warehouse: both };
  };
  return { wrap, pg };
}

describe('closing a month', () => {
  let r: string;
  let truth: TruthRecord[];
  let objects: LogObject[];
  beforeAll(async () => {
    ({ r, truth, objects } = await octoberBackfilled());
  }, 120_000);

  it(`freezes the month as statement version 1; late pings become adjustments on the next month, exact; the closed figures never move; the statement reads the same on ${PG_NAME}; a reopen issues version 2 with what changed`, async () => {
    const config = dirConfig(r);
    const log = memoryLog();
    // From the close on, every load goes to Redshift too (played by PostgreSQL).
    const { wrap, pg } = await alsoIntoRedshift(r);
    // Not before the month is over, nor twice.
    await expect(runCloseMonth(config, { month: '2026-11', log, now: NOV_10 })).rejects.toThrow(CloseUsageError);
    const closed = await runCloseMonth(config, { month: '2026-10', log, now: NOV_10 }, wrap);
    expect(closed).toMatchObject({ month: '2026-10', tz: 'UTC', version: 1 });
    await expect(runCloseMonth(config, { month: '2026-10', log, now: NOV_10 })).rejects.toThrow(/2026-10 is closed: version 1, issued .*--reopen --reason/);

    const want = expectedMonth(truth, '2026-10');
    const statements = join(r, 'out', 'monthly_statements', 'dt=2026-10-01', 'part-00000.parquet');
    const v1 = await query(`SELECT ${statementCols}, tz, version FROM read_parquet('${statements}') ORDER BY series_id`);
    expect(v1).toEqual(want.map((m) => ({ ...m, tz: 'UTC', version: 1 })));
    expect(await query(`SELECT ${statementCols} FROM monthly_statements ORDER BY series_id`, join(r, 'wh.duckdb'))).toEqual(want);
    const shares = await query<{ s: number }>(`SELECT sum(share_of_month) AS s FROM monthly_statements`, join(r, 'wh.duckdb'));
    expect(shares[0]!.s).toBeCloseTo(1, 9);
    const status = await statusCommand(config, { from: '2026-10-01', to: '2026-10-31' }, NOV_10);
    expect(status.verdict).toBe('complete');
    expect(status.text).toMatch(/2026-10-15\s+closed\s/);
    const report = await reportCommand(config, { month: '2026-10' }, NOV_10);
    expect(report).toMatch(/^Statement of 2026-10 \(UTC\), version 1, closed 2026-11-10T06:00:00Z/);

    // Late objects for the 15th: new pings, and copies of objects the close counted (their pings duplicates).
    const day15 = await readDay(join(r, 'out'), '2026-10-15');
    const late = generateSample({ date: '2026-10-15', sessions: 4, seed: 799, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 40, prefix: 'late/' });
    const copies = objects.filter((o) => o.key.includes('2026-10-15')).slice(0, 2).map((o) => ({ ...o, key: `copies/${o.key.split('/').pop()}` }));
    expect(copies.length).toBe(2);
    await writeObjects(join(r, 'logs'), [...late.objects, ...copies]);
    const copiedTruth = truth.filter((t) => t.day === '2026-10-15').filter((t) => copies.some((c) => c.text.includes(t.naturalKey?.slice(2) ?? '\u0000')));
    expect(copiedTruth.some((t) => t.outcome === 'ping')).toBe(true);

    // The next night's cron: the day before, as ever.
    const NOV_12 = new Date('2026-11-12T06:00:00Z');
    await runDay(config, { day: '2026-11-11', log, now: NOV_12 }, wrap);
    expect(await readDay(join(r, 'out'), '2026-10-15')).toEqual(day15);
    expect(await query(`SELECT ${statementCols} FROM read_parquet('${statements}') ORDER BY series_id`)).toEqual(want);
    const adjusted = await query(`SELECT day::VARCHAR AS day, series_id, episode_id, pings, sessions, viewers, minutes_watched, after_close_records, duplicates
      FROM read_parquet('${join(r, 'out', 'statement_adjustments', 'dt=2026-11-01', 'part-00000.parquet')}') ORDER BY series_id, episode_id`);
    const wantAdjusted = expectedAdjustments(truth, [...late.truth, ...copiedTruth], '2026-10-15');
    expect(adjusted).toEqual(wantAdjusted);
    expect(wantAdjusted.some((a) => a.duplicates > 0) && wantAdjusted.some((a) => a.pings > 0)).toBe(true);
    // The adjustments are every ping minus what was closed.
    const all = expectedMonth([...truth, ...late.truth, ...copiedTruth], '2026-10');
    const pings = (rows: Array<{ pings: number }>): number => rows.reduce((n, x) => n + x.pings, 0);
    expect(pings(want) + pings(wantAdjusted)).toBe(pings(all));
    // A rollup of the closed day is refused, with what to do.
    await expect(runDay(config, { day: '2026-10-15', log, now: NOV_12 })).rejects.toThrow(/2026-10-15 belongs to 2026-10, closed \(version 1.*adjustments on 2026-11.*--reopen/);
    // November's statement (open) reports them.
    const nov = JSON.parse(await reportCommand(config, { month: '2026-11', format: 'json' }, NOV_12));
    expect(nov.adjustments.map((a: { closed_month: string; pings: number }) => [a.closed_month, a.pings]).reduce((n: number, [, p]: [string, number]) => n + p, 0)).toBe(pings(wantAdjusted));
    expect(await reportCommand(config, { month: '2026-11' }, NOV_12)).toMatch(/Adjustments to earlier months/);
    const csv = await reportCommand(config, { month: '2026-11', format: 'csv' }, NOV_12);
    expect(csv.split('\r\n')[0]).toBe('section,name,value,series_id,minutes_watched,share_percent,pings,days_watched,closed_month,tz,day,version,closed_at,reason,figure,from,to');
    expect(csv).toMatch(/\r\nadjustment,,,s\d+,\d+,,\d+,,2026-10,UTC,2026-10-15,/);
    // And the month's HTML page, in a table of their own.
    const page = join(r, 'nov.html');
    await reportCommand(config, { month: '2026-11', html: page }, NOV_12);
    const html = (await import('node:fs')).readFileSync(page, 'utf8');
    expect(html).toMatch(/<section id="adjustments">.*<td>2026-10<\/td>/s);
    // November cannot close: its days are not complete, and it says which.
    await expect(runCloseMonth(config, { month: '2026-11', log, now: new Date('2026-12-10T00:00:00Z') })).rejects.toThrow(CloseRefusedError);
    await expect(runCloseMonth(config, { month: '2026-11', log, now: new Date('2026-12-10T00:00:00Z') })).rejects.toThrow(/2026-11 cannot be closed: not every day is complete: 2026-11-01 \(never run/);

    // The statement and its adjustments read the same from Redshift (played by PostgreSQL), as the runs
    // loaded it there: the close's monthly_statements and monthly_series_stats, the night's
    // statement_adjustments and daily rows, each DELETEd then COPYed from the file published.
    const onPg = { description: PG_NAME, query: async <T>(sql: string): Promise<T[]> => (await pg.query(sql)).rows as T[] };
    const onDuck = { description: PG_NAME, query: <T>(sql: string): Promise<T[]> => query<T>(sql, join(r, 'wh.duckdb')) };
    const sameOnBoth = async (): Promise<void> => {
      for (const month of ['2026-10', '2026-11']) {
        const [a, b] = await Promise.all([monthStatement(onPg, 'pingroll.', month, 'UTC'), monthStatement(onDuck, '', month, 'UTC')]);
        expect(a, `${month} on ${PG_NAME}`).toEqual(b);
      }
    };
    await sameOnBoth();
    expect((await monthStatement(onPg, 'pingroll.', '2026-10', 'UTC')).closed).toEqual({ version: 1, closedAt: '2026-11-10T06:00:00Z' });
    expect((await monthStatement(onPg, 'pingroll.', '2026-10', 'UTC')).rows).toEqual(expect.arrayContaining(want.map((m) => expect.objectContaining({ series_id: m.series_id, pings: m.pings, minutes_watched: m.minutes_watched }))));
    expect((await monthStatement(onPg, 'pingroll.', '2026-11', 'UTC')).adjustments.length).toBeGreaterThan(0);
    expect((await pg.query<{ n: number }>('SELECT sum(pings)::int AS n FROM pingroll.statement_adjustments')).rows).toEqual([{ n: pings(wantAdjusted) }]);

    // A reopen: the day again, and version 2 from every ping, with what changed; the late pings are no adjustment any more.
    const manifestOf = (day: string): string => (readFileSync(join(r, 'out', '_runs', `dt=${day}`, 'manifest.json'), 'utf8'));
    const [day1Before, day15Before] = [manifestOf('2026-10-01'), manifestOf('2026-10-15')];
    const reopened = await runCloseMonth(config, { month: '2026-10', reopen: 'late objects of the 15th re-delivered', log, now: NOV_12 }, wrap);
    expect(reopened.version).toBe(2);
    // Only the day something arrived for is rolled up again (the one rule, jobs/stages/day.ts); the 1st stays as published.
    expect(manifestOf('2026-10-01')).toBe(day1Before);
    expect(manifestOf('2026-10-15')).not.toBe(day15Before);
    // In Redshift too: both versions of the statement, and no adjustment left.
    await sameOnBoth();
    expect((await pg.query('SELECT version, count(*)::int AS n FROM pingroll.monthly_statements GROUP BY version ORDER BY version')).rows).toEqual([{ version: 1, n: want.length }, { version: 2, n: all.length }]);
    expect((await pg.query('SELECT count(*)::int AS n FROM pingroll.statement_adjustments')).rows).toEqual([{ n: 0 }]);
    expect(reopened.changed).toBeGreaterThan(0);
    expect(await query(`SELECT ${statementCols} FROM read_parquet('${statements}') WHERE version = 2 ORDER BY series_id`)).toEqual(all);
    expect(await query(`SELECT ${statementCols} FROM read_parquet('${statements}') WHERE version = 1 ORDER BY series_id`)).toEqual(want);
    expect(await query(`SELECT count(*)::INT AS n FROM read_parquet('${join(r, 'out', 'statement_adjustments', 'dt=2026-11-01', 'part-00000.parquet')}')`)).toEqual([{ n: 0 }]);
    const record = JSON.parse((await import('node:fs')).readFileSync(join(r, 'out', '_state', 'closes', '2026-10.UTC.json'), 'utf8'));
    expect(record.versions.map((v: { version: number; reason: string | null }) => [v.version, v.reason])).toEqual([[1, null], [2, 'late objects of the 15th re-delivered']]);
    expect(record.versions[1].changed.length).toBe(reopened.changed);
    expect(await reportCommand(config, { month: '2026-10' }, NOV_12)).toMatch(/version 2, closed 2026-11-12T06:00:00Z/);
    // Both datasets are what the registry declares, column for column.
    for (const [name, dt] of [['monthly_statements', '2026-10-01'], ['statement_adjustments', '2026-11-01']] as const) {
      const described = await query<{ column_name: string; column_type: string }>(`DESCRIBE SELECT * FROM read_parquet('${join(r, 'out', name, `dt=${dt}`, 'part-00000.parquet')}', hive_partitioning = false)`);
      expect(described.map((c) => [c.column_name, c.column_type]), name).toEqual(dataset(name).columns.map((c) => [c.name, duckdbType(c.type)]));
    }
  }, 240_000);
});

describe('closing unattended', () => {
  it('closes a month from the daily job once PINGROLL_CLOSE_AFTER_DAYS have passed after it, not before', async () => {
    const { r, truth } = await octoberBackfilled();
    const config = dirConfig(r, { PINGROLL_CLOSE_AFTER_DAYS: '5' });
    const log = memoryLog();
    await runDay(config, { day: '2026-11-04', log, now: new Date('2026-11-05T06:00:00Z') });
    expect(await (await import('node:fs/promises')).readdir(join(r, 'out', '_state')).then((n) => n.includes('closes'))).toBe(false);
    await runDay(config, { day: '2026-11-05', log, now: new Date('2026-11-06T06:00:00Z') });
    const statement = await query(`SELECT ${statementCols}, version FROM monthly_statements ORDER BY series_id`, join(r, 'wh.duckdb'));
    expect(statement).toEqual(expectedMonth(truth, '2026-10').map((m) => ({ ...m, version: 1 })));
    expect(log.events.some((e) => e.event === 'month.closed')).toBe(true);
  }, 120_000);

  it.each([
    ['before its journal is written', 'store:put:_state/publish/close=2026-10.UTC.json:before'],
    ['between its moves, its statement in place and not its record', 'store:move:_state/closes/2026-10.UTC.json:before'],
  ])('killed %s, is completed or undone whole by the next run, and a close after it is exact', async (_when, point) => {
    const { r, truth } = await octoberBackfilled();
    expect(await runCli(r, '2026-11-09', point, [], ['close', '--month', '2026-10'])).toBe('killed');
    // The next run that holds the lock repairs what the kill left.
    expect(await runCli(r, '2026-11-09', null)).toBe(0);
    const again = await runCli(r, '2026-11-09', null, [], ['close', '--month', '2026-10']);
    // Completed by the repair (closed already: exit 2), or undone (closed now: exit 0).
    expect(again).toBe(point.includes(':move:') ? 2 : 0);
    expect(await query(`SELECT ${statementCols}, version FROM monthly_statements ORDER BY series_id`, join(r, 'wh.duckdb'))).toEqual(expectedMonth(truth, '2026-10').map((m) => ({ ...m, version: 1 })));
    expect(JSON.parse((await import('node:fs')).readFileSync(join(r, 'out', '_state', 'closes', '2026-10.UTC.json'), 'utf8')).version).toBe(1);
    expect(await inFlight(r)).toEqual([]);
  }, 120_000);
});

describe('a reopen killed midway', () => {
  it('is completed by the next run, with its reason: the days and the month from every ping, as version 2', async () => {
    const { r, truth } = await octoberBackfilled();
    expect(await runCli(r, '2026-11-09', null, [], ['close', '--month', '2026-10'])).toBe(0);
    const late = generateSample({ date: '2026-10-15', sessions: 4, seed: 833, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 40, prefix: 'late/' });
    await writeObjects(join(r, 'logs'), late.objects);
    expect(await runCli(r, '2026-11-09', null)).toBe(0);
    // Killed after the first day of the month is published again, before the new version is.
    expect(await runCli(r, '2026-11-09', 'event:day.done', [], ['close', '--month', '2026-10', '--reopen', '--reason', 'late objects of the 15th'])).toBe('killed');
    expect(JSON.parse((await import('node:fs')).readFileSync(join(r, 'out', '_state', 'closes', '2026-10.UTC.json'), 'utf8')).version).toBe(1);
    // The next night's run completes it.
    expect(await runCli(r, '2026-11-10', null)).toBe(0);
    const record = JSON.parse((await import('node:fs')).readFileSync(join(r, 'out', '_state', 'closes', '2026-10.UTC.json'), 'utf8'));
    expect(record.versions.map((v: { version: number; reason: string | null }) => [v.version, v.reason])).toEqual([[1, null], [2, 'late objects of the 15th']]);
    expect(await query(`SELECT ${statementCols} FROM monthly_statements WHERE version = 2 ORDER BY series_id`, join(r, 'wh.duckdb'))).toEqual(expectedMonth([...truth, ...late.truth], '2026-10'));
    // Nothing of the reopen is left under way.
    const { existsSync, readdirSync } = await import('node:fs');
    const reopening = join(r, 'out', '_state', 'reopening');
    expect(existsSync(reopening) ? readdirSync(reopening) : []).toEqual([]);
  }, 180_000);
});

describe('retention', () => {
  it('deletes what days of a closed month were counted from once they are PINGROLL_RETENTION_DAYS old, keeps what was published, and counts a ping that comes after that as too_late: in its rejects, nowhere else', async () => {
    const { r, truth } = await octoberBackfilled();
    const config = dirConfig(r, { PINGROLL_RETENTION_DAYS: '20' });
    const log = memoryLog();
    const { readdir } = await import('node:fs/promises');
    const under = async (dir: string): Promise<string[]> => readdir(join(r, 'out', dir), { recursive: true }).catch(() => [] as string[]);
    // A run that finds nothing new for the 15th records that it looked.
    await runDay(config, { day: '2026-10-15', log, now: new Date('2026-11-09T06:00:00Z') });
    expect(await under('_state/checks')).toContain('dt=2026-10-15.json');
    await runCloseMonth(config, { month: '2026-10', log, now: NOV_10 });
    const published = await readDay(join(r, 'out'), '2026-10-15');
    expect((await under('_staging')).some((f) => String(f).includes('dt=2026-10-15'))).toBe(true);
    await runDay(config, { day: '2026-11-20', log, now: new Date('2026-11-21T06:00:00Z') });
    // October is more than 20 days old: its staging, day index, and (but for the first days, whose delivery days can hold September's records) parsed keys and seals are gone.
    expect((await under('_staging')).filter((f) => /dt=2026-10-/.test(String(f)))).toEqual([]);
    expect((await under('_state/days')).filter((f) => /dt=2026-10-/.test(String(f)))).toEqual([]);
    expect((await under('_state/checks')).filter((f) => /dt=2026-10-/.test(String(f)))).toEqual([]);
    expect((await under('_state/parsed')).filter((f) => String(f).startsWith('2026-10-15'))).toEqual([]);
    expect((await under('_state/parsed')).some((f) => String(f).startsWith('2026-10-01'))).toBe(true);
    // What was published stays readable, and the statement.
    expect(await readDay(join(r, 'out'), '2026-10-15')).toEqual(published);
    expect(await query(`SELECT ${statementCols} FROM monthly_statements ORDER BY series_id`, join(r, 'wh.duckdb'))).toEqual(expectedMonth(truth, '2026-10'));
    expect((await statusCommand(config, { from: '2026-10-01', to: '2026-10-31' }, new Date('2026-11-21T06:00:00Z'))).verdict).toBe('complete');

    // Records of the 15th, delivered on Nov 21 (a client's buffer sent at last): too late.
    const late = generateSample({ date: '2026-10-15', sessions: 4, seed: 811, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 40, automated: 0 });
    const redelivered = late.objects.map((o) => ({ ...o, key: o.key.replace(/2026-10-1[56]-(\d\d-\d\d-\d\d)-/, '2026-11-21-$1-') }));
    expect(redelivered.every((o) => o.key.includes('2026-11-21-'))).toBe(true);
    await writeObjects(join(r, 'logs'), redelivered);
    const s = await runDay(config, { day: '2026-11-21', log, now: new Date('2026-11-22T06:00:00Z') });
    expect(s.parsedObjects).toBe(redelivered.length);
    const files = (await under('_runs/too_late')).map(String).filter((f) => f.endsWith('.jsonl.gz'));
    expect(files.length).toBe(1);
    const lines = await query<{ outcome: string; n: number }>(`SELECT outcome, count(*)::INT AS n FROM read_json('${join(r, 'out', '_runs', 'too_late', files[0]!)}', format = 'newline_delimited') GROUP BY outcome ORDER BY outcome`);
    const latePings = late.truth.filter((t) => t.outcome === 'ping' && t.day === '2026-10-15').length;
    expect(lines.find((l) => l.outcome === 'too_late')?.n).toBe(latePings);
    expect(latePings).toBeGreaterThan(0);
    // Nowhere else: no adjustment, no change to the day or its statement.
    expect(await query(`SELECT count(*)::INT AS n FROM statement_adjustments WHERE closed_month = DATE '2026-10-01'`, join(r, 'wh.duckdb')).catch(() => [{ n: 0 }])).toEqual([{ n: 0 }]);
    expect(await readDay(join(r, 'out'), '2026-10-15')).toEqual(published);
    expect(log.events.some((e) => e.event === 'records.too_late' && e.fields.pings === latePings)).toBe(true);
    // A re-run of an expired day, or a reopen of its month, is refused with the reason.
    await expect(runDay(config, { day: '2026-10-15', log, now: new Date('2026-11-22T06:00:00Z') })).rejects.toThrow(/2026-10-15 cannot be rolled up again: .*expired/);
    await expect(runCloseMonth(config, { month: '2026-10', reopen: 'again', log, now: new Date('2026-11-22T06:00:00Z') })).rejects.toThrow(/cannot be reopened: .*expired/);
  }, 180_000);
});
