import { DuckDbWarehouse } from '../../../export/warehouse/duckdb/duckdb-warehouse.js';
import type { RedshiftWarehouse } from '../../../export/warehouse/redshift/redshift-warehouse.js';
import { warehouseFor } from '../../backends.js';
import { sqlString } from '../../../lib/duckdb-engine.js';
import { ConfigError, type Config } from '../../config.js';

export interface StatementRow { series_id: string; minutes_watched: number; share_of_month: number; pings: number; days_watched: number }

/** The licensors' statement of a month: minutes watched per series and each one's share. */
export function formatStatement(month: string, rows: StatementRow[], source: string): string {
  const total = rows.reduce((n, r) => n + r.minutes_watched, 0);
  const lines = [`Minutes watched, ${month} (UTC), from ${source}`, '',
    `${'series'.padEnd(32)} ${'minutes'.padStart(14)} ${'share'.padStart(8)} ${'days'.padStart(5)}`];
  for (const r of rows) {
    lines.push(`${r.series_id.padEnd(32)} ${r.minutes_watched.toLocaleString('en').padStart(14)} ${(r.share_of_month * 100).toFixed(2).padStart(7)}% ${String(r.days_watched).padStart(5)}`);
  }
  lines.push(`${'total'.padEnd(32)} ${total.toLocaleString('en').padStart(14)} ${rows.length ? '100.00%' : '-'.padStart(8)}`);
  if (rows.length === 0) lines.push('', `(no rows for ${month}: roll its days up first, e.g. make backfill FROM=${month}-01 TO=...)`);
  return lines.join('\n') + '\n';
}

/** `pingroll report --month YYYY-MM`: the licensors' statement from the configured warehouse. */
export async function reportCommand(config: Config, opts: { month?: string }): Promise<string> {
  const month = opts.month;
  if (!month || !/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) throw new ConfigError('report needs --month YYYY-MM');
  const wh = await warehouseFor(config);
  if (!wh) throw new ConfigError('pingroll report reads the warehouse; PINGROLL_WAREHOUSE is none');
  try {
    // The embedded warehouse is only read (it may be held open by analysts, and a report creates nothing).
    if (!(wh instanceof DuckDbWarehouse)) await wh.init();
    const schema = config.redshift ? `${config.redshift.schema}.` : '';
    const rows = await (wh as DuckDbWarehouse | RedshiftWarehouse).query<{ series_id: string; minutes_watched: bigint | number; share_of_month: number; pings: bigint | number; days_watched: bigint | number }>(
      `SELECT series_id, minutes_watched, share_of_month, pings, days_watched FROM ${schema}monthly_series_minutes
       WHERE month = DATE ${sqlString(month + '-01')} ORDER BY minutes_watched DESC, series_id`);
    return formatStatement(month, rows.map((r) => ({ series_id: r.series_id, minutes_watched: Number(r.minutes_watched), share_of_month: Number(r.share_of_month), pings: Number(r.pings), days_watched: Number(r.days_watched) })), wh.description);
  } finally {
    await wh.close();
  }
}
