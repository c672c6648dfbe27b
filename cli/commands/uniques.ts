/**
 * `pingroll uniques --from D1 --to D2 [--series S [--episode E]] [--format table|csv|json]`: exact
 * unique viewers over any range of days, from the viewer datasets in the configured warehouse
 * (DuckDB or Redshift, the same SQL): COUNT(DISTINCT viewer_key) over the range's daily rows. A
 * viewer of several days, or of several series, is one viewer; the line "all series" counts each
 * viewer once across every series.
 *
 * It refuses, rather than undercount or overcount, a range whose days were keyed with two secrets
 * (PINGROLL_VIEWER_KEY changed) or that holds days rolled up with no key: each says which days to
 * roll up again. Days of the range not published at all are named under the figures (JSON:
 * `unpublished`), as `report --month` names a month's.
 */
import type { DuckDbWarehouse } from '../../export/warehouse/duckdb/duckdb-warehouse.js';
import type { RedshiftWarehouse } from '../../export/warehouse/redshift/redshift-warehouse.js';
import { warehouseFor } from '../../infra/backends.js';
import { idKey, portableString, sqlString } from '../../lib/duckdb-engine.js';
import { ConfigError, parseDay, type Config } from '../../infra/config.js';
import { daysFrom } from '../../lib/utc-day.js';
import { isMissingTable } from '../../export/warehouse/warehouse.js';
import { csvText } from '../csv-text.js';
import { REPORT_FORMATS, type ReportFormat } from './report.js';

export interface UniquesRow { series_id: string; episode_id?: string; viewers: number; days: number }

export interface UniquesOptions { from?: string; to?: string; series?: string; episode?: string; format?: string }

/**
 * The SQL of one range's uniques (analysts' docs show the same): per series, or per episode of one
 * series. Ids compared as id || CHR(1): Redshift ignores trailing blanks in VARCHAR comparisons.
 */
export function uniquesSql(schema: string, from: string, to: string, series: string | null, episode: string | null): string {
  const range = `day >= DATE ${sqlString(from)} AND day <= DATE ${sqlString(to)}`;
  if (episode !== null) {
    return `SELECT MIN(series_id) AS series_id, MIN(episode_id) AS episode_id, COUNT(DISTINCT viewer_key) AS viewers, COUNT(DISTINCT day) AS days FROM ${schema}daily_episode_viewers
      WHERE ${range} AND ${idKey('series_id')} = ${idKey(portableString(series!))}${episode === '' ? '' : ` AND ${idKey('episode_id')} = ${idKey(portableString(episode))}`}
      GROUP BY ${idKey('series_id')}, ${idKey('episode_id')} ORDER BY ${idKey('MIN(series_id)')}, ${idKey('MIN(episode_id)')}`;
  }
  return `SELECT MIN(series_id) AS series_id, COUNT(DISTINCT viewer_key) AS viewers, COUNT(DISTINCT day) AS days FROM ${schema}daily_series_viewers
    WHERE ${range}${series === null ? '' : ` AND ${idKey('series_id')} = ${idKey(portableString(series))}`} GROUP BY ${idKey('series_id')} ORDER BY ${idKey('MIN(series_id)')}`;
}

