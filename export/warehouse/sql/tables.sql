-- pingroll warehouse tables (contract §5), the one definition of them. Redshift runs this file with
-- {schema} as PINGROLL_REDSHIFT_SCHEMA; the embedded DuckDB warehouse runs it without the schema and
-- without the distribution and sort clauses (export/warehouse/sql/ddl.ts). Column order is the contract:
-- COPY ... FORMAT AS PARQUET matches columns by position.
--
-- Ids are at most 256 characters (contract §1a, §5; longer ones are rejected at ingest), but Redshift's
-- VARCHAR(n) counts bytes: 256 characters of UTF-8 take up to 1024, and a shorter column would make
-- the whole day's COPY fail on one non-ASCII id.
--
-- Sort key: day. Every load deletes one day and every analyst query filters on days or months, so
-- zone maps skip all other blocks.
-- Distribution: the two stats tables by series_id: the views and the licensors' statement group and
-- window by series, which then happens on each slice without redistribution; series are many and
-- evenly used, so slices stay balanced. The audit and runs tables are a few rows a day: ALL (a copy on
-- every node).

CREATE SCHEMA IF NOT EXISTS {schema};

CREATE TABLE IF NOT EXISTS {schema}.daily_episode_stats (
  day             DATE         NOT NULL,
  series_id       VARCHAR(1024) NOT NULL,
  episode_id      VARCHAR(1024) NOT NULL,
  pings           BIGINT       NOT NULL,
  sessions        BIGINT       NOT NULL,
  viewers         BIGINT       NOT NULL,
  minutes_watched BIGINT       NOT NULL,
  first_ping_at   TIMESTAMP    NOT NULL,
  last_ping_at    TIMESTAMP    NOT NULL,
  s3_pings        BIGINT       NOT NULL,
  dynamodb_pings  BIGINT       NOT NULL
) DISTSTYLE KEY DISTKEY (series_id) SORTKEY (day);

CREATE TABLE IF NOT EXISTS {schema}.daily_series_stats (
  day             DATE         NOT NULL,
  series_id       VARCHAR(1024) NOT NULL,
  episodes        BIGINT       NOT NULL,
  pings           BIGINT       NOT NULL,
  sessions        BIGINT       NOT NULL,
  viewers         BIGINT       NOT NULL,
  minutes_watched BIGINT       NOT NULL,
  first_ping_at   TIMESTAMP    NOT NULL,
  last_ping_at    TIMESTAMP    NOT NULL
) DISTSTYLE KEY DISTKEY (series_id) SORTKEY (day);

CREATE TABLE IF NOT EXISTS {schema}.daily_ingest_audit (
  day     DATE        NOT NULL,
  source  VARCHAR(16) NOT NULL,
  outcome VARCHAR(16) NOT NULL,
  records BIGINT      NOT NULL
) DISTSTYLE ALL SORTKEY (day);

-- pingroll's own: the day's minutes watched by UTC hour (distinct session-minutes within each hour).
CREATE TABLE IF NOT EXISTS {schema}.daily_hourly_stats (
  day             DATE   NOT NULL,
  hour            BIGINT NOT NULL,
  minutes_watched BIGINT NOT NULL
) DISTSTYLE ALL SORTKEY (day);

-- pingroll's own: peak concurrency per series (episode_id NULL) and per episode: the most distinct
-- sessions with a ping in one UTC minute, and the earliest such minute.
CREATE TABLE IF NOT EXISTS {schema}.daily_peaks (
  day           DATE          NOT NULL,
  series_id     VARCHAR(1024) NOT NULL,
  episode_id    VARCHAR(1024),
  peak_sessions BIGINT        NOT NULL,
  peak_minute   TIMESTAMP     NOT NULL
) DISTSTYLE KEY DISTKEY (series_id) SORTKEY (day);

