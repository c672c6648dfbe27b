/**
 * The rollup of one UTC day (contract §4, §5) as portable SQL, for the rollup inside Redshift
 * (PINGROLL_ROLLUP=redshift): the same dedupe and metrics as day-rollup.ts, in one text that runs on
 * Redshift, PostgreSQL and DuckDB (the tests run it on Postgres and on DuckDB and hold both to
 * day-rollup.ts, row for row). It runs in the day's load transaction: the day's staged pings are in
 * `staged`, and each output table's day is replaced (DELETE, then INSERT ... SELECT).
 *
 * DuckDB's own rollup stays day-rollup.ts: this text takes 3.3 times as long there (1.3 s against
 * 0.4 s for the job bench's 908,180 pings, 4 runs each), and its exact COUNT(DISTINCT)s do not spill
 * as well as grouping does. Where the two differ, and why:
 * - Distinct minutes are COUNT(DISTINCT session || ':' || minute). DuckDB's rollup ORs a 64-bit mask
 *   per session and block instead (less to hash, and it spills well); Redshift has neither bit_count
 *   nor 64-bit shifts on UBIGINT, and its exact COUNT(DISTINCT) is the massively parallel way there.
 *   The minute is last and holds no ':', so two (session, minute) pairs never make one string.
 * - Integer division is written CAST(FLOOR(x / 60000.0) AS BIGINT): `/` truncates integers on
 *   Redshift and Postgres but not on DuckDB (`//` there), and FLOOR is the same on all three.
 * - Timestamps from epoch ms: TIMESTAMP 'epoch' + ms / 1000.0 * INTERVAL '1 second' (Redshift's own
 *   idiom; make_timestamp is DuckDB's).
 * - Conditional sums are SUM(CASE ...): Redshift has no FILTER clause.
 * - The survivor of each key is ROW_NUMBER() = 1 over the whole day (DuckDB's rollup windows only the
 *   keys staged more than once: Redshift distributes the window by key anyway).
 * - Peaks are ROW_NUMBER() over each series' (and episode's) minutes, ordered by sessions, then
 *   minute. DuckDB's rollup takes them in one aggregate instead, MAX(sessions * 2048 + (2047 -
 *   minute)), and an episode's minutes from 64 per-bit sums of the sessions' masks, with no row per
 *   minute: the same peak at the same earliest minute, cheaper there (the new statements 3.4 to 3.2 s on
 *   the 20M-ping day).
 * - Viewer keys hash with SHA2(secret || viewer, 256) (Redshift's; DuckDB's sha256, Postgres's
 *   encode(sha256(...)) in the tests: the same hex). The secret is a column of a one-row table Redshift
 *   COPYs from a file, never a literal: Redshift keeps every statement's text in its system tables.
 */
import { DAY_MS, dayStartMs } from '../../../lib/utc-day.js';
import { idKey, sqlString } from '../../../lib/duckdb-engine.js';
import { STAGED_FILE_COLUMNS } from '../../../ingest/staged-ping.js';
import { AUDIENCE_SQL, COMPLETION_THRESHOLDS, MAX_PINGS_PER_SESSION_MINUTE, platformSql, ruledRows, SESSION_RATE_RULE, TABLES, type CatalogOnly, type TableName } from '../../rules.js';
import { EXCLUDED_STAGED_COLUMNS } from '../../rejects-lines.js';
import { SHA256_HEX, viewerKeySql, type Sha256Hex } from '../../viewer-key.js';
import { CATALOG_COLUMNS } from '../../episode-catalog.js';

/**
 * The staged pings' columns as a Redshift (and Postgres) table: a staged file's of the current format
 * (4, with the ping id's key, which the SQL here does not read). Ids are at most 256 characters, 1024 bytes of UTF-8.
 */
export const STAGED_TABLE_COLUMNS = stagedTableColumns(STAGED_FILE_COLUMNS);

/** The episode catalog's Parquet (rollup/episode-catalog.ts) as a Redshift table, its columns in the file's order. */
export const CATALOG_TABLE_COLUMNS = CATALOG_COLUMNS.map((c) => `${c} ${c === 'duration_seconds' ? 'BIGINT' : 'VARCHAR(1024)'}`).join(', ');

