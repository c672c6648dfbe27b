/**
 * The day spool stages DynamoDB pings as staged rows, written as Parquet by day (staged-parquet.ts),
 * which DuckDB reads back: ids holding commas, quotes and line breaks come back exactly, in the right
 * columns.
 */
import { NO_CLIENT } from '../../../ingest/staged-ping.js';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../../infra/config.js';
import { DaySpool, STAGED_ROW_GROUP_ROWS } from '../../../ingest/batch/day-spool.js';
import type { PingRecord } from '../../../ingest/ping-record.js';
import { openEngine, queryRows, sqlString } from '../../../lib/duckdb-engine.js';
import { DirectoryObjectStore } from '../../../state/object-store/directory-object-store.js';
import { dayOf } from '../../../lib/utc-day.js';
import { rm, tempDir } from '../../support/job-fixture.js';

const dir = tempDir();
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('the day spool', () => {
  it('stages ids with commas, quotes and line breaks exactly as read', async () => {
    const t = Date.parse('2026-11-01T10:00:00Z');
    const pings: PingRecord[] = [
      { source: 'dynamodb', series: 'a,b', episode: 'say "hi"', session: 'line\nbreak', user: 'c\r\nd', pingId: '"', eventTimeMs: t, naturalKey: 'k:1,2|x', platform: 'androidtv', pos: 754,
        country: 'GB', os: 'Mac OS', deviceType: 'desktop', browser: 'Mobile Safari', agentRule: 'bot_list' },
      { source: 'dynamodb', series: 'plain', episode: '1234', session: 's', user: null, pingId: null, eventTimeMs: t + 1, naturalKey: 'k:3|s', platform: null, pos: null, ...NO_CLIENT },
      { source: 'dynamodb', series: 'plain', episode: '1234', session: 's', user: null, pingId: 'ff8fad5b-d9cb-469f-0165-70867728950e', eventTimeMs: t + 2, naturalKey: 'k:4|s', platform: null, pos: null, ...NO_CLIENT },
    ];
    // A canonical UUID's key (staged format 4): each half's top bit flipped, as a signed number; none for any other id.
    const key = { '"': [null, null], null: [null, null], 'ff8fad5b-d9cb-469f-0165-70867728950e': [0xff8fad5bd9cb469fn - 2n ** 63n, 0x016570867728950en - 2n ** 63n] } as Record<string, [bigint | null, bigint | null]>;
    const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: defaultConfig().memoryLimitMb });
    const spool = new DaySpool(join(dir, 'work'));
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'work'), { recursive: true });
    try {
      pings.forEach((p) => spool.addPing('2026-11-01', p, 0));
      const store = new DirectoryObjectStore(join(dir, 'out'));
      const days = await spool.stage(store, 'b1');
      const file = store.localFile(days['2026-11-01']!.pings![0]!);
      const rows = await queryRows<Record<string, unknown>>(engine, `SELECT * FROM read_parquet(${sqlString(file)}, hive_partitioning = false) ORDER BY event_ms`);
      expect(rows.map((r) => ({ ...r, event_ms: Number(r.event_ms), pos: r.pos === null ? null : Number(r.pos) }))).toEqual(pings.map((p) => ({
        source: p.source, series: p.series, episode: p.episode, session: p.session, user_id: p.user, ping_id: p.pingId, event_ms: p.eventTimeMs, natural_key: p.naturalKey, platform: p.platform, pos: p.pos,
        country: p.country, os: p.os, device_type: p.deviceType, browser: p.browser, agent_rule: p.agentRule, key_hi: key[String(p.pingId)]![0], key_lo: key[String(p.pingId)]![1],
      })));
      expect(days['2026-11-01']!.pings![0]).toMatch(/\/keyed-0\.parquet$/);
    } finally {
      await spool.discard();
      engine.closeSync();
    }
  });

  it('stages each day\'s rows under its day, whether the parts written together hold one day or several', async () => {
    const day1 = Date.parse('2026-11-01T23:59:00Z');
    const ping = (i: number, t: number): PingRecord => ({ source: 'dynamodb', series: `s${i}`, episode: 'e', session: `session-${i}`, user: null, pingId: `p${i}`, eventTimeMs: t, naturalKey: `k:${i}`, platform: null, pos: 0, ...NO_CLIENT });
    // Parts of a few rows. The first 24 rows (2026-11-01 only) are written while the rest wait; the
    // rest, added once that writing has begun, are written together: they hold both days.
    const pings = Array.from({ length: 60 }, (_, i) => ping(i, day1 + i * 2000));
    const engine = await openEngine({ tempDir: join(dir, 'spill2'), memoryLimitMb: defaultConfig().memoryLimitMb });
    const spool = new DaySpool(join(dir, 'work2'), { partBytes: 10 * 60 });
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'work2'), { recursive: true });
    try {
      const dayOf = (t: number): string => new Date(t).toISOString().slice(0, 10);
      pings.slice(0, 24).forEach((p) => spool.addPing(dayOf(p.eventTimeMs), p, 0));
      await new Promise((resolve) => setImmediate(resolve));
      pings.slice(24).forEach((p) => spool.addPing(dayOf(p.eventTimeMs), p, 0));
      const store = new DirectoryObjectStore(join(dir, 'out2'));
      const days = await spool.stage(store, 'b2');
      expect(Object.keys(days).sort()).toEqual(['2026-11-01', '2026-11-02']);
      for (const [day, staged] of Object.entries(days)) {
        expect(staged.pings).toHaveLength(day === '2026-11-01' ? 2 : 1);
        const files = staged.pings!.map((k) => sqlString(store.localFile(k)));
        const rows = await queryRows<{ natural_key: string }>(engine, `SELECT natural_key FROM read_parquet([${files.join(', ')}], hive_partitioning = false) ORDER BY event_ms`);
        expect(rows.map((r) => r.natural_key)).toEqual(pings.filter((p) => dayOf(p.eventTimeMs) === day).map((p) => p.naturalKey));
        expect(staged.pingCount).toBe(rows.length);
      }
    } finally {
      await spool.discard();
      engine.closeSync();
    }
  });
  it('stages a time before 1970 that is not at midnight under its own day (the writer floors, as dayOf does)', async () => {
    const ping = (i: number, t: number): PingRecord => ({ source: 'dynamodb', series: 's', episode: 'e', session: `s${i}`, user: null, pingId: null, eventTimeMs: t, naturalKey: `k:${i}`, platform: 'web', pos: null, ...NO_CLIENT });
    const pings = [ping(0, Date.parse('1969-12-31T23:59:59.999Z')), ping(1, Date.parse('1970-01-01T00:00:00.000Z')), ping(2, Date.parse('1969-07-20T20:17:40.000Z'))];
    const engine = await openEngine({ tempDir: join(dir, 'spill3'), memoryLimitMb: defaultConfig().memoryLimitMb });
    const spool = new DaySpool(join(dir, 'work3'));
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'work3'), { recursive: true });
    try {
      pings.forEach((p) => spool.addPing(dayOf(p.eventTimeMs), p, 0));
      const days = await spool.stage(new DirectoryObjectStore(join(dir, 'out3')), 'b3');
      expect(Object.fromEntries(Object.entries(days).map(([d, s]) => [d, s.pingCount]))).toEqual({ '1969-07-20': 1, '1969-12-31': 1, '1970-01-01': 1 });
    } finally {
      await spool.discard();
      engine.closeSync();
    }
  });

  it('stages a part whose rows are of 1,000 days each day\'s rows under it (DuckDB\'s partitioned write, before issue #57\'s item 4, held a buffer a day and ran out of memory)', async () => {
    // An object of records from all over the calendar (a bucket holds whatever landed in it): one COPY
    // partitioned by all its days ran out of the default 512 MB at every run, for every day.
    const first = Date.parse('1990-01-01T12:00:00Z');
    const pings = Array.from({ length: 3000 }, (_, i): PingRecord => ({ source: 'dynamodb', series: 's', episode: 'e', session: `s${i}`, user: null, pingId: `p${i}`, eventTimeMs: first + (i % 1000) * 86_400_000 + i, naturalKey: `k:${i}`, platform: null, pos: null, ...NO_CLIENT }));
    const engine = await openEngine({ tempDir: join(dir, 'spill-many'), memoryLimitMb: defaultConfig().memoryLimitMb });
    const spool = new DaySpool(join(dir, 'work-many'));
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'work-many'), { recursive: true });
    try {
      pings.forEach((p) => spool.addPing(dayOf(p.eventTimeMs), p, 0));
      const store = new DirectoryObjectStore(join(dir, 'out-many'));
      const days = await spool.stage(store, 'b-many');
      expect(Object.keys(days)).toHaveLength(1000);
      const dayOfFile = new Map(Object.entries(days).flatMap(([day, d]) => d.pings!.map((k) => [store.localFile(k), day] as const)));
      const files = [...dayOfFile.keys()].map(sqlString);
      // Each day's files hold its rows, and every row once.
      const byFile = await queryRows<{ filename: string; first: bigint; last: bigint; keys: string }>(engine, `SELECT filename, min(event_ms) AS first, max(event_ms) AS last, string_agg(natural_key, ',') AS keys
        FROM read_parquet([${files.join(', ')}], hive_partitioning = false, filename = true) GROUP BY filename`);
      expect(byFile.map((f) => [dayOf(Number(f.first)), dayOf(Number(f.last))])).toEqual(byFile.map((f) => [dayOfFile.get(f.filename), dayOfFile.get(f.filename)]));
      expect(byFile.flatMap((f) => f.keys.split(',')).sort()).toEqual(pings.map((p) => p.naturalKey).sort());
      for (const [day, d] of Object.entries(days)) expect(d.pingCount).toBe(pings.filter((p) => dayOf(p.eventTimeMs) === day).length);
    } finally {
      await spool.discard();
      engine.closeSync();
    }
  });

  it('writes a staged file in row groups of STAGED_ROW_GROUP_ROWS, which the rollup reads side by side', async () => {
    const t = Date.parse('2026-11-01T10:00:00Z');
    const rows = STAGED_ROW_GROUP_ROWS * 2 + 100;
    const engine = await openEngine({ tempDir: join(dir, 'spill-rg'), memoryLimitMb: defaultConfig().memoryLimitMb });
    const spool = new DaySpool(join(dir, 'work-rg'));
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'work-rg'), { recursive: true });
    try {
      for (let i = 0; i < rows; i++) spool.addPing('2026-11-01', { source: 'dynamodb', series: 's', episode: 'e', session: `s${i % 97}`, user: null, pingId: `p${i}`, eventTimeMs: t + i, naturalKey: `k:${i}`, platform: null, pos: null, ...NO_CLIENT }, 0);
      const store = new DirectoryObjectStore(join(dir, 'out-rg'));
      const days = await spool.stage(store, 'b-rg');
      const file = sqlString(store.localFile(days['2026-11-01']!.pings![0]!));
      const groups = await queryRows<{ rows: bigint }>(engine, `SELECT DISTINCT row_group_id, row_group_num_rows AS rows FROM parquet_metadata(${file}) ORDER BY row_group_id`);
      // Every row once, in three groups or more (DuckDB's default, 122,880 rows, makes two of these rows).
      expect(groups.reduce((n, g) => n + Number(g.rows), 0)).toBe(rows);
      expect(groups.length).toBeGreaterThanOrEqual(3);
    } finally {
      await spool.discard();
      engine.closeSync();
    }
  });

  it('keeps a parser\'s rejects whole when a character straddles two of its reads (1 MiB each)', async () => {
    const { mkdir, writeFile } = await import('node:fs/promises');
    const { gunzipSync } = await import('node:zlib');
    const { readFileSync } = await import('node:fs');
    const work = join(dir, 'work-utf8');
    await mkdir(work, { recursive: true });
    // Lines of two-byte characters, the first two bytes longer, so that byte 1,048,576 falls inside one.
    const lines = Array.from({ length: 1200 }, (_, i) => `2026-11-01\t${JSON.stringify({ source: 's3', outcome: 'malformed', reason: 'x', input: 'k', at: i + 1, record: `${i === 0 ? 'ab' : ''}${'é'.repeat(500)}` })}`);
    const body = Buffer.from(lines.join('\n') + '\n');
    expect(body.length).toBeGreaterThan(1 << 20);
    expect(body[1 << 20]! & 0xc0).toBe(0x80); // a continuation byte: the read boundary cuts a character
    const file = join(work, 'rows-rejects.jsonl');
    await writeFile(file, body);
    const engine = await openEngine({ tempDir: join(dir, 'spill-utf8'), memoryLimitMb: defaultConfig().memoryLimitMb });
    const spool = new DaySpool(join(work, 'spool'));
    await mkdir(join(work, 'spool'), { recursive: true });
    try {
      spool.takeRejects({ file, start: 0, end: body.length });
      const store = new DirectoryObjectStore(join(work, 'out'));
      const staged = await spool.stage(store, 'b1');
      const kept = gunzipSync(readFileSync(store.localFile(staged['2026-11-01']!.rejects!))).toString().trim().split('\n').map((l) => JSON.parse(l) as { record: string });
      expect(kept.map((r) => r.record)).toEqual(lines.map((_, i) => `${i === 0 ? 'ab' : ''}${'é'.repeat(500)}`));
    } finally {
      engine.closeSync();
    }
  });
});
