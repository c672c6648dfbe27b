/**
 * Months in time zones (contract §9), on the UTC days that hold November in UTC, New York (whose
 * November holds its DST change), Kolkata (+5:30) and Adelaide (+10:30), backfilled once:
 * - a zone's month rolled up and closed, minute by minute, with adjustments of its own minutes only;
 * - one month closed in UTC and two zones, late pings at each zone's month boundaries, then a reopen
 *   in a zone and one in UTC. Daily tables are UTC days: only a UTC close freezes a day's rows. For
 *   every series, version and zone, against the independent oracle (test/support/oracle.ts): the
 *   statement plus the adjustments reported for it is every ping of its month; UTC's statement is the
 *   sum of the daily rows it froze; a UTC day no UTC close covers has every ping.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { statusCommand } from '../../cli/commands/status.js';
import { memoryLog } from '../../lib/log.js';
import { daysFrom } from '../../lib/utc-day.js';
import { generateSample, type TruthRecord } from '../../tools/sample/access-log-generator.js';
import { builtOnce, dirConfig, query, runCloseMonth, runDay, runDays, tempRoots, writeObjects } from '../support/job-fixture.js';
import { expectedAdjustments, expectedDay, expectedMonthIn, localDayOf } from '../support/oracle.js';
import { reportCommand } from '../../cli/commands/report.js';

const root = tempRoots();
const statementCols = 'month::VARCHAR AS month, series_id, episodes, pings, sessions, viewers, minutes_watched, days_watched';
/** The UTC days that hold minutes of November in UTC, New York, Kolkata and Adelaide. */
const DAYS = daysFrom('2026-10-31', '2026-12-01');
/** The days at the zones' month boundaries are busier: pings on both sides of each. */
const BUSY = ['2026-10-31', '2026-11-01', '2026-11-30', '2026-12-01'];

const NY = 'America/New_York';
const KOLKATA = 'Asia/Kolkata';
const ZONES = ['UTC', NY, KOLKATA] as const;
const DEC_10 = new Date('2026-12-10T06:00:00Z');
const DEC_11 = new Date('2026-12-11T06:00:00Z');

type Figures = Record<string, { pings: number; minutes: number }>;

/** Rows of series, pings and minutes watched, as Figures. */
function figures(rows: Array<{ series_id: string; pings: number; minutes_watched: number }>): Figures {
  return Object.fromEntries(rows.map((r) => [r.series_id, { pings: r.pings, minutes: r.minutes_watched }]));
}

/** The oracle's figures of November in `tz` per series. */
function oracleNovember(truth: TruthRecord[], tz: string): Figures {
  return figures(expectedMonthIn(truth, '2026-11', tz));
}

/** Figures per series of a query's rows (series_id, pings, minutes_watched). */
async function queried(sql: string): Promise<Figures> {
  return figures(await query<{ series_id: string; pings: number; minutes_watched: number }>(sql));
}

function add(a: Figures, b: Figures): Figures {
  const out: Figures = structuredClone(a);
  for (const [s, f] of Object.entries(b)) {
    const x = (out[s] ??= { pings: 0, minutes: 0 });
    x.pings += f.pings;
    x.minutes += f.minutes;
  }
  return out;
}

/** Those days backfilled as of Dec 10: their truth and root, as each test finds it (backfilled once a file). */
const novemberBackfilled = builtOnce(root, async (r) => {
  const samples = DAYS.map((date, i) => generateSample({ date, sessions: BUSY.includes(date) ? 60 : 2, seed: 4100 + i, truth: true, series: 2, episodesPerSeries: 2, recordsPerObject: 60 }));
  await writeObjects(join(r, 'logs'), samples.flatMap((s) => s.objects));
  expect((await runDays(dirConfig(r), { from: DAYS[0]!, to: DAYS.at(-1)!, log: memoryLog(), now: DEC_10 })).failed).toEqual([]);
  return { truth: samples.flatMap((s) => s.truth) };
});

