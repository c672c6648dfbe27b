/**
 * The warehouse DDL and the analysts' views on DuckDB: tables in the contract column order, and every view
 * checked against totals computed here, independently, over generated days that cross month ends.
 */
import { loadConfig } from '../../../infra/config.js';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDbWarehouse } from '../../../export/warehouse/duckdb/duckdb-warehouse.js';
import { DuckDBInstance } from '../../../lib/duckdb-engine.js';
import { rng } from '../../../tools/sample/access-log-generator.js';
import { monthCompleteness } from '../../../cli/commands/report.js';
import { statementDocument, statementText, type MonthCompleteness, type StatementRow } from '../../../cli/commands/statement-document.js';
import { DATASETS, duckdbType } from '../../../datasets/registry.js';
import { rm, runDays, tempDir } from '../../support/job-fixture.js';

const root = tempDir();
const wh = new DuckDbWarehouse(join(root, 'wh.duckdb'));
interface Ep { day: string; series: string; episode: string; minutes: number; pings: number; viewers: number }
const episodes: Ep[] = [];
const days = Array.from({ length: 40 }, (_, i) => new Date(Date.UTC(2026, 9, 25) + i * 86_400_000).toISOString().slice(0, 10));

beforeAll(async () => {
  await wh.init();
  const rand = rng(5);
  const values: string[] = [];
  const series: string[] = [];
  for (const day of days) {
    for (let s = 0; s < 6; s++) {
      if (rand() < 0.2) continue; // some series have days without views
      let sMinutes = 0, sPings = 0;
      for (let e = 1; e <= 4; e++) {
        const minutes = Math.floor(rand() * 500), pings = minutes + Math.floor(rand() * 20), viewers = 1 + Math.floor(minutes / 7);
        episodes.push({ day, series: `s${s}`, episode: `e${e}`, minutes, pings, viewers });
        values.push(`(DATE '${day}', 's${s}', 'e${e}', ${pings}, ${viewers}, ${viewers}, ${minutes}, TIMESTAMP '${day} 00:00:00', TIMESTAMP '${day} 23:00:00', ${pings}, 0)`);
        sMinutes += minutes;
        sPings += pings;
      }
      series.push(`(DATE '${day}', 's${s}', 4, ${sPings}, 10, 10, ${sMinutes}, TIMESTAMP '${day} 00:00:00', TIMESTAMP '${day} 23:00:00')`);
    }
  }
  // The rows go in directly: the warehouse itself only loads days from Parquet.
  const instance = await DuckDBInstance.create(join(root, 'wh.duckdb'));
  const db = await instance.connect();
  await db.run(`INSERT INTO daily_episode_stats VALUES ${values.join(', ')}`);
  await db.run(`INSERT INTO daily_series_stats VALUES ${series.join(', ')}`);
  db.closeSync();
  instance.closeSync();
});
afterAll(async () => {
  await wh.close();
  await rm(root, { recursive: true, force: true });
});

const num = (x: unknown): number => Number(x);
const monthOf = (day: string): string => `${day.slice(0, 7)}-01`;

describe('warehouse DDL', () => {
  it('creates the registry\'s tables (datasets/registry.ts): its columns in order, their types and NULLs, and applies again without harm', async () => {
    for (const d of DATASETS) {
      const rows = await wh.query<{ column_name: string; data_type: string; is_nullable: string }>(`SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = '${d.name}' ORDER BY ordinal_position`);
      expect(rows.map((r) => [r.column_name, r.data_type, r.is_nullable]), d.name).toEqual(d.columns.map((c) => [c.name, duckdbType(c.type), 'nullable' in c && c.nullable ? 'YES' : 'NO']));
    }
    await wh.init();
    expect(await wh.query(`SELECT count(*) AS n FROM daily_episode_stats`)).toEqual([{ n: BigInt(episodes.length) }]);
  });
});