/** Staged columns as a Redshift (and Postgres) table's (an earlier staged format's files: Redshift's COPY of Parquet takes exactly a file's columns). */
export function stagedTableColumns(columns: ReadonlyArray<{ name: string; type: string }>): string {
  return columns.map((c) => `${c.name} ${c.type === 'BIGINT' ? 'BIGINT' : c.name === 'source' ? 'VARCHAR(16)' : c.name === 'natural_key' ? 'VARCHAR(65535)' : 'VARCHAR(1024)'}`).join(', ');
}

export interface DayRollupSql {
  day: string;
  /** The relation holding the staged pings (any day; only `day`'s are read). */
  staged: string;
  /** Each output table, schema-qualified. */
  tables: Record<TableName, string>;
  /** The day's record counts by source and outcome from the ledger (the rollup adds `duplicate`). */
  outcomes: Record<string, Record<string, number>>;
  /**
   * The viewer datasets' key: its id, and a one-row table whose `secret` column holds the secret
   * (never the secret itself: statement texts are logged). None: they get no rows.
   */
  viewers?: { keyId: string; secretTable: string } | null;
  /** The platforms counted by name (PINGROLL_PLATFORMS); the defaults when not given. */
  platforms?: readonly string[] | undefined;
  /** The dialect's SHA-256 as hex (Redshift's SHA2 unless said). */
  sha256Hex?: Sha256Hex;
  /** A table of the episode catalog (series_id, episode_id, duration_seconds: rollup/episode-catalog.ts); none: completion figures are NULL. */
  catalogTable?: string | null;
  /** PINGROLL_CATALOG_ONLY: pings `catalogTable` does not list are left out (rules.ts CATALOG_RULE). */
  catalogOnly?: CatalogOnly | null;
  /**
   * The ping-id window (contract §4, rollup/ping-window.ts): W days, and tables of ping ids
   * (PING_IDS_TABLE_COLUMNS) of the days before (`history`) and of the closed months' days after
   * (`closedAfter`); null: none. The day's own go to the temporary table `day_ping_ids`. Without it
   * (W = 0), no survivor is a repeat.
   */
  window?: { days: number; history: string | null; closedAfter: string | null } | null;
}

/** A day's ping-ids file (rollup/ping-window.ts PING_IDS_COLUMNS) as a Redshift (and Postgres) table. */
export const PING_IDS_TABLE_COLUMNS = 'ping_id VARCHAR(1024), event_ms BIGINT, "repeat" BOOLEAN, counted BOOLEAN';

/**
 * The day's figures as committed, one query (figure, name, n): each table's rows (`rows`, the table),
 * the pings counted (`pings`), and the audit's duplicates and automated traffic (`duplicate`,
 * `invalid_traffic`, the source).
 */
export function dayFiguresSql(schema: string, day: string): string {
  const date = `CAST(${sqlString(day)} AS DATE)`;
  return [
    ...TABLES.map((t) => `SELECT CAST('rows' AS VARCHAR(16)) AS figure, CAST('${t}' AS VARCHAR(64)) AS name, CAST(COUNT(*) AS BIGINT) AS n FROM ${schema}.${t} WHERE day = ${date}`),
    `SELECT 'pings', '', CAST(COALESCE(SUM(pings), 0) AS BIGINT) FROM ${schema}.daily_episode_stats WHERE day = ${date}`,
    `SELECT outcome, source, CAST(SUM(records) AS BIGINT) FROM ${schema}.daily_ingest_audit WHERE day = ${date} AND outcome IN ('duplicate', 'invalid_traffic', 'repeat') GROUP BY outcome, source`,
  ].join('\n UNION ALL ');
}

