import type { DuckDbWarehouse } from '../../export/warehouse/duckdb/duckdb-warehouse.js';
import type { RedshiftWarehouse } from '../../export/warehouse/redshift/redshift-warehouse.js';
import { objectStoreAt, warehouseFor } from '../../infra/backends.js';
import { idKey, sqlString } from '../../lib/duckdb-engine.js';
import { isMissingTable } from '../../export/warehouse/warehouse.js';
import { shareOfMonthSql } from '../../rollup/rules.js';
import { ConfigError, parseDay, type Config } from '../../infra/config.js';
import { dayPage, monthPage, writeReportPage } from './html-report.js';
import { addDays, addMonths, daysFrom } from '../../lib/utc-day.js';
import { monthOption, zoneOption } from './close.js';
import { csvText } from '../csv-text.js';
import { UNKNOWN_COUNTRY, UNKNOWN_COUNTRY_MEANING } from '../../ingest/audience/geo-lookup.js';
import { versionLine } from '../../infra/version.js';
import type { Close } from '../../state/closes.js';
import { readCloseRecord } from '../../state/close-record.js';
import { completenessLine, statementCsv, statementDocument, statementJson, statementText, type AdjustmentRow, type ClosedStatement, type MonthCompleteness, type StatementDocument,
  type StatementRow, type VersionEntry } from './statement-document.js';
import { localDayStartMs, localMonthMs, UTC, utcDaysOfLocalMonth } from '../../lib/time-zone.js';


/**
 * The UTC days that hold the month's minutes in `tz` (the days its close checks: a month in a zone
 * starts or ends inside a UTC day of the month before or after) against daily_runs. A month in
 * progress counts its days up to yesterday; once it is over, every one of them, the UTC day it
 * ended in too, though that day is not over yet.
 */
export function monthCompleteness(month: string, runs: Array<{ day: string; state: string }>, now: Date, tz = UTC): MonthCompleteness {
  const { from, to } = utcDaysOfLocalMonth(month, tz);
  const yesterday = addDays(now.toISOString().slice(0, 10), -1);
  const over = localMonthMs(month, tz).endMs <= now.getTime();
  const days = daysFrom(from, to).filter((d) => over || d <= yesterday);
  const state = new Map(runs.map((r) => [r.day, r.state]));
  return {
    days: days.length,
    complete: days.filter((d) => state.get(d) === 'complete').length,
    missing: days.filter((d) => !state.has(d)),
    provisional: days.filter((d) => state.get(d) === 'provisional'),
    incomplete: days.filter((d) => state.has(d) && state.get(d) !== 'complete' && state.get(d) !== 'provisional'),
  };
}

export const REPORT_FORMATS = ['table', 'csv', 'json'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];


/** What `--by` splits the statement by. */
export const REPORT_SPLITS = ['country'] as const;

/**
 * `pingroll report --month YYYY-MM [--tz Z] [--by country] [--format table|csv|json]`: the licensors'
 * statement from the configured warehouse: a closed month's issued statement (its latest version), or
 * an open month's figures so far; and the adjustments to earlier months reported on it. With
 * `--by country`, the statement split by the viewers' country instead.
 */
