/**
 * The published datasets, each declared once (compare dbt's schema.yml): its columns in order, their
 * types, whether they may be NULL and what they mean; what one row is; its partitioning; and how
 * Redshift distributes and sorts it. Everything else follows from here: the warehouse DDL
 * (export/warehouse/sql/ddl.ts), the Glue tables (deploy/lib/catalog.ts), the column lists the code
 * uses, and the column tables of docs/analysts.md (`make docs`; a test fails while they differ).
 * The SQL that fills a dataset is written by hand beside its engine, and a test holds each engine's
 * output to the columns here (test/datasets/registry.test.ts).
 *
 * A warehouse's tables are made once (`CREATE TABLE IF NOT EXISTS`); a column added since is added at
 * the table's end (the embedded warehouse does it itself, ddl.ts `addedColumns`, and loads by name;
 * Redshift's COPY of Parquet matches by position): a new column goes last.
 *
 * No imports: the CDK app (deploy/, a package of its own) reads this file as it is.
 */

/**
 * A column's type: `id` is a series, episode or other client id (at most 256 characters, contract §1a;
 * VARCHAR(1024) in Redshift, which counts bytes, and 256 characters of UTF-8 take up to 1024), `text(n)`
 * a string of at most n characters that pingroll writes itself; the rest as named.
 */
export type ColumnType = 'date' | 'id' | 'bigint' | 'timestamp' | 'double' | `text(${number})`;

export interface Column {
  readonly name: string;
  readonly type: ColumnType;
  /** NULL allowed (default: NOT NULL). */
  readonly nullable?: boolean;
  /** What it means, for docs/analysts.md. */
  readonly doc: string;
}

export interface Dataset {
  readonly name: string;
  /** One row per: the columns that make a row unique (`series_id` with `episode_id` NULL counts as a value). */
  readonly grain: readonly string[];
  /** What one row is, in words: the heading of its section in docs/analysts.md. */
  readonly row: string;
  /** The column it is partitioned by (`dt=` of the Parquet, the Glue projection's step, the warehouse's replace and sort key). */
  readonly by: 'day' | 'month' | 'reported_month';
  /** What makes its rows: a day's rollup, the day's run record, the month's rollup, a month's close, late pings of closed months. */
  readonly producer: 'day-rollup' | 'runs' | 'month-rollup' | 'close' | 'adjustments';
  /** Redshift's distribution key; null: DISTSTYLE ALL (a few rows a day, a copy on every node). */
  readonly distKey: string | null;
  /** Rows only with PINGROLL_VIEWER_KEY (the viewer datasets). */
  readonly needsViewerKey?: boolean;
  readonly columns: readonly Column[];
}

const day: Column = { name: 'day', type: 'date', doc: 'the UTC day' };
const series: Column = { name: 'series_id', type: 'id', doc: 'the series, as the player reported it' };
const episode: Column = { name: 'episode_id', type: 'id', doc: 'the episode, as the player reported it' };
const pings: Column = { name: 'pings', type: 'bigint', doc: 'pings after duplicates are removed' };
const sessions: Column = { name: 'sessions', type: 'bigint', doc: 'distinct playback sessions' };
const viewers: Column = { name: 'viewers', type: 'bigint', doc: 'distinct viewers: logged-in users, plus one per session of viewers not logged in (a person on two devices while logged out counts twice)' };
const minutes: Column = { name: 'minutes_watched', type: 'bigint', doc: 'distinct (session, UTC minute) pairs with a ping: a session watching during a minute counts one minute, however many pings it sent' };
const first: Column = { name: 'first_ping_at', type: 'timestamp', doc: "the day's first ping (UTC, no zone)" };
const last: Column = { name: 'last_ping_at', type: 'timestamp', doc: "the day's last ping (UTC, no zone)" };
const tz: Column = { name: 'tz', type: 'text(64)', doc: 'the time zone the month is in (an IANA name; `UTC` unless `--tz` said another)' };
const reached = (p: number): Column => ({ name: `reached_${p}`, type: 'bigint', nullable: true, doc: `sessions whose furthest playhead that day was at least ${p}% of the duration` });

