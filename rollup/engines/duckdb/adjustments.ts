/**
 * Adjustments (contract §9): what pings staged for a day of a closed month after it was closed add to
 * its figures. The day's rows are deduplicated as always (contract §4), against everything still
 * staged for it: a key any counted record had was counted, whichever record now survives; the keys
 * only pending records have are new, and their survivors are the adjustment's pings. Minutes are the
 * (session, UTC minute) pairs of those pings that the closed figures of the episode did not have.
 * Only minutes of the closed month count (in a zone, a UTC day can hold two local months).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows, sqlString } from '../../../lib/duckdb-engine.js';
import { UTC } from '../../../lib/time-zone.js';
import { DAY_MS, dayStartMs } from '../../../lib/utc-day.js';
import { PING_IDS_PARQUET, stagedRows, survivorsSql } from './day-rollup.js';
import { ruledRows, type CatalogRule } from '../../rules.js';
import type { DayAdjustment } from '../../engine.js';

/** A day's adjustment with its staged files as local paths. */
export type LocalDayAdjustment = Omit<DayAdjustment, 'counted' | 'pending' | 'window'> & {
  counted: readonly string[]; pending: readonly string[];
  window?: { days: number; around: readonly string[]; own: string | null };
};

/** The day's adjustment rows (the statement_adjustments columns) as temp table `into`, made anew. */
export async function adjustDay(db: DuckDBConnection, a: LocalDayAdjustment, into: string, catalog: CatalogRule | null = null): Promise<void> {
  const dayStart = dayStartMs(a.day);
  const inDay = `event_ms >= ${dayStart} AND event_ms < ${dayStart + DAY_MS}`;
  const first = dayStart / 60000;
  const key = 'coalesce(ping_id, natural_key)';
  // The minutes of the day that are in the closed month (all of them, in UTC).
  const local = `timezone(${sqlString(a.tz)}, to_timestamp(m * 60))`;
  const minutes = a.tz === UTC ? `SELECT m FROM range(${first}, ${first + DAY_MS / 60000}) t(m)`
    : `SELECT m FROM range(${first}, ${first + DAY_MS / 60000}) t(m) WHERE strftime(${local}, '%Y-%m') = ${sqlString(a.closedMonth)}`;
  const all = [...a.counted, ...a.pending];
  const rows = stagedRows(all);
  const counted = stagedRows(a.counted);
  await db.run(`CREATE OR REPLACE TEMP TABLE adj_minutes AS ${minutes}`);
  // A ping a user agent on the bot list sent, or with PINGROLL_CATALOG_ONLY one the catalog does not
  // list, is automated traffic (contract §10), never an adjustment.
  await db.run(`CREATE OR REPLACE TEMP TABLE adj_rows AS SELECT * EXCLUDE (record_rule), file_no >= ${a.counted.length} AS pending FROM ${ruledRows(rows, catalog)} WHERE ${inDay} AND record_rule IS NULL`);
  await db.run(`
    CREATE OR REPLACE TEMP TABLE adj_new AS
    WITH fresh AS (SELECT ${key} AS k FROM adj_rows GROUP BY k HAVING bool_and(pending))
    SELECT * FROM (
      SELECT r.*, row_number() OVER (PARTITION BY ${key} ORDER BY CASE source WHEN 's3' THEN 0 ELSE 1 END, event_ms, natural_key) AS rn
      FROM adj_rows r SEMI JOIN fresh ON ${key} = fresh.k)
    WHERE rn = 1 AND event_ms // 60000 IN (SELECT m FROM adj_minutes)`);
  // The ping-id window (contract §4, §9): a new survivor whose id a published day at most W days
  // before or after it counts is a repeat (what is counted stays counted), never an adjustment.
  const W = (a.window?.days ?? 0) * DAY_MS;
  if (W > 0 && a.window!.around.length) {
    await db.run(`DELETE FROM adj_new WHERE ping_id IN (
      SELECT n.ping_id FROM adj_new n JOIN (SELECT ping_id, event_ms FROM read_parquet([${a.window!.around.map(sqlString).join(', ')}]) WHERE counted) h
      ON h.ping_id = n.ping_id AND abs(n.event_ms - h.event_ms) <= ${W})`);
  }
  // The closed figures' minutes, per episode (their survivors, in the month).
  const countedMinutes = a.counted.length
    ? `SELECT DISTINCT series, episode, session, event_ms // 60000 AS minute FROM ${survivorsSql(counted, a.day, catalog, a.window?.own ?? null)} WHERE event_ms // 60000 IN (SELECT m FROM adj_minutes)`
    : `SELECT NULL::VARCHAR AS series, NULL::VARCHAR AS episode, NULL::VARCHAR AS session, NULL::BIGINT AS minute WHERE false`;
  const select = `
    WITH records AS (
      SELECT series, episode, count(*) AS records FROM adj_rows
      WHERE pending AND event_ms // 60000 IN (SELECT m FROM adj_minutes) GROUP BY series, episode),
    fresh AS (
      SELECT series, episode, count(*) AS pings, count(DISTINCT session) AS sessions, count(DISTINCT coalesce(user_id, 'session:' || session)) AS viewers
      FROM adj_new GROUP BY series, episode),
    new_minutes AS (
      SELECT series, episode, count(*) AS minutes FROM (
        SELECT DISTINCT series, episode, session, event_ms // 60000 AS minute FROM adj_new
        EXCEPT SELECT series, episode, session, minute FROM (${countedMinutes}))
      GROUP BY series, episode)
    SELECT DATE ${sqlString(`${a.reportedMonth}-01`)} AS reported_month, DATE ${sqlString(`${a.closedMonth}-01`)} AS closed_month, ${sqlString(a.tz)} AS tz,
           DATE ${sqlString(a.day)} AS day, r.series AS series_id, r.episode AS episode_id,
           coalesce(f.pings, 0)::BIGINT AS pings, coalesce(f.sessions, 0)::BIGINT AS sessions, coalesce(f.viewers, 0)::BIGINT AS viewers,
           coalesce(n.minutes, 0)::BIGINT AS minutes_watched, r.records::BIGINT AS after_close_records, (r.records - coalesce(f.pings, 0))::BIGINT AS duplicates
    FROM records r LEFT JOIN fresh f USING (series, episode) LEFT JOIN new_minutes n USING (series, episode)`;
  await db.run(`CREATE OR REPLACE TEMP TABLE ${into} AS ${select}`);
}

/**
 * The ping ids the adjustment `adjustDay` just made counts (its new pings with an id), written to `out`
 * as a day's ping ids are (rollup/ping-window.ts PING_IDS_COLUMNS): each counted, none a
 * repeat. Later days' windows read them beside the closed day's own, so that a resend of a ping first
 * counted by an adjustment is a repeat (contract §4, §9). Its rows.
 */
export async function adjustedPingIds(db: DuckDBConnection, out: string): Promise<number> {
  await db.run(`COPY (SELECT ping_id, event_ms, false AS "repeat", true AS counted FROM adj_new WHERE ping_id IS NOT NULL ORDER BY ping_id)
    TO ${sqlString(out)} (${PING_IDS_PARQUET})`);
  return Number((await queryRows<{ n: bigint }>(db, 'SELECT count(*) AS n FROM adj_new WHERE ping_id IS NOT NULL'))[0]!.n);
}