export async function reportCommand(config: Config, opts: { month?: string; tz?: string; format?: string; date?: string; html?: string; by?: string }, now = new Date()): Promise<string> {
  if (opts.by !== undefined && opts.html !== undefined) throw new ConfigError('--by splits the statement of --month; it has no HTML page: leave out --html');
  if (opts.html !== undefined) return htmlReportCommand(config, opts, now);
  if (!opts.month) throw new ConfigError('report needs --month YYYY-MM (or --date D or --month M with --html FILE)');
  const month = monthOption(opts.month, 'report');
  const tz = zoneOption(opts.tz);
  const format = (opts.format ?? 'table') as ReportFormat;
  if (!REPORT_FORMATS.includes(format)) throw new ConfigError(`--format=${opts.format} is not one of ${REPORT_FORMATS.join(', ')}`);
  if (opts.by !== undefined && !(REPORT_SPLITS as readonly string[]).includes(opts.by)) throw new ConfigError(`--by=${opts.by} is not one of ${REPORT_SPLITS.join(', ')}`);
  // The split is read from daily rows, whose days are UTC days: a zone's month starts and ends
  // inside them, so no sum of them is its minutes.
  if (opts.by !== undefined && tz !== 'UTC') {
    throw new ConfigError(`--by ${opts.by} with --tz ${tz}: daily rows are UTC days, so a split by ${opts.by} is for UTC months; the statement without --by covers ${tz}`);
  }
  const wh = await warehouseFor(config);
  if (!wh) throw new ConfigError('pingroll report reads the warehouse; PINGROLL_WAREHOUSE is none');
  try {
    const schema = config.redshift ? `${config.redshift.schema}.` : '';
    const readable = wh as DuckDbWarehouse | RedshiftWarehouse;
    if (opts.by !== undefined) return await countryReport(readable, schema, month, format, now);
    const doc = await statementOf(config, readable, schema, month, tz, now);
    return format === 'csv' ? statementCsv(doc) : format === 'json' ? statementJson(doc) : statementText(doc);
  } finally {
    await wh.close();
  }
}

/**
 * A month's statement as a document (statement-document.ts): the warehouse's figures and
 * adjustments, the versions issued with their reasons, changes and the code that issued them (the
 * close's record), the days not yet complete (an open month), and this code's version.
 */
export async function statementOf(config: Config, wh: Readable, schema: string, month: string, tz: string, now: Date): Promise<StatementDocument> {
  const s = await monthStatement(wh, schema, month, tz);
  const versions = await versionHistory(config, month, tz, s.versions);
  // A closed month's: the code that issued the version shown (its close's record keeps it), and this one.
  const issuedBy = s.closed ? versions.find((v) => v.version === s.closed!.version)?.codeVersion ?? 'not recorded (issued before closes kept it)' : null;
  return statementDocument({
    month, tz, source: s.source, codeVersion: issuedBy === null ? versionLine() : `${issuedBy} issued it; ${versionLine()} wrote this document`, rows: s.rows, closed: s.closed, adjustments: s.adjustments,
    versions,
    completeness: s.closed ? null : await publishedCompleteness(wh, schema, month, tz, now),
    notes: s.rows.some((r) => r.pings === null) ? [`pings: not shown for ${month} in ${tz} yet: they are counted per UTC day, and a month in a zone starts and ends inside UTC days; pingroll rollup --month ${month} --tz ${tz} rolls up the month's own table, with them, once it is over`] : [],
  });
}

/**
 * The versions issued (from the warehouse), each with its reason and what it changed from the one
 * before, and the code that issued it, which only the close's record keeps (CLOSES, datasets/layout.ts, in
 * PINGROLL_OUTPUT); where the record cannot be read, each version after the first says so.
 */
async function versionHistory(config: Config, month: string, tz: string, issued: ClosedStatement[]): Promise<VersionEntry[]> {
  const entries: VersionEntry[] = issued.map((v) => ({ version: v.version, closedAt: v.closedAt, reason: null, changed: v.version === 1 ? [] : null }));
  if (issued.length === 0) return entries;
  let record: Close | null = null;
  let unread: string | null = null;
  try {
    record = await readCloseRecord(await objectStoreAt(config.output, config), month, tz);
  } catch (err) {
    unread = `its reason and changes are in the close's record, which could not be read from ${config.output.url}: ${err instanceof Error ? err.message : String(err)}`;
  }
  return entries.map((e) => {
    const r = record?.versions.find((v) => v.version === e.version);
    if (r) return { ...e, reason: r.reason, changed: r.changed ?? e.changed, ...(r.codeVersion ? { codeVersion: r.codeVersion } : {}) };
    if (e.version === 1) return e;
    return { ...e, unrecorded: unread ?? `its reason and changes are not in the close's record in ${config.output.url}` };
  });
}

