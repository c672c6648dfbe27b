/**
 * Closing a month (contract §9) as cron and an operator would: a month backfilled and closed, late
 * objects for a closed day, the next night's run. The closed figures never move; the adjustments equal
 * every ping minus what was closed (an independent recomputation, test/support/oracle.ts); a reopen
 * issues the next version with what changed; the daily job closes a month itself when told to.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { reportCommand } from '../../cli/commands/report.js';
import { dataset, duckdbType } from '../../datasets/registry.js';
import { statusCommand } from '../../cli/commands/status.js';
import { memoryLog } from '../../lib/log.js';
import { daysFrom } from '../../lib/utc-day.js';
import { CloseRefusedError, CloseUsageError } from '../../state/closes.js';
import { generateSample, type LogObject, type TruthRecord } from '../../tools/sample/access-log-generator.js';
import { dirConfig, query, readDay, runCloseMonth, runDay, runDays, tempRoots, writeObjects } from '../support/job-fixture.js';
import { expectedAdjustments, expectedMonth } from '../support/oracle.js';

const root = tempRoots();
const OCT = daysFrom('2026-10-01', '2026-10-31');
const NOV_10 = new Date('2026-11-10T06:00:00Z');

/** A month of small days, backfilled as of Nov 10 (every delivery day's final listing done): its truth and its root. */
async function octoberBackfilled(extra: Record<string, string> = {}): Promise<{ r: string; truth: TruthRecord[]; objects: LogObject[] }> {
  const r = root();
  const samples = OCT.map((date, i) => generateSample({ date, sessions: 3, seed: 700 + i, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 60 }));
  const objects = samples.flatMap((s) => s.objects);
  await writeObjects(join(r, 'logs'), objects);
  const summary = await runDays(dirConfig(r, extra), { from: OCT[0]!, to: OCT.at(-1)!, log: memoryLog(), now: NOV_10 });
  expect(summary.failed).toEqual([]);
  return { r, truth: samples.flatMap((s) => s.truth), objects };
}

const statementCols = 'month::VARCHAR AS month, series_id, episodes, pings, sessions, viewers, minutes_watched, days_watched';

describe('closing a month', () => {
  let r: string;
  let truth: TruthRecord[];
  let objects: LogObject[];
  beforeAll(async () => {
    ({ r, truth, objects } = await octoberBackfilled());
  }, 120_000);

  it('freezes the month as statement version 1; late pings become adjustments on the next month, exact; the closed figures never move; a reopen issues version 2 with what changed', async () => {
    const config = dirConfig(r);
    const log = memoryLog();
    // Not before the month is over, nor twice.
    await expect(runCloseMonth(config, { month: '2026-11', log, now: NOV_10 })).rejects.toThrow(CloseUsageError);
    const closed = await runCloseMonth(config, { month: '2026-10', log, now: NOV_10 });
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
    await runDay(config, { day: '2026-11-11', log, now: NOV_12 });
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
    expect(csv.split('\r\n')[0]).toBe('series_id,minutes_watched,share_of_month,pings,days_watched,kind,of_month');
    expect(csv).toMatch(/,adjustment,2026-10\r\n/);
    // November cannot close: its days are not complete, and it says which.
    await expect(runCloseMonth(config, { month: '2026-11', log, now: new Date('2026-12-10T00:00:00Z') })).rejects.toThrow(CloseRefusedError);
    await expect(runCloseMonth(config, { month: '2026-11', log, now: new Date('2026-12-10T00:00:00Z') })).rejects.toThrow(/2026-11 cannot be closed: not every day is complete: 2026-11-01 \(never run/);

    // A reopen: the day again, and version 2 from every ping, with what changed; the late pings are no adjustment any more.
    const reopened = await runCloseMonth(config, { month: '2026-10', reopen: 'late objects of the 15th re-delivered', log, now: NOV_12 });
    expect(reopened.version).toBe(2);
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
