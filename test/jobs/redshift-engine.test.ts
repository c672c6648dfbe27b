/**
 * PINGROLL_ROLLUP=redshift as a run has it (contract §8, §9): after a month was backfilled, its close,
 * the next nights' daily job with late objects (adjustments), a reopen, and pings too late for an
 * expired month, every figure made inside Redshift (played by PostgreSQL, test/support/redshift-on-
 * postgres.ts, against moto's S3). Every statement each stage's own DuckDB connection ran is
 * recorded (the connections jobs/run.ts opens): none of them works out a figure, and the figures equal
 * an independent recomputation (test/support/oracle.ts).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ExecuteStatementCommand } from '@aws-sdk/client-redshift-data';
import { describe, expect, it, vi } from 'vitest';
import type { DuckDBConnection } from '@duckdb/node-api';
import { loadConfig } from '../../infra/config.js';
import { memoryLog } from '../../lib/log.js';
import { daysFrom } from '../../lib/utc-day.js';
import { generateSample, objectBody, type LogObject, type TruthRecord } from '../../tools/sample/access-log-generator.js';
import { query, runCloseMonth, runDay, runDays, tempDir } from '../support/job-fixture.js';
import { expectedAdjustments, expectedMonth } from '../support/oracle.js';
import { redshiftRunSuite } from '../support/redshift-run.js';

/** Every statement the stages' own connections ran while `on` (the stage, from its spill folder's name, and the SQL). */
const recorded = vi.hoisted(() => ({ on: false, sql: [] as Array<{ stage: string; sql: string }> }));
vi.mock('../../lib/duckdb-engine.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../lib/duckdb-engine.js')>();
  return {
    ...real,
    openEngine: async (opts: Parameters<typeof real.openEngine>[0]) => {
      const c = await real.openEngine(opts);
      const stage = /spill-([^/]+)$/.exec(opts.tempDir ?? '')?.[1] ?? '?';
      return new Proxy(c, {
        get(target, prop) {
          const value = (target as unknown as Record<PropertyKey, unknown>)[prop];
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (recorded.on && typeof args[0] === 'string') recorded.sql.push({ stage, sql: args[0] });
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      }) as DuckDBConnection;
    },
  };
});

/**
 * What the Redshift engine has done on this machine (rollup/engines/duckdb/local-files.ts): an empty
 * table's file, the viewer key's secret as a file, an UNLOADed file as rejects lines. Shapes, not figures.
 */
const LOCAL_FILES = [
  /^CREATE SCHEMA IF NOT EXISTS unload_shapes$/,
  /^CREATE TABLE IF NOT EXISTS unload_shapes\.\w+ \(/,
  /^COPY \(SELECT \* FROM unload_shapes\.\w+\) TO '[^']+\.parquet' \(FORMAT parquet, COMPRESSION \w+\)$/,
  /^COPY \(SELECT '[^']*'::VARCHAR AS "secret"\) TO '[^']+' \(FORMAT parquet\)$/,
  /^COPY \(SELECT \* EXCLUDE \(file_row_number\) FROM read_parquet\('[^']+', file_row_number = true\) ORDER BY file_row_number\)\s+TO '[^']+' \(FORMAT json, COMPRESSION gzip\)$/,
  // An empty ping-ids file (rollup/ping-window.ts): a day the UNLOAD wrote none of.
  /^COPY \(SELECT NULL::VARCHAR AS "ping_id", NULL::BIGINT AS "event_ms", NULL::BOOLEAN AS "repeat", NULL::BOOLEAN AS "counted" LIMIT 0\) TO '[^']+' \(FORMAT parquet\)$/,
];

/** What else a stage's connection does with the Redshift engine: no figure either. */
const NOT_FIGURES = [
  // The day's daily_runs row (rollup/daily-runs.ts), of values the run knows.
  /^COPY \(SELECT "day", "run", [^()]* FROM \(SELECT DATE '[\d-]+' AS day, '[^']+' AS run,\s+make_timestamp\(\d+\) AS published_at, '[^']+' AS code_version,\s+\d+::BIGINT AS objects_read, \d+::BIGINT AS tables_read, \d+::BIGINT AS quarantined_objects,\s+'\w+' AS state\)\) TO '[^']+\/daily_runs\.parquet' \(FORMAT parquet, COMPRESSION \w+\)$/,
  // Which published days a day's publication makes stale (jobs/stages/window.ts): the ping ids whose
  // counting changed, looked for in the days after it. State, not a figure: the ids and their counting
  // are the Redshift rollup's, as it UNLOADed them.
  /^CREATE OR REPLACE TEMP TABLE window_changed AS (\(SELECT ping_id FROM read_parquet\('[^']+'\) WHERE counted EXCEPT SELECT ping_id FROM read_parquet\('[^']+'\) WHERE counted\) UNION ALL \(SELECT ping_id FROM read_parquet\('[^']+'\) WHERE counted EXCEPT SELECT ping_id FROM read_parquet\('[^']+'\) WHERE counted\)|SELECT ping_id FROM read_parquet\('[^']+'\) WHERE counted)$/,
  /^SELECT count\(\*\) AS n FROM window_changed$/,
  /^SELECT count\(\*\) AS n FROM read_parquet\('[^']+'\) SEMI JOIN window_changed USING \(ping_id\)$/,
  /^DROP TABLE IF EXISTS window_changed$/,
  // Staging (ingest/batch/): the rows the parser wrote as CSV, to staged Parquet by day.
  /^COPY \(SELECT \*(, CAST\(FLOOR\(event_ms \/ 86400000\.0\) AS BIGINT\) AS day_number)? FROM read_csv\(\['[^']+\/rows-\d+\.csv'(, '[^']+\/rows-\d+\.csv')*\], header = false, [^()]*columns = \{[^}]*\}\)\)\s+TO '[^']+' \(FORMAT parquet, [^()]*(PARTITION_BY \(day_number\), )?[^()]*\)$/,
];