/** How complete an open month's UTC days were published, from daily_runs; null where the warehouse has no daily_runs (one not loaded since it came). */
async function publishedCompleteness(wh: Readable, schema: string, month: string, tz: string, now: Date): Promise<MonthCompleteness | null> {
  const { from, to } = utcDaysOfLocalMonth(month, tz);
  const runs = await wh.query<{ day: string; state: string }>(
    `SELECT CAST(day AS VARCHAR(10)) AS day, state FROM ${schema}daily_runs WHERE day >= DATE ${sqlString(from)} AND day < DATE ${sqlString(addDays(to, 1))}`)
    .catch(() => null);
  return runs && monthCompleteness(month, runs.map((r) => ({ day: String(r.day), state: String(r.state) })), now, tz);
}

/** One row of a month split by country: a series' minutes, pings and days from one country, and that country's share of the series' minutes in the split (null when the series has none). */
export interface CountryRow { series_id: string; country: string; minutes_watched: number; pings: number; days_watched: number; share_of_series: number | null }

/** A series whose minutes by country do not add up to its minutes on the statement. */
export interface CountryDifference { series_id: string; country_minutes: number; statement_minutes: number }

/**
 * The month's days that have daily_series_stats rows and no daily_country_stats rows, per series
 * (days rolled up before the country table existed): where a series' country minutes fall short of
 * its statement's. In SQL that runs on DuckDB, PostgreSQL and Redshift.
 */
export async function daysWithoutCountries(wh: Readable, schema: string, month: string): Promise<Map<string, string[]>> {
  const first = sqlString(`${month}-01`);
  const next = sqlString(addMonths(`${month}-01`, 1));
  const rows = await wh.query<{ series_id: string; day: string }>(`SELECT MIN(s.series_id) AS series_id, CAST(s.day AS VARCHAR) AS day
    FROM ${schema}daily_series_stats s WHERE s.day >= DATE ${first} AND s.day < DATE ${next}
      AND NOT EXISTS (SELECT 1 FROM ${schema}daily_country_stats c WHERE c.day = s.day AND ${idKey('c.series_id')} = ${idKey('s.series_id')})
    GROUP BY ${idKey('s.series_id')}, s.day ORDER BY 2`);
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.series_id, [...(out.get(r.series_id) ?? []), String(r.day).slice(0, 10)]);
  return out;
}

/**
 * A UTC month's daily_country_stats summed over its days, in SQL that runs on DuckDB, PostgreSQL and
 * Redshift: per series and country, minutes and pings (additive over days, so the sums are exact) and
 * the days with a row. Sessions and viewers are distinct counts per day: their sums would overcount,
 * so they are left out. Ordered by the series' minutes in the split, then the country's.
 */
export async function countrySplit(wh: Readable, schema: string, month: string): Promise<CountryRow[]> {
  type Row = { series_id: string; country: string; minutes_watched: bigint | number | string; pings: bigint | number | string; days_watched: bigint | number | string; share_of_series: number | string | null };
  const first = sqlString(`${month}-01`);
  const next = sqlString(addMonths(`${month}-01`, 1));
  const rows = await wh.query<Row>(`WITH by_country AS (
      SELECT MIN(series_id) AS series_id, country, SUM(minutes_watched) AS country_minutes, SUM(pings) AS country_pings, COUNT(DISTINCT day) AS country_days
      FROM ${schema}daily_country_stats WHERE day >= DATE ${first} AND day < DATE ${next}
      GROUP BY ${idKey('series_id')}, country),
    by_series AS (SELECT ${idKey('series_id')} AS series_key, SUM(country_minutes) AS series_minutes FROM by_country GROUP BY ${idKey('series_id')})
    SELECT c.series_id, c.country, c.country_minutes AS minutes_watched, c.country_pings AS pings, c.country_days AS days_watched,
      CAST(c.country_minutes AS DOUBLE PRECISION) / NULLIF(CAST(s.series_minutes AS DOUBLE PRECISION), 0) AS share_of_series
    FROM by_country c JOIN by_series s ON s.series_key = ${idKey('c.series_id')}
    ORDER BY s.series_minutes DESC, s.series_key, c.country_minutes DESC, c.country`);
  return rows.map((r) => ({ series_id: r.series_id, country: r.country, minutes_watched: Number(r.minutes_watched), pings: Number(r.pings), days_watched: Number(r.days_watched),
    share_of_series: r.share_of_series === null ? null : Number(r.share_of_series) }));
}

