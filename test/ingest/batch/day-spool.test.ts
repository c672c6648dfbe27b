/**
 * The day spool stages DynamoDB pings as CSV rows that DuckDB reads back: ids holding the CSV's own
 * characters (commas, quotes, line breaks) must come back exactly, in the right columns.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../../infra/config.js';
import { DaySpool } from '../../../ingest/batch/day-spool.js';
import type { PingRecord } from '../../../ingest/ping-record.js';
import { openEngine, queryRows, sqlString } from '../../../lib/duckdb-engine.js';
import { DirectoryObjectStore } from '../../../state/object-store/directory-object-store.js';
import { rm, tempDir } from '../../helpers/job-fixture.js';

const dir = tempDir();
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('the day spool', () => {
  it('stages ids with commas, quotes and line breaks exactly as read', async () => {
    const t = Date.parse('2026-11-01T10:00:00Z');
    const pings: PingRecord[] = [
      { source: 'dynamodb', series: 'a,b', episode: 'say "hi"', session: 'line\nbreak', user: 'c\r\nd', pingId: '"', eventTimeMs: t, naturalKey: 'k:1,2|x' },
      { source: 'dynamodb', series: 'plain', episode: '1234', session: 's', user: null, pingId: null, eventTimeMs: t + 1, naturalKey: 'k:3|s' },
    ];
    const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: defaultConfig().memoryLimitMb });
    const spool = new DaySpool(join(dir, 'work'), engine);
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'work'), { recursive: true });
    try {
      pings.forEach((p) => spool.addPing('2026-11-01', p, 0));
      const store = new DirectoryObjectStore(join(dir, 'out'));
      const days = await spool.stage(store, 'b1');
      const file = store.localFile(days['2026-11-01']!.pings![0]!);
      const rows = await queryRows<Record<string, unknown>>(engine, `SELECT * FROM read_parquet(${sqlString(file)}, hive_partitioning = false) ORDER BY event_ms`);
      expect(rows.map((r) => ({ ...r, event_ms: Number(r.event_ms) }))).toEqual(pings.map((p) => ({
        source: p.source, series: p.series, episode: p.episode, session: p.session, user_id: p.user, ping_id: p.pingId, event_ms: p.eventTimeMs, natural_key: p.naturalKey,
      })));
    } finally {
      await spool.discard();
      engine.closeSync();
    }
  });
});
