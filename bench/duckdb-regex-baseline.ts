/**
 * The baseline of the end-to-end bench: DuckDB alone, doing the day's job the way one would with the
 * regex AWS documents for Athena: read every log object as lines, regexp_extract the 27 columns,
 * keep ping-key GETs with an OK status, pull the ping parameters out of the request-URI with regexes
 * and url_decode, then the same dedupe and rollup SQL pingroll runs. Usage: <log dir> <day> <out dir>
 */
import { defaultConfig } from '../infra/config.js';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { openEngine, queryRows, sqlString } from '../lib/duckdb-engine.js';
import { rollupDay } from '../rollup/engines/duckdb/day-rollup.js';
import { ATHENA_REGEX_SOURCE } from './athena-regex.js';
import { FIELD_NAMES } from '../ingest/access-log/record-layout.js';
import { stagedSelectList } from '../ingest/staged-ping.js';

const NAMES = FIELD_NAMES;

export async function baseline(logDir: string, day: string, outDir: string): Promise<{ pings: number; records: number; unmatched: number }> {
  await mkdir(outDir, { recursive: true });
  const engine = await openEngine({ tempDir: join(outDir, 'spill'), memoryLimitMb: defaultConfig().memoryLimitMb });
  const param = (name: string): string =>
    `coalesce(url_decode(nullif(replace(regexp_extract(q, '(?:^|&)x-${name}=([^&]*)', 1), '+', ' '), '')), url_decode(nullif(replace(regexp_extract(q, '(?:^|&)${name}=([^&]*)', 1), '+', ' '), '')))`;
  await engine.run(`
    CREATE TEMP TABLE parsed AS
    SELECT regexp_extract(line, ${sqlString('^' + ATHENA_REGEX_SOURCE)}, [${NAMES.map(sqlString).join(', ')}]) AS r
    FROM read_csv(${sqlString(join(logDir, '**'))}, columns = {'line': 'VARCHAR'}, header = false, delim = '\\x1f', quote = '', escape = '', auto_detect = false)`);
  await engine.run(`
    CREATE TEMP TABLE pings AS
    SELECT *, ${param('series')} AS series, ${param('episode')} AS episode, ${param('session')} AS session,
           ${param('user')} AS user_id, ${param('ping')} AS ping_id,
           regexp_replace(${param('platform')}, '[^A-Za-z0-9]', '', 'g') AS platform_chars, ${param('pos')} AS pos_text
    FROM (SELECT r.request_id AS request_id, epoch_ms(strptime(trim(r.time, '[]'), '%d/%b/%Y:%H:%M:%S %z')) AS event_ms,
                 regexp_extract(r.request_uri, '\\?([^ ]*)', 1) AS q
          FROM parsed
          WHERE r.operation IN ('REST.GET.OBJECT', 'WEBSITE.GET.OBJECT') AND r.key = 'p.gif' AND r.http_status IN ('200', '204', '206', '304'))`);
  const staged = join(outDir, 'staged.parquet');
  const staging = stagedSelectList({ source: `'s3'`, series: 'series', episode: 'episode', session: 'session', user_id: 'user_id', ping_id: 'ping_id', event_ms: 'event_ms', natural_key: `'r:' || request_id`,
    platform: `CASE WHEN length(platform_chars) BETWEEN 1 AND 32 THEN lower(platform_chars) END`,
    pos: `CASE WHEN regexp_full_match(pos_text, '[0-9]{1,9}(\\.[0-9]*)?') THEN CAST(split_part(pos_text, '.', 1) AS BIGINT) END`,
    // No lookups: the baseline stages what a ping needs for the day's rollup (pingroll's audience columns cost it more).
    country: `'ZZ'`, os: `'unknown'`, device_type: `'unknown'`, browser: `'unknown'`, agent_rule: 'NULL' });
  await engine.run(`COPY (SELECT ${staging}
    FROM pings WHERE series <> '' AND episode <> '' AND session <> '') TO ${sqlString(staged)} (FORMAT parquet)`);
  const day0 = Date.parse(`${day}T00:00:00Z`);
  const [count] = await queryRows<{ n: bigint }>(engine, `SELECT count(*) AS n FROM read_parquet(${sqlString(staged)}) WHERE event_ms >= ${day0} AND event_ms < ${day0 + 86_400_000}`);
  const rollup = await rollupDay(engine, day, [staged], { s3: { ping: Number(count!.n) } });
  for (const [table, temp] of Object.entries(rollup.tables)) {
    await engine.run(`COPY (SELECT * FROM ${temp}) TO ${sqlString(join(outDir, `${table}.parquet`))} (FORMAT parquet)`);
  }
  const [stats] = await queryRows<{ records: bigint; unmatched: bigint }>(engine, `SELECT count(*) AS records, count(*) FILTER (WHERE r.bucket_owner = '') AS unmatched FROM parsed`);
  engine.closeSync();
  return { pings: rollup.pings, records: Number(stats!.records), unmatched: Number(stats!.unmatched) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [logDir, day, outDir] = process.argv.slice(2);
  const r = await baseline(logDir!, day!, outDir!);
  process.stdout.write(JSON.stringify(r) + '\n');
}