/**
 * The series whose minutes by country differ from the statement's: in the split's order, then the
 * statement's series the split lacks. A session that watched one minute from two countries counts it
 * in each (distinct counts are per group, contract §10), so a series' country minutes can exceed the
 * statement's; fewer mean days whose country rows are missing.
 */
export function countryDifferences(split: CountryRow[], statement: StatementRow[]): CountryDifference[] {
  const byCountry = new Map<string, number>();
  for (const r of split) byCountry.set(r.series_id, (byCountry.get(r.series_id) ?? 0) + r.minutes_watched);
  const stated = new Map(statement.map((r) => [r.series_id, r.minutes_watched]));
  const series = [...byCountry.keys(), ...statement.map((r) => r.series_id).filter((s) => !byCountry.has(s))];
  return series.map((s) => ({ series_id: s, country_minutes: byCountry.get(s) ?? 0, statement_minutes: stated.get(s) ?? 0 }))
    .filter((d) => d.country_minutes !== d.statement_minutes);
}

/** The split by country as CSV: the same cells, neutralized the same way, as the statement's. */
export function countryCsv(rows: CountryRow[]): string {
  return csvText(['series_id', 'country', 'minutes_watched', 'pings', 'days_watched', 'share_of_series'],
    rows.map((r) => [r.series_id, r.country, r.minutes_watched, r.pings, r.days_watched, r.share_of_series]));
}

/** The split by country as a table: which statement it accompanies, the rows, and every series whose minutes differ from the statement's. */
export function formatCountrySplit(month: string, rows: CountryRow[], source: string, extra: { closed: ClosedStatement | null; differences: CountryDifference[]; completeness: MonthCompleteness | null; daysWithout?: Map<string, string[]> }): string {
  const lines = [extra.closed
    ? `Minutes watched by country, ${month} (UTC), from ${source}: accompanies statement version ${extra.closed.version}, closed ${extra.closed.closedAt} (the close froze the month's daily rows)`
    : `Minutes watched by country, ${month} (UTC), from ${source}: the month is not closed`, '',
  `${'series'.padEnd(32)} ${'country'.padEnd(7)} ${'minutes'.padStart(14)} ${'share'.padStart(8)} ${'pings'.padStart(12)} ${'days'.padStart(5)}`];
  for (const r of rows) {
    const share = r.share_of_series === null ? '-'.padStart(8) : `${(r.share_of_series * 100).toFixed(2).padStart(7)}%`;
    lines.push(`${r.series_id.padEnd(32)} ${r.country.padEnd(7)} ${r.minutes_watched.toLocaleString('en').padStart(14)} ${share} ${r.pings.toLocaleString('en').padStart(12)} ${String(r.days_watched).padStart(5)}`);
  }
  lines.push('', 'share: of the series\' minutes in this split. Sessions and viewers are not shown: they are distinct counts per day, which do not add up over days.');
  if (rows.some((r) => r.country === UNKNOWN_COUNTRY)) lines.push(`${UNKNOWN_COUNTRY}: ${UNKNOWN_COUNTRY_MEANING}.`);
  if (extra.differences.length) {
    lines.push('');
    for (const d of extra.differences) {
      const by = d.country_minutes - d.statement_minutes;
      lines.push(`${d.series_id}: ${d.country_minutes.toLocaleString('en')} minutes by country, ${d.statement_minutes.toLocaleString('en')} on the statement (${by > 0 ? '+' : ''}${by.toLocaleString('en')})`);
    }
    // Why, from the data: more is a minute seen from two countries; fewer, the days the split lacks.
    if (extra.differences.some((d) => d.country_minutes > d.statement_minutes)) {
      lines.push('More: a minute a session watched from two countries counts in each country (distinct counts are per group, contract §10).');
    }
    for (const d of extra.differences.filter((x) => x.country_minutes < x.statement_minutes)) {
      const days = extra.daysWithout?.get(d.series_id) ?? [];
      lines.push(days.length
        ? `${d.series_id}: fewer by country: ${days.length} day${days.length > 1 ? 's' : ''} of it ${days.length > 1 ? 'have' : 'has'} no daily_country_stats rows (rolled up before the table existed): ${days.slice(0, 10).join(', ')}${days.length > 10 ? `, and ${days.length - 10} more` : ''}; pingroll backfill --force over them fills them in${extra.closed ? ' (a closed month\'s days: with its reopen)' : ''}`
        : extra.closed
          ? `${d.series_id}: fewer by country, and no day of it lacks country rows: the daily rows and the statement disagree; see pingroll status for the month's days (a defect: please report it)`
          : `${d.series_id}: fewer by country: the month's figures were taken before some of its days were rolled up again (pingroll rollup --month ${month} takes them again)`);
    }
  }
  if (extra.completeness && !extra.closed) lines.push('', completenessLine(month, UTC, extra.completeness));
  return lines.join('\n') + '\n';
}