export async function uniquesCommand(config: Config, opts: UniquesOptions): Promise<string> {
  const from = parseDay(opts.from, '--from'), to = parseDay(opts.to, '--to');
  if (to < from) throw new ConfigError(`--to ${to} is before --from ${from}`);
  if (opts.episode !== undefined && opts.series === undefined) throw new ConfigError('--episode needs --series (episode ids are per series)');
  const format = (opts.format ?? 'table') as ReportFormat;
  if (!REPORT_FORMATS.includes(format)) throw new ConfigError(`--format=${opts.format} is not one of ${REPORT_FORMATS.join(', ')}`);
  const wh = await warehouseFor(config);
  if (!wh) throw new ConfigError('pingroll uniques reads the warehouse; PINGROLL_WAREHOUSE is none');
  try {
    const schema = config.redshift ? `${config.redshift.schema}.` : '';
    const q = <T>(sql: string): Promise<T[]> => (wh as DuckDbWarehouse | RedshiftWarehouse).query<T>(sql);
    const range = `day >= DATE ${sqlString(from)} AND day <= DATE ${sqlString(to)}`;
    // Days keyed with different secrets never share a key: counted together they would overcount.
    // (A warehouse loaded before the viewer tables existed has none: said, not a catalog error.)
    const ids = await q<{ id: string; first: string; last: string }>(`SELECT LEFT(viewer_key, 8) AS id, CAST(MIN(day) AS VARCHAR(10)) AS first, CAST(MAX(day) AS VARCHAR(10)) AS last
      FROM ${schema}daily_series_viewers WHERE ${range} GROUP BY LEFT(viewer_key, 8) ORDER BY first`).catch((err: unknown) => {
      if (!isMissingTable(err)) throw err;
      throw new ConfigError(`${wh.description} has no viewer tables (${(err as Error).message.split('\n')[0]}): run pingroll warehouse init, then roll the days up with PINGROLL_VIEWER_KEY set`);
    });
    if (ids.length > 1) {
      const current = config.viewerKey?.id;
      const other = ids.filter((i) => i.id !== current);
      throw new ConfigError(`${from}..${to} mixes viewer keys made with ${ids.length} different PINGROLL_VIEWER_KEY secrets (${ids.map((i) => `${i.id}${i.id === current ? ', the current one' : ''}: ${i.first}..${i.last}`).join('; ')}); `
        + (current ? `roll the others' days up again with the current key (make backfill FROM=${other[0]!.first} TO=${other[other.length - 1]!.last})` : 'set PINGROLL_VIEWER_KEY to the one to keep and roll the other days up again (make backfill)'));
    }
    // Days with viewing but no viewer rows were rolled up without a key: counting without them would undercount.
    const unkeyed = await q<{ day: string }>(`SELECT DISTINCT CAST(day AS VARCHAR(10)) AS day FROM ${schema}daily_series_stats s WHERE ${range}
      AND NOT EXISTS (SELECT 1 FROM ${schema}daily_series_viewers v WHERE v.day = s.day) ORDER BY day`);
    if (unkeyed.length) {
      const days = unkeyed.map((d) => String(d.day));
      throw new ConfigError(`${days.length} day(s) of ${from}..${to} were rolled up without PINGROLL_VIEWER_KEY (${days.slice(0, 3).join(', ')}${days.length > 3 ? ', ...' : ''}): set it and roll them up again (make backfill FROM=${days[0]} TO=${days[days.length - 1]})`);
    }
    // Days of the range never published (not rolled up yet, or no rollup ran): counted as no viewers, so said.
    const published = new Set((await q<{ day: string }>(`SELECT CAST(day AS VARCHAR(10)) AS day FROM ${schema}daily_runs WHERE ${range}`)).map((d) => String(d.day)));
    const unpublished = daysFrom(from, to).filter((d) => !published.has(d));
    const episode = opts.episode === undefined ? null : opts.episode;
    type Row = { series_id: string; episode_id?: string; viewers: unknown; days: unknown };
    const rows: UniquesRow[] = (await q<Row>(uniquesSql(schema, from, to, opts.series ?? null, episode)))
      .map((r) => ({ series_id: r.series_id, ...(episode !== null ? { episode_id: r.episode_id! } : {}), viewers: Number(r.viewers), days: Number(r.days) }));
    // Every series together: each viewer once.
    const [all] = opts.series === undefined
      ? await q<{ viewers: unknown; days: unknown }>(`SELECT COUNT(DISTINCT viewer_key) AS viewers, COUNT(DISTINCT day) AS days FROM ${schema}daily_series_viewers WHERE ${range}`)
      : [];
    const total = all ? { viewers: Number(all.viewers), days: Number(all.days) } : null;
    if (format === 'json') return JSON.stringify({ from, to, source: wh.description, rows, allSeries: total, unpublished }, null, 2) + '\n';
    const header = episode !== null ? ['series_id', 'episode_id', 'viewers', 'days'] : ['series_id', 'viewers', 'days'];
    const cells = rows.map((r) => (episode !== null ? [r.series_id, r.episode_id!, r.viewers, r.days] : [r.series_id, r.viewers, r.days]));
    if (format === 'csv') return csvText(header, cells);
    const lines = [`Unique viewers, ${from}..${to} (UTC days), from ${wh.description}: each viewer once over the range`, '',
      `${(episode !== null ? 'series / episode' : 'series').padEnd(40)} ${'viewers'.padStart(12)} ${'days'.padStart(5)}`];
    for (const r of rows) lines.push(`${(episode !== null ? `${r.series_id} / ${r.episode_id}` : r.series_id).padEnd(40)} ${r.viewers.toLocaleString('en').padStart(12)} ${String(r.days).padStart(5)}`);
    if (total) lines.push(`${'all series'.padEnd(40)} ${total.viewers.toLocaleString('en').padStart(12)} ${String(total.days).padStart(5)}`);
    if (rows.length === 0) {
      // A series (or episode) the range has no viewer of is most likely an id typed wrong; else the days were not rolled up.
      const anyViewers = (await q<{ n: unknown }>(`SELECT COUNT(*) AS n FROM ${schema}daily_series_viewers WHERE ${range}`))[0];
      lines.push('', opts.series !== undefined && Number(anyViewers?.n ?? 0) > 0
        ? `(no viewer of series ${opts.series}${episode ? ` episode ${episode}` : ''} in ${from}..${to}, though other series have some: check the id; pingroll top --date D lists the day's series and episodes)`
        : `(no viewer rows for ${from}..${to}: roll its days up first, with PINGROLL_VIEWER_KEY set)`);
    }
    if (unpublished.length) lines.push('', `Not final: ${unpublished.length} day(s) of the range are not published (${unpublished.slice(0, 3).join(', ')}${unpublished.length > 3 ? ', ...' : ''}); see pingroll status`);
    return lines.join('\n') + '\n';
  } finally {
    await wh.close();
  }
}
