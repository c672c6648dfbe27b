import { DuckDbWarehouse } from '../../export/warehouse/duckdb/duckdb-warehouse.js';
import { sqlString } from '../../lib/duckdb-engine.js';
import { ConfigError, parseDay, type Config } from '../../infra/config.js';

/** `pingroll top --date D`: the day's episodes by minutes watched, from the DuckDB warehouse. */
export async function topCommand(config: Config, opts: { date?: string; limit: string }): Promise<string> {
  const day = parseDay(opts.date, '--date');
  if (config.warehouse.kind !== 'duckdb') throw new ConfigError('pingroll top reads the DuckDB warehouse; set PINGROLL_WAREHOUSE=duckdb:<file>');
  const wh = new DuckDbWarehouse(config.warehouse.file);
  try {
    const rows = await wh.query<{ series_id: string; episode_id: string; minutes_watched: bigint; viewers: bigint; pings: bigint }>(
      `SELECT series_id, episode_id, minutes_watched, viewers, pings FROM daily_episode_stats WHERE day = DATE ${sqlString(day)}
       ORDER BY minutes_watched DESC, series_id, episode_id LIMIT ${Number(opts.limit) || 10}`);
    const lines = [`top episodes by minutes watched on ${day} (${config.warehouse.file}):`, '  minutes  viewers    pings  series / episode'];
    for (const r of rows) lines.push(`  ${String(r.minutes_watched).padStart(7)}  ${String(r.viewers).padStart(7)}  ${String(r.pings).padStart(7)}  ${r.series_id} / ${r.episode_id}`);
    if (rows.length === 0) lines.push('  (no rows: run make rollup DATE=' + day + ' first)');
    return lines.join('\n') + '\n';
  } finally {
    await wh.close();
  }
}
