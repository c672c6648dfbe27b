import type { DuckDbWarehouse } from '../../export/warehouse/duckdb/duckdb-warehouse.js';
import type { RedshiftWarehouse } from '../../export/warehouse/redshift/redshift-warehouse.js';
import { warehouseFor } from '../../infra/backends.js';
import { sqlString } from '../../lib/duckdb-engine.js';
import { ConfigError, parseDay, type Config } from '../../infra/config.js';
import { dayPage, monthPage, writeReportPage } from './html-report.js';
import { addDays, addMonths, daysFrom } from '../../lib/utc-day.js';

export interface StatementRow { series_id: string; minutes_watched: number; share_of_month: number; pings: number; days_watched: number }

/** How complete the month's days were when published (from daily_runs); null where the warehouse has no daily_runs yet. */
export interface MonthCompleteness { days: number; complete: number; missing: string[]; provisional: string[]; incomplete: string[] }

/** The licensors' statement of a month: minutes watched per series and each one's share, and the days it lacks. */
export function formatStatement(month: string, rows: StatementRow[], source: string, completeness: MonthCompleteness | null = null): string {
  const total = rows.reduce((n, r) => n + r.minutes_watched, 0);
  const lines = [`Minutes watched, ${month} (UTC), from ${source}`, '',
    `${'series'.padEnd(32)} ${'minutes'.padStart(14)} ${'share'.padStart(8)} ${'days'.padStart(5)}`];
  for (const r of rows) {
    lines.push(`${r.series_id.padEnd(32)} ${r.minutes_watched.toLocaleString('en').padStart(14)} ${(r.share_of_month * 100).toFixed(2).padStart(7)}% ${String(r.days_watched).padStart(5)}`);
  }
  lines.push(`${'total'.padEnd(32)} ${total.toLocaleString('en').padStart(14)} ${rows.length ? '100.00%' : '-'.padStart(8)}`);
  if (rows.length === 0) lines.push('', `(no rows for ${month}: roll its days up first, e.g. make backfill FROM=${month}-01 TO=...)`);
  if (completeness) {
    const c = completeness;
    lines.push('', c.missing.length === 0 && c.incomplete.length === 0 && c.provisional.length === 0
      ? `All ${c.days} days of ${month} so far are published complete.`
      : `Not final: ${c.complete} of ${c.days} days of ${month} so far are published complete;`
        + `${c.missing.length ? ` not published: ${c.missing.join(', ')};` : ''}`
        + `${c.provisional.length ? ` provisional (their delivery days' final listings are still to come): ${c.provisional.join(', ')};` : ''}`
        + `${c.incomplete.length ? ` incomplete: ${c.incomplete.join(', ')};` : ''}`
        + ' see pingroll status');
  }
  return lines.join('\n') + '\n';
}

/** The month's days up to yesterday (a month in progress counts its days so far) against daily_runs. */
export function monthCompleteness(month: string, runs: Array<{ day: string; state: string }>, now: Date): MonthCompleteness {
  const first = `${month}-01`;
  const yesterday = addDays(now.toISOString().slice(0, 10), -1);
  const days = daysFrom(first, addDays(addMonths(first, 1), -1)).filter((d) => d <= yesterday);
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

/** The statement as CSV (RFC 4180: a field is quoted when it holds a comma, quote or line break). */
export function statementCsv(rows: StatementRow[]): string {
  return csvText(['series_id', 'minutes_watched', 'share_of_month', 'pings', 'days_watched'], rows.map((r) => [r.series_id, r.minutes_watched, r.share_of_month, r.pings, r.days_watched]));
}

/** A header and rows as CSV (RFC 4180: a field is quoted when it holds a comma, quote or line break; CRLF line ends). */
export function csvText(header: string[], rows: Array<Array<string | number | null>>): string {
  const field = (v: string | number | null): string => (v === null ? '' : /[",\r\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
  return [header.join(','), ...rows.map((r) => r.map(field).join(','))].join('\r\n') + '\r\n';
}

/** `pingroll report --month YYYY-MM [--format table|csv|json]`: the licensors' statement from the configured warehouse. */
export async function reportCommand(config: Config, opts: { month?: string; format?: string; date?: string; html?: string }, now = new Date()): Promise<string> {
  if (opts.html !== undefined) return htmlReportCommand(config, opts);
  const month = opts.month;
  if (!month || !/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) throw new ConfigError('report needs --month YYYY-MM (or --date D or --month M with --html FILE)');
  const format = (opts.format ?? 'table') as ReportFormat;
  if (!REPORT_FORMATS.includes(format)) throw new ConfigError(`--format=${opts.format} is not one of ${REPORT_FORMATS.join(', ')}`);
  const wh = await warehouseFor(config);
  if (!wh) throw new ConfigError('pingroll report reads the warehouse; PINGROLL_WAREHOUSE is none');
  try {
    // A report only reads: it creates nothing, in either warehouse (a missing table is said, not made).
    const schema = config.redshift ? `${config.redshift.schema}.` : '';
    type Row = { series_id: string; minutes_watched: bigint | number; share_of_month: number; pings: bigint | number; days_watched: bigint | number };
    const read = (sql: string): Promise<Row[]> => (wh as DuckDbWarehouse | RedshiftWarehouse).query<Row>(sql);
    // The month's own table, once the month is rolled up (pingroll rollup --month); until then the
    // daily rows, whose minutes, pings and days add up exactly (its distinct counts would not).
    let rows = await read(`SELECT series_id, minutes_watched, CAST(minutes_watched AS DOUBLE PRECISION) / NULLIF(SUM(minutes_watched) OVER (), 0) AS share_of_month, pings, days_watched
       FROM ${schema}monthly_series_stats WHERE month = DATE ${sqlString(month + '-01')} ORDER BY minutes_watched DESC, series_id`).catch(() => [] as Row[]);
    let source = `${wh.description} (monthly_series_stats)`;
    if (rows.length === 0) {
      rows = await read(`SELECT series_id, minutes_watched, share_of_month, pings, days_watched FROM ${schema}monthly_series_minutes
       WHERE month = DATE ${sqlString(month + '-01')} ORDER BY minutes_watched DESC, series_id`);
      source = `${wh.description} (daily rows; pingroll rollup --month ${month} writes the month's own table)`;
    }
    // daily_runs, where the warehouse has it (one not loaded since it came has not).
    const next = addMonths(`${month}-01`, 1);
    const runs = await (wh as DuckDbWarehouse | RedshiftWarehouse).query<{ day: string; state: string }>(
      `SELECT CAST(day AS VARCHAR(10)) AS day, state FROM ${schema}daily_runs WHERE day >= DATE ${sqlString(month + '-01')} AND day < DATE ${sqlString(next)}`)
      .catch(() => null);
    const statement = rows.map((r) => ({ series_id: r.series_id, minutes_watched: Number(r.minutes_watched), share_of_month: Number(r.share_of_month), pings: Number(r.pings), days_watched: Number(r.days_watched) }));
    const completeness = runs && monthCompleteness(month, runs.map((r) => ({ day: String(r.day), state: String(r.state) })), now);
    if (format === 'csv') return statementCsv(statement);
    if (format === 'json') return JSON.stringify({ month, source, rows: statement, completeness }, null, 2) + '\n';
    return formatStatement(month, statement, source, completeness);
  } finally {
    await wh.close();
  }
}

/** `report --date D --html FILE` or `report --month M --html FILE`: the self-contained page. */
async function htmlReportCommand(config: Config, opts: { month?: string; date?: string; html?: string }): Promise<string> {
  if (Boolean(opts.month) === Boolean(opts.date)) throw new ConfigError('report --html FILE needs --date YYYY-MM-DD or --month YYYY-MM (one of them)');
  if (opts.month && !/^\d{4}-(0[1-9]|1[0-2])$/.test(opts.month)) throw new ConfigError(`--month=${opts.month} is not a month; give it as YYYY-MM`);
  const day = opts.date ? parseDay(opts.date, '--date') : null;
  const wh = await warehouseFor(config);
  if (!wh) throw new ConfigError('pingroll report reads the warehouse; PINGROLL_WAREHOUSE is none');
  try {
    const schema = config.redshift ? `${config.redshift.schema}.` : '';
    const readable = wh as DuckDbWarehouse | RedshiftWarehouse;
    const page = day ? await dayPage(readable, schema, day) : await monthPage(readable, schema, opts.month!);
    const { bytes } = await writeReportPage(opts.html!, page);
    return `wrote ${opts.html} (${Math.round(bytes / 1024)} KiB, ${page.charts.length} charts; self-contained: open it anywhere)\n`;
  } finally {
    await wh.close();
  }
}
