/**
 * The licensors' statement as a finance team hands it over (`pingroll report --month`), through the
 * real jobs on generated months, against the generator's own account of every ping
 * (test/support/oracle.ts): a month in a time zone before it is closed (its UTC days, as its close
 * checks them; its figures so far and the adjustments reported on it while it is under way); and a
 * closed, reopened month, whose text, CSV, JSON and HTML carry the header, the rows and total, the
 * adjustments reported on it and its versions with their reasons and what changed.
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

/** The text of an HTML fragment, its character references decoded. */
const unescape = (h: string): string => h.replace(/<[^>]+>/g, '').replace(/&#(\d+);/g, (_, c: string) => String.fromCharCode(Number(c)));

/** A table of the page, by its section's id: header, body and footer cells, as text. */
function tableOf(html: string, id: string): { head: string[]; body: string[][]; foot: string[][] } {
  const t = new RegExp(`<section id="${id}">(.*?)</section>`, 's').exec(html)?.[1] ?? '';
  const rows = (part: string): string[][] => [...(new RegExp(`<${part}>(.*?)</${part}>`, 's').exec(t)?.[1] ?? '').matchAll(/<tr>(.*?)<\/tr>/gs)]
    .map((r) => [...r[1]!.matchAll(/<t[hd][^>]*>(.*?)<\/t[hd]>/gs)].map((c) => unescape(c[1]!)));
  return { head: rows('thead')[0] ?? [], body: rows('tbody'), foot: rows('tfoot') };
}

/**
 * Small days from `from` to `to` generated into `r`'s logs (`sessions` a day, 3 series of 2 episodes),
 * those up to `through` backfilled as of Nov 10: the truth of every day generated.
 */
async function backfilled(r: string, d: { from: string; to: string; through: string; seed: number; sessions: (date: string) => number }, log: ReturnType<typeof memoryLog>): Promise<TruthRecord[]> {
  const samples = daysFrom(d.from, d.to).map((date, i) =>
    generateSample({ date, sessions: d.sessions(date), seed: d.seed + i, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 60 }));
  await writeObjects(join(r, 'logs'), samples.flatMap((s) => s.objects));
  expect((await runDays(dirConfig(r), { from: d.from, to: d.through, log, now: NOV_10 })).failed).toEqual([]);
  return samples.flatMap((s) => s.truth);
}

describe('a month in New York, before it is closed', () => {
  let r: string;
  let truth: TruthRecord[];
  const log = memoryLog();
  beforeAll(async () => {
    r = root();
    // October's UTC days and the first two of November; New York's October ends at 04:00 UTC on
    // 1 November, which is busier, so that both months have pings on it.
    // Only October's UTC days are published: not 1 November, which holds New York's last hours of October.
    truth = await backfilled(r, { from: '2026-10-01', to: '2026-11-02', through: '2026-10-31', seed: 1200, sessions: (date) => (date === '2026-11-01' ? 30 : 2) }, log);
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
    expect(text).toMatch(/^Minutes watched, 2026-11 \(America\/New_York\): open, figures so far\n/);
    expect(text).toMatch(/\n2026-10 +America\/New_York +2026-10-20 +s\d+ /);
    const json = JSON.parse(await reportCommand(config, { month: '2026-11', tz: NY, format: 'json' }, NOV_10));
    expect(json.header).toMatchObject({ month: '2026-11', tz: NY, status: 'open', version: null, closed_at: null });
    expect(json.total.pings).toBeNull();
    expect(json.notes).toEqual([expect.stringMatching(/^pings: not shown for 2026-11 in America\/New_York yet: they are counted per UTC day/)]);
    expect(new Set(json.adjustments.map((a: { closed_month: string; tz: string; day: string }) => `${a.closed_month} ${a.tz} ${a.day}`))).toEqual(new Set(['2026-10 America/New_York 2026-10-20']));
    // Its UTC days so far: 1 November to yesterday.
    expect(json.completeness).toMatchObject({ days: 9, missing: daysFrom('2026-11-03', '2026-11-08') });
    // The HTML pages are of UTC days: a zone's month is refused there, saying where it is.
    await expect(reportCommand(config, { month: '2026-11', tz: NY, html: join(r, 'nov.html') }, NOV_10))
      .rejects.toThrow(/^--html draws UTC days: a month in America\/New_York is written by pingroll report --month 2026-11 --tz America\/New_York/);
  }, 180_000);
});

describe('a closed, reopened month, as a document', () => {
  let r: string;
  let truth: TruthRecord[];
  const log = memoryLog();
  beforeAll(async () => {
    r = root();
    truth = await backfilled(r, { from: '2026-09-01', to: '2026-10-31', through: '2026-10-31', seed: 1400, sessions: () => 2 }, log);
  }, 240_000);

  it('carries, in every form, its header, its rows and total, the adjustments reported on it (closed month, zone, day) and its versions with their reasons and what changed', async () => {
    const config = dirConfig(r);
    const NOV_12 = new Date('2026-11-12T06:00:00Z');
    // September closed; late pings of its 15th: adjustments on October, frozen with it when it closes.
    await runCloseMonth(config, { month: '2026-09', log, now: NOV_10 });
    const lateSeptember = generateSample({ date: '2026-09-15', sessions: 4, seed: 1498, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 40, prefix: 'late-09/' });
    await writeObjects(join(r, 'logs'), lateSeptember.objects);
    await runDay(config, { day: '2026-11-09', log, now: NOV_10 });
    await runCloseMonth(config, { month: '2026-10', log, now: NOV_10 });
    // Late pings of 20 October; October reopened to count them: version 2.
    const lateOctober = generateSample({ date: '2026-10-20', sessions: 4, seed: 1499, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 40, prefix: 'late-10/' });
    await writeObjects(join(r, 'logs'), lateOctober.objects);
    await runDay(config, { day: '2026-11-11', log, now: NOV_12 });
    const reason = 'late objects of the 20th, re-delivered by the CDN';
    await runCloseMonth(config, { month: '2026-10', reopen: reason, log, now: NOV_12 });

    // What each part must be, from the generator's account of every ping.
    const v1 = expectedMonthIn(truth, '2026-10', 'UTC');
    const v2 = expectedMonthIn([...truth, ...lateOctober.truth], '2026-10', 'UTC');
    const total = v2.reduce((n, m) => n + m.minutes_watched, 0);
    const byMinutes = [...v2].sort((a, b) => b.minutes_watched - a.minutes_watched || (a.series_id < b.series_id ? -1 : 1));
    const wantRows = byMinutes.map((m) => ({ series_id: m.series_id, minutes_watched: m.minutes_watched, share_percent: Number(((m.minutes_watched / total) * 100).toFixed(4)), pings: m.pings, days_watched: m.days_watched }));
    const wantAdjusted = perSeries(expectedAdjustments(truth, lateSeptember.truth, '2026-09-15'));
    expect(wantAdjusted.length).toBeGreaterThan(0);
    const FIGURES = ['episodes', 'pings', 'sessions', 'viewers', 'minutes_watched', 'days_watched'] as const;
    const wantChanged = v2.flatMap((b) => FIGURES.map((f) => ({ series_id: b.series_id, field: f, from: v1.find((a) => a.series_id === b.series_id)?.[f] ?? null, to: b[f] })))
      .filter((c) => c.from !== c.to);
    expect(wantChanged.length).toBeGreaterThan(0);

    // JSON.
    const json = JSON.parse(await reportCommand(config, { month: '2026-10', format: 'json' }, NOV_12));
    expect(json.header).toEqual({ month: '2026-10', tz: 'UTC', status: 'closed', version: 2, closed_at: '2026-11-12T06:00:00Z', code_version: expect.stringMatching(/^pingroll \d+\.\d+\.\d+/),
      source: expect.stringMatching(/\(monthly_statements\)$/), share_percent: "percent of the month's minutes watched, rounded to 4 decimals" });
    expect(json.rows).toEqual(wantRows);
    // The code that issued the version shown, from its close's record, and the code that wrote the document.
    expect(json.header.code_version).toMatch(/^pingroll \d+\.\d+\.\d+.* issued it; pingroll \d+\.\d+\.\d+.* wrote this document$/);
    expect(json.total).toEqual({ series: v2.length, minutes_watched: total, share_percent: 100, pings: v2.reduce((n, m) => n + m.pings, 0) });
    expect(json.adjustments.every((a: { closed_month: string; tz: string; day: string }) => a.closed_month === '2026-09' && a.tz === 'UTC' && a.day === '2026-09-15')).toBe(true);
    expect(perSeries(json.adjustments)).toEqual(wantAdjusted);
    expect(json.adjustments_total).toEqual({ pings: wantAdjusted.reduce((n, a) => n + a[1], 0), minutes_watched: wantAdjusted.reduce((n, a) => n + a[2], 0) });
    expect(json.versions).toEqual([
      { version: 1, closed_at: '2026-11-10T06:00:00Z', reason: null, changed: [] },
      { version: 2, closed_at: '2026-11-12T06:00:00Z', reason, changed: expect.arrayContaining(wantChanged.map((c) => expect.objectContaining(c))) },
    ]);
    expect(json.versions[1].changed).toHaveLength(wantChanged.length);
    expect(json.completeness).toBeNull();

    // CSV: one table that a CSV reader (DuckDB's here) takes whole; `section` says what each row is.
    const csv = await reportCommand(config, { month: '2026-10', format: 'csv' }, NOV_12);
    expect(csv.split('\r\n')[0]).toBe('section,name,value,series_id,minutes_watched,share_percent,pings,days_watched,closed_month,tz,day,version,closed_at,reason,figure,from,to');
    const file = join(r, 'october.csv');
    (await import('node:fs')).writeFileSync(file, csv);
    // (The helper reads whole numbers as numbers, other cells as text.)
    type Cells = Record<string, string | number | null>;
    const cells = await query<Cells>(`SELECT * FROM read_csv('${file}', header = true, all_varchar = true)`);
    const section = (name: string): Cells[] => cells.filter((c) => c.section === name);
    const header = Object.fromEntries(section('header').map((c) => [c.name, c.value]));
    expect(header).toMatchObject({ month: '2026-10', tz: 'UTC', status: 'closed', version: 2, closed_at: '2026-11-12T06:00:00Z', share_percent: "percent of the month's minutes watched, rounded to 4 decimals" });
    expect(header.code_version).toMatch(/^pingroll /);
    expect(section('statement').map((c) => [c.series_id, Number(c.minutes_watched), c.share_percent, Number(c.pings), Number(c.days_watched)]))
      .toEqual(wantRows.map((w) => [w.series_id, w.minutes_watched, w.share_percent.toFixed(4), w.pings, w.days_watched]));
    expect(section('total')).toEqual([expect.objectContaining({ minutes_watched: total, share_percent: '100.0000' })]);
    expect(perSeries(section('adjustment').map((c) => ({ series_id: String(c.series_id), pings: Number(c.pings), minutes_watched: Number(c.minutes_watched) })))).toEqual(wantAdjusted);
    expect(new Set(section('adjustment').map((c) => `${c.closed_month} ${c.tz} ${c.day}`))).toEqual(new Set(['2026-09 UTC 2026-09-15']));
    expect(section('version').map((c) => [c.version, c.closed_at, c.reason])).toEqual([[1, '2026-11-10T06:00:00Z', null], [2, '2026-11-12T06:00:00Z', reason]]);
    expect(section('change').map((c) => ({ series_id: c.series_id, field: c.figure, from: c.from === null ? null : Number(c.from), to: c.to === null ? null : Number(c.to) })))
      .toEqual(expect.arrayContaining(wantChanged));
    expect(section('change').every((c) => c.version === 2)).toBe(true);
    expect(section('change')).toHaveLength(wantChanged.length);

    // The text table: the same parts.
    const text = await reportCommand(config, { month: '2026-10' }, NOV_12);
    expect(text).toMatch(/^Statement of 2026-10 \(UTC\), version 2, closed 2026-11-12T06:00:00Z: these figures do not change\n/);
    expect(text).toMatch(/\nzone +UTC\n/);
    expect(text).toMatch(/\ncode version +pingroll \d/);
    expect(text).toMatch(/\nshare +percent of the month's minutes watched, rounded to 4 decimals\n/);
    const top = wantRows[0]!;
    expect(text).toMatch(new RegExp(`\\n${top.series_id} +${top.minutes_watched.toLocaleString('en')} +${top.share_percent.toFixed(4)} +${top.pings.toLocaleString('en')} +${top.days_watched}\\n`));
    expect(text).toMatch(new RegExp(`\\ntotal \\(${v2.length} series\\) +${total.toLocaleString('en')} +100\\.0000 `));
    expect(text).toMatch(/\n2026-09 +UTC +2026-09-15 +s\d/);
    expect(text).toContain(`version 1, closed 2026-11-10T06:00:00Z: the month's first close`);
    expect(text).toContain(`version 2, closed 2026-11-12T06:00:00Z: reopened: ${reason}; ${wantChanged.length} figures changed from version 1`);
    const change = wantChanged.find((c) => c.field === 'minutes_watched')!;
    expect(text).toMatch(new RegExp(`\\n +${change.series_id} +minutes_watched +${change.from!.toLocaleString('en')} +${change.to!.toLocaleString('en')}\\n`));

    // The month's HTML page: the statement, the same parts, beside its charts.
    const page = join(r, 'october.html');
    await reportCommand(config, { month: '2026-10', html: page }, NOV_12);
    const html = (await import('node:fs')).readFileSync(page, 'utf8');
    expect(html).toMatch(/<div class="beside">\n<section id="statement">[\s\S]*<\/section>\n<div class="grid"><figure id="trend">/);
    const statement = /<section id="statement">([\s\S]*)<\/section>\n<div class="grid">/.exec(html)![1]!;
    const dl = Object.fromEntries([...statement.matchAll(/<dt>(.*?)<\/dt><dd>(.*?)<\/dd>/g)].map((m) => [unescape(m[1]!), unescape(m[2]!)]));
    expect(dl).toMatchObject({ month: '2026-10', zone: 'UTC', status: 'closed: these figures do not change', version: '2 (of 2 issued; below)', 'closed at': '2026-11-12T06:00:00Z',
      share: "percent of the month's minutes watched, rounded to 4 decimals" });
    expect(dl['code version']).toMatch(/^pingroll \d/);
    expect(tableOf(statement, 'statement-rows')).toEqual({
      head: ['series', 'minutes watched', 'share %', 'pings', 'days watched'],
      body: wantRows.map((w) => [w.series_id, w.minutes_watched.toLocaleString('en'), w.share_percent.toFixed(4), w.pings.toLocaleString('en'), String(w.days_watched)]),
      foot: [[`total (${v2.length} series)`, total.toLocaleString('en'), '100.0000', v2.reduce((n, m) => n + m.pings, 0).toLocaleString('en'), '']],
    });
    const adjustments = tableOf(statement, 'adjustments');
    expect(adjustments.head).toEqual(['closed month', 'zone', 'day (UTC)', 'series', 'minutes watched', 'pings']);
    expect(new Set(adjustments.body.map((c) => c.slice(0, 3).join(' ')))).toEqual(new Set(['2026-09 UTC 2026-09-15']));
    expect(adjustments.foot).toEqual([['total', '', '', '', json.adjustments_total.minutes_watched.toLocaleString('en'), json.adjustments_total.pings.toLocaleString('en')]]);
    expect(tableOf(statement, 'versions').body).toEqual([['1', '2026-11-10T06:00:00Z', "the month's first close"],
      ['2', '2026-11-12T06:00:00Z', `reopened: ${reason}; ${wantChanged.length} figures changed from version 1`]]);
    expect(tableOf(statement, 'changes').body).toEqual(expect.arrayContaining(wantChanged.map((c) => ['2', c.series_id, c.field, c.from === null ? '-' : c.from.toLocaleString('en'), c.to!.toLocaleString('en')])));
    expect(tableOf(statement, 'changes').body).toHaveLength(wantChanged.length);
  }, 300_000);
});