export const DATASETS = [
  {
    name: 'daily_episode_stats', grain: ['day', 'series_id', 'episode_id'], row: 'one row per day, series and episode', by: 'day', producer: 'day-rollup', distKey: 'series_id',
    columns: [day, series, episode, pings,
      { ...sessions, doc: 'distinct playback sessions that watched the episode that day' }, viewers, minutes, first, last,
      { name: 's3_pings', type: 'bigint', doc: 'of `pings`, how many came from the S3 access logs' },
      { name: 'dynamodb_pings', type: 'bigint', doc: 'of `pings`, how many came from the legacy DynamoDB tables' }],
  },
  {
    name: 'daily_series_stats', grain: ['day', 'series_id'], row: 'one row per day and series', by: 'day', producer: 'day-rollup', distKey: 'series_id',
    columns: [day, series, { name: 'episodes', type: 'bigint', doc: 'distinct episodes watched' },
      pings, { ...sessions, doc: 'distinct sessions over the whole series (not a sum of its episodes)' },
      { ...viewers, doc: 'distinct viewers over the whole series: a viewer who watched two episodes is one viewer' },
      { ...minutes, doc: 'distinct (session, UTC minute) pairs over the series: less than the sum of its episodes when one session played two in the same minute' }, first, last],
  },
  {
    name: 'daily_ingest_audit', grain: ['day', 'source', 'outcome'], row: 'one row per day, source and outcome', by: 'day', producer: 'day-rollup', distKey: null,
    columns: [day, { name: 'source', type: 'text(16)', doc: '`s3` or `dynamodb`' },
      { name: 'outcome', type: 'text(16)', doc: 'how the records ended: `ping` (before duplicates are removed), `duplicate`, `repeat` (a ping resent days later, counted on the day it was first sent), `not_ping`, `http_error`, `bad_query`, `malformed`, `bad_item`, `invalid_traffic` (automated: `daily_invalid_traffic` says which rule)' },
      { name: 'records', type: 'bigint', doc: 'records of the day, of that source, with that outcome' }],
  },
  {
    name: 'daily_hourly_stats', grain: ['day', 'hour'], row: 'one row per day and UTC hour', by: 'day', producer: 'day-rollup', distKey: null,
    columns: [day, { name: 'hour', type: 'bigint', doc: 'the UTC hour, 0 to 23 (hours with no minute watched have no row)' },
      { ...minutes, doc: 'distinct (session, minute) pairs within the hour, across all series' }],
  },
  {
    name: 'daily_peaks', grain: ['day', 'series_id', 'episode_id'], row: 'peak concurrency, one row per day and series and per day and episode', by: 'day', producer: 'day-rollup', distKey: 'series_id',
    columns: [day, series, { ...episode, nullable: true, doc: "the episode; NULL on the series' own row (all its episodes together)" },
      { name: 'peak_sessions', type: 'bigint', doc: 'the most distinct sessions with a ping in one UTC minute of the day' },
      { name: 'peak_minute', type: 'timestamp', doc: 'the earliest minute that reached it (its start, UTC)' }],
  },
  {
    name: 'daily_series_minutes', grain: ['day', 'series_id', 'minute'], row: 'one row per day, series and minute with viewing', by: 'day', producer: 'day-rollup', distKey: 'series_id',
    columns: [day, series, { name: 'minute', type: 'timestamp', doc: "the minute's start, UTC (minutes with no session have no row: read them as 0)" },
      { ...sessions, doc: 'distinct sessions with a ping in the minute' }],
  },
  {
    name: 'daily_series_viewers', grain: ['day', 'series_id', 'viewer_key'], row: "the day's viewers of each series, by key", by: 'day', producer: 'day-rollup', distKey: 'series_id', needsViewerKey: true,
    columns: [day, series, { name: 'viewer_key', type: 'text(32)', doc: 'a distinct viewer of the series that day, keyed: 8 characters naming the secret, then 96 bits of a keyed SHA-256 of the viewer' }],
  },
  {
    name: 'daily_episode_viewers', grain: ['day', 'series_id', 'episode_id', 'viewer_key'], row: "the day's viewers of each episode, by key", by: 'day', producer: 'day-rollup', distKey: 'series_id', needsViewerKey: true,
    columns: [day, series, episode, { name: 'viewer_key', type: 'text(32)', doc: 'a distinct viewer of the episode that day, keyed as in `daily_series_viewers`' }],
  },
  {
    name: 'daily_platform_stats', grain: ['day', 'series_id', 'platform'], row: "each series' day by platform", by: 'day', producer: 'day-rollup', distKey: 'series_id',
    columns: [day, series, { name: 'platform', type: 'text(32)', doc: 'the platform the player sent, normalised (lowercase letters and digits), when `PINGROLL_PLATFORMS` names it; else `unknown`' },
      { ...pings, doc: "the series' pings from that platform" }, { ...sessions, doc: 'distinct sessions with a ping from that platform' },
      { ...viewers, doc: 'distinct viewers with a ping from that platform' }, { ...minutes, doc: 'distinct (session, UTC minute) pairs with a ping from that platform' }],
  },
  {
    name: 'daily_country_stats', grain: ['day', 'series_id', 'country'], row: "each series' day by the viewer's country", by: 'day', producer: 'day-rollup', distKey: 'series_id',
    columns: [day, series, { name: 'country', type: 'text(2)', doc: "the country of the ping's client IP (ISO 3166-1 alpha-2), looked up in the IP-to-country database as the ping was staged (`pingroll --version` names it); `ZZ` when unknown, and for every DynamoDB ping" },
      { ...pings, doc: "the series' pings from that country" }, { ...sessions, doc: 'distinct sessions with a ping from that country' },
      { ...viewers, doc: 'distinct viewers with a ping from that country' }, { ...minutes, doc: 'distinct (session, UTC minute) pairs with a ping from that country' }],
  },
  {
    name: 'daily_device_stats', grain: ['day', 'series_id', 'os', 'device_type', 'browser'], row: "each series' day by operating system, device type and browser or player", by: 'day', producer: 'day-rollup', distKey: 'series_id',
    columns: [day, series,
      { name: 'os', type: 'text(32)', doc: "the operating system the user agent names (ua-parser-js: `Windows`, `iOS`, `Android`, `Tizen`...); `unknown` when it names none, and for every DynamoDB ping" },
      { name: 'device_type', type: 'text(32)', doc: '`desktop`, `mobile`, `tablet`, `smarttv`, `console`, `wearable`, `embedded` or `xr`; `unknown` when the user agent says nothing of it' },
      { name: 'browser', type: 'text(32)', doc: 'the browser (`Chrome`, `Mobile Safari`...) or, for an app, its player (`ExoPlayer`, `AppleCoreMedia`, `Roku`...); `unknown` when neither is named' },
      { ...pings, doc: "the series' pings from that device" }, { ...sessions, doc: 'distinct sessions with a ping from that device' },
      { ...viewers, doc: 'distinct viewers with a ping from that device' }, { ...minutes, doc: 'distinct (session, UTC minute) pairs with a ping from that device' }],
  },
  {
    name: 'daily_invalid_traffic', grain: ['day', 'series_id', 'rule'], row: 'automated traffic left out of every other table, one row per day, series and rule', by: 'day', producer: 'day-rollup', distKey: 'series_id',
    columns: [day, series, { name: 'rule', type: 'text(32)', doc: 'the rule that caught it (docs/contract.md, *Automated traffic*): `bot_list`, a user agent on the bot list; `session_rate`, a session with more pings in one minute than a player sends; `not_in_catalog`, with `PINGROLL_CATALOG_ONLY`, a series or episode the episode catalog does not list' },
      { name: 'records', type: 'bigint', doc: 'valid pings caught (outcome `invalid_traffic` in `daily_ingest_audit`), duplicates included' },
      { name: 'sessions', type: 'bigint', doc: 'distinct sessions caught' },
      { name: 'minutes_watched', type: 'bigint', doc: "distinct (session, UTC minute) pairs caught: the minutes a licensor's figures leave out" }],
  },
  {
    name: 'daily_episode_completion', grain: ['day', 'series_id', 'episode_id'], row: "how far each episode's sessions got, one row per day and episode", by: 'day', producer: 'day-rollup', distKey: 'series_id',
    columns: [day, series, episode,
      { name: 'duration_seconds', type: 'bigint', nullable: true, doc: "the episode's length in the episode catalog (`PINGROLL_EPISODE_CATALOG`); NULL without one, or for an episode it does not list, as is every column after `sessions`" },
      { ...sessions, doc: 'distinct sessions of the episode that day (as in `daily_episode_stats`)' },
      { name: 'sessions_with_position', type: 'bigint', nullable: true, doc: 'those that sent at least one usable playhead' },
      reached(25), reached(50), reached(75), reached(95),
      { name: 'avg_share_watched', type: 'double', nullable: true, doc: 'the mean, over `sessions_with_position`, of furthest playhead / duration (0 to 1); NULL when no session has a usable playhead' }],
  },
  {
    name: 'daily_runs', grain: ['day'], row: 'one row per published day', by: 'day', producer: 'runs', distKey: null,
    columns: [day, { name: 'run', type: 'text(64)', doc: 'the run that published the day (or last published its state)' },
      { name: 'published_at', type: 'timestamp', doc: 'when (UTC)' }, { name: 'code_version', type: 'text(64)', doc: "pingroll's version" },
      { name: 'objects_read', type: 'bigint', doc: 'log objects the day was made from' },
      { name: 'tables_read', type: 'bigint', doc: 'DynamoDB table reads the day was made from' },
      { name: 'quarantined_objects', type: 'bigint', doc: 'log objects that could not be read and may hold records of the day' },
      { name: 'state', type: 'text(16)', doc: '`complete`; `provisional` while a delivery day that can hold its records (D to D+2) is still to have its final full listing (`pingroll status` says when); `incomplete` while unreadable objects may hold it, a table that should hold it was missing, or no run lists a delivery day that can hold it' }],
  },
  {
    name: 'monthly_series_stats', grain: ['month', 'series_id'], row: 'one row per month and series', by: 'month', producer: 'month-rollup', distKey: 'series_id',
    columns: [{ name: 'month', type: 'date', doc: "the month's first day" }, series,
      { name: 'episodes', type: 'bigint', doc: 'distinct episodes watched in the month' },
      { ...pings, doc: "the month's pings (the sum of its days')" },
      { ...sessions, doc: 'distinct sessions over the whole month' },
      { ...viewers, doc: 'distinct viewers over the whole month: a viewer who watched on ten days is one viewer (not a sum of the daily rows)' },
      { ...minutes, doc: "the month's minutes watched (the sum of its days')" },
      { name: 'days_watched', type: 'bigint', doc: 'days of the month with a ping of the series (local days, in a zone)' },
      tz],
  },
  {
    name: 'monthly_statements', grain: ['month', 'tz', 'version', 'series_id'], row: "a closed month's statement, one row per version and series", by: 'month', producer: 'close', distKey: 'series_id',
    columns: [{ name: 'month', type: 'date', doc: "the month's first day (in `tz`)" }, tz,
      { name: 'version', type: 'bigint', doc: 'the statement\'s version: 1 when the month is closed, one more at each reopen (`pingroll close --reopen`); a version never changes once issued' },
      { name: 'closed_at', type: 'timestamp', doc: 'when this version was issued (UTC)' }, series,
      { name: 'episodes', type: 'bigint', doc: 'distinct episodes watched in the month' },
      { ...pings, doc: "the month's pings" }, { ...sessions, doc: 'distinct sessions over the month' },
      { ...viewers, doc: 'distinct viewers over the month' }, { ...minutes, doc: "the month's minutes watched" },
      { name: 'days_watched', type: 'bigint', doc: 'days of the month with a ping of the series' },
      { name: 'share_of_month', type: 'double', doc: "the series' minutes over the month's, 0 to 1" }],
  },
  {
    name: 'statement_adjustments', grain: ['reported_month', 'closed_month', 'tz', 'day', 'series_id', 'episode_id'], row: 'late pings of closed months, one row per month reported in, closed month, day, series and episode', by: 'reported_month', producer: 'adjustments', distKey: 'series_id',
    columns: [{ name: 'reported_month', type: 'date', doc: 'the statement they are reported on: the first month after the closed one that is not closed (its first day)' },
      { name: 'closed_month', type: 'date', doc: 'the closed month they belong to (its first day)' }, tz,
      { ...day, doc: 'the UTC day of the pings (the day they are deduplicated in)' }, series, episode,
      { ...pings, doc: 'pings not already counted in the closed figures: their key (ping id, else the record) was in none of the records the month was closed with' },
      { ...sessions, doc: 'distinct sessions of those pings' }, { ...viewers, doc: 'distinct viewers of those pings' },
      { ...minutes, doc: '(session, UTC minute) pairs of those pings that the closed figures of the episode did not count' },
      { name: 'after_close_records', type: 'bigint', doc: 'valid pings that arrived for the closed month after it was closed (outcome `after_close`), duplicates included' },
      { name: 'duplicates', type: 'bigint', doc: 'of `after_close_records`, how many were removed as duplicates (of each other, or of pings already counted, on the day or, resent, on a day at most `PINGROLL_DEDUPE_DAYS` around it)' }],
  },
] as const satisfies readonly Dataset[];

