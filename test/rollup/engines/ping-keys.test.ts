/**
 * A day's ping ids as sorted 128-bit keys (rollup/engines/duckdb/ping-keys.ts): exact for canonical
 * UUIDs, in DuckDB's UUID order across the sign bit, the same from a staged row's key columns as from
 * its id's text, every place of a repeated key found, what a
 * check kept made the day's keys, a failed write surfaced, and a damaged file refused.
 */
import { readFile, symlink, truncate } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DuckDBConnection } from '@duckdb/node-api';
import { openEngine, queryRows, sqlString } from '../../../lib/duckdb-engine.js';
import { dayKeyBatches, keepKeys, KeysFile, keysOfParquet, keyHalvesSql, stagedKeysSql, stagedTextIdsSql, uuidKeySql, writeKeys, type DayKeys } from '../../../rollup/engines/duckdb/ping-keys.js';
import { stagedIdKey } from '../../../ingest/staged-ping.js';
import { mergeHalf, MergeThreads } from '../../../rollup/engines/duckdb/keys-merge.js';
import { rm, tempDir } from '../../support/job-fixture.js';

const dir = tempDir();
let db: DuckDBConnection;
beforeAll(async () => { db = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: 512 }); });
afterAll(async () => { db.closeSync(); await rm(dir, { recursive: true, force: true }); });

/** The day's ids of `sql` (u: a key as uuidKeySql makes it, event_ms, rowid) as the check streams them (as staged), in one batch of at most `max`. */
async function dayKeys(db: DuckDBConnection, sql: string, max: number): Promise<DayKeys> {
  let out: DayKeys | null = null;
  for await (const batch of dayKeyBatches(db, `SELECT ${keyHalvesSql('u')}, event_ms, rowid FROM (${sql})`, max, dir)) {
    expect(out, `more than ${max} ids`).toBeNull();
    out = batch;
  }
  return out!;
}

/** A UUID's text as a key's words (most significant first). */
function keyOfUuid(uuid: string): number[] {
  const hex = uuid.replace(/-/g, '');
  return [0, 8, 16, 24].map((k) => Number.parseInt(hex.slice(k, k + 8), 16));
}

/** Ids across the first byte's every value (DuckDB stores a UUID with its top bit flipped), and the edges. */
const EDGES = ['00000000-0000-0000-0000-000000000000', '7fffffff-ffff-ffff-ffff-ffffffffffff', '80000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff', '00000000-0000-0000-8000-000000000000', '00000000-0000-0000-7fff-ffffffffffff', '00000000-0000-0001-0000-000000000000'];

