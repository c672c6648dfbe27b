/**
 * The second peer of the end-to-end bench: ClickHouse in-process (chDB), doing the day's job the way
 * one would with it: read every log object through its Regexp input format with the regex AWS
 * documents for Athena (bench/athena-regex.ts), keep ping-key GETs with an OK status, pull the ping
 * parameters out of the request-URI (extractURLParameter) and decode them, then the same dedupe and rules as the
 * DuckDB baseline (duckdb-regex-baseline.ts, which runs pingroll's own rollup SQL): one survivor per
 * ping id (else request), the earliest; a session with more than 5 pings in a minute left out; each
 * episode's pings, sessions, viewers and minutes watched. The two baselines' episodes are checked
 * against each other by the bench (job-bench.ts).
 *
 * chDB is not a dependency of pingroll: it is installed into the bench's own folder on first use
 * (bench/chdb.ts). Usage: <log dir> <day> <out dir>; writes `daily_episode_stats.jsonl` there.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIELD_NAMES } from '../ingest/access-log/record-layout.js';
import { MAX_PINGS_PER_SESSION_MINUTE } from '../rollup/rules.js';
import { ATHENA_REGEX_SOURCE } from './athena-regex.js';
import { loadChdb } from './chdb.js';

/** A ClickHouse string literal. */
const lit = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export async function clickhouseBaseline(logDir: string, day: string, outDir: string): Promise<{ pings: number; episodes: number }> {
  await mkdir(outDir, { recursive: true });
  const { query } = loadChdb();
  const out = query(episodesSql(logDir, day), 'JSONEachRow');
  await writeFile(join(outDir, 'daily_episode_stats.jsonl'), out);
  const rows = out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { pings: number | string });
  return { pings: rows.reduce((n, r) => n + Number(r.pings), 0), episodes: rows.length };
}

/** The day's episodes from the logs under `logDir`, in one statement. */
export function episodesSql(logDir: string, day: string): string {
  const day0 = Date.parse(`${day}T00:00:00Z`);
  const structure = FIELD_NAMES.map((n) => `${n} String`).join(', ');
  // A parameter as the DuckDB baseline takes it: `x-name`, else `name`; '+' as a space, then decoded.
  // By extractURLParameter, ClickHouse's own (0.82x the time of the same by regexp, 3 runs each on
  // the small-object day of real traffic: the fastest a ClickHouse user would write).
  const param = (name: string): string =>
    `coalesce(decodeURLFormComponent(nullIf(extractURLParameter(url, ${lit(`x-${name}`)}), '')), decodeURLFormComponent(nullIf(extractURLParameter(url, ${lit(name)}), '')))`;
  return `
    WITH
    parsed AS (
      SELECT request_id, time, operation, key, request_uri, http_status
      FROM file(${lit(join(logDir, '**'))}, 'Regexp', ${lit(structure)})
      SETTINGS format_regexp = ${lit('^' + ATHENA_REGEX_SOURCE)}, format_regexp_escaping_rule = 'Raw', format_regexp_skip_unmatched = 1
    ),
    requests AS (
      SELECT request_id, toInt64(toUnixTimestamp(parseDateTime(trim(BOTH '[]' FROM time), '%d/%b/%Y:%H:%i:%s %z'))) * 1000 AS event_ms,
             concat('?', extract(request_uri, '\\\\?([^ ]*)')) AS url
      FROM parsed
      WHERE operation IN ('REST.GET.OBJECT', 'WEBSITE.GET.OBJECT') AND key = 'p.gif' AND http_status IN ('200', '204', '206', '304')
    ),
    pings AS (
      SELECT ${param('series')} AS series, ${param('episode')} AS episode, ${param('session')} AS session, ${param('user')} AS user_id,
             ${param('ping')} AS ping_id, event_ms, concat('r:', request_id) AS natural_key
      FROM requests
      WHERE event_ms >= ${day0} AND event_ms < ${day0 + 86_400_000}
    ),
    -- One survivor per ping id (else request): the earliest, then the smallest request.
    survivors AS (
      SELECT s.1 AS series, s.2 AS episode, s.3 AS session, s.4 AS user_id, intDiv(s.5 - ${day0}, 60000) AS minute
      FROM (
        SELECT argMin((series, episode, session, user_id, event_ms), (event_ms, natural_key)) AS s
        FROM pings WHERE series != '' AND episode != '' AND session != ''
        GROUP BY coalesce(ping_id, natural_key))
    ),
    -- Each session's pings by minute, then the most it sent in one (a CTE is evaluated where it is
    -- named: one chain of them, so that the logs are read once).
    per_minute AS (
      SELECT series, episode, session, user_id, minute, count() AS n FROM survivors GROUP BY series, episode, session, user_id, minute
    ),
    judged AS (
      SELECT *, max(in_minute) OVER (PARTITION BY session) AS worst
      FROM (SELECT *, sum(n) OVER (PARTITION BY session, minute) AS in_minute FROM per_minute)
    )
    SELECT series AS series_id, episode AS episode_id, sum(n) AS pings, uniqExact(session) AS sessions,
           uniqExact(coalesce(user_id, concat('session:', session))) AS viewers, uniqExact(session, minute) AS minutes_watched
    FROM judged WHERE worst <= ${MAX_PINGS_PER_SESSION_MINUTE}
    GROUP BY series, episode ORDER BY series, episode
    -- What a ClickHouse user sets on a machine that a day does not fit (the busy day: about 0.75 GB a
    -- copy of the job bench's day, 6 GB at 8 copies): aggregations and sorts past 4 GB go to disk.
    -- The small-object day stays well under it.
    SETTINGS max_bytes_before_external_group_by = 4000000000, max_bytes_before_external_sort = 4000000000`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [logDir, day, outDir] = process.argv.slice(2);
  const r = await clickhouseBaseline(logDir!, day!, outDir!);
  process.stdout.write(JSON.stringify(r) + '\n');
}
