import type { DuckDbWarehouse } from '../../export/warehouse/duckdb/duckdb-warehouse.js';
import type { RedshiftWarehouse } from '../../export/warehouse/redshift/redshift-warehouse.js';
import { warehouseFor } from '../../infra/backends.js';
import { ConfigError, type Config } from '../../infra/config.js';
import { csvText } from '../csv-text.js';
import { REPORT_FORMATS, type ReportFormat } from './report.js';

/** A value as a cell: dates and times as text, big integers as numbers where they fit. */
function cell(v: unknown): string | number | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (typeof v === 'number' || typeof v === 'string') return v;
  return String(v);
}

/**
 * `pingroll sql "<query>"`: the warehouse's answer, for an analyst without a DuckDB shell (the
 * embedded file is opened read-only: a running job is never blocked, and nothing is changed).
 */
export async function sqlCommand(config: Config, sql: string, format = 'table'): Promise<string> {
  const wh = await queriedWarehouse(config, format);
  try {
    return formatRows(await wh.query<Record<string, unknown>>(sql), format as ReportFormat);
  } finally {
    await wh.close();
  }
}

/**
 * `pingroll sql` with no query: a prompt. Each statement, ended by `;` (over as many lines as it
 * takes), is run as `pingroll sql` runs one, and its rows printed; a failed one prints its error and
 * the prompt goes on. `.quit` or end of input ends it. Piped input runs each statement in turn
 * (`pingroll sql < statements`), without the prompt. What it printed, for the caller's last line.
 */
export async function sqlPrompt(config: Config, format = 'table', io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream; interactive: boolean }
  = { input: process.stdin, output: process.stdout, interactive: Boolean(process.stdin.isTTY) }): Promise<string> {
  const wh = await queriedWarehouse(config, format);
  const { createInterface } = await import('node:readline');
  const rl = createInterface({ input: io.input, output: io.interactive ? io.output : undefined, terminal: io.interactive });
  const say = (text: string): void => void io.output.write(text);
  let failed = 0;
  try {
    if (io.interactive) say(`pingroll sql on ${wh.description}, read-only: end each statement with ; and leave with .quit\n`);
    rl.setPrompt('pingroll> ');
    if (io.interactive) rl.prompt();
    let statement = '';
    for await (const line of rl) {
      if (statement === '' && ['.quit', '.exit', '\\q'].includes(line.trim())) break;
      statement += `${line}\n`;
      // Ended by a ; (comments aside); lines of only comments or blanks are dropped.
      const code = statement.replace(/--[^\n]*/g, '').trim();
      if (code === '' || code === ';' || !code.endsWith(';')) {
        if (code === '' || code === ';') statement = '';
        rl.setPrompt(statement ? '     ...> ' : 'pingroll> ');
        if (io.interactive) rl.prompt();
        continue;
      }
      try {
        say(formatRows(await wh.query<Record<string, unknown>>(statement), format as ReportFormat));
      } catch (err) {
        failed++;
        say(`error: ${(err as Error).message.split('\n')[0]}\n`);
      }
      statement = '';
      rl.setPrompt('pingroll> ');
      if (io.interactive) rl.prompt();
    }
    if (statement.replace(/--[^\n]*/g, '').trim()) say(`error: the last statement has no ; at its end, and was not run\n`);
  } finally {
    rl.close();
    await wh.close();
  }
  // Piped statements that failed make the command fail (exit 1), as one statement would.
  if (!io.interactive && failed) throw new Error(`${failed} statement(s) failed; their errors are above`);
  return '';
}

/** The configured warehouse, once the format is known good (a bad one, or no warehouse: exit 2). */
async function queriedWarehouse(config: Config, format: string): Promise<DuckDbWarehouse | RedshiftWarehouse> {
  if (!REPORT_FORMATS.includes(format as ReportFormat)) throw new ConfigError(`--format=${format} is not one of ${REPORT_FORMATS.join(', ')}`);
  const wh = await warehouseFor(config);
  if (!wh) throw new ConfigError('pingroll sql reads the warehouse; PINGROLL_WAREHOUSE is none');
  return wh as DuckDbWarehouse | RedshiftWarehouse;
}

/** Rows as the format prints them: a table (numbers to the right, NULL said), CSV (cells neutralized as every CSV pingroll writes) or JSON. */
function formatRows(raw: Array<Record<string, unknown>>, format: ReportFormat): string {
  const rows = raw.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, cell(v)])));
  const columns = rows.length ? Object.keys(rows[0]!) : [];
  if (format === 'json') return JSON.stringify(rows, null, 2) + '\n';
  if (format === 'csv') return csvText(columns, rows.map((r) => columns.map((c) => r[c] as string | number | null)));
  const text = (v: unknown): string => (v === null ? 'NULL' : typeof v === 'number' ? v.toLocaleString('en', { maximumFractionDigits: 6 }) : String(v));
  const widths = columns.map((c) => Math.min(60, Math.max(c.length, ...rows.map((r) => text(r[c]).length))));
  const line = (vals: string[]): string => vals.map((v, i) => (typeof rows[0]?.[columns[i]!] === 'number' ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map((r) => line(columns.map((c) => text(r[c])))), `(${rows.length} row${rows.length === 1 ? '' : 's'})`].join('\n') + '\n';
}