describe('a month closed in UTC and in zones', () => {
  it('freezes each statement, and only a UTC close a day\'s rows: late pings at the zone boundaries reach the UTC days no UTC close covers, and are adjustments only of the statements whose month they fall in; statement + adjustments = every ping, in every zone and version, reopens included', async () => {
    const { r, truth } = await novemberBackfilled();
    const config = dirConfig(r);
    const out = join(r, 'out');
    const log = memoryLog();

    // November closed in each zone: each close says its own series (not every row of the statements file).
    for (const tz of ZONES) {
      const closed = await runCloseMonth(config, { month: '2026-11', tz, log, now: DEC_10 });
      expect(closed, tz).toMatchObject({ version: 1, series: expectedMonthIn(truth, '2026-11', tz).length });
    }
    const statements = join(out, 'monthly_statements', 'dt=2026-11-01', 'part-00000.parquet');
    const statement = (tz: string, version: number): Promise<Figures> =>
      queried(`SELECT series_id, pings, minutes_watched FROM read_parquet('${statements}') WHERE tz = '${tz}' AND version = ${version}`);
    for (const tz of ZONES) expect(await statement(tz, 1), tz).toEqual(oracleNovember(truth, tz));
    // Only UTC's close freezes days: 2026-12-01 (New York's November ends at 05:00 UTC) and 2026-10-31
    // (Kolkata's starts at 18:30 UTC) stay open days.
    const state = async (day: string): Promise<string> => JSON.parse((await statusCommand(config, { from: day, to: day, json: true }, DEC_10)).text).state;
    expect(await state('2026-11-15')).toBe('closed');
    expect(await state('2026-12-01')).toBe('complete');
    expect(await state('2026-10-31')).toBe('complete');

    // Late pings of each boundary day, on both sides of each zone's boundary.
    const late = ['2026-10-31', '2026-11-01', '2026-11-30', '2026-12-01'].map((date, i) =>
      generateSample({ date, sessions: 24, seed: 4900 + i, truth: true, series: 2, episodesPerSeries: 2, recordsPerObject: 40, prefix: `late/${i}/` }));
    const lateTruth = late.flatMap((s) => s.truth);
    const inNovember = (t: TruthRecord, tz: string): boolean => localDayOf(t.eventTimeMs, tz).startsWith('2026-11');
    const pinged = lateTruth.filter((t) => t.outcome === 'ping');
    for (const tz of [NY, KOLKATA]) {
      expect(pinged.some((t) => inNovember(t, tz) && !inNovember(t, 'UTC')), `${tz}'s November outside UTC's`).toBe(true);
      expect(pinged.some((t) => !inNovember(t, tz) && inNovember(t, 'UTC')), `UTC's November outside ${tz}'s`).toBe(true);
    }
    await writeObjects(join(r, 'logs'), late.flatMap((s) => s.objects));
    // The next night, then the stale days published again (cron's two lines).
    await runDay(config, { day: '2026-12-09', log, now: DEC_10 });
    expect(await state('2026-12-01')).toBe('stale');
    const republished = await runDays(config, { stale: true, log, now: DEC_10 });
    expect([...republished.done].sort()).toEqual(['2026-10-31', '2026-12-01']);
    const all = [...truth, ...lateTruth];

    // The UTC days: those no UTC close covers have every ping; November's are as UTC's close froze them.
    const seriesRows = (from: string, to: string): Promise<Figures> =>
      queried(`SELECT series_id, sum(pings)::BIGINT AS pings, sum(minutes_watched)::BIGINT AS minutes_watched FROM read_parquet('${join(out, 'daily_series_stats', '*', '*.parquet')}', hive_partitioning = false)
       WHERE day BETWEEN '${from}' AND '${to}' GROUP BY ALL`);
    const utcDay = (t: TruthRecord[], day: string): Figures => figures(expectedDay(t, day).series);
    for (const day of ['2026-10-31', '2026-12-01']) expect(await seriesRows(day, day), day).toEqual(utcDay(all, day));
    expect(await seriesRows('2026-11-01', '2026-11-30')).toEqual(oracleNovember(truth, 'UTC'));

    // Every statement, in its zone: version 1 + the adjustments reported for it = every ping of its month.
    const adjustments = (tz: string): Promise<Figures> =>
      queried(`SELECT series_id, sum(pings)::BIGINT AS pings, sum(minutes_watched)::BIGINT AS minutes_watched FROM read_parquet('${join(out, 'statement_adjustments', 'dt=2026-12-01', 'part-00000.parquet')}')
       WHERE tz = '${tz}' AND closed_month = DATE '2026-11-01' GROUP BY ALL`);
    for (const tz of ZONES) {
      expect(await statement(tz, 1), tz).toEqual(oracleNovember(truth, tz));
      const adj = await adjustments(tz);
      expect(Object.values(adj).reduce((n, f) => n + f.pings, 0), `${tz} has adjustments`).toBeGreaterThan(0);
      expect(add(await statement(tz, 1), adj), tz).toEqual(oracleNovember(all, tz));
    }

    // A reopen in New York: version 2 of every ping; no UTC day's rows move (it froze none).
    const published = (day: string): string => JSON.parse(readFileSync(join(out, '_runs', `dt=${day}`, 'manifest.json'), 'utf8')).run;
    const before = ['2026-11-15', '2026-11-30', '2026-12-01'].map(published);
    const ny = await runCloseMonth(config, { month: '2026-11', tz: NY, reopen: 'late logs of the boundary days', log, now: DEC_11 });
    expect(ny).toMatchObject({ version: 2, series: expectedMonthIn(all, '2026-11', NY).length });
    expect(ny.changed).toBeGreaterThan(0);
    expect(['2026-11-15', '2026-11-30', '2026-12-01'].map(published)).toEqual(before);
    expect(await statement(NY, 2)).toEqual(oracleNovember(all, NY));
    expect(await statement(NY, 1)).toEqual(oracleNovember(truth, NY));
    expect(await adjustments(NY)).toEqual({});
    for (const tz of ['UTC', KOLKATA]) expect(add(await statement(tz, 1), await adjustments(tz)), tz).toEqual(oracleNovember(all, tz));

    // A reopen in UTC: its days rolled up again, every one (no zone's close holds them), and version 2 is their sum.
    const utc = await runCloseMonth(config, { month: '2026-11', reopen: 'late logs of the boundary days', log, now: DEC_11 });
    expect(utc).toMatchObject({ version: 2, series: expectedMonthIn(all, '2026-11', 'UTC').length });
    expect(await statement('UTC', 2)).toEqual(oracleNovember(all, 'UTC'));
    expect(await seriesRows('2026-11-01', '2026-11-30')).toEqual(await statement('UTC', 2));
    for (const day of ['2026-11-01', '2026-11-30']) expect(await seriesRows(day, day), day).toEqual(utcDay(all, day));
    expect(await adjustments('UTC')).toEqual({});
    // Kolkata's version 1 stands, with its adjustments.
    expect(add(await statement(KOLKATA, 1), await adjustments(KOLKATA))).toEqual(oracleNovember(all, KOLKATA));
    const record = JSON.parse(readFileSync(join(out, '_state', 'closes', `2026-11.${NY.replace('/', '.')}.json`), 'utf8'));
    expect(record.versions.map((v: { version: number; reason: string | null }) => [v.version, v.reason])).toEqual([[1, null], [2, 'late logs of the boundary days']]);
  }, 300_000);
});

