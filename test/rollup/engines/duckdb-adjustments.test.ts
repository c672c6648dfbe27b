/**
 * Adjustments (contract §9) and automated traffic (contract §10): a late ping that a rule leaves out of
 * the day is never an adjustment either, whichever rule: the bot list's, or the catalog's with
 * PINGROLL_CATALOG_ONLY.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openEngine, queryRows, sqlString } from '../../../lib/duckdb-engine.js';
import { adjustDay } from '../../../rollup/engines/duckdb/adjustments.js';
import { STAGED_COLUMN_NAMES } from '../../../ingest/staged-ping.js';
import { rm, tempDir } from '../../support/job-fixture.js';

const DAY = '2026-10-31';
const T0 = Date.parse(`${DAY}T10:00:00Z`);
const dir = tempDir();
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('adjustments of a closed day', () => {
  it.each([[null], ['episodes'], ['series']] as const)('leave out a late ping on the bot list, and with PINGROLL_CATALOG_ONLY=%s one the catalog does not list', async (only) => {
    const db = await openEngine({ tempDir: join(dir, `spill-${only}`), memoryLimitMb: 256 });
    try {
      const file = async (name: string, rows: Array<[string, string, string, string, number, string | null]>): Promise<string> => {
        const path = join(dir, `${name}-${only}.parquet`);
        const values = rows.map(([series, episode, session, ping, t, agent]) =>
          `('s3', ${sqlString(series)}, ${sqlString(episode)}, ${sqlString(session)}, NULL, ${sqlString(ping)}, ${t}::BIGINT, ${sqlString(`r:${ping}`)}, NULL, NULL, 'ZZ', 'unknown', 'unknown', 'unknown', ${agent ? sqlString(agent) : 'NULL'})`);
        await db.run(`COPY (SELECT * FROM (VALUES ${values.join(', ')}) t(${STAGED_COLUMN_NAMES.join(', ')})) TO ${sqlString(path)} (FORMAT parquet)`);
        return path;
      };
      const counted = await file('counted', [['s1', 'e1', 'a', 'p1', T0, null]]);
      const pending = await file('pending', [
        ['s1', 'e1', 'a', 'p2', T0 + 60_000, null], // listed: an adjustment whatever the setting
        ['s1', 'e2', 'b', 'p3', T0, null], // its series listed, its episode not
        ['s2', 'e1', 'c', 'p4', T0, null], // neither
        ['s1', 'e1', 'bot', 'p5', T0, 'bot_list'], // the bot list's: never
      ]);
      const catalog = join(dir, `catalog-${only}.parquet`);
      await db.run(`COPY (SELECT 's1' AS series_id, 'e1' AS episode_id, 600::BIGINT AS duration_seconds) TO ${sqlString(catalog)} (FORMAT parquet)`);
      await adjustDay(db, { reportedMonth: '2026-11', closedMonth: '2026-10', tz: 'UTC', day: DAY, counted: [counted], pending: [pending] }, 'adj',
        only ? { only, table: `read_parquet(${sqlString(catalog)})` } : null);
      const rows = (await queryRows<{ series_id: string; episode_id: string; pings: bigint; after_close_records: bigint }>(db, 'SELECT series_id, episode_id, pings, after_close_records FROM adj ORDER BY ALL'))
        .map((r) => [r.series_id, r.episode_id, Number(r.pings), Number(r.after_close_records)]);
      expect(rows).toEqual([
        ['s1', 'e1', 1, 1],
        ...(only !== 'episodes' ? [['s1', 'e2', 1, 1]] : []),
        ...(only === null ? [['s2', 'e1', 1, 1]] : []),
      ]);
    } finally {
      db.closeSync();
    }
  });
});