const ENV = {
  PINGROLL_WAREHOUSE: 'redshift', PINGROLL_OUTPUT: 's3://rollups/pingroll/', PINGROLL_LOGS: 's3://logs/logs/', PINGROLL_REDSHIFT_WORKGROUP: 'analytics',
  PINGROLL_REDSHIFT_DATABASE: 'dev', PINGROLL_REDSHIFT_IAM_ROLE: 'arn:aws:iam::123456789012:role/pingroll-copy',
};
const OCT = daysFrom('2026-10-01', '2026-10-31');
const at = (iso: string): Date => new Date(`${iso}T06:00:00Z`);

describe('a Redshift run (PINGROLL_ROLLUP=redshift)', () => {
  const root = tempDir();
  const run = redshiftRunSuite(() => loadConfig(ENV).redshift!, root);

  const fetched = async (key: string): Promise<string> => {
    const local = join(root, 'read', key);
    await mkdir(join(local, '..'), { recursive: true });
    await run.store.download(key, local);
    return local;
  };

  it('closes a month, adjusts it with late pings, reopens it and keeps pings too late for it, each figure made inside Redshift: no stage\'s DuckDB connection works one out', async () => {
    const log = memoryLog();
    // October, backfilled by the DuckDB engine as of Nov 10 (the setup; no warehouse: the close loads what it freezes).
    const samples = OCT.map((date, i) => generateSample({ date, sessions: 2, seed: 900 + i, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 60, automated: 0 }));
    const objects = samples.flatMap((s) => s.objects);
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    const client = run.s3.client();
    const upload = async (os: LogObject[]): Promise<void> => { for (const o of os) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: `logs/${o.key}`, Body: objectBody(o) })); };
    await upload(objects);
    const truth: TruthRecord[] = samples.flatMap((s) => s.truth);
    const backfilled = await runDays(loadConfig({ ...ENV, PINGROLL_WAREHOUSE: 'none' }), { from: OCT[0]!, to: OCT.at(-1)!, log, now: at('2026-11-10') });
    expect(backfilled.failed).toEqual([]);

    // From here on, Redshift rolls up.
    const config = (extra: Record<string, string> = {}) => loadConfig({ ...ENV, PINGROLL_ROLLUP: 'redshift', ...extra });
    recorded.on = true;
    const closed = await runCloseMonth(config(), { month: '2026-10', log, now: at('2026-11-10') });
    expect(closed).toMatchObject({ month: '2026-10', tz: 'UTC', version: 1 });
    const statementCols = 'month::VARCHAR AS month, series_id, episodes, pings, sessions, viewers, minutes_watched, days_watched';
    const statements = async (version: number) => query(`SELECT ${statementCols} FROM read_parquet('${await fetched('monthly_statements/dt=2026-10-01/part-00000.parquet')}') WHERE version = ${version} ORDER BY series_id`);
    expect(await statements(1)).toEqual(expectedMonth(truth, '2026-10'));

    // Late objects for the 15th, delivered on Nov 11 (S3 names an object by when it delivered it), then
    // the next night's run. (Copies of counted objects among them: test/jobs/close.test.ts.)
    const deliveredOn = (day: string) => (o: LogObject, i: number): LogObject => ({ ...o, key: o.key.replace(/\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d-(\w+)$/, (_m, id: string) => `${day}-03-00-${String(i).padStart(2, '0')}-${id}`) });
    const late = generateSample({ date: '2026-10-15', sessions: 3, seed: 999, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 40, automated: 0 });
    await upload(late.objects.map(deliveredOn('2026-11-11')));
    await runDay(config(), { day: '2026-11-11', log, now: at('2026-11-12') });
    const adjusted = await query(`SELECT day::VARCHAR AS day, series_id, episode_id, pings, sessions, viewers, minutes_watched, after_close_records, duplicates
      FROM read_parquet('${await fetched('statement_adjustments/dt=2026-11-01/part-00000.parquet')}') ORDER BY day, series_id, episode_id`);
    // (A session of the 15th may run into the 14th or the 16th: each closed day its own adjustments.)
    const key = (r: { day: string; series_id: string; episode_id: string }): string => `${r.day} ${r.series_id} ${r.episode_id}`;
    const want = ['2026-10-14', '2026-10-15', '2026-10-16'].flatMap((d) => expectedAdjustments(truth, late.truth, d));
    expect(adjusted).toEqual(want.sort((x, y) => key(x).localeCompare(key(y))));
    expect(adjusted.length).toBeGreaterThan(0);

    // A reopen: version 2, from every ping.
    const reopened = await runCloseMonth(config(), { month: '2026-10', reopen: 'late objects of the 15th', log, now: at('2026-11-12') });
    expect(reopened.version).toBe(2);
    const every = [...truth, ...late.truth];
    expect(await statements(2)).toEqual(expectedMonth(every, '2026-10'));

    // October expires (PINGROLL_RETENTION_DAYS=20); pings of the 15th delivered on Nov 21 are too late.
    await runDay(config({ PINGROLL_RETENTION_DAYS: '20' }), { day: '2026-11-20', log, now: at('2026-11-21') });
    const tooLate = generateSample({ date: '2026-10-15', sessions: 2, seed: 1011, truth: true, series: 3, episodesPerSeries: 2, recordsPerObject: 40, automated: 0 });
    await upload(tooLate.objects.map(deliveredOn('2026-11-21')));
    await runDay(config({ PINGROLL_RETENTION_DAYS: '20' }), { day: '2026-11-21', log, now: at('2026-11-22') });
    const [tooLateFile] = (await run.store.list('_runs/too_late/')).filter((k) => k.endsWith('.jsonl.gz'));
    const lines = gunzipSync(await run.store.get(tooLateFile!) as Buffer).toString().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const latePings = tooLate.truth.filter((t) => t.outcome === 'ping' && t.day === '2026-10-15');
    expect(lines.filter((l) => l.outcome === 'too_late').map((l) => l.natural_key).sort()).toEqual(latePings.map((t) => t.naturalKey).sort());
    expect(latePings.length).toBeGreaterThan(0);
    recorded.on = false;

    // Redshift made them: the month, both statements, the day's adjustments and the month's, the too-late records, and each day's figures.
    const unloads = run.sent.flat().filter((q) => q.startsWith('UNLOAD'));
    for (const what of ['/month=2026-10.UTC/', '/statement=2026-10.UTC.1/', '/statement=2026-10.UTC.2/', '/adjust=2026-11.2026-10.UTC.2026-10-15/', '/adjustments=2026-11/', '/too-late=2026-10-15.', '/dt=2026-11-11/daily_episode_stats/']) {
      expect(unloads.some((q) => q.includes(what)), what).toBe(true);
    }
    const queries = run.rs.commandCalls(ExecuteStatementCommand).map((c) => c.args[0].input.Sql ?? '');
    expect(queries.some((q) => q.includes("SUM(pings)") && q.includes("'2026-11-11'"))).toBe(true);

    // And no stage's own DuckDB connection worked out a figure: each statement it ran is one of the
    // engine's local files, the run's own record, or staging (the parsed rows, never read back).
    const notFigures = [...LOCAL_FILES, ...NOT_FIGURES];
    expect(recorded.sql.filter((r) => !notFigures.some((re) => re.test(r.sql.trim())))).toEqual([]);
    expect([...new Set(recorded.sql.map((r) => r.stage))].sort()).toEqual(expect.arrayContaining(['close', 'day']));
    expect(recorded.sql.some((r) => r.sql.includes('FORMAT json'))).toBe(true);
  }, 600_000);
});
