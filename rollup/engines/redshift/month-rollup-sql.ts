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
import { MAX_PINGS_PER_SESSION_MINUTE, ruledRows, type CatalogRule } from '../../rules.js';

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
  /** PINGROLL_CATALOG_ONLY: what the catalog must list, and a table of it (series_id, episode_id); none when off. */
  catalog?: CatalogRule | null;
  /** A table of the days' ping ids (day-rollup-sql.ts PING_IDS_TABLE_COLUMNS): each day's repeats are left out as its rollup left them out (contract §4); none: no day kept any. */
  pingIds?: string | null;
}

/** The statements, in order; run them in one transaction. */
export function monthRollupStatements(m: MonthRollupSql): string[] {
  const first = `CAST(${sqlString(`${m.month}-01`)} AS DATE)`;
  const from = dayStartMs(m.utcDays.from), to = dayStartMs(m.utcDays.to) + DAY_MS;
  const days = m.localDays.map((d) => `SELECT CAST(${sqlString(d.day)} AS DATE) AS local_day, CAST(${d.startMs} AS BIGINT) AS start_ms, CAST(${d.endMs} AS BIGINT) AS end_ms`).join(' UNION ALL ');
  return [
    // Each UTC day's survivors of the pings it counts (contract §10: no user agent on the bot list, and
    // with PINGROLL_CATALOG_ONLY none the catalog does not list) ...
    `CREATE TEMP TABLE month_survivors AS
     SELECT ${idKey('series')} AS series_k, series, ${idKey('episode')} AS episode_k, ${idKey('session')} AS session_k,
            ${idKey('user_id')} AS user_k, ${idKey('ping_id')} AS ping_k, CAST(FLOOR(event_ms / 60000.0) AS BIGINT) AS minute, day_n, event_ms
     FROM (
       SELECT s.*, ${dayNumberSql('event_ms')} AS day_n, ROW_NUMBER() OVER (PARTITION BY ${dayNumberSql('event_ms')}, ${idKey('COALESCE(ping_id, natural_key)')}
                                      ORDER BY CASE source WHEN 's3' THEN 0 ELSE 1 END, event_ms, ${idKey('natural_key')}) AS rn
       FROM ${ruledRows(m.staged, m.catalog ?? null, idKey)} s WHERE event_ms >= ${from} AND event_ms < ${to} AND record_rule IS NULL) ranked
     WHERE rn = 1`,
    // ... less the repeats of pings counted on an earlier day (contract §4), as each day's rollup left them out ...
    ...(m.pingIds ? [
      `CREATE TEMP TABLE month_repeats AS SELECT DISTINCT ${idKey('ping_id')} AS ping_k, ${dayNumberSql('event_ms')} AS day_n FROM ${m.pingIds} WHERE "repeat"`,
      `CREATE TEMP TABLE month_counted AS SELECT p.* FROM month_survivors p LEFT JOIN month_repeats r ON r.day_n = p.day_n AND r.ping_k = p.ping_k WHERE r.ping_k IS NULL`,
    ] : [`CREATE TEMP TABLE month_counted AS SELECT * FROM month_survivors`]),
    // ... less the sessions each day leaves out for their rate (rules.ts SESSION_RATE_RULE), as the day's rollup does.
    `CREATE TEMP TABLE month_caught AS
     SELECT DISTINCT day_n, session_k FROM month_counted GROUP BY day_n, session_k, minute HAVING COUNT(*) > ${MAX_PINGS_PER_SESSION_MINUTE}`,
    `CREATE TEMP TABLE month_pings AS
     SELECT p.series_k, p.series, p.episode_k, p.session_k, p.user_k, p.minute, d.local_day
     FROM month_counted p JOIN (${days}) d ON p.event_ms >= d.start_ms AND p.event_ms < d.end_ms
     WHERE NOT EXISTS (SELECT 1 FROM month_caught c WHERE c.day_n = p.day_n AND c.session_k = p.session_k)`,
    `DELETE FROM ${m.table} WHERE month = ${first} AND COALESCE(tz, 'UTC') = ${sqlString(m.tz)}`,
    `INSERT INTO ${m.table} (month, series_id, episodes, pings, sessions, viewers, minutes_watched, days_watched, tz)
     SELECT ${first}, MIN(series), COUNT(DISTINCT episode_k), COUNT(*), COUNT(DISTINCT session_k), COUNT(DISTINCT COALESCE(user_k, 'session:' || session_k)),
            COUNT(DISTINCT session_k || ':' || CAST(minute AS VARCHAR)), COUNT(DISTINCT local_day), ${sqlString(m.tz)}
     FROM month_pings GROUP BY series_k`,
  ];
}