describe('ping-id keys', () => {
  it('keys a canonical UUID only: any other spelling of one stays text', async () => {
    const ids = ['0f8fad5b-d9cb-469f-a165-70867728950e', '0F8FAD5B-D9CB-469F-A165-70867728950E', '{0f8fad5b-d9cb-469f-a165-70867728950e}',
      '0f8fad5bd9cb469fa16570867728950e', '0f8fad5b-d9cb-469f-a165-70867728950e ', ' 0f8fad5b-d9cb-469f-a165-70867728950e', 'r:abc', ''];
    const rows = await queryRows<{ id: string; k: string | null }>(db,
      `SELECT id, (${uuidKeySql('id')})::VARCHAR AS k FROM (VALUES ${ids.map((i, n) => `(${sqlString(i)}, ${n})`).join(', ')}) t(id, n) ORDER BY n`);
    // The key is the UUID's 128 bits with the top one flipped, as a signed number: DuckDB's own UUID value.
    expect(rows.map((r) => r.k)).toEqual([String(BigInt('0x0f8fad5bd9cb469fa16570867728950e') - 2n ** 127n), null, null, null, null, null, null, null]);
  });

  it('reads a staged row\'s key (format 4: two numbers) as the key its id\'s text makes, and the text\'s for a row of an earlier format', async () => {
    const random = Array.from({ length: 300 }, (_, i) => `${(i % 256).toString(16).padStart(2, '0')}${randomUUID().slice(2)}`);
    const ids = [...EDGES, ...random, '0F8FAD5B-D9CB-469F-A165-70867728950E', '0f8fad5bd9cb469fa16570867728950e', 'r:abc'];
    const values = ids.map((id, n) => {
      const k = stagedIdKey(id);
      // Every fourth row as a file of an earlier format writes it: no key columns.
      return `(${sqlString(id)}, ${k && n % 4 ? `${k.hi}, ${k.lo}` : 'NULL, NULL'}, ${n})`;
    });
    // And a row with no id: neither a key nor a text.
    await db.run(`CREATE OR REPLACE TABLE staged AS SELECT ping_id, key_hi, key_lo, n AS event_ms, n AS rowid FROM (VALUES ${[...values, `(NULL, NULL, NULL, ${ids.length})`].join(', ')}) t(ping_id, key_hi, key_lo, n)`);
    const keyed = await queryRows<{ rowid: number; staged: string }>(db, `SELECT rowid, (key_hi::HUGEINT * ${2n ** 63n} + key_hi::HUGEINT * ${2n ** 63n} + (key_lo::HUGEINT + ${2n ** 63n}))::VARCHAR AS staged FROM (${stagedKeysSql('staged', 'rowid >= 0')}) WHERE event_ms = rowid ORDER BY rowid`);
    const texts = await queryRows<{ rowid: number; text_id: string }>(db, `SELECT rowid, text_id FROM (${stagedTextIdsSql('staged', 'rowid >= 0')}) WHERE event_ms = rowid ORDER BY rowid`);
    // Each id once: a key when it is a canonical UUID (its text's key, whether staged with key columns or not), else its text.
    const canonical = (id: string): boolean => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id);
    expect(keyed).toEqual(ids.flatMap((id, n) => (canonical(id) ? [{ rowid: n, staged: String(BigInt(`0x${id.replace(/-/g, '')}`) - 2n ** 127n) }] : [])));
    expect(texts).toEqual(ids.flatMap((id, n) => (canonical(id) ? [] : [{ rowid: n, text_id: id }])));
    // As the text's own key makes them.
    const text = await queryRows<{ n: number; k: string | null }>(db, `SELECT rowid AS n, (${uuidKeySql('ping_id')})::VARCHAR AS k FROM staged ORDER BY rowid`);
    expect(text.filter((r) => r.k !== null)).toEqual(keyed.map((r) => ({ n: r.rowid, k: r.staged })));
  });

  it('writes keys in DuckDB\'s UUID order, the text\'s order, and finds each with its event time', async () => {
    await db.run(`CREATE OR REPLACE TABLE ids AS
      SELECT id, 1790000000000 + n * 1000 AS event_ms, n AS rowid FROM (
        SELECT id, row_number() OVER (ORDER BY id DESC)::BIGINT AS n FROM (
          SELECT (lower(lpad(to_hex(b), 2, '0')) || substr(gen_random_uuid()::VARCHAR, 3)) AS id FROM range(256) t(b), range(40)
          UNION ALL SELECT unnest([${EDGES.map(sqlString).join(', ')}])))`);
    const n = Number((await queryRows<{ n: bigint }>(db, 'SELECT count(*) AS n FROM ids'))[0]!.n);
    const file = join(dir, 'all.keys');
    expect(await writeKeys(db, `SELECT ${uuidKeySql('id')} AS u, event_ms FROM ids ORDER BY u`,
      `SELECT * FROM (VALUES ('r:one', 5::BIGINT), ('k:two|\u00e9', 6), (${sqlString('x'.repeat(2_000_000))}, 7)) t(ping_id, event_ms)`, file)).toBe(n);
    const k = new KeysFile(file);
    try {
      expect([k.n, k.textIds, k.minEvent, k.maxEvent]).toEqual([n, 3, 1790000001000, 1790000000000 + n * 1000]);
      // The ids that are not UUIDs, after the keys: one longer than a read's block among them.
      expect([...k.texts()].flat()).toEqual([{ id: 'r:one', event: 5n }, { id: 'k:two|\u00e9', event: 6n }, { id: 'x'.repeat(2_000_000), event: 7n }]);
      // The day is every id, in the text's order: each found at its own place, so both orders agree.
      const day = await dayKeys(db, `SELECT u, event_ms, rowid FROM (SELECT ${uuidKeySql('id')} AS u, event_ms, rowid, id FROM ids) ORDER BY id`, n);
      const places: number[] = [];
      k.merge(day, (d, f) => {
        expect(f).toBe(d);
        expect(k.eventAt(f)).toBe(Number(day.events[d]));
        places.push(d);
      });
      expect(places).toEqual(Array.from({ length: n }, (_, i) => i));
      // The first and last keys are the edges', word by word.
      expect([...day.keys.subarray(0, 4)]).toEqual(keyOfUuid(EDGES[0]!));
      expect([...day.keys.subarray((n - 1) * 4, n * 4)]).toEqual(keyOfUuid(EDGES[3]!));
    } finally {
      k.close();
    }
  });

  it('finds every place of a key a file holds more than once, and only the keys both hold', async () => {
    const parquet = join(dir, 'dup.parquet');
    // The other day's ids: each of 2,000 twice (events a second apart), one not counted, one not a UUID.
    await db.run(`CREATE OR REPLACE TABLE other AS SELECT gen_random_uuid()::VARCHAR AS ping_id FROM range(2000)`);
    await db.run(`COPY (SELECT ping_id, 1790000000000 + k * 1000 AS event_ms, false AS "repeat", true AS counted FROM other, range(2) t(k)
      UNION ALL SELECT gen_random_uuid()::VARCHAR, 1790000000000, false, false
      UNION ALL SELECT 'r:text-id', 1790000000000, false, true) TO ${sqlString(parquet)} (FORMAT parquet)`);
    const keys = join(dir, 'dup.keys');
    await keysOfParquet(db, parquet, keys);
    const k = new KeysFile(keys);
    try {
      expect([k.n, k.textIds]).toEqual([4000, 1]);
      expect([...k.texts()].flat()).toEqual([{ id: 'r:text-id', event: 1790000000000n }]);
      // The day: every third of those ids, and 5,000 of its own.
      const day = await dayKeys(db, `SELECT u, event_ms, rowid FROM (
        SELECT ${uuidKeySql('ping_id')} AS u, 1790100000000::BIGINT AS event_ms, row_number() OVER ()::BIGINT AS rowid FROM (SELECT ping_id FROM other USING SAMPLE 600 ROWS (reservoir, 3)
          UNION ALL SELECT gen_random_uuid()::VARCHAR FROM range(5000))) ORDER BY u`, 5600);
      const found = new Map<number, number[]>();
      k.merge(day, (d, f) => found.set(d, [...(found.get(d) ?? []), k.eventAt(f)]));
      expect(found.size).toBe(600);
      for (const events of found.values()) expect(Math.abs(events[1]! - events[0]!)).toBe(1000);
    } finally {
      k.close();
    }
  });

  it('finds the same on two threads as on one, the window\'s edge by event time included', async () => {
    // Another day's 60,000 ids, a day apart from the day's; the day holds 20,000 of them and 20,000 of its own.
    const dayStart = 1790121600000, DAY = 86_400_000, W = 86_400_000;
    await db.run(`CREATE OR REPLACE TABLE other2 AS SELECT gen_random_uuid() AS u, ${dayStart - DAY} + i * 1000 AS event_ms FROM range(60000) t(i)`);
    const file = join(dir, 'other2.keys');
    await writeKeys(db, 'SELECT u, event_ms FROM other2 ORDER BY u', null, file);
    const day = await dayKeys(db, `SELECT ${uuidKeySql('u::VARCHAR')} AS u, event_ms, rowid FROM (
      SELECT u, ${dayStart} + (i % 86400) * 1000 AS event_ms, i::BIGINT AS rowid FROM (SELECT u, row_number() OVER () AS i FROM (SELECT u FROM other2 USING SAMPLE 20000 ROWS (reservoir, 5) UNION ALL SELECT gen_random_uuid() FROM range(20000))))
      ORDER BY u`, 40_000);
    const ask = { keys: day.keys, events: day.events, files: [{ path: file, from: dayStart - W, to: dayStart, after: false }], dayStart, dayMs: DAY, W };
    const one = [...mergeHalf({ ...ask, lo: 0, hi: day.n })];
    // Only those at most W before: some of the 20,000 fall past the edge.
    expect(one.length).toBeGreaterThan(1000);
    expect(one.length).toBeLessThan(20_000);
    const threads = new MergeThreads();
    try {
      const halves = await threads.merge(ask, day.n);
      expect(halves).toHaveLength(2);
      expect(halves.flatMap((h) => [...h]).sort((a, b) => a - b)).toEqual(one.sort((a, b) => a - b));
    } finally {
      await threads.close();
    }
  });

  it('keeps what the check kept, less the keys dropped after it, the same bytes as writing the counted keys', async () => {
    // 200,000 keys (past a read's block of 65,536), a third of the rest not kept by the check (its
    // repeats); every seventh of those kept is dropped, with some of the repeats (the drop's SQL may name them).
    await db.run(`CREATE OR REPLACE TABLE k3 AS SELECT gen_random_uuid() AS u, 1790000000000 + i * 7 AS event_ms, i % 3 = 0 AS rep, i % 7 = 0 AS dropped FROM range(300000) t(i)`);
    const text = `SELECT * FROM (VALUES ('r:kept', 9::BIGINT)) t(ping_id, event_ms)`;
    for (const drop of [false, true]) {
      const kept = join(dir, `checked-${drop}.keys`), out = join(dir, `day-${drop}.keys`), want = join(dir, `want-${drop}.keys`);
      await writeKeys(db, 'SELECT u, event_ms FROM k3 WHERE NOT rep ORDER BY u', null, kept);
      const n = await keepKeys(db, kept, drop ? 'SELECT u, event_ms FROM k3 WHERE dropped ORDER BY u' : null, text, out);
      expect(await writeKeys(db, `SELECT u, event_ms FROM k3 WHERE NOT rep${drop ? ' AND NOT dropped' : ''} ORDER BY u`, text, want)).toBe(n);
      expect(n).toBe(drop ? 171_428 : 200_000);
      expect((await readFile(out)).equals(await readFile(want))).toBe(true);
      expect(existsSync(kept)).toBe(false);
    }
  });

  it('fails where a write fails, the blocks written on the thread pool: the disk full under 300,000 keys', async () => {
    // The event times, written a block at a time as the keys are, go to /dev/full (every write:
    // ENOSPC) through a link.
    const file = join(dir, 'full.keys');
    await symlink('/dev/full', `${file}.events`);
    await expect(writeKeys(db, 'SELECT gen_random_uuid() AS u, 0::BIGINT AS event_ms FROM range(300000) ORDER BY u', null, file)).rejects.toThrow(/ENOSPC/);
    expect(existsSync(`${file}.events`)).toBe(false);
  });

  it('refuses a file that is not whole, saying which', async () => {
    const file = join(dir, 'cut.keys');
    await writeKeys(db, `SELECT gen_random_uuid() AS u, 0::BIGINT AS event_ms FROM range(100) ORDER BY u`, null, file);
    await truncate(file, 100 * 24);
    expect(() => new KeysFile(file)).toThrow(`${file} is not a ping-ids keys file`);
  });
});