/** `report --month M --by country`: the split, with the statement it accompanies and where the two differ. */
async function countryReport(wh: Readable, schema: string, month: string, format: ReportFormat, now: Date): Promise<string> {
  // A warehouse loaded before daily_country_stats existed has no such table: the same as no rows.
  const rows = await countrySplit(wh, schema, month).catch((err: unknown) => {
    if (isMissingTable(err)) return [];
    throw err;
  });
  if (rows.length === 0) throw new ConfigError(`no daily_country_stats rows for ${month}: run pingroll rollup for its days first (make backfill FROM=${month}-01 TO=...)`);
  const s = await monthStatement(wh, schema, month, 'UTC', { adjustments: false });
  const differences = countryDifferences(rows, s.rows);
  const daysWithout = differences.some((d) => d.country_minutes < d.statement_minutes) ? await daysWithoutCountries(wh, schema, month) : new Map<string, string[]>();
  const source = `${wh.description} (daily_country_stats)`;
  if (format === 'csv') return countryCsv(rows);
  const completeness = s.closed ? null : await publishedCompleteness(wh, schema, month, UTC, now);
  if (format === 'json') return JSON.stringify({ month, tz: 'UTC', by: 'country', source, closed: s.closed, rows,
    differences: differences.map((d) => (daysWithout.has(d.series_id) && d.country_minutes < d.statement_minutes ? { ...d, days_without_country_rows: daysWithout.get(d.series_id) } : d)), completeness, codes: { [UNKNOWN_COUNTRY]: UNKNOWN_COUNTRY_MEANING } }, null, 2) + '\n';
  return formatCountrySplit(month, rows, source, { closed: s.closed, differences, completeness, daysWithout });
}

/** A warehouse that answers queries (both do; the tests' PostgreSQL too). */
export interface Readable { readonly description: string; query<T>(sql: string): Promise<T[]> }

/**
 * A month's statement from the warehouse, in SQL that runs on DuckDB, PostgreSQL and Redshift: the
 * latest issued version when the month is closed in `tz` (and every version issued, oldest first);
 * else its monthly_series_stats in `tz`; else (UTC) the daily rows, whose minutes, pings and days add
 * up exactly (its distinct counts would not), or (a zone) its minutes so far (zoneMinutesSoFar). With
 * the adjustments reported on it, per closed month, UTC day and series.
 */