/** The statements, in order; run them in one transaction. */
export function dayRollupStatements({ day, staged, tables, outcomes, viewers: keyed = null, platforms, sha256Hex = SHA256_HEX.redshift, catalogTable = null, catalogOnly = null, window = null }: DayRollupSql): string[] {
  const start = dayStartMs(day);
  if (catalogOnly && !catalogTable) throw new Error(`the rollup of ${day} keeps pings to the episode catalog (PINGROLL_CATALOG_ONLY=${catalogOnly}) but was given none`);
  // Each staged row with the rule that leaves it out on its own (rules.ts ruledRows), or none.
  const ruled = ruledRows(staged, catalogOnly && catalogTable ? { only: catalogOnly, table: catalogTable } : null, idKey);
  const date = `CAST(${sqlString(day)} AS DATE)`;
  const inDay = `event_ms >= ${start} AND event_ms < ${start + DAY_MS}`;
  const ts = (ms: string): string => `TIMESTAMP 'epoch' + ${ms} / 1000.0 * INTERVAL '1 second'`;
  // A completion figure of an episode the catalog lists; NULL for one it does not.
  const ifListed = (expr: string): string => `CASE WHEN MIN(duration) IS NULL THEN NULL ELSE ${expr} END`;
  // Ids are grouped, counted, ordered and compared by their `_k` forms (idKey: the id and CHR(1)):
  // Redshift ignores trailing blanks when it compares VARCHARs ('a' = 'a '), DuckDB and the contract
  // do not. What is published is the id itself, MIN() of a group whose ids are all the same.
  const minutes = `COUNT(DISTINCT session_k || ':' || CAST(minute AS VARCHAR))`;
  const viewers = `COUNT(DISTINCT COALESCE(user_k, 'session:' || session_k))`;
  // The ledger's counts; its pings less those left out as automated traffic (`excluded`), which are `invalid_traffic`.
  // The window's matches (see repeat_keys below): counted ids of the days before, and of closed days after.
  const W = (window?.days ?? 0) * DAY_MS;
  const countedIds = (table: string, from: number, to: number): string =>
    `(SELECT ${idKey('ping_id')} AS ping_k, event_ms FROM ${table} WHERE counted AND event_ms >= ${from} AND event_ms < ${to})`;
  const repeatKeys = W > 0 ? [
    ...(window!.history ? [`SELECT s.ping_k FROM survivors s JOIN ${countedIds(window!.history, start - W, start)} h ON h.ping_k = s.ping_k AND s.event_ms - h.event_ms <= ${W}`] : []),
    ...(window!.closedAfter ? [`SELECT s.ping_k FROM survivors s JOIN ${countedIds(window!.closedAfter, start + DAY_MS, start + DAY_MS + W)} h ON h.ping_k = s.ping_k AND h.event_ms - s.event_ms <= ${W}`] : []),
  ] : [];
  const counted = Object.entries(outcomes).flatMap(([source, counts]) => Object.entries(counts).filter(([, n]) => n > 0)
    .map(([outcome, n]) => `SELECT ${sqlString(source)} AS source, ${sqlString(outcome)} AS outcome, CAST(${n} AS BIGINT)${outcome === 'ping' ? ` - (SELECT COUNT(*) FROM excluded WHERE source = ${sqlString(source)})` : ''} AS records`));
  return [
    // Dedupe: one survivor per key (the ping id, else the natural key): S3 over DynamoDB, then the
    // earliest, then the smallest natural key. The survivor supplies every value.
    // Pings a user agent on the bot list sent (contract §10), and with PINGROLL_CATALOG_ONLY those the
    // catalog does not list, are left out first.
    `CREATE TEMP TABLE survivors AS
     SELECT source, series, episode, session, user_id, event_ms, pos, ping_id, ${idKey('ping_id')} AS ping_k, CAST(FLOOR((event_ms - ${start}) / 60000.0) AS BIGINT) AS minute,
            ${platformSql('platform', platforms)} AS platform,
            ${AUDIENCE_SQL.country} AS country, ${AUDIENCE_SQL.os} AS os, ${AUDIENCE_SQL.device_type} AS device_type, ${AUDIENCE_SQL.browser} AS browser,
            ${idKey('series')} AS series_k, ${idKey('episode')} AS episode_k, ${idKey('session')} AS session_k, ${idKey('user_id')} AS user_k
     FROM (
       SELECT s.*, ROW_NUMBER() OVER (PARTITION BY ${idKey('COALESCE(ping_id, natural_key)')}
                                      ORDER BY CASE source WHEN 's3' THEN 0 ELSE 1 END, event_ms, ${idKey('natural_key')}) AS rn
       FROM ${ruled} s WHERE ${inDay} AND record_rule IS NULL) ranked
     WHERE rn = 1`,
    // The ping-id window (contract §4): a survivor is a repeat when a counted survivor with its id lies
    // on a day before it at most W days before it by event time (or on a closed month's day after it,
    // at most W days after: what a closed day counts stays counted). Repeats are left out before the
    // session rate is judged, as DuckDB's rollup leaves them out.
    `CREATE TEMP TABLE repeat_keys AS
     ${repeatKeys.length ? repeatKeys.join('\n     UNION\n     ') : `SELECT ping_k FROM survivors WHERE 1 = 0`}`,
    `CREATE TEMP TABLE human_pings AS SELECT * FROM survivors WHERE ping_k IS NULL OR ping_k NOT IN (SELECT ping_k FROM repeat_keys)`,
    // Sessions with more pings in one minute than a player sends (rules.ts SESSION_RATE_RULE): all of their day left out.
    `CREATE TEMP TABLE caught_sessions AS
     SELECT DISTINCT session_k FROM human_pings GROUP BY session_k, minute HAVING COUNT(*) > ${MAX_PINGS_PER_SESSION_MINUTE}`,
    `CREATE TEMP TABLE day_pings AS SELECT * FROM human_pings WHERE session_k NOT IN (SELECT session_k FROM caught_sessions)`,
    // The repeats the audit counts: those of a caught session are automated traffic, as its duplicates are.
    `CREATE TEMP TABLE repeats AS SELECT source FROM survivors
     WHERE ping_k IN (SELECT ping_k FROM repeat_keys) AND session_k NOT IN (SELECT session_k FROM caught_sessions)`,
    // Every record left out as automated traffic, duplicates included, with its rule and its staged
    // columns (its rejects line, rejects-lines.ts: UNLOADed after the transaction).
    `CREATE TEMP TABLE excluded AS
     SELECT COALESCE(record_rule, ${sqlString(SESSION_RATE_RULE)}) AS rule, ${EXCLUDED_STAGED_COLUMNS.join(', ')}, series_k, session_k, minute FROM (
       SELECT x.*, ${idKey('series')} AS series_k, ${idKey('session')} AS session_k, CAST(FLOOR((event_ms - ${start}) / 60000.0) AS BIGINT) AS minute
       FROM ${ruled} x WHERE ${inDay}) r
     WHERE record_rule IS NOT NULL OR session_k IN (SELECT session_k FROM caught_sessions)`,
    `DELETE FROM ${tables.daily_episode_stats} WHERE day = ${date}`,
    `INSERT INTO ${tables.daily_episode_stats} (day, series_id, episode_id, pings, sessions, viewers, minutes_watched, first_ping_at, last_ping_at, s3_pings, dynamodb_pings)
     SELECT ${date}, MIN(series), MIN(episode), COUNT(*), COUNT(DISTINCT session_k), ${viewers}, ${minutes}, ${ts('MIN(event_ms)')}, ${ts('MAX(event_ms)')},
            SUM(CASE WHEN source = 's3' THEN 1 ELSE 0 END), SUM(CASE WHEN source = 'dynamodb' THEN 1 ELSE 0 END)
     FROM day_pings GROUP BY series_k, episode_k`,
    `DELETE FROM ${tables.daily_series_stats} WHERE day = ${date}`,
    `INSERT INTO ${tables.daily_series_stats} (day, series_id, episodes, pings, sessions, viewers, minutes_watched, first_ping_at, last_ping_at)
     SELECT ${date}, MIN(series), COUNT(DISTINCT episode_k), COUNT(*), COUNT(DISTINCT session_k), ${viewers}, ${minutes}, ${ts('MIN(event_ms)')}, ${ts('MAX(event_ms)')}
     FROM day_pings GROUP BY series_k`,
    // By UTC hour: distinct (session, minute) over every series and episode. Hours with none are left out.
    `DELETE FROM ${tables.daily_hourly_stats} WHERE day = ${date}`,
    `INSERT INTO ${tables.daily_hourly_stats} (day, hour, minutes_watched)
     SELECT ${date}, CAST(FLOOR(minute / 60.0) AS BIGINT), ${minutes} FROM day_pings GROUP BY CAST(FLOOR(minute / 60.0) AS BIGINT)`,
    // Concurrency: distinct sessions with a ping in each UTC minute, per series and per episode; the
    // peak is the most, at the earliest minute that has it (the series' row has a NULL episode).
    `CREATE TEMP TABLE episode_minutes AS SELECT series_k, episode_k, MIN(series) AS series, MIN(episode) AS episode, minute, COUNT(DISTINCT session_k) AS sessions
     FROM day_pings GROUP BY series_k, episode_k, minute`,
    `CREATE TEMP TABLE series_minutes AS SELECT series_k, MIN(series) AS series, minute, COUNT(DISTINCT session_k) AS sessions FROM day_pings GROUP BY series_k, minute`,
    `DELETE FROM ${tables.daily_series_minutes} WHERE day = ${date}`,
    `INSERT INTO ${tables.daily_series_minutes} (day, series_id, minute, sessions)
     SELECT ${date}, series, ${ts(`(${start} + minute * 60000)`)}, sessions FROM series_minutes`,
    `DELETE FROM ${tables.daily_peaks} WHERE day = ${date}`,
    `INSERT INTO ${tables.daily_peaks} (day, series_id, episode_id, peak_sessions, peak_minute)
     SELECT ${date}, series, episode, sessions, ${ts(`(${start} + minute * 60000)`)} FROM (
       SELECT series, episode, sessions, minute, ROW_NUMBER() OVER (PARTITION BY series_k, episode_k ORDER BY sessions DESC, minute) AS rn FROM episode_minutes
       UNION ALL
       SELECT series, CAST(NULL AS VARCHAR(1024)), sessions, minute, ROW_NUMBER() OVER (PARTITION BY series_k ORDER BY sessions DESC, minute) FROM series_minutes) ranked
     WHERE rn = 1`,
    // Viewers by key (viewer-key.ts), per series and per episode; none without a key.
    `DELETE FROM ${tables.daily_series_viewers} WHERE day = ${date}`,
    `DELETE FROM ${tables.daily_episode_viewers} WHERE day = ${date}`,
    ...(keyed ? [
      `INSERT INTO ${tables.daily_series_viewers} (day, series_id, viewer_key)
       SELECT ${date}, v.series, ${viewerKeySql(keyed.keyId, 'k.secret', 'v.viewer', sha256Hex)}
       FROM (SELECT MIN(series) AS series, MIN(COALESCE(user_id, 'session:' || session)) AS viewer FROM day_pings
             GROUP BY series_k, COALESCE(user_k, 'session:' || session_k)) v CROSS JOIN ${keyed.secretTable} k`,
      `INSERT INTO ${tables.daily_episode_viewers} (day, series_id, episode_id, viewer_key)
       SELECT ${date}, v.series, v.episode, ${viewerKeySql(keyed.keyId, 'k.secret', 'v.viewer', sha256Hex)}
       FROM (SELECT MIN(series) AS series, MIN(episode) AS episode, MIN(COALESCE(user_id, 'session:' || session)) AS viewer FROM day_pings
             GROUP BY series_k, episode_k, COALESCE(user_k, 'session:' || session_k)) v CROSS JOIN ${keyed.secretTable} k`,
    ] : []),
    // By platform (platformSql: PINGROLL_PLATFORMS by name, the rest `unknown`).
    `DELETE FROM ${tables.daily_platform_stats} WHERE day = ${date}`,
    `INSERT INTO ${tables.daily_platform_stats} (day, series_id, platform, pings, sessions, viewers, minutes_watched)
     SELECT ${date}, MIN(series), platform, COUNT(*), COUNT(DISTINCT session_k), ${viewers}, ${minutes}
     FROM day_pings GROUP BY series_k, platform`,
    // By country and by device (contract §10), as by platform.
    `DELETE FROM ${tables.daily_country_stats} WHERE day = ${date}`,
    `INSERT INTO ${tables.daily_country_stats} (day, series_id, country, pings, sessions, viewers, minutes_watched)
     SELECT ${date}, MIN(series), country, COUNT(*), COUNT(DISTINCT session_k), ${viewers}, ${minutes}
     FROM day_pings GROUP BY series_k, country`,
    `DELETE FROM ${tables.daily_device_stats} WHERE day = ${date}`,
    `INSERT INTO ${tables.daily_device_stats} (day, series_id, os, device_type, browser, pings, sessions, viewers, minutes_watched)
     SELECT ${date}, MIN(series), os, device_type, browser, COUNT(*), COUNT(DISTINCT session_k), ${viewers}, ${minutes}
     FROM day_pings GROUP BY series_k, os, device_type, browser`,
    // What was left out as automated traffic, by series and rule.
    `DELETE FROM ${tables.daily_invalid_traffic} WHERE day = ${date}`,
    `INSERT INTO ${tables.daily_invalid_traffic} (day, series_id, rule, records, sessions, minutes_watched)
     SELECT ${date}, MIN(series), rule, COUNT(*), COUNT(DISTINCT session_k), ${minutes}
     FROM excluded GROUP BY series_k, rule`,
    // Completion (day-rollup.ts, COMPLETION_COLUMNS): each session's furthest playhead that is at most
    // the catalog's duration, per episode; without the episode in the catalog, NULL.
    `DELETE FROM ${tables.daily_episode_completion} WHERE day = ${date}`,
    catalogTable ? `INSERT INTO ${tables.daily_episode_completion} (day, series_id, episode_id, duration_seconds, sessions, sessions_with_position, ${COMPLETION_THRESHOLDS.map((p) => `reached_${p}`).join(', ')}, avg_share_watched)
     SELECT ${date}, MIN(series), MIN(episode), MIN(duration), COUNT(*), ${ifListed('COUNT(pos)')},
            ${COMPLETION_THRESHOLDS.map((p) => ifListed(`SUM(CASE WHEN pos * 100 >= ${p} * duration THEN 1 ELSE 0 END)`)).join(', ')},
            CAST(SUM(pos) AS DOUBLE PRECISION) / CAST(NULLIF(COUNT(pos) * MIN(duration), 0) AS DOUBLE PRECISION)
     FROM (
       SELECT d.series_k, d.episode_k, MIN(d.series) AS series, MIN(d.episode) AS episode, MIN(c.duration_seconds) AS duration,
              MAX(CASE WHEN d.pos <= c.duration_seconds THEN d.pos END) AS pos
       FROM day_pings d LEFT JOIN (SELECT ${idKey('series_id')} AS series_k, ${idKey('episode_id')} AS episode_k, duration_seconds FROM ${catalogTable}) c
         ON c.series_k = d.series_k AND c.episode_k = d.episode_k
       GROUP BY d.series_k, d.episode_k, d.session_k) f
     GROUP BY series_k, episode_k`
      : `INSERT INTO ${tables.daily_episode_completion} (day, series_id, episode_id, sessions)
     SELECT ${date}, MIN(series), MIN(episode), COUNT(DISTINCT session_k) FROM day_pings GROUP BY series_k, episode_k`,
    // (No temporary table is dropped: they go with the session.)
    // The day's ping ids, every survivor with one: whether a repeat, and whether counted (neither a
    // repeat nor of a caught session). UNLOADed after the transaction, sorted by id. With W = 0 none
    // is kept.
    ...(W > 0 ? [`CREATE TEMP TABLE day_ping_ids AS
     SELECT s.ping_id, s.event_ms, r.ping_k IS NOT NULL AS "repeat", r.ping_k IS NULL AND c.session_k IS NULL AS counted
     FROM survivors s LEFT JOIN repeat_keys r ON r.ping_k = s.ping_k LEFT JOIN caught_sessions c ON c.session_k = s.session_k
     WHERE s.ping_id IS NOT NULL`] : []),
    // The ledger's counts, and the duplicates: the day's staged pings less the survivors, by source.
    `DELETE FROM ${tables.daily_ingest_audit} WHERE day = ${date}`,
    `INSERT INTO ${tables.daily_ingest_audit} (day, source, outcome, records)
     SELECT ${date}, source, outcome, records FROM (
       ${[...counted, `SELECT source, 'invalid_traffic' AS outcome, COUNT(*) AS records FROM excluded GROUP BY source`,
    `SELECT source, 'repeat' AS outcome, COUNT(*) AS records FROM repeats GROUP BY source`,
    `SELECT s.source, 'duplicate' AS outcome, s.n - COALESCE(e.n, 0) - COALESCE(k.n, 0) - COALESCE(r.n, 0) AS records
       FROM (SELECT source, COUNT(*) AS n FROM ${staged} WHERE ${inDay} GROUP BY source) s
       LEFT JOIN (SELECT source, COUNT(*) AS n FROM excluded GROUP BY source) e ON e.source = s.source
       LEFT JOIN (SELECT source, COUNT(*) AS n FROM day_pings GROUP BY source) k ON k.source = s.source
       LEFT JOIN (SELECT source, COUNT(*) AS n FROM repeats GROUP BY source) r ON r.source = s.source`].join('\n       UNION ALL ')}) counts
     WHERE records > 0`,
  ];
}