describe('views', () => {
  it('monthly_series_minutes: minutes per series and month, and shares summing to 1', async () => {
    const want = new Map<string, number>();
    for (const e of episodes) want.set(`${monthOf(e.day)} ${e.series}`, (want.get(`${monthOf(e.day)} ${e.series}`) ?? 0) + e.minutes);
    const rows = await wh.query<{ month: { toString(): string }; series_id: string; minutes_watched: bigint; share_of_month: number }>(
      `SELECT month, series_id, minutes_watched, share_of_month FROM monthly_series_minutes ORDER BY month, series_id`);
    expect(new Map(rows.map((r) => [`${String(r.month)} ${r.series_id}`, num(r.minutes_watched)]))).toEqual(want);
    const months = [...new Set(rows.map((r) => String(r.month)))];
    expect(months).toEqual(['2026-10-01', '2026-11-01', '2026-12-01']);
    for (const m of months) {
      const inMonth = rows.filter((r) => String(r.month) === m);
      expect(inMonth.reduce((n, r) => n + r.share_of_month, 0)).toBeCloseTo(1, 12);
      const total = inMonth.reduce((n, r) => n + num(r.minutes_watched), 0);
      for (const r of inMonth) expect(r.share_of_month).toBeCloseTo(num(r.minutes_watched) / total, 12);
    }
  });

  it('top_episodes_daily and _monthly: ranked by minutes, ties by series and episode', async () => {
    const day = '2026-11-07';
    const want = episodes.filter((e) => e.day === day).sort((a, b) => b.minutes - a.minutes || a.series.localeCompare(b.series) || a.episode.localeCompare(b.episode));
    const daily = await wh.query<{ rank: bigint; series_id: string; episode_id: string }>(`SELECT rank, series_id, episode_id FROM top_episodes_daily WHERE day = DATE '${day}' ORDER BY rank`);
    expect(daily.map((r) => `${r.series_id}/${r.episode_id}`)).toEqual(want.map((e) => `${e.series}/${e.episode}`));
    expect(daily.map((r) => num(r.rank))).toEqual(want.map((_, i) => i + 1));

    const sums = new Map<string, number>();
    for (const e of episodes.filter((x) => x.day.startsWith('2026-11'))) sums.set(`${e.series}/${e.episode}`, (sums.get(`${e.series}/${e.episode}`) ?? 0) + e.minutes);
    const wantMonth = [...sums].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 5);
    const monthly = await wh.query<{ series_id: string; episode_id: string; minutes_watched: bigint }>(
      `SELECT series_id, episode_id, minutes_watched FROM top_episodes_monthly WHERE month = DATE '2026-11-01' AND rank <= 5 ORDER BY rank`);
    expect(monthly.map((r) => [`${r.series_id}/${r.episode_id}`, num(r.minutes_watched)])).toEqual(wantMonth);
  });

  it("series_daily_trend: each day against the series' previous day with views", async () => {
    const s = 's2';
    const perDay = new Map<string, number>();
    for (const e of episodes.filter((x) => x.series === s)) perDay.set(e.day, (perDay.get(e.day) ?? 0) + e.minutes);
    const ordered = [...perDay].sort((a, b) => a[0].localeCompare(b[0]));
    const rows = await wh.query<{ day: unknown; previous_day: unknown; minutes_change: bigint | null }>(
      `SELECT day, previous_day, minutes_change FROM series_daily_trend WHERE series_id = '${s}' ORDER BY day`);
    expect(rows.map((r) => [String(r.day), r.previous_day === null ? null : String(r.previous_day), r.minutes_change === null ? null : num(r.minutes_change)]))
      .toEqual(ordered.map(([d, m], i) => [d, i ? ordered[i - 1]![0] : null, i ? m - ordered[i - 1]![1] : null]));
  });
});

/** A month's statement, open, as the text table prints it. */
function formatStatement(month: string, rows: StatementRow[], source: string, completeness: MonthCompleteness | null = null, extra: { tz?: string } = {}): string {
  return statementText(statementDocument({ month, tz: extra.tz ?? 'UTC', source, codeVersion: 'pingroll 0.1.0', rows, closed: null, adjustments: [], versions: [], completeness }));
}

