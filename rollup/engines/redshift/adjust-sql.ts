/**
 * One closed day's adjustments (contract §9) as portable SQL (Redshift, PostgreSQL, DuckDB), what
 * rollup/engines/duckdb/adjustments.ts computes in this process: the day's rows deduplicated against
 * everything still staged for it; the keys only pending rows have are new, and their survivors are the
 * adjustment's pings; minutes are the (session, UTC minute) pairs of those pings that the closed
 * figures of the episode did not have; only minutes of the closed month count.
 *
 * Where it differs from the DuckDB text: ids are grouped, compared and counted by their `_k` forms
 * (idKey: Redshift ignores trailing blanks); a minute of the closed month is one in `[fromMs, toMs)`,
 * the day's part of the month worked out here (a local month is one stretch of time, its edges whole
 * minutes), so no warehouse needs the zone's rules; integer division through FLOOR.
 */
import { idKey, sqlString } from '../../../lib/duckdb-engine.js';
import { DAY_MS, dayStartMs } from '../../../lib/utc-day.js';
import { localMonthMs } from '../../../lib/time-zone.js';
import type { DayAdjustment } from '../../engine.js';
import { MAX_PINGS_PER_SESSION_MINUTE, ruledRows, type CatalogRule } from '../../rules.js';

export interface AdjustSql {
  day: Omit<DayAdjustment, 'counted' | 'pending'>;
  /** Temporary tables of the staged shape: what the closed figures counted, and what is pending. */
  counted: string;
  pending: string;
  /** The table the rows go into (statement_adjustments' columns). */
  into: string;
  catalog: CatalogRule | null;
  /**
   * The ping-id window (contract §4, §9): W, a table of the ping ids of the published days at most W
   * days around the day (PING_IDS_TABLE_COLUMNS), and one of the day's own as closed; null: none.
   */
  window?: { days: number; around: string | null; own: string | null } | null;
}

/**
 * The ping ids the adjustment counts, after adjustStatements (its new pings with an id, from `adj_new`),
 * in a day's ping-ids columns (PING_IDS_TABLE_COLUMNS) sorted by id: each counted, none a repeat.
 */
export const ADJUSTED_PING_IDS_SQL = 'SELECT ping_id, event_ms, FALSE AS "repeat", TRUE AS counted FROM adj_new WHERE ping_id IS NOT NULL ORDER BY ping_id';

