-- pingroll warehouse tables (SPEC §5), for the embedded DuckDB warehouse. Column order is the
-- contract: the Parquet files and Redshift COPY match columns by position.

CREATE TABLE IF NOT EXISTS daily_episode_stats (
  day             DATE         NOT NULL,
  series_id       VARCHAR(256) NOT NULL,
  episode_id      VARCHAR(256) NOT NULL,
  pings           BIGINT       NOT NULL,
  sessions        BIGINT       NOT NULL,
  viewers         BIGINT       NOT NULL,
  minutes_watched BIGINT       NOT NULL,
  first_ping_at   TIMESTAMP    NOT NULL,
  last_ping_at    TIMESTAMP    NOT NULL,
  s3_pings        BIGINT       NOT NULL,
  dynamodb_pings  BIGINT       NOT NULL
);

CREATE TABLE IF NOT EXISTS daily_series_stats (
  day             DATE         NOT NULL,
  series_id       VARCHAR(256) NOT NULL,
  episodes        BIGINT       NOT NULL,
  pings           BIGINT       NOT NULL,
  sessions        BIGINT       NOT NULL,
  viewers         BIGINT       NOT NULL,
  minutes_watched BIGINT       NOT NULL,
  first_ping_at   TIMESTAMP    NOT NULL,
  last_ping_at    TIMESTAMP    NOT NULL
);

CREATE TABLE IF NOT EXISTS daily_ingest_audit (
  day     DATE        NOT NULL,
  source  VARCHAR(16) NOT NULL,
  outcome VARCHAR(16) NOT NULL,
  records BIGINT      NOT NULL
);