export type DatasetName = (typeof DATASETS)[number]['name'];

export function dataset(name: DatasetName): Dataset {
  return DATASETS.find((d) => d.name === name)!;
}

/** A dataset's column names, in order. */
export function columnNames(name: DatasetName): string[] {
  return dataset(name).columns.map((c) => c.name);
}

/** The datasets a day's rollup makes, in order. */
export const DAY_TABLES = DATASETS.filter((d) => d.producer === 'day-rollup').map((d) => d.name) as Array<Extract<(typeof DATASETS)[number], { producer: 'day-rollup' }>['name']>;

/** A column type in the warehouse's DDL (the same text for Redshift, PostgreSQL and DuckDB). */
export function sqlType(t: ColumnType): string {
  if (t.startsWith('text(')) return `VARCHAR(${t.slice(5, -1)})`;
  return { date: 'DATE', id: 'VARCHAR(1024)', bigint: 'BIGINT', timestamp: 'TIMESTAMP', double: 'DOUBLE PRECISION' }[t as 'date' | 'id' | 'bigint' | 'timestamp' | 'double'];
}

/** A column type in Glue (Hive) terms: how Athena and Spectrum read the Parquet. */
export function glueType(t: ColumnType): 'date' | 'string' | 'bigint' | 'timestamp' | 'double' {
  if (t === 'id' || t.startsWith('text(')) return 'string';
  return t as 'date' | 'bigint' | 'timestamp' | 'double';
}

