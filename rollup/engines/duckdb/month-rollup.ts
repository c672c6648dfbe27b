/**
 * The monthly series figures licensors are paid on (contract §8, `monthly_series_stats`): every
 * surviving ping of the month, deduplicated per day exactly as the day's rollup does (contract §4),
 * then counted per series over the whole month. Distinct counts (episodes, sessions, viewers) are
 * taken over the month, never summed from days; pings and minutes watched are sums of the days'
 * (a minute belongs to one day, so distinct minutes over the month are the days' added up).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../../../lib/duckdb-engine.js';
import { rollupDay } from './day-rollup.js';
import type { MonthDay } from '../../engine.js';

/** Rolls up a month from its days' staged files; returns the temporary table holding its rows. */
export async function rollupMonth(engine: DuckDBConnection, month: string, days: MonthDay[]): Promise<string> {
  await engine.run(`CREATE OR REPLACE TEMP TABLE month_episodes (series VARCHAR, episode VARCHAR)`);
  await engine.run(`CREATE OR REPLACE TEMP TABLE month_sessions (series VARCHAR, session VARCHAR)`);
  await engine.run(`CREATE OR REPLACE TEMP TABLE month_viewers (series VARCHAR, viewer VARCHAR)`);
  await engine.run(`CREATE OR REPLACE TEMP TABLE month_days (series VARCHAR, day DATE, pings BIGINT, minutes BIGINT)`);
  for (const d of days) {
    // The day's survivors, grouped as the day's rollup groups them (session_blocks), and its series rows.
    await rollupDay(engine, d.day, d.files, d.outcomes);
    await engine.run(`INSERT INTO month_episodes SELECT DISTINCT series, episode FROM session_blocks`);
    await engine.run(`INSERT INTO month_sessions SELECT DISTINCT series, session FROM session_blocks`);
    await engine.run(`INSERT INTO month_viewers SELECT DISTINCT series, coalesce(user_id, 'session:' || session) FROM session_blocks`);
    await engine.run(`INSERT INTO month_days SELECT series_id, day, pings, minutes_watched FROM out_series`);
  }
  const distinct = (table: string, column: string, as: string): string =>
    `(SELECT series, count(*) AS ${as} FROM (SELECT DISTINCT series, ${column} FROM ${table}) GROUP BY series)`;
  await engine.run(`
    CREATE OR REPLACE TEMP TABLE out_month AS
    SELECT DATE ${sqlString(`${month}-01`)} AS month, d.series AS series_id, e.episodes::BIGINT AS episodes, d.pings::BIGINT AS pings,
           s.sessions::BIGINT AS sessions, v.viewers::BIGINT AS viewers, d.minutes::BIGINT AS minutes_watched, d.days::BIGINT AS days_watched
    FROM (SELECT series, sum(pings) AS pings, sum(minutes) AS minutes, count(*) AS days FROM month_days GROUP BY series) d
    JOIN ${distinct('month_episodes', 'episode', 'episodes')} e USING (series)
    JOIN ${distinct('month_sessions', 'session', 'sessions')} s USING (series)
    JOIN ${distinct('month_viewers', 'viewer', 'viewers')} v USING (series)
    ORDER BY series_id`);
  return 'out_month';
}