-- pingroll's own: each series' day minute by minute (distinct sessions with a ping in the minute;
-- minutes with none left out): the concurrency curve.
CREATE TABLE IF NOT EXISTS {schema}.daily_series_minutes (
  day       DATE          NOT NULL,
  series_id VARCHAR(1024) NOT NULL,
  minute    TIMESTAMP     NOT NULL,
  sessions  BIGINT        NOT NULL
) DISTSTYLE KEY DISTKEY (series_id) SORTKEY (day);

-- pingroll's own: each day's distinct viewers per series and per episode by viewer key (a keyed
-- hash: no raw user id), for exact unique viewers over any range of days: COUNT(DISTINCT viewer_key).
-- Empty where PINGROLL_VIEWER_KEY was not set.
CREATE TABLE IF NOT EXISTS {schema}.daily_series_viewers (
  day        DATE          NOT NULL,
  series_id  VARCHAR(1024) NOT NULL,
  viewer_key VARCHAR(32)   NOT NULL
) DISTSTYLE KEY DISTKEY (series_id) SORTKEY (day);

CREATE TABLE IF NOT EXISTS {schema}.daily_episode_viewers (
  day        DATE          NOT NULL,
  series_id  VARCHAR(1024) NOT NULL,
  episode_id VARCHAR(1024) NOT NULL,
  viewer_key VARCHAR(32)   NOT NULL
) DISTSTYLE KEY DISTKEY (series_id) SORTKEY (day);

-- pingroll's own: each series' day by platform: PINGROLL_PLATFORMS by name (normalised: lowercase
-- letters and digits), every other platform and none as 'unknown'.
CREATE TABLE IF NOT EXISTS {schema}.daily_platform_stats (
  day             DATE          NOT NULL,
  series_id       VARCHAR(1024) NOT NULL,
  platform        VARCHAR(32)   NOT NULL,
  pings           BIGINT        NOT NULL,
  sessions        BIGINT        NOT NULL,
  viewers         BIGINT        NOT NULL,
  minutes_watched BIGINT        NOT NULL
) DISTSTYLE KEY DISTKEY (series_id) SORTKEY (day);

-- pingroll's own: how far each episode's sessions got into it, against the episode catalog's
-- duration (PINGROLL_EPISODE_CATALOG): sessions whose furthest playhead reached 25/50/75/95% of it,
-- and the average share reached. Every column after sessions is NULL for an episode the catalog lacks.
CREATE TABLE IF NOT EXISTS {schema}.daily_episode_completion (
  day                    DATE             NOT NULL,
  series_id              VARCHAR(1024)    NOT NULL,
  episode_id             VARCHAR(1024)    NOT NULL,
  duration_seconds       BIGINT,
  sessions               BIGINT           NOT NULL,
  sessions_with_position BIGINT,
  reached_25             BIGINT,
  reached_50             BIGINT,
  reached_75             BIGINT,
  reached_95             BIGINT,
  avg_share_watched      DOUBLE PRECISION
) DISTSTYLE KEY DISTKEY (series_id) SORTKEY (day);

-- One row per published day, loaded with the day in the same transaction (contract §8).
CREATE TABLE IF NOT EXISTS {schema}.daily_runs (
  day                 DATE        NOT NULL,
  run                 VARCHAR(64) NOT NULL,
  published_at        TIMESTAMP   NOT NULL,
  code_version        VARCHAR(64) NOT NULL,
  objects_read        BIGINT      NOT NULL,
  tables_read         BIGINT      NOT NULL,
  quarantined_objects BIGINT      NOT NULL,
  state               VARCHAR(16) NOT NULL
) DISTSTYLE ALL SORTKEY (day);

-- The licensors' month per series (contract §8): distinct counts over the whole month.
CREATE TABLE IF NOT EXISTS {schema}.monthly_series_stats (
  month           DATE          NOT NULL,
  series_id       VARCHAR(1024) NOT NULL,
  episodes        BIGINT        NOT NULL,
  pings           BIGINT        NOT NULL,
  sessions        BIGINT        NOT NULL,
  viewers         BIGINT        NOT NULL,
  minutes_watched BIGINT        NOT NULL,
  days_watched    BIGINT        NOT NULL
) DISTSTYLE KEY DISTKEY (series_id) SORTKEY (month);
