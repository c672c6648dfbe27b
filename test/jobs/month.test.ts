/**
 * The licensors' month (`monthly_series_stats`): distinct counts over the whole month, from the staged
 * pings with the day's dedupe, against an independent computation over the month's pings.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withBackends } from '../../infra/backends.js';
import { reportCommand } from '../../cli/commands/report.js';
import { runMonthRollup } from '../../jobs/month.js';
import { memoryLog } from '../../lib/log.js';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { dirConfig, query, runDays, tempRoots, writeObjects } from '../support/job-fixture.js';
import { expectedDay, expectedMonth } from '../support/oracle.js';

const root = tempRoots();
const DAYS = ['2026-10-01', '2026-10-02', '2026-10-15', '2026-10-31'];

describe('monthly_series_stats', () => {
  it('counts distinct episodes, sessions and viewers over the month, not summed from days', async () => {
    const r = root();
    const config = dirConfig(r);
    const samples = DAYS.map((date, i) => generateSample({ date, sessions: 50, seed: 300 + i, truth: true, series: 4, recordsPerObject: 300, prefix: `${date}/` }));
    for (const s of samples) await writeObjects(join(r, 'logs'), s.objects);
    const truth = samples.flatMap((s) => s.truth);
    const want = expectedMonth(truth, '2026-10');
    // The fixture must make the month differ from sums of days, or the test proves little.
    const summedViewers = (series: string) => DAYS.reduce((n, d) => n + (expectedDay(truth, d).series.find((x) => x.series_id === series)?.viewers ?? 0), 0);
    expect(want.some((m) => m.viewers < summedViewers(m.series_id))).toBe(true);

    const s = await withBackends(config, memoryLog(), (b) => runMonthRollup(config, b, { month: '2026-10', log: memoryLog() }));
    expect(s.series).toBe(want.length);
    const file = `read_parquet('${join(r, 'out', 'monthly_series_stats', 'dt=2026-10-01', 'part-00000.parquet')}', hive_partitioning = false)`;
    const cols = 'month::VARCHAR AS month, series_id, episodes, pings, sessions, viewers, minutes_watched, days_watched';
    expect(await query(`SELECT ${cols} FROM ${file} ORDER BY series_id`)).toEqual(want);
    expect(await query(`SELECT ${cols} FROM monthly_series_stats ORDER BY series_id`, join(r, 'wh.duckdb'))).toEqual(want);

    // The licensors' statement reads the month's own table now.
    const text = await reportCommand(config, { month: '2026-10' }, new Date('2026-11-05T00:00:00Z'));
    expect(text).toMatch(/\nfigures from +duckdb:.*\(monthly_series_stats\)\n/);
    for (const m of want) expect(text).toMatch(new RegExp(`${m.series_id}\\s+${m.minutes_watched.toLocaleString('en')}\\s`));

    // The same statement as CSV and JSON, for spreadsheets and programs.
    const csv = await reportCommand(config, { month: '2026-10', format: 'csv' }, new Date('2026-11-05T00:00:00Z'));
    expect(csv.split('\r\n')[0]).toBe('section,name,value,series_id,minutes_watched,share_percent,pings,days_watched,closed_month,tz,day,version,closed_at,reason,figure,from,to');
    expect(csv.split('\r\n').filter((l) => l.startsWith('statement,'))).toHaveLength(want.length);
    const json = JSON.parse(await reportCommand(config, { month: '2026-10', format: 'json' }, new Date('2026-11-05T00:00:00Z')));
    expect(json.rows.map((x: { series_id: string; minutes_watched: number; days_watched: number }) => [x.series_id, x.minutes_watched, x.days_watched]).sort())
      .toEqual(want.map((m) => [m.series_id, m.minutes_watched, m.days_watched]).sort());
    // Shares to 4 decimals: they add up to 100, give or take the rounding of each.
    expect(Math.abs(json.rows.reduce((n: number, x: { share_percent: number }) => n + x.share_percent, 0) - 100)).toBeLessThanOrEqual(0.00005 * want.length);
    expect(json.total).toMatchObject({ series: want.length, share_percent: 100, minutes_watched: want.reduce((n, m) => n + m.minutes_watched, 0) });

    // Run again: the month is replaced, not added to.
    await withBackends(config, memoryLog(), (b) => runMonthRollup(config, b, { month: '2026-10', log: memoryLog() }));
    expect(await query(`SELECT ${cols} FROM monthly_series_stats ORDER BY series_id`, join(r, 'wh.duckdb'))).toEqual(want);

    // Late objects of a day of the month: rollup-stale republishes the day and rolls the month up again.
    const now = new Date('2026-11-05T00:00:00Z');
    await runDays(config, { from: DAYS[0], to: DAYS[0], log: memoryLog(), now });
    const late = generateSample({ date: DAYS[0]!, sessions: 20, seed: 399, truth: true, series: 4, recordsPerObject: 300, prefix: 'late/' });
    await writeObjects(join(r, 'logs'), late.objects);
    const stale = await runDays(config, { stale: true, log: memoryLog(), now });
    expect(stale.done).toContain(DAYS[0]);
    expect(stale.months).toEqual(['2026-10']);
    expect(await query(`SELECT ${cols} FROM monthly_series_stats ORDER BY series_id`, join(r, 'wh.duckdb'))).toEqual(expectedMonth([...truth, ...late.truth], '2026-10'));
  });
});