export async function monthStatement(wh: Readable, schema: string, month: string, tz: string, opts: { adjustments?: boolean } = {}): Promise<{ rows: StatementRow[]; adjustments: AdjustmentRow[]; source: string; closed: ClosedStatement | null; versions: ClosedStatement[] }> {
  type Row = { series_id: string; minutes_watched: bigint | number; share_of_month: number; pings: bigint | number; days_watched: bigint | number };
  const first = sqlString(`${month}-01`);
  const zone = sqlString(tz);
  const rowsOf = (r: Row[]): StatementRow[] => r.map((x) => ({ series_id: x.series_id, minutes_watched: Number(x.minutes_watched), share_of_month: Number(x.share_of_month), pings: Number(x.pings), days_watched: Number(x.days_watched) }));
  // A table a warehouse does not have yet (loaded before it came) has no rows.
  const none = <T>(q: Promise<T[]>): Promise<T[]> => q.catch(() => [] as T[]);
  const versions = await none(wh.query<{ version: bigint | number; closed_at: string }>(
    `SELECT version, CAST(MAX(closed_at) AS VARCHAR(32)) AS closed_at FROM ${schema}monthly_statements WHERE month = DATE ${first} AND tz = ${zone} GROUP BY version ORDER BY version DESC`));
  // Per closed month, UTC day and series (episodes added up): what each adjustment belongs to.
  // (`--by country` shows none: not asked for.)
  const adjustments = opts.adjustments === false ? [] : (await none(wh.query<{ closed_month: string; day: string; series_id: string; pings: bigint | number; minutes_watched: bigint | number }>(
    `SELECT CAST(closed_month AS VARCHAR(10)) AS closed_month, CAST(day AS VARCHAR(10)) AS day, MIN(series_id) AS series_id, SUM(pings) AS pings, SUM(minutes_watched) AS minutes_watched
     FROM ${schema}statement_adjustments WHERE reported_month = DATE ${first} AND tz = ${zone} AND (pings > 0 OR minutes_watched > 0)
     GROUP BY closed_month, day, ${idKey('series_id')} ORDER BY closed_month, day, ${idKey('MIN(series_id)')}`)))
    .map((a) => ({ closed_month: String(a.closed_month), tz, day: String(a.day), series_id: a.series_id, pings: Number(a.pings), minutes_watched: Number(a.minutes_watched) }));
  const issued = versions.map((v) => ({ version: Number(v.version), closedAt: String(v.closed_at).replace(' ', 'T').slice(0, 19) + 'Z' })).reverse();
  if (issued.length) {
    const latest = issued.at(-1)!;
    const rows = await wh.query<Row>(`SELECT series_id, minutes_watched, share_of_month, pings, days_watched FROM ${schema}monthly_statements
      WHERE month = DATE ${first} AND tz = ${zone} AND version = ${latest.version} ORDER BY minutes_watched DESC, series_id`);
    return { rows: rowsOf(rows), adjustments, source: `${wh.description} (monthly_statements)`, closed: latest, versions: issued };
  }
  let rows = await none(wh.query<Row>(`SELECT series_id, minutes_watched, ${shareOfMonthSql('minutes_watched')} AS share_of_month, pings, days_watched
     FROM ${schema}monthly_series_stats WHERE month = DATE ${first} AND COALESCE(tz, 'UTC') = ${zone} ORDER BY minutes_watched DESC, series_id`));
  let source = `${wh.description} (monthly_series_stats)`;
  if (rows.length === 0 && tz !== UTC) {
    // Its figures so far, as a UTC month's come from its daily rows: a zone's month starts and ends
    // inside UTC days, so from the minutes of its series instead (the month's own table waits until
    // it is over: rollup --month).
    return {
      rows: await zoneMinutesSoFar(wh, schema, month, tz), adjustments, closed: null, versions: [],
      source: `${wh.description} (daily_series_minutes: each UTC minute of the month in ${tz})`,
    };
  }
  if (rows.length === 0) {
    rows = await wh.query<Row>(`SELECT series_id, minutes_watched, share_of_month, pings, days_watched FROM ${schema}monthly_series_minutes
     WHERE month = DATE ${first} ORDER BY minutes_watched DESC, series_id`);
    source = `${wh.description} (daily rows; pingroll rollup --month ${month} writes the month's own table)`;
  }
  return { rows: rowsOf(rows), adjustments, source, closed: null, versions: [] };
}

