/**
 * The licensors' statement as a finance team hands it over (`pingroll report --month`), through the
 * real jobs on generated months, against the generator's own account of every ping
 * (test/support/oracle.ts): a month in a time zone before it is closed (its UTC days, as its close
 * checks them; its figures so far and the adjustments reported on it while it is under way).
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { monthStatement, reportCommand } from '../../cli/commands/report.js';
import { warehouseStatements } from '../../export/warehouse/sql/ddl.js';
import { withBackends } from '../../infra/backends.js';
import { runMonthRollup } from '../../jobs/month.js';
import { memoryLog } from '../../lib/log.js';
import { daysFrom } from '../../lib/utc-day.js';
import { generateSample, type TruthRecord } from '../../tools/sample/access-log-generator.js';
import { dirConfig, query, runCloseMonth, runDay, runDays, tempRoots, writeObjects } from '../support/job-fixture.js';
import { expectedAdjustments, expectedMonthIn, localDayOf } from '../support/oracle.js';
import { insertRows, PG_NAME, startPostgres } from '../support/postgres.js';

const root = tempRoots();
const NY = 'America/New_York';
const NOV_10 = new Date('2026-11-10T06:00:00Z');

/** The run's DuckDB warehouse, read as the report reads it. */
const warehouseOf = (r: string) => ({ description: 'duckdb', query: <T>(sql: string): Promise<T[]> => query<T>(sql, join(r, 'wh.duckdb')) });

/** Adjustment rows per series: pings and minutes added up over episodes. */
function perSeries(rows: Array<{ series_id: string; pings: number; minutes_watched: number }>): Array<[string, number, number]> {
  const by = new Map<string, [string, number, number]>();
  for (const a of rows) {
    const s = by.get(a.series_id) ?? [a.series_id, 0, 0];
    s[1] += a.pings;
    s[2] += a.minutes_watched;
    by.set(a.series_id, s);
  }
  return [...by.values()].filter(([, p, m]) => p > 0 || m > 0).sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

describe('a month in New York, before it is closed', () => {
  let r: string;
  let truth: TruthRecord[];
  const log = memoryLog();
  beforeAll(async () => {
    r = root();
    // October's UTC days and the first two of November; New York's October ends at 04:00 UTC on
    // 1 November, which is busier, so that both months have pings on it.
    const samples = daysFrom('2026-10-01', '2026-11-02').map((date, i) =>
      generateSample({ date, sessions: date === '2026-11-01' ? 30 : 2, seed: 1200 + i, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 60 }));
    truth = samples.flatMap((s) => s.truth);
    await writeObjects(join(r, 'logs'), samples.flatMap((s) => s.objects));
    // Only October's UTC days are published: not 1 November, which holds New York's last hours of October.
    expect((await runDays(dirConfig(r), { from: '2026-10-01', to: '2026-10-31', log, now: NOV_10 })).failed).toEqual([]);
  }, 180_000);

  it('says of its UTC days what its close says: 1 November, which holds its last hours, is not published', async () => {
    const config = dirConfig(r);
    // Its own table, as it can be rolled up once the month is over there: the report reads it.
    await withBackends(config, log, (b) => runMonthRollup(config, b, { month: '2026-10', tz: NY, log }));
    const text = await reportCommand(config, { month: '2026-10', tz: NY }, NOV_10);
    expect(text).toContain('Not final: 31 of 32 UTC days that hold 2026-10 in America/New_York (2026-10-01 to 2026-11-01) so far are published complete; not published: 2026-11-01; see pingroll status');
    const refusal = await runCloseMonth(config, { month: '2026-10', tz: NY, log, now: NOV_10 }).then(() => null, (e: unknown) => e as Error);
    expect(refusal?.message).toMatch(/^2026-10 \(America\/New_York\) cannot be closed: not every day is complete: 2026-11-01 \(/);
    expect(refusal?.message).not.toMatch(/2026-10-\d\d \(/);
  }, 120_000);

  it('shows its month under way, as UTC\'s: the figures so far and the adjustments to its October reported on it', async () => {
    const config = dirConfig(r);
    expect((await runDays(config, { from: '2026-11-01', to: '2026-11-02', log, now: NOV_10 })).failed).toEqual([]);
    await runCloseMonth(config, { month: '2026-10', tz: NY, log, now: NOV_10 });
    // Late pings of 20 October (New York's October, closed): adjustments on its November.
    const late = generateSample({ date: '2026-10-20', sessions: 4, seed: 1299, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 40, prefix: 'late/' });
    await writeObjects(join(r, 'logs'), late.objects);
    await runDay(config, { day: '2026-11-09', log, now: NOV_10 });

    // On 10 November New York's November is under way (it ends on 1 December, 05:00 UTC). Its
    // minutes so far are those of the UTC days published (1 and 2 November), from its first minute.
    const want = expectedMonthIn(truth, '2026-11', NY);
    expect(want.length).toBeGreaterThan(1);
    const s = await monthStatement(warehouseOf(r), '', '2026-11', NY);
    expect(s.closed).toBeNull();
    expect(s.rows.map((x) => [x.series_id, x.minutes_watched, x.days_watched]).sort()).toEqual(want.map((w) => [w.series_id, w.minutes_watched, w.days_watched]).sort());
    expect(s.rows.reduce((n, x) => n + x.share_of_month, 0)).toBeCloseTo(1, 9);
    // Pings are counted per UTC day: none for a zone's month until its own table is rolled up.
    expect(s.rows.every((x) => x.pings === null)).toBe(true);
    const inOctober = (ms: number): boolean => localDayOf(ms, NY).startsWith('2026-10');
    const wantAdjusted = perSeries(expectedAdjustments(truth, late.truth, '2026-10-20', inOctober));
    expect(wantAdjusted.length).toBeGreaterThan(0);
    expect(perSeries(s.adjustments)).toEqual(wantAdjusted);

    // The same SQL on PostgreSQL, where the SQL that runs on Redshift is checked, from the warehouse's rows.
    const pg = await startPostgres();
    onTestFinished(() => pg.close());
    await pg.exec('DROP SCHEMA IF EXISTS pingroll CASCADE');
    for (const sql of warehouseStatements('postgres', 'pingroll')) await pg.exec(sql);
    for (const table of ['daily_series_minutes', 'statement_adjustments', 'monthly_statements', 'monthly_series_stats']) {
      const rows = await query(`SELECT * FROM ${table}`, join(r, 'wh.duckdb'));
      if (rows.length) await insertRows(pg, `pingroll.${table}`, rows);
    }
    const onPg = { description: 'duckdb', query: async <T>(sql: string): Promise<T[]> => (await pg.query(sql)).rows as T[] };
    expect(await monthStatement(onPg, 'pingroll.', '2026-11', NY), PG_NAME).toEqual(s);

    const text = await reportCommand(config, { month: '2026-11', tz: NY }, NOV_10);
    expect(text).toMatch(/^Minutes watched, 2026-11 \(America\/New_York\)/);
    expect(text).toMatch(/Adjustments to earlier months/);
  }, 180_000);
});
