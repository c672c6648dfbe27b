import type { DuckDbWarehouse } from '../../export/warehouse/duckdb/duckdb-warehouse.js';
import type { RedshiftWarehouse } from '../../export/warehouse/redshift/redshift-warehouse.js';
import { warehouseFor } from '../../infra/backends.js';
import { ConfigError, type Config } from '../../infra/config.js';
import { csvText, REPORT_FORMATS, type ReportFormat } from './report.js';

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
  if (!REPORT_FORMATS.includes(format as ReportFormat)) throw new ConfigError(`--format=${format} is not one of ${REPORT_FORMATS.join(', ')}`);
  const wh = await warehouseFor(config);
  if (!wh) throw new ConfigError('pingroll sql reads the warehouse; PINGROLL_WAREHOUSE is none');
  try {
    const rows = (await (wh as DuckDbWarehouse | RedshiftWarehouse).query<Record<string, unknown>>(sql)).map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, cell(v)])));
    const columns = rows.length ? Object.keys(rows[0]!) : [];
    if (format === 'json') return JSON.stringify(rows, null, 2) + '\n';
    if (format === 'csv') return csvText(columns, rows.map((r) => columns.map((c) => r[c] as string | number | null)));
    const text = (v: unknown): string => (v === null ? 'NULL' : typeof v === 'number' ? v.toLocaleString('en', { maximumFractionDigits: 6 }) : String(v));
    const widths = columns.map((c) => Math.min(60, Math.max(c.length, ...rows.map((r) => text(r[c]).length))));
    const line = (vals: string[]): string => vals.map((v, i) => (typeof rows[0]?.[columns[i]!] === 'number' ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join('  ').trimEnd();
    return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map((r) => line(columns.map((c) => text(r[c])))), `(${rows.length} row${rows.length === 1 ? '' : 's'})`].join('\n') + '\n';
  } finally {
    await wh.close();
  }
}
