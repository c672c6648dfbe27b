/**
 * The rollup of one UTC day (contract §4, §5), in DuckDB: exact, deterministic, and larger than memory
 * when it must be (DuckDB spills its hash tables past the engine's memory limit; no JavaScript
 * collection ever holds a ping).
 *
 * Dedupe: the key is the ping id when present, else the natural key. Among records with one key,
 * the survivor is the first by (source rank, event time, natural key): S3 over DynamoDB, then the
 * earliest, then the smallest natural key. The survivor supplies every value.
 *
 * Distinct counts are written as DISTINCT-then-GROUP-BY rather than COUNT(DISTINCT ...): plain
 * grouped aggregation is what DuckDB spills to disk best.
 */
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { DAYS, PARSED, SEALS, STAGING } from '../../../datasets/layout.js';
import { allEnded } from '../../../lib/all-ended.js';
import { queryRows, sibling, sqlString } from '../../../lib/duckdb-engine.js';
import { DAY_MS, dayStartMs } from '../../../lib/utc-day.js';
import { NO_STAGED_ROWS } from '../../../ingest/staged-ping.js';
import { SHA256_HEX, viewerKeySql } from '../../viewer-key.js';
import { AUDIENCE_SQL, COMPLETION_THRESHOLDS, MAX_PINGS_PER_SESSION_MINUTE, platformSql, ruledRows, SESSION_RATE_RULE, type CatalogOnly, type CatalogRule, type RollupSettings, type TableName } from '../../rules.js';
import { EXCLUDED_STAGED_COLUMNS } from '../../rejects-lines.js';
import { PING_IDS_ROW_GROUP, WINDOW_PASS_IDS } from '../../ping-window.js';
import { keepKeys, stagedKeysSql, stagedTextIdsSql, uuidKeySql } from './ping-keys.js';
import { checkWindow, DAY_IDS, DAY_TEXT_IDS, REPEAT_ROWS, SHARED, type WindowFile } from './window-check.js';

/** The records left out as automated traffic: in the engine's own database (SHARED), for their rejects lines to be written on a connection of their own (duckdb-rollup.ts). */
export const EXCLUDED = `${SHARED}.excluded`;

/**
 * How DuckDB writes a ping-ids file: zstd at level 1, which on the small-object day's 445,657 ids wrote
 * 0.95x the bytes of the default level 3 in 0.82x the time (sorted, 123 ms against 150, medians of 5);
 * and no dictionaries (`DICTIONARY_SIZE_LIMIT 1`): a day's ids and event times are distinct, so the
 * dictionary DuckDB builds of each row group is thrown away (the busy day's 45.2M ids in a scratch
 * script: 7.8 s against 9.1 s and 127 MB against 143 MB, three rounds each; inside the rollup the
 * COPY's time was within the runs' noise, 7.8-8.1 s against 7.6-8.3 s).
 */
export const PING_IDS_PARQUET = `FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE ${PING_IDS_ROW_GROUP}, DICTIONARY_SIZE_LIMIT 1`;

/**
 * How many of a group's 64-minute masks (`minutes`) have each bit set, in one GROUP BY: 32 sums
 * `p0`..`p31`, each two counts in one BIGINT, bit k's in its low 32 bits and bit k + 32's in its high
 * (a count is at most the group's sessions in one block, far below 2^31). Half the aggregates of a sum
 * a bit; read back with `bitCount`. Both per-minute figures (the series' minutes, the episodes' peaks)
 * are made this way: on the 20M-ping day (bench/rollup-statements.ts) 0.60x and 0.74x the time of a
 * row per minute watched and of 64 sums read through a list (docs/benchmarks.md, *The rollup's
 * statements*).
 */
const PAIR_SUMS = Array.from({ length: 32 }, (_, k) =>
  `sum(((minutes >> ${k}::UBIGINT) & 1::UBIGINT) | (((minutes >> ${k + 32}::UBIGINT) & 1::UBIGINT) << 32::UBIGINT))::BIGINT AS p${k}`).join(', ');
/** Bit k's count (0 to 63) from PAIR_SUMS. */
const bitCount = (k: number): string => (k < 32 ? `(p${k} & 4294967295)` : `(p${k - 32} >> 32)`);
const BITS = Array.from({ length: 64 }, (_, k) => k);

/**
 * The staged rows of `stagedFiles` (local paths), each with a `rowid`: the file's place in the list
 * above 2^40 rows, and its row number; and `file_no`, the file's place alone.
 */
export function stagedRows(stagedFiles: readonly string[]): string {
  return stagedFiles.length
    // By name, with the staged shape's every column: files of staged format 1 have no `platform`
    // (NULL), and where all of a day's are of it, no file has the column at all.
    ? `(SELECT *, file_index::BIGINT AS file_no, (file_index::BIGINT << 40) | file_row_number AS rowid FROM read_parquet([${stagedFiles.map(sqlString).join(', ')}], file_row_number = true, union_by_name = true)
        UNION ALL BY NAME SELECT *, NULL::BIGINT AS file_no, NULL::BIGINT AS rowid FROM (${NO_STAGED_ROWS}))`
    // No ping staged for the day: an empty relation of the staged shape.
    : `(SELECT *, NULL::BIGINT AS file_no, NULL::BIGINT AS rowid FROM (${NO_STAGED_ROWS}))`;
}