describe("the licensors' statement", () => {
  it('prints series by minutes with shares to 4 decimals, pings, days and a total', () => {
    const text = formatStatement('2026-11', [
      { series_id: 'The Crown', minutes_watched: 3000, share_of_month: 0.75, pings: 3100, days_watched: 30 },
      { series_id: 's2', minutes_watched: 1000, share_of_month: 0.25, pings: 1010, days_watched: 12 },
    ], 'wh.duckdb');
    expect(text).toMatch(/\nThe Crown\s+3,000\s+75\.0000\s+3,100\s+30\n/);
    expect(text).toMatch(/\ntotal \(2 series\)\s+4,000\s+100\.0000\s+4,110\n/);
    expect(text).toMatch(/\nshare\s+percent of the month's minutes watched, rounded to 4 decimals\n/);
  });

  it("names the month's days that are not published, or not complete, from daily_runs", () => {
    const runs = [{ day: '2026-11-01', state: 'complete' }, { day: '2026-11-02', state: 'incomplete' }, { day: '2026-11-04', state: 'provisional' }, { day: '2026-11-05', state: 'complete' }];
    // On the 6th: the month so far is the 1st to the 5th.
    const c = monthCompleteness('2026-11', runs, new Date('2026-11-06T10:00:00Z'));
    expect(c).toEqual({ days: 5, complete: 2, missing: ['2026-11-03'], provisional: ['2026-11-04'], incomplete: ['2026-11-02'] });
    expect(formatStatement('2026-11', [], 'wh', c)).toContain('Not final: 2 of 5 days of 2026-11 so far are published complete; not published: 2026-11-03; provisional (their delivery days\' final listings are still to come): 2026-11-04; incomplete: 2026-11-02; see pingroll status');
    const all = monthCompleteness('2026-02', Array.from({ length: 28 }, (_, i) => ({ day: `2026-02-${String(i + 1).padStart(2, '0')}`, state: 'complete' })), new Date('2026-04-01T00:00:00Z'));
    expect(formatStatement('2026-02', [], 'wh', all)).toContain('All 28 days of 2026-02 so far are published complete.');
  });

  it("checks a zone's month on the UTC days its close checks, the one it ends in too", () => {
    const november = Array.from({ length: 30 }, (_, i) => ({ day: `2026-11-${String(i + 1).padStart(2, '0')}`, state: 'complete' }));
    // New York's November ends at 05:00 UTC on 1 December: an hour later it is over, and 1 December
    // UTC, which holds its last five hours, is not published (a close would refuse, naming it).
    const ny = monthCompleteness('2026-11', november, new Date('2026-12-01T06:00:00Z'), 'America/New_York');
    expect(ny).toEqual({ days: 31, complete: 30, missing: ['2026-12-01'], provisional: [], incomplete: [] });
    expect(formatStatement('2026-11', [], 'wh', ny, { tz: 'America/New_York' })).toContain('Not final: 30 of 31 UTC days that hold 2026-11 in America/New_York (2026-11-01 to 2026-12-01) so far are published complete; not published: 2026-12-01; see pingroll status');
    // In progress: its days up to yesterday. Kolkata's November starts at 18:30 UTC on 31 October.
    const kolkata = monthCompleteness('2026-11', november, new Date('2026-11-10T12:00:00Z'), 'Asia/Kolkata');
    expect(kolkata).toEqual({ days: 10, complete: 9, missing: ['2026-10-31'], provisional: [], incomplete: [] });
    // UTC's month as before: its own days.
    expect(monthCompleteness('2026-11', november, new Date('2026-12-01T06:00:00Z'))).toMatchObject({ days: 30, complete: 30, missing: [] });
  });
});

describe('pingroll report on a generated month', () => {
  it('prints each series\' minutes and share as the oracle computes them', async () => {
    const { generateSample } = await import('../../../tools/sample/access-log-generator.js');
    const { runDays } = await import('../../support/job-fixture.js');
    const { memoryLog } = await import('../../../lib/log.js');
    const { reportCommand } = await import('../../../cli/commands/report.js');
    const { expectedDay } = await import('../../support/oracle.js');
    const { dirConfig, setEnv, writeObjects } = await import('../../support/job-fixture.js');
    const r = tempDir();
    const truth = [];
    for (let d = 1; d <= 30; d++) {
      const date = `2026-11-${String(d).padStart(2, '0')}`;
      const s = generateSample({ date, sessions: 12, seed: 100 + d, truth: true, series: 5, prefix: `${date}/` });
      await writeObjects(join(r, 'logs'), s.objects);
      truth.push(...s.truth);
    }
    const config = dirConfig(r);
    // Backfilled on the 10th of December: every delivery day that can hold November's records has had its final listing.
    const b = await runDays({ ...config, parallelDays: 3 }, { from: '2026-11-01', to: '2026-11-30', log: memoryLog(), now: new Date('2026-12-10T02:30:00Z') });
    expect(b.failed).toEqual([]);
    const minutes = new Map<string, number>();
    for (let d = 1; d <= 30; d++) {
      for (const row of expectedDay(truth, `2026-11-${String(d).padStart(2, '0')}`).series) minutes.set(row.series_id, (minutes.get(row.series_id) ?? 0) + row.minutes_watched);
    }
    const total = [...minutes.values()].reduce((a, b) => a + b, 0);
    expect(minutes.size).toBeGreaterThan(3);
    const restore = setEnv({ PINGROLL_WAREHOUSE: `duckdb:${join(r, 'wh.duckdb')}` });
    try {
      // Seen from December: every day of November is published complete.
      const text = await reportCommand(loadConfig(process.env), { month: '2026-11' }, new Date('2026-12-10T03:00:00Z'));
      expect(text).toContain('All 30 days of 2026-11 so far are published complete.');
      expect(text).not.toContain('not published:');
      for (const [series, m] of minutes) {
        const line = text.split('\n').find((l) => l.startsWith(series.padEnd(32)));
        expect(line, series).toMatch(new RegExp(`${m.toLocaleString('en')}\\s+${((m / total) * 100).toFixed(4)}\\s`));
      }
      expect(text).toMatch(new RegExp(`total \\(${minutes.size} series\\)\\s+${total.toLocaleString('en')}`));
    } finally {
      restore();
      await rm(r, { recursive: true, force: true });
    }
  }, 120_000);
});