/** A column type as DuckDB describes a table or a Parquet file of it. */
export function duckdbType(t: ColumnType): string {
  if (t === 'id' || t.startsWith('text(')) return 'VARCHAR';
  return { date: 'DATE', bigint: 'BIGINT', timestamp: 'TIMESTAMP', double: 'DOUBLE' }[t as 'date' | 'bigint' | 'timestamp' | 'double'];
}

/**
 * A dataset's CREATE TABLE: Redshift's in `schema` with its distribution and sort; PostgreSQL's in
 * `schema` without them; DuckDB's in no schema.
 */
export function createTable(d: Dataset, dialect: 'redshift' | 'postgres' | 'duckdb', schema: string): string {
  const width = Math.max(...d.columns.map((c) => c.name.length));
  const columns = d.columns.map((c) => `  ${c.name.padEnd(width)} ${sqlType(c.type)}${c.nullable ? '' : ' NOT NULL'}`).join(',\n');
  const where = dialect === 'duckdb' ? '' : `${schema}.`;
  const tail = dialect === 'redshift' ? ` DISTSTYLE ${d.distKey ? `KEY DISTKEY (${d.distKey})` : 'ALL'} SORTKEY (${d.by})` : '';
  return `CREATE TABLE IF NOT EXISTS ${where}${d.name} (\n${columns}\n)${tail}`;
}

/** A dataset's column table, as docs/analysts.md shows it. */
export function columnTable(d: Dataset): string {
  const type = (t: ColumnType): string => sqlType(t).replace('VARCHAR(1024)', 'VARCHAR').replace(/^VARCHAR\(\d+\)$/, 'VARCHAR');
  return ['| column | type | meaning |', '|---|---|---|', ...d.columns.map((c) => `| \`${c.name}\` | ${type(c.type)}${c.nullable ? ', NULL' : ''} | ${c.doc} |`)].join('\n');
}