/**
 * The staged rows of `day` (a relation of `stagedRows`) that the day counts, every column kept: those
 * not sent by automated traffic (contract §10: no user agent on the bot list, no series or episode
 * the catalog does not list when `catalog` is given, no session caught by SESSION_RATE_RULE), and of those the survivors of the day's dedupe (contract §4). The day's rollup
 * below gives the same rows its own, cheaper way; the month's rollup and adjustments read these.
 * `pingIds`: the day's ping ids as its rollup wrote them (a local file, rollup/ping-window.ts): its
 * repeats are left out as the rollup left them out, before the session rate is judged.
 */
export function survivorsSql(files: string, day: string, catalog: CatalogRule | null = null, pingIds: string | null = null): string {
  const dayStart = dayStartMs(day);
  const inDay = `event_ms >= ${dayStart} AND event_ms < ${dayStart + DAY_MS}`;
  const key = 'coalesce(ping_id, natural_key)';
  return `(WITH human AS (SELECT * EXCLUDE (record_rule) FROM ${ruledRows(files, catalog)} WHERE ${inDay} AND record_rule IS NULL),
    repeated AS (SELECT hash(${key}) AS h FROM human GROUP BY h HAVING count(*) > 1),
    losers AS (
      SELECT rowid FROM (
        SELECT rowid, row_number() OVER (PARTITION BY ${key} ORDER BY CASE source WHEN 's3' THEN 0 ELSE 1 END, event_ms, natural_key) AS rn
        FROM human AS s SEMI JOIN repeated ON hash(${key}) = repeated.h
      ) WHERE rn > 1),
    survived AS (SELECT * FROM human AS s ANTI JOIN losers USING (rowid)${pingIds ? ` WHERE s.ping_id IS NULL OR s.ping_id NOT IN (SELECT ping_id FROM read_parquet(${sqlString(pingIds)}) WHERE "repeat")` : ''}),
    caught AS (SELECT DISTINCT session FROM survived GROUP BY session, (event_ms - ${dayStart}) // 60000 HAVING count(*) > ${MAX_PINGS_PER_SESSION_MINUTE})
    SELECT * FROM survived WHERE session NOT IN (SELECT session FROM caught))`;
}

/**
 * What PINGROLL_CATALOG_ONLY keeps `what`'s pings to (rules.ts ruledRows): the checked catalog's
 * Parquet file; none when it is off. Set without a catalog is a fault of the caller (the
 * configuration refuses it).
 */
export function catalogRuleFor(only: CatalogOnly | null | undefined, catalogFile: string | null | undefined, what: string): CatalogRule | null {
  if (!only) return null;
  if (!catalogFile) throw new Error(`${what} keeps pings to the episode catalog (PINGROLL_CATALOG_ONLY=${only}) but was given none`);
  return { only, table: `read_parquet(${sqlString(catalogFile)})` };
}

/** The ping-id window as a day's rollup takes it (rollup/ping-window.ts): W, the earlier days' ping ids (local files), and where to write the day's own. */
export interface DayWindow {
  days: number;
  history: readonly WindowFile[];
  /** The ping ids of the days of closed months among the W after it: what they count stays counted (contract §9). */
  closedAfter: readonly WindowFile[];
  /** The day's ping ids, written here (PING_IDS_COLUMNS). */
  out: string;
  /** Its counted ids that are UUIDs, as sorted keys (ping-keys.ts), written here. */
  outKeys: string;
  /** A folder for the keys the check makes of files kept without them. */
  dir: string;
  /** The day's ids a pass of the check holds at most (WINDOW_PASS_IDS unless said: tests make it small). */
  passIds?: number;
}

export interface DayRollup {
  /** Temporary tables holding each output table's rows, in the contract's order. */
  tables: Record<TableName, string>;
  pings: number;
  duplicates: Record<string, number>;
  /** Survivors left out as repeats of a ping counted on an earlier day (contract §4), by source. */
  repeats: Record<string, number>;
  /** The rows of the day's ping-ids file (window.out); 0 without a window. */
  pingIdRows: number;
  /** What the window took (null without one): its check (the day's ids, their passes over the history), and keeping the day's ids. */
  windowCost: { checkMs: number; keepMs: number; passes: number } | null;
  /** Records left out as automated traffic, by source. */
  invalid: Record<string, number>;
  /** The table of those records, each with its rule and staged columns (rollup/rejects-lines.ts): EXCLUDED, which another connection to the engine reads too. */
  excluded: string;
}

/**
 * Rolls up `day` from the staged Parquet files (local paths). `outcomes` are the day's record counts
 * by source and outcome from the batch commits; the rollup adds `duplicate`.
 */