/**
 * A zone's month from daily_series_minutes, in SQL that runs on DuckDB, PostgreSQL and Redshift:
 * each series' minutes (the sessions of each UTC minute of the month: the distinct (session, minute)
 * pairs that are its minutes watched, contract §5) and its local days with a minute. Each minute's
 * local day by the instants the zone's days start at, computed here (DST and odd offsets alike), so
 * that no warehouse needs the zone's rules. No pings: they are counted per UTC day.
 */
async function zoneMinutesSoFar(wh: Readable, schema: string, month: string, tz: string): Promise<StatementRow[]> {
  const { startMs, endMs } = localMonthMs(month, tz);
  const { from, to } = utcDaysOfLocalMonth(month, tz);
  const at = (ms: number): string => `TIMESTAMP ${sqlString(new Date(ms).toISOString().slice(0, 19).replace('T', ' '))}`;
  const localDays = daysFrom(`${month}-01`, addDays(addMonths(`${month}-01`, 1), -1));
  const localDay = `CASE ${localDays.slice(1).map((d, i) => `WHEN minute < ${at(localDayStartMs(d, tz))} THEN ${i + 1}`).join(' ')} ELSE ${localDays.length} END`;
  // A warehouse loaded before the table existed has no rows of it.
  const rows = await wh.query<{ series_id: string; minutes_watched: bigint | number | string; share_of_month: number | string; days_watched: bigint | number | string }>(
    `SELECT series_id, minutes_watched, ${shareOfMonthSql('minutes_watched')} AS share_of_month, days_watched FROM (
       SELECT MIN(series_id) AS series_id, SUM(sessions) AS minutes_watched, COUNT(DISTINCT ${localDay}) AS days_watched FROM ${schema}daily_series_minutes
       WHERE day >= DATE ${sqlString(from)} AND day <= DATE ${sqlString(to)} AND minute >= ${at(startMs)} AND minute < ${at(endMs)}
       GROUP BY ${idKey('series_id')}) m
     ORDER BY minutes_watched DESC, ${idKey('series_id')}`).catch((err: unknown) => {
    if (isMissingTable(err)) return [];
    throw err;
  });
  return rows.map((r) => ({ series_id: r.series_id, minutes_watched: Number(r.minutes_watched), share_of_month: Number(r.share_of_month), pings: null, days_watched: Number(r.days_watched) }));
}

/** `report --date D --html FILE` or `report --month M --html FILE`: the self-contained page. */
async function htmlReportCommand(config: Config, opts: { month?: string; tz?: string; date?: string; html?: string }, now: Date): Promise<string> {
  if (Boolean(opts.month) === Boolean(opts.date)) throw new ConfigError('report --html FILE needs --date YYYY-MM-DD or --month YYYY-MM (one of them)');
  if (opts.month) monthOption(opts.month, 'report');
  // The pages' charts are of UTC days, which a zone's month starts and ends inside.
  const tz = zoneOption(opts.tz);
  if (tz !== UTC) throw new ConfigError(`--html draws UTC days: a month in ${tz} is written by pingroll report --month ${opts.month ?? 'YYYY-MM'} --tz ${tz} (--format table, csv or json); leave out --tz for the page`);
  const day = opts.date ? parseDay(opts.date, '--date') : null;
  const wh = await warehouseFor(config);
  if (!wh) throw new ConfigError('pingroll report reads the warehouse; PINGROLL_WAREHOUSE is none');
  try {
    const schema = config.redshift ? `${config.redshift.schema}.` : '';
    const readable = wh as DuckDbWarehouse | RedshiftWarehouse;
    // A warehouse that cannot give the statement (one loaded before its tables came) still gets its charts.
    const page = day ? await dayPage(readable, schema, day)
      : await monthPage(readable, schema, opts.month!, await statementOf(config, readable, schema, opts.month!, UTC, now).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err)))));
    const { bytes } = await writeReportPage(opts.html!, page);
    return `wrote ${opts.html} (${Math.round(bytes / 1024)} KiB, ${page.charts.length} charts; self-contained: open it anywhere)\n`;
  } finally {
    await wh.close();
  }
}