/** The statements, in order, in one transaction. */
export function adjustStatements({ day: a, counted, pending, into, catalog, window = null }: AdjustSql): string[] {
  const W = (window?.days ?? 0) * DAY_MS;
  const start = dayStartMs(a.day);
  const month = localMonthMs(a.closedMonth, a.tz);
  const [fromMs, toMs] = [Math.max(start, month.startMs), Math.min(start + DAY_MS, month.endMs)];
  const inDay = `event_ms >= ${start} AND event_ms < ${start + DAY_MS}`;
  const inMonth = `event_ms >= ${fromMs} AND event_ms < ${toMs}`;
  const key = idKey('COALESCE(ping_id, natural_key)');
  const minute = 'CAST(FLOOR(event_ms / 60000.0) AS BIGINT)';
  const survivorOrder = `ORDER BY CASE source WHEN 's3' THEN 0 ELSE 1 END, event_ms, ${idKey('natural_key')}`;
  const ids = `${idKey('series')} AS series_k, ${idKey('episode')} AS episode_k, ${idKey('session')} AS session_k, ${idKey('user_id')} AS user_k`;
  const date = (d: string): string => `CAST(${sqlString(d)} AS DATE)`;
  return [
    // Every row of the day either counted or pending, but those automated traffic sent (the bot list,
    // PINGROLL_CATALOG_ONLY): never an adjustment.
    `CREATE TEMP TABLE adj_rows AS
     SELECT source, series, episode, session, user_id, event_ms, ping_id, natural_key, pending, ${key} AS k, ${ids}, ${minute} AS minute
     FROM ${ruledRows(`(SELECT c.*, 0 AS pending FROM ${counted} c UNION ALL SELECT p.*, 1 AS pending FROM ${pending} p)`, catalog, idKey)} r
     WHERE ${inDay} AND record_rule IS NULL`,
    // The keys only pending rows have, and of each its survivor, if its minute is the closed month's.
    `CREATE TEMP TABLE adj_new AS
     SELECT * FROM (
       SELECT r.*, ROW_NUMBER() OVER (PARTITION BY k ${survivorOrder}) AS rn
       FROM adj_rows r WHERE k IN (SELECT k FROM adj_rows GROUP BY k HAVING MIN(pending) = 1)) x
     WHERE rn = 1 AND ${inMonth}`,
    // A new survivor whose id a published day at most W days around it counts is a repeat (contract
    // §4, §9: what is counted stays counted), never an adjustment.
    ...(W > 0 && window!.around ? [`DELETE FROM adj_new WHERE ping_id IS NOT NULL AND k IN (
       SELECT n.k FROM adj_new n JOIN ${window!.around} h ON ${idKey('h.ping_id')} = n.k AND h.counted AND ABS(n.event_ms - h.event_ms) <= ${W})`] : []),
    // The closed figures' minutes per episode: the survivors of what they counted, less the sessions
    // the day leaves out for their rate, in the month.
    `CREATE TEMP TABLE adj_counted AS
     SELECT * FROM (
       SELECT r.*, ROW_NUMBER() OVER (PARTITION BY k ${survivorOrder}) AS rn FROM adj_rows r WHERE pending = 0) x
     WHERE rn = 1${window?.own ? ` AND k NOT IN (SELECT ${idKey('ping_id')} FROM ${window.own} WHERE "repeat")` : ''}`,
    `CREATE TEMP TABLE adj_counted_minutes AS
     SELECT DISTINCT series_k, episode_k, session_k, minute FROM adj_counted
     WHERE ${inMonth} AND session_k NOT IN (
       SELECT DISTINCT session_k FROM adj_counted GROUP BY session_k, minute HAVING COUNT(*) > ${MAX_PINGS_PER_SESSION_MINUTE})`,
    `INSERT INTO ${into} (reported_month, closed_month, tz, day, series_id, episode_id, pings, sessions, viewers, minutes_watched, after_close_records, duplicates)
     SELECT ${date(`${a.reportedMonth}-01`)}, ${date(`${a.closedMonth}-01`)}, ${sqlString(a.tz)}, ${date(a.day)}, r.series, r.episode,
            COALESCE(f.pings, 0), COALESCE(f.sessions, 0), COALESCE(f.viewers, 0), COALESCE(n.minutes, 0), r.records, r.records - COALESCE(f.pings, 0)
     FROM (SELECT series_k, episode_k, MIN(series) AS series, MIN(episode) AS episode, COUNT(*) AS records FROM adj_rows
           WHERE pending = 1 AND ${inMonth} GROUP BY series_k, episode_k) r
     LEFT JOIN (SELECT series_k, episode_k, COUNT(*) AS pings, COUNT(DISTINCT session_k) AS sessions, COUNT(DISTINCT COALESCE(user_k, 'session:' || session_k)) AS viewers
                FROM adj_new GROUP BY series_k, episode_k) f ON f.series_k = r.series_k AND f.episode_k = r.episode_k
     LEFT JOIN (SELECT series_k, episode_k, COUNT(*) AS minutes FROM (
                  SELECT DISTINCT series_k, episode_k, session_k, minute FROM adj_new
                  EXCEPT SELECT series_k, episode_k, session_k, minute FROM adj_counted_minutes) m
                GROUP BY series_k, episode_k) n ON n.series_k = r.series_k AND n.episode_k = r.episode_k`,
  ];
}