export async function rollupDay(engine: DuckDBConnection, day: string, stagedFiles: string[],
  outcomes: Record<string, Record<string, number>>, opts: RollupSettings & { catalogFile?: string | null; window?: DayWindow | null } = {}): Promise<DayRollup> {
  const dayStart = dayStartMs(day);
  // Each staged row is known by its file and row number (`rowid`), so that the few losing duplicates
  // can be named and left out: one BIGINT, the file's place in the list above 2^40 rows, which joins
  // faster than a (filename, row) struct (the dedupe statement: 233 ms against 245 ms, medians of 12
  // interleaved runs).
  // With PINGROLL_CATALOG_ONLY, each row's rule is the catalog's when the bot list has none (rules.ts).
  const stagedSql = stagedRows(stagedFiles);
  const files = ruledRows(stagedSql, catalogRuleFor(opts.catalogOnly, opts.catalogFile, `the rollup of ${day}`));
  const inDay = `event_ms >= ${dayStart} AND event_ms < ${dayStart + DAY_MS}`;
  // Dedupe. Most keys are unique: only keys staged more than once go through the window that picks
  // each one's survivor, and what comes out is the losers' row ids. "More than once" is asked of the
  // key's 64-bit hash (cheaper to group and join than strings) and stays exact: a key whose hash is
  // seen once is unique, and a key that only shares its hash with another is its own window
  // partition, so it survives. A window, not arg_min over structs: DuckDB spills a window's
  // partitions to disk, but not arg_min's struct states (a 20M-ping day ran out of memory that way).
  //
  // The survivors (every staged row of the day but the losers) are never held: the staged files are
  // read again rather than materialized (reading Parquet is cheaper than holding its strings), and
  // grouped at once by session and 64-minute block of the day with a bit per minute watched
  // (bit_or). Every metric of both tables follows exactly from these groups: pings add up, first and
  // last are the least and greatest, distinct minutes are the bits of a session's blocks
  // (bit_count), and sessions and viewers are distinct over the groups.
  const key = 'coalesce(ping_id, natural_key)';
  // With a catalog, each group keeps its furthest possible playhead (none past the episode's duration).
  const catalog = opts.catalogFile ? `read_parquet(${sqlString(opts.catalogFile)})` : null;
  const minuteOfDay = `(event_ms - ${dayStart}) // 60000`;
  // Pings a user agent on the bot list sent (staged as such: contract §10), and with
  // PINGROLL_CATALOG_ONLY those the catalog does not list, are left out before anything else, and
  // counted apart (`excluded` below).
  const human = `(SELECT * FROM ${files} WHERE record_rule IS NULL)`;
  const dims = `${platformSql('platform', opts.platforms)}, ${AUDIENCE_SQL.country}, ${AUDIENCE_SQL.os}, ${AUDIENCE_SQL.device_type}, ${AUDIENCE_SQL.browser}`;
  // The losers, held (a few rows): session_blocks leaves them out, and so does the exact minute check below.
  await engine.run(`
    CREATE OR REPLACE TEMP TABLE losers AS
    WITH repeated AS (SELECT hash(${key}) AS h FROM ${human} WHERE ${inDay} GROUP BY h HAVING count(*) > 1)
    SELECT rowid, source FROM (
      SELECT rowid, source, row_number() OVER (PARTITION BY ${key} ORDER BY CASE source WHEN 's3' THEN 0 ELSE 1 END, event_ms, natural_key) AS rn
      FROM ${human} AS s SEMI JOIN repeated ON hash(${key}) = repeated.h WHERE ${inDay}
    ) WHERE rn > 1`);
  // The ping-id window (contract §4, rollup/ping-window.ts): the day's survivors with a ping id, and
  // of those the repeats, a counted survivor of an earlier day holding their id at most W days before
  // them by event time. Repeats are left out with the losers, before the session rate is judged (a
  // player that resends what it could not deliver sends many pings in a minute).
  // With W = 0 (the window off) no id is looked at, and none is kept: the day costs what it did
  // before the window.
  const W = (opts.window?.days ?? 0) * DAY_MS;
  const window = W > 0 ? opts.window! : null;
  const checkStart = performance.now();
  let passes = 0, dayKeys = 0;
  // The day's keys that are not repeats, sorted as the check read them: the keys file kept below.
  const checkedKeys = window ? join(window.dir, 'ping-ids.checked.keys') : '';
  // The day's survivors (those with an id: dayIdWhere).
  const dayIdFrom = `${human} AS s ANTI JOIN losers USING (rowid)`, dayIdWhere = `${inDay} AND ping_id IS NOT NULL`;
  // The check's tables are in a database of the engine's own (SHARED): the check runs on a connection
  // of its own while this one judges the survivors (below), and a TEMP table is one connection's.
  await engine.run(`ATTACH IF NOT EXISTS ':memory:' AS ${SHARED}`);
  await engine.run(`CREATE OR REPLACE TABLE ${REPEAT_ROWS} (rowid BIGINT)`);
  // The repeats (none yet: the check finds them, below) and what is judged of the survivors without
  // them: `judge` groups them by session and 64-minute block of the day (session_blocks), finds the
  // automated traffic among them and leaves it out. It runs while the window is checked, and again
  // without the repeats when the check finds any (a day's repeats are few, and most days have none).
  await engine.run('CREATE OR REPLACE TEMP TABLE repeats AS SELECT rowid, source, NULL::VARCHAR AS session FROM losers LIMIT 0');
  const judge = async (): Promise<void> => {
    await engine.run(`
      CREATE OR REPLACE TEMP TABLE session_blocks AS
      SELECT source, series, episode, session, user_id, ${platformSql('platform', opts.platforms)} AS platform,
             ${AUDIENCE_SQL.country} AS country, ${AUDIENCE_SQL.os} AS os, ${AUDIENCE_SQL.device_type} AS device_type, ${AUDIENCE_SQL.browser} AS browser,
             ${minuteOfDay} // 64 AS block,
             count(*) AS pings, min(event_ms) AS first_ms, max(event_ms) AS last_ms,
             bit_or(1::UBIGINT << (${minuteOfDay} % 64)::UBIGINT) AS minutes${catalog ? ', max(pos) FILTER (WHERE pos <= c.duration_seconds) AS furthest' : ''}
      FROM ${human} AS s ANTI JOIN losers USING (rowid) ANTI JOIN repeats USING (rowid)
      ${catalog ? `LEFT JOIN ${catalog} c ON c.series_id = s.series AND c.episode_id = s.episode` : ''}
      WHERE ${inDay}
      GROUP BY source, series, episode, session, user_id, ${dims}, block`);
    // Sessions that sent more pings in one minute than a player does (SESSION_RATE_RULE), from each
    // session's 64-minute blocks: a block with more than MAX pings a minute watched has such a minute;
    // a block with fewer than MAX more pings than minutes has none. Only a session with a block in
    // between (none, on a day of players or of bots that loop fast) has its minutes counted one by one:
    // its surviving records (those not among the losers), by minute.
    const MAX = MAX_PINGS_PER_SESSION_MINUTE;
    await engine.run(`
      CREATE OR REPLACE TEMP TABLE rate_blocks AS
      SELECT session, bool_or(sum(pings) > ${MAX} * bit_count(bit_or(minutes))::BIGINT) OVER (PARTITION BY session) AS caught FROM session_blocks
      GROUP BY session, block HAVING sum(pings) >= bit_count(bit_or(minutes)) + ${MAX}`);
    // One read of the staged rows for everything automated traffic needs: the records a rule caught on
    // their own, and every record of a session the blocks caught or left undecided (duplicates
    // included), each with its staged columns (its rejects line, if it is left out). When the blocks
    // hold no session (a day of players, and of bots a rule names), the read asks only for a rule: a
    // filter of one column, which DuckDB applies as it reads, reading the other columns only for the
    // rows it keeps; asked with the sessions too, it reads every column of every row first (a 20M-ping
    // day of players: 6.5-9.3 ms against 896 ms; docs/benchmarks.md, *The rollup's statements*).
    const rateSessions = Number((await queryRows<{ n: bigint }>(engine, 'SELECT count(*) AS n FROM rate_blocks'))[0]!.n);
    await engine.run(`
      CREATE OR REPLACE TEMP TABLE suspect AS
      SELECT record_rule, ${EXCLUDED_STAGED_COLUMNS.join(', ')}, ${minuteOfDay} AS minute, rowid
      FROM ${files} WHERE ${inDay} AND ${rateSessions > 0 ? '(record_rule IS NOT NULL OR session IN (SELECT session FROM rate_blocks))' : 'record_rule IS NOT NULL'}`);
    await engine.run(`
      CREATE OR REPLACE TEMP TABLE caught_sessions AS
      SELECT DISTINCT session FROM rate_blocks WHERE caught
      UNION
      SELECT DISTINCT session FROM (
        SELECT session FROM suspect AS s ANTI JOIN losers USING (rowid) ANTI JOIN repeats USING (rowid)
        WHERE record_rule IS NULL AND session IN (SELECT session FROM rate_blocks WHERE NOT caught)
        GROUP BY session, minute HAVING count(*) > ${MAX})`);
    // The day's staged records by source, without another read: each is a record a rule caught on its
    // own (in suspect), a losing duplicate, or a survivor counted in session_blocks (its caught sessions
    // not yet removed).
    await engine.run(`
      CREATE OR REPLACE TEMP TABLE staged_count AS
      SELECT source, sum(n)::BIGINT AS records FROM (
        SELECT source, sum(pings) AS n FROM session_blocks GROUP BY source
        UNION ALL SELECT source, count(*) AS n FROM losers GROUP BY source
        UNION ALL SELECT source, count(*) AS n FROM repeats GROUP BY source
        UNION ALL SELECT source, count(*) AS n FROM suspect WHERE record_rule IS NOT NULL GROUP BY source)
      GROUP BY source`);
    // Every record left out as automated traffic, duplicates included, with its rule and its staged
    // columns; then the caught sessions' blocks go, so that no table below counts them.
    await engine.run(`
      CREATE OR REPLACE TABLE ${EXCLUDED} AS
      SELECT coalesce(record_rule, ${sqlString(SESSION_RATE_RULE)}) AS rule, ${EXCLUDED_STAGED_COLUMNS.join(', ')}, minute
      FROM suspect WHERE record_rule IS NOT NULL OR session IN (SELECT session FROM caught_sessions)`);
    await engine.run('DELETE FROM session_blocks WHERE session IN (SELECT session FROM caught_sessions)');
  };
  let judged = false;
  if (window) {
    // Each id that is a UUID as its key (as staged: ping-keys.ts stagedKeysSql), the others (few:
    // players send UUIDs) with their text apart. No session or source: a row's strings are most of
    // what holding it costs (the busy day's 47M ids: 10.6 s to hold, against 20.6 s with the session
    // and 23.5 s with the id's text too, at the default memory limit), and the few rows that need
    // them (the repeats, the caught sessions') are read for them. The ids that are not UUIDs apart,
    // so that what reads them (the text check, keeping) reads a few rows, not the day's 45M.
    // Held, not streamed to the check straight from the staged rows: streamed so (the losers' anti
    // join in the stream) the busy day's keys took 8.7-10.5 s, about what holding them and streaming
    // the table take (4.1-4.5 s and 4.0-4.8 s, a scratch measure on the rollup's own SQL), and a
    // UNION ALL of the two kinds of staged row never answered, streamed (DuckDB 1.5).
    // (A key is an id's: the staged key columns are asked whether there is one, not the id's text.)
    await engine.run(`CREATE OR REPLACE TABLE ${DAY_IDS} AS ${stagedKeysSql(dayIdFrom, inDay)}`);
    await engine.run(`CREATE OR REPLACE TABLE ${DAY_TEXT_IDS} AS ${stagedTextIdsSql(dayIdFrom, inDay)}`);
    // A survivor counted on a day of a closed month stays counted (contract §9): an open day's record
    // with its id, at most W days before it, is the repeat. The check: window-check.ts. Most of it is
    // JavaScript (the keys' sort and merge) while DuckDB's threads would wait: on a connection of its
    // own, the survivors are judged meanwhile (the small-object day: see docs/benchmarks.md).
    const side = await sibling(engine);
    try {
      // Both are waited for, whatever either does: no query of this day is left running.
      const [checked] = await allEnded([
        () => checkWindow(side ?? engine, { dayStart, W, history: window.history, closedAfter: window.closedAfter, passIds: window.passIds ?? WINDOW_PASS_IDS, dir: window.dir, keptPath: checkedKeys }),
        ...(side ? [async () => { await judge(); return null; }] : []),
      ], 2);
      passes = checked!.passes;
      dayKeys = checked!.keys;
      judged = side !== null;
    } finally {
      side?.closeSync();
    }
  }
  // The repeats' sources and sessions, read for them (a read of two columns of the staged rows: 1.3-1.9 s for the busy day).
  const found = window !== null && Number((await queryRows<{ n: bigint }>(engine, `SELECT count(*) AS n FROM ${REPEAT_ROWS}`))[0]!.n) > 0;
  if (found) await engine.run(`CREATE OR REPLACE TEMP TABLE repeats AS SELECT rowid, source, session FROM ${stagedSql} SEMI JOIN ${REPEAT_ROWS} USING (rowid)`);
  const checkMs = performance.now() - checkStart;
  if (!judged || found) await judge();
  // Sessions and minutes watched over `by`: a session's minutes are the bits set in any of its blocks.
  const sessions = (by: string): string => `SELECT ${by}, count(*) AS sessions, sum(minutes) AS minutes FROM (
      SELECT ${by}, session, sum(bit_count(minutes)) AS minutes FROM (
        SELECT ${by}, session, block, bit_or(minutes) AS minutes FROM session_blocks GROUP BY ${by}, session, block)
      GROUP BY ${by}, session)
    GROUP BY ${by}`;
  const viewers = (by: string): string => `SELECT ${by}, count(*) AS viewers FROM (
      SELECT DISTINCT ${by}, coalesce(user_id, 'session:' || session) AS viewer FROM session_blocks)
    GROUP BY ${by}`;
  await engine.run(`
    CREATE OR REPLACE TEMP TABLE out_episode AS
    WITH base AS (
      SELECT series, episode, sum(pings) AS pings, min(first_ms) AS first_ms, max(last_ms) AS last_ms,
             coalesce(sum(pings) FILTER (WHERE source = 's3'), 0) AS s3_pings, coalesce(sum(pings) FILTER (WHERE source = 'dynamodb'), 0) AS dynamodb_pings
      FROM session_blocks GROUP BY series, episode)
    SELECT DATE ${sqlString(day)} AS day, b.series AS series_id, b.episode AS episode_id, b.pings::BIGINT AS pings,
           s.sessions::BIGINT AS sessions, v.viewers::BIGINT AS viewers, s.minutes::BIGINT AS minutes_watched,
           make_timestamp(b.first_ms * 1000) AS first_ping_at, make_timestamp(b.last_ms * 1000) AS last_ping_at,
           b.s3_pings::BIGINT AS s3_pings, b.dynamodb_pings::BIGINT AS dynamodb_pings
    FROM base b
    JOIN (${sessions('series, episode')}) s USING (series, episode) JOIN (${viewers('series, episode')}) v USING (series, episode)
    ORDER BY series_id, episode_id`);
  // A series' pings, first and last come from its episodes; its distinct counts span them.
  await engine.run(`
    CREATE OR REPLACE TEMP TABLE out_series AS
    WITH base AS (SELECT series_id AS series, count(*) AS episodes, sum(pings) AS pings, min(first_ping_at) AS first_ping_at,
                         max(last_ping_at) AS last_ping_at FROM out_episode GROUP BY series_id)
    SELECT DATE ${sqlString(day)} AS day, b.series AS series_id, b.episodes::BIGINT AS episodes, b.pings::BIGINT AS pings,
           s.sessions::BIGINT AS sessions, v.viewers::BIGINT AS viewers, s.minutes::BIGINT AS minutes_watched,
           b.first_ping_at, b.last_ping_at
    FROM base b
    JOIN (${sessions('series')}) s USING (series) JOIN (${viewers('series')}) v USING (series)
    ORDER BY series_id`);

  const staged = await queryRows<{ source: string; records: bigint }>(engine, 'SELECT source, records FROM staged_count');
  const kept = await queryRows<{ source: string; n: bigint }>(engine, 'SELECT source, sum(pings) AS n FROM session_blocks GROUP BY source');
  const invalid = Object.fromEntries((await queryRows<{ source: string; n: bigint }>(engine, `SELECT source, count(*) AS n FROM ${EXCLUDED} GROUP BY source`)).map((r) => [r.source, Number(r.n)]));
  // A repeat of a session caught as automated traffic is that (`invalid_traffic`), as its duplicates are.
  const repeats = Object.fromEntries((await queryRows<{ source: string; n: bigint }>(engine,
    'SELECT source, count(*) AS n FROM repeats WHERE session NOT IN (SELECT session FROM caught_sessions) GROUP BY source')).map((r) => [r.source, Number(r.n)]));
  let pingIdRows = 0;
  const keepStart = performance.now();
  if (window) {
    // A survivor that is not a repeat is counted unless its session was caught as automated traffic:
    // the day's ids of those sessions (most days have none), held with their keys, which keeping the
    // day's keys leaves out. Taken from their records in `suspect` (which holds every record of a
    // session the blocks caught or left undecided), as day_ids takes them from the staged rows: of
    // the day, of no bot-list rule, with an id, not a losing duplicate. Semi-joining day_ids instead
    // read all of the day's ids for them (the busy day's 45M: 2.3 s).
    const caught = Number((await queryRows<{ n: bigint }>(engine, 'SELECT count(*) AS n FROM caught_sessions'))[0]!.n) > 0;
    await engine.run(`CREATE OR REPLACE TEMP TABLE caught_ids AS ${caught
      ? `SELECT rowid, ${uuidKeySql('ping_id')} AS u, event_ms FROM suspect AS s SEMI JOIN caught_sessions USING (session) ANTI JOIN losers USING (rowid)
          WHERE s.record_rule IS NULL AND s.ping_id IS NOT NULL`
      : 'SELECT NULL::BIGINT AS rowid, NULL::HUGEINT AS u, NULL::BIGINT AS event_ms LIMIT 0'}`);
    // Every survivor with a ping id: whether it is a repeat, and whether the day counts it (neither a
    // repeat nor of a caught session): what later days' windows read, and the month's rollup and the
    // stale marks. In no order: the check reads the keys beside it, and what reads it reads it whole
    // (sorting the busy day's 45M ids as text was 22 of its 28 s). The ids' text is read again from
    // the staged rows: day_ids holds only keys, and a key's UUID text through BIT and BLOB costs more
    // (1.6 s for 10M ids, a scratch measure) than reading the text.
    await engine.run(`COPY (
      SELECT d.ping_id, d.event_ms, r.rowid IS NOT NULL AS "repeat", r.rowid IS NULL AND c.rowid IS NULL AS counted
      FROM (SELECT rowid, ping_id, event_ms FROM ${dayIdFrom} WHERE ${dayIdWhere}) d LEFT JOIN repeats r ON r.rowid = d.rowid LEFT JOIN caught_ids c ON c.rowid = d.rowid)
      TO ${sqlString(window.out)} (${PING_IDS_PARQUET})`);
    pingIdRows = dayKeys + Number((await queryRows<{ n: bigint }>(engine, `SELECT count(*) AS n FROM ${DAY_TEXT_IDS}`))[0]!.n);
    // Its counted ids that are UUIDs as sorted keys, beside it, its other counted ids after them
    // (ping-keys.ts): what later days' checks read. The check kept the keys that are not repeats as
    // it read them; of those, the keys of sessions caught as automated traffic are not counted.
    await keepKeys(engine, checkedKeys, caught ? 'SELECT c.u, c.event_ms FROM caught_ids c ANTI JOIN repeats r USING (rowid) WHERE c.u IS NOT NULL ORDER BY c.u' : null,
      `SELECT d.text_id, d.event_ms FROM ${DAY_TEXT_IDS} d ANTI JOIN repeats r USING (rowid) ANTI JOIN caught_ids c USING (rowid)`, window.outKeys);
  }
  const windowCost = window ? { checkMs: Math.round(checkMs), keepMs: Math.round(performance.now() - keepStart), passes } : null;
  const duplicates: Record<string, number> = {};
  for (const s of staged) {
    const survived = Number(kept.find((k) => k.source === s.source)?.n ?? 0n);
    duplicates[s.source] = Number(s.records) - (invalid[s.source] ?? 0) - survived - (repeats[s.source] ?? 0);
    // The staged pings are the pings the commits counted; anything else means a broken staging file.
    const counted = outcomes[s.source]?.ping ?? 0;
    if (counted !== Number(s.records)) {
      throw new Error(`staged pings for ${day} (${s.source}: ${s.records}) disagree with the ledger's count (${counted}): the files under ${STAGING}*/dt=${day}/ `
        + `are damaged; for each batch that staged them, delete its entries (${DAYS}dt=*/<batch>.*, ${PARSED}*/<batch>.*.keys) and ${SEALS}, then run pingroll reconcile over the delivery days those entries were under, which parses their log objects anew`);
    }
  }
  const audit: Array<[string, string, number]> = [];
  for (const [source, counts] of Object.entries(outcomes)) {
    // Automated traffic was staged as pings: it is `invalid_traffic` instead (contract §3, §10).
    for (const [outcome, n] of Object.entries(counts)) {
      const records = outcome === 'ping' ? n - (invalid[source] ?? 0) : n;
      if (records > 0) audit.push([source, outcome, records]);
    }
    if ((invalid[source] ?? 0) > 0) audit.push([source, 'invalid_traffic', invalid[source]!]);
    if ((duplicates[source] ?? 0) > 0) audit.push([source, 'duplicate', duplicates[source]!]);
    if ((repeats[source] ?? 0) > 0) audit.push([source, 'repeat', repeats[source]!]);
  }
  audit.sort((a, b) => a[0].localeCompare(b[0]) || a[1].localeCompare(b[1]));
  const values = audit.map(([s, o, n]) => `(DATE ${sqlString(day)}, ${sqlString(s)}, ${sqlString(o)}, ${n}::BIGINT)`);
  // By UTC hour: distinct (session, minute) within each hour, from each session's 64-minute blocks
  // (OR-ed over series and episodes), each block's bits masked to the part of the hour it covers.
  // Exact: every minute of the day lies in one block and one hour. Hours with no minute are left out.
  await engine.run(`
    CREATE OR REPLACE TEMP TABLE out_hourly AS
    WITH blocks AS (SELECT session, block, bit_or(minutes) AS minutes FROM session_blocks GROUP BY session, block),
    spans AS (
      SELECT b.minutes, h.hour,
             greatest(b.block * 64, h.hour * 60) - b.block * 64 AS lo, least(b.block * 64 + 63, h.hour * 60 + 59) - b.block * 64 AS hi
      FROM blocks b JOIN range(24) h(hour) ON h.hour * 60 <= b.block * 64 + 63 AND b.block * 64 <= h.hour * 60 + 59)
    SELECT DATE ${sqlString(day)} AS day, hour::BIGINT AS hour, minutes::BIGINT AS minutes_watched FROM (
      SELECT hour, sum(bit_count(minutes & (((1::UBIGINT << (hi - lo + 1)::UBIGINT) - 1::UBIGINT) << lo::UBIGINT))) AS minutes FROM spans GROUP BY hour)
    WHERE minutes > 0
    ORDER BY hour`);
  // Concurrency: a session's minutes (the bits of its blocks, OR-ed over sources and users), counted
  // per minute (PAIR_SUMS: the sessions with each bit set, one row a block, then a row a minute that
  // has any); a session is counted once a minute whatever its pings. The peak is the largest count,
  // at the earliest minute that has it. A series counts its sessions over all its episodes (a session
  // that changes episode within a minute is one session of the series).
  const minuteAt = (m: string): string => `make_timestamp((${dayStart} + ${m} * 60000) * 1000)`;
  const perMinute = (by: string): string => `
    SELECT ${by}, minute, sessions FROM (
      SELECT ${by}, block * 64 + unnest(range(64)) AS minute, unnest([${BITS.map(bitCount).join(', ')}]) AS sessions
      FROM (SELECT ${by}, block, ${PAIR_SUMS}
            FROM (SELECT ${by}, session, block, bit_or(minutes) AS minutes FROM session_blocks GROUP BY ${by}, session, block)
            GROUP BY ${by}, block))
    WHERE sessions > 0`;
  await engine.run(`CREATE OR REPLACE TEMP TABLE series_minutes AS ${perMinute('series')}`);
  await engine.run(`
    CREATE OR REPLACE TEMP TABLE out_series_minutes AS
    SELECT DATE ${sqlString(day)} AS day, series AS series_id, ${minuteAt('minute')} AS minute, sessions::BIGINT AS sessions
    FROM series_minutes ORDER BY series_id, minute`);
  // A peak and its earliest minute as one number, the most of sessions * 2048 + (2047 - minute) (a
  // minute of the day is below 2048): one aggregate, not a window. A series' from its minutes; an
  // episode's, whose minutes are not published, from its 64 counts a block (PAIR_SUMS) without a row
  // per minute: 0.7 of the time on the 20M-ping day.
  const decoded = (top: string): string => `(${top} // 2048)::BIGINT AS sessions, (2047 - ${top} % 2048)::BIGINT AS minute`;
  await engine.run(`
    CREATE OR REPLACE TEMP TABLE out_peaks AS
    SELECT DATE ${sqlString(day)} AS day, series AS series_id, episode AS episode_id, sessions::BIGINT AS peak_sessions, ${minuteAt('minute')} AS peak_minute
    FROM (
      SELECT series, episode, ${decoded('top')} FROM (
        SELECT series, episode, max(greatest(${BITS.map((k) => `${bitCount(k)} * 2048 + (2047 - (block * 64 + ${k}))`).join(', ')})) AS top
        FROM (SELECT series, episode, block, ${PAIR_SUMS}
              FROM (SELECT series, episode, session, block, bit_or(minutes) AS minutes FROM session_blocks GROUP BY series, episode, session, block)
              GROUP BY series, episode, block)
        GROUP BY series, episode)
      UNION ALL
      SELECT series, NULL::VARCHAR, ${decoded('top')} FROM (SELECT series, max(sessions * 2048 + (2047 - minute)) AS top FROM series_minutes GROUP BY series))
    ORDER BY series_id, episode_id NULLS FIRST`);
  // Viewers by key, per series and per episode (none without a key: no raw id is ever published).
  const viewersBy = async (by: string, table: string): Promise<void> => {
    await engine.run(`
      CREATE OR REPLACE TEMP TABLE ${table} AS
      SELECT DATE ${sqlString(day)} AS day, ${by.split(', ').map((c) => `${c} AS ${c}_id`).join(', ')},
             ${opts.viewerKey ? viewerKeySql(opts.viewerKey.id, sqlString(opts.viewerKey.secret), 'viewer', SHA256_HEX.duckdb) : 'NULL::VARCHAR'} AS viewer_key
      FROM (SELECT DISTINCT ${by}, coalesce(user_id, 'session:' || session) AS viewer FROM session_blocks)
      ORDER BY ALL ${opts.viewerKey ? '' : 'LIMIT 0'}`);
  };
  await viewersBy('series', 'out_series_viewers');
  await viewersBy('series, episode', 'out_episode_viewers');
  // By platform: each series' pings, sessions, viewers and minutes on each platform.
  await engine.run(`
    CREATE OR REPLACE TEMP TABLE out_platforms AS
    SELECT DATE ${sqlString(day)} AS day, b.series AS series_id, b.platform, b.pings::BIGINT AS pings, s.sessions::BIGINT AS sessions,
           v.viewers::BIGINT AS viewers, s.minutes::BIGINT AS minutes_watched
    FROM (SELECT series, platform, sum(pings) AS pings FROM session_blocks GROUP BY series, platform) b
    JOIN (${sessions('series, platform')}) s USING (series, platform) JOIN (${viewers('series, platform')}) v USING (series, platform)
    ORDER BY series_id, platform`);
  // By country, and by device: as by platform (contract §10).
  const byDimension = async (table: string, dims: string): Promise<void> => {
    await engine.run(`
      CREATE OR REPLACE TEMP TABLE ${table} AS
      SELECT DATE ${sqlString(day)} AS day, b.series AS series_id, ${dims.split(', ').map((d) => `b.${d}`).join(', ')}, b.pings::BIGINT AS pings, s.sessions::BIGINT AS sessions,
             v.viewers::BIGINT AS viewers, s.minutes::BIGINT AS minutes_watched
      FROM (SELECT series, ${dims}, sum(pings) AS pings FROM session_blocks GROUP BY series, ${dims}) b
      JOIN (${sessions(`series, ${dims}`)}) s USING (series, ${dims}) JOIN (${viewers(`series, ${dims}`)}) v USING (series, ${dims})
      ORDER BY ALL`);
  };
  await byDimension('out_countries', 'country');
  await byDimension('out_devices', 'os, device_type, browser');
  // What was left out as automated traffic, by series and rule: what a licensor's figures do not count.
  await engine.run(`
    CREATE OR REPLACE TEMP TABLE out_invalid AS
    SELECT DATE ${sqlString(day)} AS day, series AS series_id, rule, count(*)::BIGINT AS records, count(DISTINCT session)::BIGINT AS sessions,
           count(DISTINCT (session, minute))::BIGINT AS minutes_watched
    FROM ${EXCLUDED} GROUP BY series, rule ORDER BY series_id, rule`);
  // Completion: each session's furthest playhead in each episode, against the catalog's duration.
  // The share is one division of exact integers (the same double on every engine).
  const nullUnlessListed = (expr: string): string => `CASE WHEN c.duration_seconds IS NULL THEN NULL ELSE ${expr} END`;
  await engine.run(catalog ? `
    CREATE OR REPLACE TEMP TABLE out_completion AS
    SELECT DATE ${sqlString(day)} AS day, f.series AS series_id, f.episode AS episode_id, c.duration_seconds::BIGINT AS duration_seconds, count(*)::BIGINT AS sessions,
           ${nullUnlessListed('count(f.pos)')}::BIGINT AS sessions_with_position,
           ${COMPLETION_THRESHOLDS.map((p) => `${nullUnlessListed(`count(*) FILTER (WHERE f.pos * 100 >= ${p} * c.duration_seconds)`)}::BIGINT AS reached_${p}`).join(', ')},
           sum(f.pos)::DOUBLE / nullif(count(f.pos) * c.duration_seconds, 0)::DOUBLE AS avg_share_watched
    FROM (SELECT series, episode, session, max(furthest) AS pos FROM session_blocks GROUP BY series, episode, session) f
    LEFT JOIN ${catalog} c ON c.series_id = f.series AND c.episode_id = f.episode
    GROUP BY f.series, f.episode, c.duration_seconds
    ORDER BY series_id, episode_id` : `
    CREATE OR REPLACE TEMP TABLE out_completion AS
    SELECT day, series_id, episode_id, NULL::BIGINT AS duration_seconds, sessions, ${['sessions_with_position', ...COMPLETION_THRESHOLDS.map((p) => `reached_${p}`)].map((c) => `NULL::BIGINT AS ${c}`).join(', ')},
           NULL::DOUBLE AS avg_share_watched
    FROM out_episode ORDER BY series_id, episode_id`);
  await engine.run(`CREATE OR REPLACE TEMP TABLE out_audit AS
    SELECT * FROM (${values.length ? `VALUES ${values.join(', ')}` : `SELECT NULL::DATE, NULL::VARCHAR, NULL::VARCHAR, NULL::BIGINT LIMIT 0`}) t(day, source, outcome, records)
    ORDER BY source, outcome`);
  const pings = kept.reduce((n, k) => n + Number(k.n), 0);
  return {
    tables: { daily_episode_stats: 'out_episode', daily_series_stats: 'out_series', daily_ingest_audit: 'out_audit', daily_hourly_stats: 'out_hourly',
      daily_peaks: 'out_peaks', daily_series_minutes: 'out_series_minutes', daily_series_viewers: 'out_series_viewers', daily_episode_viewers: 'out_episode_viewers',
      daily_platform_stats: 'out_platforms', daily_country_stats: 'out_countries', daily_device_stats: 'out_devices', daily_invalid_traffic: 'out_invalid',
      daily_episode_completion: 'out_completion' },
    pings, duplicates, repeats, pingIdRows, windowCost, invalid, excluded: EXCLUDED,
  };
}