describe('a month in a time zone', () => {
  it('is the zone\'s local month, minute by minute (New York across its DST change, Kolkata at +5:30, Adelaide at +10:30), closes in its zone, and takes adjustments of its own minutes only', async () => {
    const { r, truth } = await novemberBackfilled();
    const config = dirConfig(r);
    const log = memoryLog();
    // New York's November starts at 04:00 UTC (EDT, -4), an hour that a fixed -5 would put in October.
    expect(truth.some((t) => t.outcome === 'ping' && t.eventTimeMs >= Date.UTC(2026, 10, 1, 4) && t.eventTimeMs < Date.UTC(2026, 10, 1, 5))).toBe(true);
    const cols = `${statementCols}, tz`;
    const file = (tz: string): string => join(r, 'out', 'monthly_series_stats', 'dt=2026-11-01', tz === 'UTC' ? 'part-00000.parquet' : `part-tz-${tz.replace('/', '.')}.parquet`);
    for (const tz of ['UTC', 'America/New_York', 'Asia/Kolkata', 'Australia/Adelaide']) {
      const { runMonthRollup } = await import('../../jobs/month.js');
      const { withBackends } = await import('../../infra/backends.js');
      await withBackends(config, log, (b) => runMonthRollup(config, b, { month: '2026-11', tz, log }));
      const want = expectedMonthIn(truth, '2026-11', tz);
      expect(await query(`SELECT ${cols} FROM read_parquet('${file(tz)}') ORDER BY series_id`), tz).toEqual(want);
      expect(await query(`SELECT ${cols} FROM monthly_series_stats WHERE tz = '${tz}' ORDER BY series_id`, join(r, 'wh.duckdb')), tz).toEqual(want);
    }
    // The zones differ from UTC and from each other, or the test proves little.
    const minutes = (tz: string): number => expectedMonthIn(truth, '2026-11', tz).reduce((n, m) => n + m.minutes_watched, 0);
    expect(new Set(['UTC', 'America/New_York', 'Asia/Kolkata', 'Australia/Adelaide'].map(minutes)).size).toBe(4);
    const report = await reportCommand(config, { month: '2026-11', tz: 'Asia/Kolkata' }, DEC_10);
    expect(report).toMatch(/^Minutes watched, 2026-11 \(Asia\/Kolkata\)/);

    // Closed in Kolkata: its statement is its own, and UTC's month is not closed by it.
    const kolkata = (ms: number): boolean => localDayOf(ms, 'Asia/Kolkata').startsWith('2026-11');
    await runCloseMonth(config, { month: '2026-11', tz: 'Asia/Kolkata', log, now: DEC_10 });
    const statement = await query(`SELECT ${cols} FROM read_parquet('${join(r, 'out', 'monthly_statements', 'dt=2026-11-01', 'part-00000.parquet')}') ORDER BY series_id`);
    expect(statement).toEqual(expectedMonthIn(truth, '2026-11', 'Asia/Kolkata'));
    expect(await reportCommand(config, { month: '2026-11', tz: 'Asia/Kolkata' }, DEC_10)).toMatch(/^Statement of 2026-11 \(Asia\/Kolkata\), version 1/);
    expect(await reportCommand(config, { month: '2026-11' }, DEC_10)).toMatch(/^Minutes watched, 2026-11 \(UTC\)/);
    // Late pings of Nov 30 (UTC): those of Kolkata's November are adjustments; those after 18:30 UTC are its December's.
    const late = generateSample({ date: '2026-11-30', sessions: 6, seed: 999, truth: true, series: 2, episodesPerSeries: 2, recordsPerObject: 40, prefix: 'late/' });
    expect(late.truth.some((t) => t.outcome === 'ping' && kolkata(t.eventTimeMs)) && late.truth.some((t) => t.outcome === 'ping' && !kolkata(t.eventTimeMs))).toBe(true);
    await writeObjects(join(r, 'logs'), late.objects);
    await runDay(config, { day: '2026-12-09', log, now: DEC_10 });
    const adjusted = await query(`SELECT day::VARCHAR AS day, series_id, episode_id, pings, sessions, viewers, minutes_watched, after_close_records, duplicates
      FROM read_parquet('${join(r, 'out', 'statement_adjustments', 'dt=2026-12-01', 'part-00000.parquet')}') WHERE tz = 'Asia/Kolkata' ORDER BY series_id, episode_id`);
    expect(adjusted).toEqual(expectedAdjustments(truth, late.truth, '2026-11-30', kolkata));
    expect(adjusted.length).toBeGreaterThan(0);
  }, 240_000);
});
