/**
 * The monthly series figures licensors are paid on (contract §8, `monthly_series_stats`; §9, a
 * month in a time zone): every surviving ping of the month, deduplicated per UTC day exactly as the
 * day's rollup does (contract §4), then counted per series over the whole month. Distinct counts
 * (episodes, sessions, viewers) are taken over the month, never summed from days; pings and minutes
 * watched are sums of the days' (a minute belongs to one UTC day, so distinct minutes over the month
 * are the days' added up).
 *
 * In a zone, the month is the zone's local month: a ping belongs to it by its event time's UTC
 * minute in local time, and `days_watched` counts local days. The UTC days that can hold such minutes
 * (the day before the month to the day after) are each deduplicated whole, then their survivors kept
 * by minute: a small table maps each of the day's 1,440 minutes to its local month and day (DuckDB's
 * ICU), so no ping is converted on its own.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../../../lib/duckdb-engine.js';
import { UTC } from '../../../lib/time-zone.js';
import { DAY_MS, dayStartMs } from '../../../lib/utc-day.js';
import { stagedRows, survivorsSql } from './day-rollup.js';
import type { CatalogRule } from '../../rules.js';

/** Rolls up a month (of `tz`) from its days' staged files; returns the temporary table holding its rows. */
export async function rollupMonth(engine: DuckDBConnection, month: string, days: ReadonlyArray<{ day: string; files: readonly string[]; pingIds?: string | null }>, tz = UTC, catalog: CatalogRule | null = null): Promise<string> {
  await engine.run(`CREATE OR REPLACE TEMP TABLE month_episodes (series VARCHAR, episode VARCHAR)`);
  await engine.run(`CREATE OR REPLACE TEMP TABLE month_sessions (series VARCHAR, session VARCHAR)`);
  await engine.run(`CREATE OR REPLACE TEMP TABLE month_viewers (series VARCHAR, viewer VARCHAR)`);
  await engine.run(`CREATE OR REPLACE TEMP TABLE month_days (series VARCHAR, day DATE, pings BIGINT, minutes BIGINT)`);
  for (const d of days) {
    await engine.run(`CREATE OR REPLACE TEMP TABLE day_pings AS ${monthPingsSql(d.day, d.files, month, tz, catalog, d.pingIds ?? null)}`);
    await engine.run(`INSERT INTO month_episodes SELECT DISTINCT series, episode FROM day_pings`);
    await engine.run(`INSERT INTO month_sessions SELECT DISTINCT series, session FROM day_pings`);
    await engine.run(`INSERT INTO month_viewers SELECT DISTINCT series, viewer FROM day_pings`);
    await engine.run(`INSERT INTO month_days SELECT series, local_day, count(*), count(DISTINCT (session, minute)) FROM day_pings GROUP BY series, local_day`);
  }
  const distinct = (table: string, column: string, as: string): string =>
    `(SELECT series, count(*) AS ${as} FROM (SELECT DISTINCT series, ${column} FROM ${table}) GROUP BY series)`;
  await engine.run(`
    CREATE OR REPLACE TEMP TABLE out_month AS
    SELECT DATE ${sqlString(`${month}-01`)} AS month, d.series AS series_id, e.episodes::BIGINT AS episodes, d.pings::BIGINT AS pings,
           s.sessions::BIGINT AS sessions, v.viewers::BIGINT AS viewers, d.minutes::BIGINT AS minutes_watched, d.days::BIGINT AS days_watched,
           ${sqlString(tz)} AS tz
    FROM (SELECT series, sum(pings) AS pings, sum(minutes) AS minutes, count(DISTINCT day) AS days FROM month_days GROUP BY series) d
    JOIN ${distinct('month_episodes', 'episode', 'episodes')} e USING (series)
    JOIN ${distinct('month_sessions', 'session', 'sessions')} s USING (series)
    JOIN ${distinct('month_viewers', 'viewer', 'viewers')} v USING (series)
    ORDER BY series_id`);
  return 'out_month';
}

/**
 * The survivors of UTC `day` that fall in `month` of `tz`: series, episode, session, viewer, UTC
 * minute (epoch minutes), the local day, and every staged column (for callers that need more).
 */
export function monthPingsSql(day: string, files: readonly string[], month: string, tz: string, catalog: CatalogRule | null = null, pingIds: string | null = null): string {
  const survivors = survivorsSql(stagedRows(files), day, catalog, pingIds);
  const columns = `s.*, coalesce(s.user_id, 'session:' || s.session) AS viewer, s.event_ms // 60000 AS minute`;
  if (tz === UTC) return `SELECT ${columns}, DATE ${sqlString(day)} AS local_day FROM ${survivors} AS s`;
  const first = dayStartMs(day) / 60000;
  const local = `timezone(${sqlString(tz)}, to_timestamp(m * 60))`;
  return `WITH local_minutes AS (
      SELECT m, strftime(${local}, '%Y-%m') AS local_month, CAST(${local} AS DATE) AS local_day FROM range(${first}, ${first + DAY_MS / 60000}) t(m))
    SELECT ${columns}, l.local_day FROM ${survivors} AS s JOIN local_minutes l ON l.m = s.event_ms // 60000 WHERE l.local_month = ${sqlString(month)}`;
}
