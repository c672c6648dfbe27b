/**
 * The ping-id window inside Redshift (contract §4; rollup/engines/redshift/window-table.ts): the
 * published days' ping ids kept in the warehouse's table `window_ping_ids`, each day's file COPYed
 * once, a republished day's or one emptied by hand replaced, the days before the window dropped; the
 * figures as the independent oracle works them out. Redshift is played by PostgreSQL
 * (test/support/redshift-on-postgres.ts) against moto's S3.
 */
import { describe, expect, it } from 'vitest';
import { RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { readManifest } from '../../export/manifest.js';
import { RedshiftDataApi } from '../../export/warehouse/redshift/redshift-warehouse.js';
import { loadConfig } from '../../infra/config.js';
import { memoryLog } from '../../lib/log.js';
import { addDays, daysFrom } from '../../lib/utc-day.js';
import { planWindow, WINDOW_CHECK, windowStatements } from '../../rollup/engines/redshift/window-table.js';
import { generateSample, objectBody, type TruthRecord } from '../../tools/sample/access-log-generator.js';
import { readStoreDay, runDays, tempDir } from '../support/job-fixture.js';
import { expectedDay } from '../support/oracle.js';
import { redshiftRunSuite } from '../support/redshift-run.js';

const ENV = {
  PINGROLL_WAREHOUSE: 'redshift', PINGROLL_ROLLUP: 'redshift', PINGROLL_OUTPUT: 's3://rollups/pingroll/', PINGROLL_LOGS: 's3://logs/logs/',
  PINGROLL_REDSHIFT_WORKGROUP: 'analytics', PINGROLL_REDSHIFT_DATABASE: 'dev', PINGROLL_REDSHIFT_IAM_ROLE: 'arn:aws:iam::123456789012:role/pingroll-copy',
};
const DAYS = daysFrom('2026-11-01', '2026-11-04');
const NOW = new Date('2026-11-26T06:00:00Z');

describe('the ping-id window inside Redshift: the published days\' ping ids in a table of the warehouse', () => {
  const run = redshiftRunSuite(() => loadConfig(ENV).redshift!, tempDir());
  const schema = loadConfig(ENV).redshift!.schema;

  /** What the table holds: each day's files and their rows. */
  const held = async (): Promise<Array<{ day: string; file: string; n: number }>> =>
    (await run.pg.query<{ day: string; file: string; n: number }>(`SELECT TO_CHAR(day, 'YYYY-MM-DD') AS day, file, COUNT(*) AS n FROM ${schema}.window_ping_ids GROUP BY day, file ORDER BY day, file`)).rows;
  /** A published day's ping ids as its manifest names them. */
  const idsOf = async (day: string): Promise<{ day: string; file: string; n: number }> => {
    const { pingIds } = (await readManifest(run.store, day))!;
    return { day, file: pingIds!.key, n: pingIds!.rows };
  };
  /** The files the window's loads since batch `from` named (the INSERT into the table names each loaded file). */
  const loadedSince = (from: number): string[] => run.sent.slice(from).flat().filter((q) => q.startsWith(`INSERT INTO ${schema}.window_ping_ids`))
    .flatMap((q) => [...q.matchAll(/THEN '([^']+\.parquet)'/g)].map((m) => m[1]!)).sort();
  const copiesSince = (from: number): number => run.sent.slice(from).flat().filter((q) => q.startsWith('COPY window_load ')).length;

  it('copies each published day\'s ids once, replaces a republished day\'s and one emptied by hand, drops the days before the window, and counts as the oracle does', async () => {
    const samples = DAYS.map((date, i) => generateSample({ date, sessions: 40, seed: 5600 + i, truth: true, series: 3, recordsPerObject: 80, resends: 0.5, automated: 0 }));
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    const client = run.s3.client();
    for (const o of samples.flatMap((s) => s.objects)) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: `logs/${o.key}`, Body: objectBody(o) }));
    const truth: TruthRecord[] = samples.flatMap((s) => s.truth);
    const log = memoryLog();
    const config = (extra: Record<string, string> = {}) => loadConfig({ ...ENV, ...extra });
    const expectFigures = async (day: string, w = 30): Promise<void> => {
      expect(await readStoreDay(run.store, day, tempDir()), day).toEqual(expectedDay(truth, day, w));
    };

    // The four days backfilled in order: each day's rollup COPYs the day before it, once.
    let mark = run.sent.length;
    expect((await runDays(config(), { from: DAYS[0]!, to: DAYS.at(-1)!, log, now: NOW })).failed).toEqual([]);
    for (const day of DAYS) await expectFigures(day);
    const repeats = DAYS.flatMap((d) => expectedDay(truth, d, 30).audit).filter((a) => (a as { outcome: string }).outcome === 'repeat');
    expect(repeats.length, 'days with repeats').toBeGreaterThan(1);
    const first = await Promise.all(DAYS.map(idsOf));
    expect(copiesSince(mark)).toBe(3);
    expect(loadedSince(mark)).toEqual(first.slice(0, 3).map((f) => f.file).sort());
    expect(await held()).toEqual(first.slice(0, 3));

    // The second day published again (new ping ids under a new key): its own rollup reads the first day as held, loading nothing.
    mark = run.sent.length;
    expect((await runDays(config(), { from: DAYS[1]!, to: DAYS[1]!, force: true, log, now: NOW })).failed).toEqual([]);
    expect(copiesSince(mark)).toBe(0);
    const second = await idsOf(DAYS[1]!);
    expect(second.file).not.toBe(first[1]!.file);

    // Five rows of the first day deleted by hand; the fourth day's rollup loads the first day again and the second's new file, not the third's.
    await run.pg.exec(`DELETE FROM ${schema}.window_ping_ids WHERE day = DATE '${DAYS[0]}' AND ping_id IN (SELECT ping_id FROM ${schema}.window_ping_ids WHERE day = DATE '${DAYS[0]}' ORDER BY ping_id LIMIT 5)`);
    mark = run.sent.length;
    expect((await runDays(config(), { from: DAYS[3]!, to: DAYS[3]!, force: true, log, now: NOW })).failed).toEqual([]);
    await expectFigures(DAYS[3]!);
    expect(loadedSince(mark)).toEqual([first[0]!.file, second.file].sort());
    // And the run says so.
    expect(log.events.filter((e) => e.event === 'window.checked' && e.fields.day === DAYS[3]).at(-1)?.fields).toMatchObject({ days: 30, heldDays: 1, loadedDays: [DAYS[0], DAYS[1]], adjustmentFiles: 0 });
    expect(await held()).toEqual([first[0]!, second, first[2]!]);

    // With a window of two days, the fourth day's rollup drops what no later rollup reads: the first day.
    expect((await runDays(config({ PINGROLL_DEDUPE_DAYS: '2' }), { from: DAYS[3]!, to: DAYS[3]!, force: true, log, now: NOW })).failed).toEqual([]);
    await expectFigures(DAYS[3]!, 2);
    expect(await held()).toEqual([second, first[2]!]);
  }, 300_000);

  it('plans from what the table holds: a day read only as its manifest names it, with its rows and nothing else; a file of no rows neither read nor loaded, its day emptied', () => {
    const f = (day: string, rows: number, key = `${day}.parquet`) => ({ key, size: 10, own: { day, rows } });
    const plan = planWindow([f('2026-11-01', 3), f('2026-11-02', 2), f('2026-11-03', 4), f('2026-11-04', 0), f('2026-11-05', 1), { key: 'adj.parquet', size: 5 }], [
      { day: '2026-11-01', file: '2026-11-01.parquet', n: 3 }, // as planned
      { day: '2026-11-02', file: '2026-11-02.parquet', n: 1 }, // a row short
      { day: '2026-11-03', file: '2026-11-03.parquet', n: 4 }, { day: '2026-11-03', file: 'old.parquet', n: 1 }, // another file beside it
      { day: '2026-11-04', file: 'old.parquet', n: 2 }, // a day now of no ids
      { day: '2026-10-20', file: 'x.parquet', n: 7 }, // a day outside the window's files: never read, left to pruning
    ]);
    expect(plan).toEqual({
      read: [{ day: '2026-11-01', key: '2026-11-01.parquet', rows: 3 }, { day: '2026-11-02', key: '2026-11-02.parquet', rows: 2 }, { day: '2026-11-03', key: '2026-11-03.parquet', rows: 4 }, { day: '2026-11-05', key: '2026-11-05.parquet', rows: 1 }],
      replace: ['2026-11-02', '2026-11-03', '2026-11-04', '2026-11-05'],
      load: [{ day: '2026-11-02', key: '2026-11-02.parquet', size: 10 }, { day: '2026-11-03', key: '2026-11-03.parquet', size: 10 }, { day: '2026-11-05', key: '2026-11-05.parquet', size: 10 }],
      adjusted: [{ key: 'adj.parquet', size: 5 }],
    });
    expect(() => planWindow([f('2026-11-01', 3), f('2026-11-01', 2, 'b.parquet')], [])).toThrow(/two ping-ids files of one day/);
  });

  it('fails the transaction when the table does not hold what the plan reads (a plan made stale by another transaction): never read as it stands', async () => {
    // As the rollup sends them: the jobs' user, through the Data API, the inputs' batch then the
    // reading transaction in one session, in a schema of their own bootstrapped as the warehouse's is.
    const cfg = { ...loadConfig(ENV).redshift!, schema: 'window_plan_check' };
    await run.bootstrap(cfg);
    const api = new RedshiftDataApi(new RedshiftDataClient({}), cfg, { sleep: async () => {}, firstPollMs: 1 });
    const day = '2026-11-10', before = addDays(day, -1);
    const plan = { read: [{ day: before, key: 'a.parquet', rows: 3 }], replace: [], load: [], adjusted: [] };
    const w = windowStatements(cfg.schema, day, 30, plan, { role: `IAM_ROLE '${cfg.iamRole}'`, loadManifest: null, adjustedManifest: null });
    /** The table made to hold `rows` of the planned day's file (by another transaction: Postgres's administrator). */
    const holds = async (rows: number): Promise<void> => {
      await run.pg.exec(`DELETE FROM ${cfg.schema}.window_ping_ids`);
      for (let i = 0; i < rows; i++) await run.pg.exec(`INSERT INTO ${cfg.schema}.window_ping_ids VALUES (DATE '${before}', 'a.parquet', 'id-${i}', ${Date.parse(`${before}T12:00:00Z`) + i}, FALSE, TRUE)`);
    };
    /** The plan made from 3 rows; the table holding `rows` when the reading transaction starts. */
    const attempt = async (rows: number): Promise<void> => {
      const session = await api.batch(w.prepare, 'the window\'s inputs', { keepAliveSeconds: 60 });
      await holds(rows);
      await api.batch(w.rollup, 'the window\'s check', { id: session.sessionId! });
    };
    await expect(attempt(2)).rejects.toThrow(new RegExp(WINDOW_CHECK));
    await expect(attempt(4)).rejects.toThrow(new RegExp(WINDOW_CHECK));
    await attempt(3);
    expect(await api.query(`SELECT COUNT(*) AS n FROM ${w.ids}`, 'the window\'s ids')).toEqual([{ n: 3 }]);
  });
});
