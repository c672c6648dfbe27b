-- Views for analysts over the three pingroll tables. Plain SQL that DuckDB and Redshift both run
-- (date_trunc, window functions, CAST AS DOUBLE PRECISION): the same logic in either warehouse.
-- Months are the first day of the month (a DATE). Ids are grouped and partitioned as id || CAST(CHR(1) AS VARCHAR(1)):
-- Redshift ignores trailing blanks when it compares VARCHARs ('a' = 'a '), the contract does not.

-- The licensors' statement: minutes watched per series in a month, and each series' share of the
-- month's minutes. A minute is one session watching during one UTC minute (contract §5), so a series'
-- monthly minutes are exactly the sum of its daily minutes. {{share_of_month: W}} is the share's one
-- definition (rollup/rules.ts, shareOfMonthSql), over windows W.
CREATE OR REPLACE VIEW monthly_series_minutes AS
SELECT month, series_id, minutes_watched, pings, days_watched,
       {{share_of_month: PARTITION BY month}} AS share_of_month
FROM (
  SELECT CAST(date_trunc('month', day) AS DATE) AS month, MIN(series_id) AS series_id,
         SUM(minutes_watched) AS minutes_watched, SUM(pings) AS pings, COUNT(*) AS days_watched
  FROM daily_series_stats
  GROUP BY CAST(date_trunc('month', day) AS DATE), series_id || CAST(CHR(1) AS VARCHAR(1))
) m;

-- Episodes ranked by minutes watched within each day (1 = most); ties broken by series and episode.
CREATE OR REPLACE VIEW top_episodes_daily AS
SELECT day, ROW_NUMBER() OVER (PARTITION BY day ORDER BY minutes_watched DESC, series_id || CAST(CHR(1) AS VARCHAR(1)), episode_id || CAST(CHR(1) AS VARCHAR(1))) AS rank,
       series_id, episode_id, minutes_watched, viewers, sessions, pings
FROM daily_episode_stats;

-- Episodes ranked by minutes watched within each month. Viewers are not summed: a viewer of two
-- days is one viewer, and daily rows cannot say so.
CREATE OR REPLACE VIEW top_episodes_monthly AS
SELECT month, ROW_NUMBER() OVER (PARTITION BY month ORDER BY minutes_watched DESC, series_id || CAST(CHR(1) AS VARCHAR(1)), episode_id || CAST(CHR(1) AS VARCHAR(1))) AS rank,
       series_id, episode_id, minutes_watched, pings, days_watched
FROM (
  SELECT CAST(date_trunc('month', day) AS DATE) AS month, MIN(series_id) AS series_id, MIN(episode_id) AS episode_id,
         SUM(minutes_watched) AS minutes_watched, SUM(pings) AS pings, COUNT(*) AS days_watched
  FROM daily_episode_stats
  GROUP BY CAST(date_trunc('month', day) AS DATE), series_id || CAST(CHR(1) AS VARCHAR(1)), episode_id || CAST(CHR(1) AS VARCHAR(1))
) m;

-- Each series day by day, with the previous day that had views and the change since then.
CREATE OR REPLACE VIEW series_daily_trend AS
SELECT day, series_id, minutes_watched, viewers, sessions, pings, episodes,
       LAG(day) OVER (PARTITION BY series_id || CAST(CHR(1) AS VARCHAR(1)) ORDER BY day) AS previous_day,
       LAG(minutes_watched) OVER (PARTITION BY series_id || CAST(CHR(1) AS VARCHAR(1)) ORDER BY day) AS previous_minutes_watched,
       minutes_watched - LAG(minutes_watched) OVER (PARTITION BY series_id || CAST(CHR(1) AS VARCHAR(1)) ORDER BY day) AS minutes_change
FROM daily_series_stats;
