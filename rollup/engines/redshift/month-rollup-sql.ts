/**
 * The month's `monthly_series_stats` (contract §8, §9) as portable SQL, for the rollup inside
 * Redshift: the same figures as the DuckDB engine's month-rollup.ts, from the month's staged pings
 * COPYed into `staged`, in one text that runs on Redshift and PostgreSQL (the tests run it there and
 * hold it to DuckDB's). Each UTC day's pings are deduplicated as the day's rollup does (contract §4);
 * a survivor belongs to the month when its minute falls in one of the month's local days, given as
 * UTC instants (lib/time-zone.ts: a zone's rules are the runtime's, not the warehouse's). Distinct
 * counts are over the month; `days_watched` counts local days.
 */
import { DAY_MS, dayNumberSql, dayStartMs } from '../../../lib/utc-day.js';
import { idKey, sqlString } from '../../../lib/duckdb-engine.js';

export interface MonthRollupSql {
  month: string;
  tz: string;
  /** The relation holding the month's staged pings. */
  staged: string;
  /** monthly_series_stats, schema-qualified. */
  table: string;
  /** The UTC days that hold the month's minutes, first and last. */
  utcDays: { from: string; to: string };
  /** The month's local days, each as UTC instants [startMs, endMs). */
  localDays: ReadonlyArray<{ day: string; startMs: number; endMs: number }>;
}

/** The statements, in order; run them in one transaction. */
export function monthRollupStatements(m: MonthRollupSql): string[] {
  const first = `CAST(${sqlString(`${m.month}-01`)} AS DATE)`;
  const from = dayStartMs(m.utcDays.from), to = dayStartMs(m.utcDays.to) + DAY_MS;
  const days = m.localDays.map((d) => `SELECT CAST(${sqlString(d.day)} AS DATE) AS local_day, CAST(${d.startMs} AS BIGINT) AS start_ms, CAST(${d.endMs} AS BIGINT) AS end_ms`).join(' UNION ALL ');
  return [
    `CREATE TEMP TABLE month_pings AS
     SELECT ${idKey('series')} AS series_k, series, ${idKey('episode')} AS episode_k, ${idKey('session')} AS session_k,
            ${idKey('user_id')} AS user_k, CAST(FLOOR(event_ms / 60000.0) AS BIGINT) AS minute, d.local_day
     FROM (
       SELECT s.*, ROW_NUMBER() OVER (PARTITION BY ${dayNumberSql('event_ms')}, ${idKey('COALESCE(ping_id, natural_key)')}
                                      ORDER BY CASE source WHEN 's3' THEN 0 ELSE 1 END, event_ms, ${idKey('natural_key')}) AS rn
       FROM ${m.staged} s WHERE event_ms >= ${from} AND event_ms < ${to}) ranked
     JOIN (${days}) d ON ranked.event_ms >= d.start_ms AND ranked.event_ms < d.end_ms
     WHERE rn = 1`,
    `DELETE FROM ${m.table} WHERE month = ${first} AND COALESCE(tz, 'UTC') = ${sqlString(m.tz)}`,
    `INSERT INTO ${m.table} (month, series_id, episodes, pings, sessions, viewers, minutes_watched, days_watched, tz)
     SELECT ${first}, MIN(series), COUNT(DISTINCT episode_k), COUNT(*), COUNT(DISTINCT session_k), COUNT(DISTINCT COALESCE(user_k, 'session:' || session_k)),
            COUNT(DISTINCT session_k || ':' || CAST(minute AS VARCHAR)), COUNT(DISTINCT local_day), ${sqlString(m.tz)}
     FROM month_pings GROUP BY series_k`,
  ];
}
