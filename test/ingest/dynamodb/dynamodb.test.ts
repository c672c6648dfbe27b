/**
 * The legacy DynamoDB source (contract §1b): the rules on plain values, then the daily job with both
 * sources against DynamoDB Local, on the first day of a month.
 */
import { dayManifestKey } from '../../../datasets/layout.js';
import { join } from 'node:path';
import { BatchWriteItemCommand, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyItem } from '../../../ingest/dynamodb/item-rules.js';
import { isClosed, tablesForDay } from '../../../ingest/dynamodb/monthly-tables.js';
import { scanTable } from '../../../ingest/dynamodb/table-scan.js';
import { eventTimeOfShardKey } from '../../../ingest/dynamodb/ts-shard.js';
import { memoryLog } from '../../../lib/log.js';
import { generateSample, type TruthRecord } from '../../../tools/sample/access-log-generator.js';
import { expectedDay } from '../../support/oracle.js';
import { startDynamoLocal, type DynamoLocal } from '../../support/dynamodb-local.js';
import { crashingStore, dirConfig, onBackends, readDay, rm, runDay, runDays, setEnv, tempDir, writeObjects } from '../../support/job-fixture.js';
import { runIngestJob } from '../../../jobs/ingest.js';
import { DirectoryObjectStore } from '../../../state/object-store/directory-object-store.js';
import type { TablePart, TableScanCommit } from '../../../state/ledger.js';

describe('ts_shard (contract §1b)', () => {
  it.each([
    ['179348562274', '2026-10-31T22:27:02.000Z'],
    ['1793485622#7f', '2026-10-31T22:27:02.000Z'],
    ['1793485622', '2026-10-31T22:27:02.000Z'],
    ['2026-11-01T23:33:32Zab', '2026-11-01T23:33:32.000Z'],
    ['2026-11-01T23:33:32Z_ab', '2026-11-01T23:33:32.000Z'],
    ['2026-11-01T23:33:32.250Z-ab', '2026-11-01T23:33:32.250Z'],
    ['2026-11-01T23:33:32.250Z.ab', '2026-11-01T23:33:32.250Z'],
  ])('reads %s as %s', (key, iso) => {
    expect(new Date(eventTimeOfShardKey(key)).toISOString()).toBe(iso);
  });
  it.each([['abc'], [''], ['2026-11-01 23:33:32Z'], ['2026-02-30T00:00:00Z'], ['179348562'], ['2026-11-01T24:00:00Z']])('finds no time in %j', (key) => {
    expect(eventTimeOfShardKey(key)).toBeNaN();
  });
});

describe('items (contract §1b, §3)', () => {
  const base = { ts_shard: { S: '2026-11-01T10:00:00Z#ab' }, session_id: { S: 's1' } };
  it('takes N and S ids as the same id, and keeps the natural key', () => {
    const n = classifyItem({ ...base, series: { N: '1234' }, episode: { S: '7' } });
    const s = classifyItem({ ...base, series: { S: '1234' }, episode: { N: '7' } });
    expect(n).toMatchObject({ outcome: 'ping', ping: { series: '1234', episode: '7', session: 's1', naturalKey: 'k:2026-11-01T10:00:00Z#ab|s1', source: 'dynamodb' } });
    expect(s.outcome === 'ping' && s.ping).toEqual(n.outcome === 'ping' && n.ping);
  });
  it('reads optional user and ping ids, empty as absent', () => {
    expect(classifyItem({ ...base, series: { S: 'a' }, episode: { S: 'b' }, user_id: { S: 'u' }, ping_id: { S: '' } })).toMatchObject({ ping: { user: 'u', pingId: null } });
  });
  it.each([
    [{ session_id: { S: 's1' }, series: { S: 'a' }, episode: { S: 'b' } }, 'no ts_shard string'],
    [{ ...base, ts_shard: { S: 'garbage' }, series: { S: 'a' }, episode: { S: 'b' } }, "ts_shard 'garbage' holds no readable time"],
    [{ ...base, episode: { S: 'b' } }, 'missing series'],
    [{ ...base, series: { S: 'a' } }, 'missing episode'],
    [{ ...base, series: { BOOL: true }, episode: { S: 'b' } }, 'missing series'],
    [{ ...base, series: { S: 'x'.repeat(257) }, episode: { S: 'b' } }, 'series longer than 256 characters'],
  ] as Array<[Record<string, AttributeValue>, string]>)('calls %j a bad_item: %s', (item, reason) => {
    expect(classifyItem(item)).toMatchObject({ outcome: 'bad_item', reason });
  });
});

describe('which tables can hold a day', () => {
  const names = (day: string) => tablesForDay('pings_{yyyy}_{mm}', day).map((t) => t.name);
  it.each([
    ['2026-11-15', ['pings_2026_11']],
    ['2026-11-01', ['pings_2026_10', 'pings_2026_11']],
    ['2026-11-30', ['pings_2026_11', 'pings_2026_12']],
    ['2026-12-31', ['pings_2026_12', 'pings_2027_01']],
    ['2027-01-01', ['pings_2026_12', 'pings_2027_01']],
    ['2028-02-29', ['pings_2028_02', 'pings_2028_03']],
  ])('%s: %j', (day, want) => expect(names(day)).toEqual(want));

  it('counts a table as closed a full day after its month ends, not before', () => {
    const october = tablesForDay('pings_{yyyy}_{mm}', '2026-10-15')[0]!;
    expect(isClosed(october, new Date('2026-11-01T23:59:59Z'))).toBe(false);
    expect(isClosed(october, new Date('2026-11-02T00:00:00Z'))).toBe(true);
  });
});

describe('with DynamoDB Local', () => {
  const DAY = '2026-11-01';
  let ddb: DynamoLocal;
  let restoreEnv = (): void => {};
  const roots: string[] = [];
  let items: Array<{ table: string; item: Record<string, AttributeValue> }> = [];
  let truth: TruthRecord[] = [];
  const sample = generateSample({ date: DAY, sessions: 120, seed: 31, truth: true, recordsPerObject: 400 });

  beforeAll(async () => {
    ddb = await startDynamoLocal();
    restoreEnv = setEnv(ddb.env);
    await ddb.createPingTable('pings_2026_10');
    await ddb.createPingTable('pings_2026_11');
    // The legacy collector's view of the same day: some of the S3 pings again (same ping id), its own
    // pings in the November table and, written by a slow clock, in October's; pings of Oct 31; bad items.
    const s3Pings = sample.truth.filter((t) => t.outcome === 'ping' && t.day === DAY && !t.dedupeKey!.startsWith('r:'));
    const add = (table: string, tsShard: string, session: string, fields: Record<string, AttributeValue>, t: Partial<TruthRecord>): void => {
      items.push({ table, item: { ts_shard: { S: tsShard }, session_id: { S: session }, ...fields } });
      truth.push({ source: 'dynamodb', naturalKey: `k:${tsShard}|${session}`, ...t } as TruthRecord);
    };
    s3Pings.slice(0, 150).forEach((p, i) => {
      const ts = i % 2 ? `${Math.floor(p.eventTimeMs / 1000) + 2}${'ab'}` : new Date(p.eventTimeMs + 2000).toISOString().replace('.000Z', 'Z') + '#cd';
      add('pings_2026_11', ts, p.session!, { series: { S: p.series! }, episode: { S: p.episode! }, ping_id: { S: p.dedupeKey! }, ...(p.user ? { user_id: { S: p.user } } : {}) },
        { outcome: 'ping', eventTimeMs: Math.floor(p.eventTimeMs / 1000) * 1000 + 2000, day: DAY, series: p.series, episode: p.episode, session: p.session, user: p.user ?? null, dedupeKey: p.dedupeKey });
    });
    // And resent a day later, in the legacy table, with their ids (contract §4's window: repeats on November 2).
    s3Pings.slice(200, 230).forEach((p, i) => {
      const at = Math.floor(p.eventTimeMs / 1000) * 1000 + 86_400_000;
      const ts = `${at / 1000}r${i % 10}`;
      add('pings_2026_11', ts, `${p.session!}-again`, { series: { S: p.series! }, episode: { S: p.episode! }, ping_id: { S: p.dedupeKey! } },
        { outcome: 'ping', eventTimeMs: at, day: new Date(at).toISOString().slice(0, 10), series: p.series, episode: p.episode, session: `${p.session!}-again`, user: null, dedupeKey: p.dedupeKey });
    });
    const day0 = Date.parse(`${DAY}T00:00:00Z`);
    for (let i = 0; i < 200; i++) {
      const t = day0 - 3 * 3600_000 + i * 97_000; // from Oct 31 21:00 into Nov 1
      const table = t < day0 && i % 3 === 0 ? 'pings_2026_10' : t < day0 + 600_000 && i % 2 === 0 ? 'pings_2026_10' : 'pings_2026_11';
      const ts = `${Math.floor(t / 1000)}${String(i % 100).padStart(2, '0')}`;
      const session = `legacy-${i % 17}`;
      const numeric = i % 4 === 0;
      add(table, ts, session, { series: numeric ? { N: String(9000 + (i % 3)) } : { S: String(9000 + (i % 3)) }, episode: { N: String(1 + (i % 5)) }, ...(i % 5 ? { user_id: { S: `lu${i % 11}` } } : {}) },
        { outcome: 'ping', eventTimeMs: Math.floor(t / 1000) * 1000, day: new Date(t).toISOString().slice(0, 10), series: String(9000 + (i % 3)), episode: String(1 + (i % 5)), session, user: i % 5 ? `lu${i % 11}` : null, dedupeKey: `k:${ts}|${session}` });
    }
    add('pings_2026_11', 'nonsense', 'bad-1', { series: { S: 'x' }, episode: { S: 'y' } }, { outcome: 'bad_item', eventTimeMs: NaN, day: DAY });
    add('pings_2026_11', `${Math.floor((day0 + 5000) / 1000)}zz`, 'bad-2', { episode: { S: 'y' } }, { outcome: 'bad_item', eventTimeMs: day0 + 5000, day: DAY });
    add('pings_2026_10', 'nonsense', 'bad-3', { series: { S: 'x' }, episode: { S: 'y' } }, { outcome: 'bad_item', eventTimeMs: NaN, day: '2026-10-01' });
    const client = ddb.client();
    for (let i = 0; i < items.length; i += 25) {
      const chunk = items.slice(i, i + 25);
      const byTable: Record<string, Array<{ PutRequest: { Item: Record<string, AttributeValue> } }>> = {};
      for (const { table, item } of chunk) (byTable[table] ??= []).push({ PutRequest: { Item: item } });
      await client.send(new BatchWriteItemCommand({ RequestItems: byTable }));
    }
  }, 120_000);

  afterAll(async () => {
    restoreEnv();
    await ddb?.stop();
    for (const r of roots) await rm(r, { recursive: true, force: true });
  });

  /** An export of `table` as DynamoDB writes one: summary, files manifest, gzip data. Returns its item count. */
  async function writeExport(dir: string, table: string, opts: { exportTime?: string; exportType?: string; id?: string } = {}): Promise<number> {
    const { mkdir, writeFile } = await import('node:fs/promises');
    const { gzipSync } = await import('node:zlib');
    const id = opts.id ?? '01767225600000-a1b2c3d4';
    const base = join(dir, 'AWSDynamoDB', id);
    await mkdir(join(base, 'data'), { recursive: true });
    const lines = items.filter((i) => i.table === table).map((i) => JSON.stringify({ Item: i.item }));
    const half = Math.ceil(lines.length / 2);
    const files = [lines.slice(0, half), lines.slice(half)].map((ls, n) => ({ key: `AWSDynamoDB/${id}/data/part${n}.json.gz`, ls }));
    for (const f of files) await writeFile(join(dir, f.key), gzipSync(f.ls.join('\n') + '\n'));
    await writeFile(join(base, 'manifest-files.json'), files.map((f) => JSON.stringify({ itemCount: f.ls.length, dataFileS3Key: f.key })).join('\n') + '\n');
    await writeFile(join(base, 'manifest-summary.json'), JSON.stringify({
      exportArn: `arn:aws:dynamodb:us-east-1:123456789012:table/${table}/export/${id}`, tableArn: `arn:aws:dynamodb:us-east-1:123456789012:table/${table}`,
      exportTime: opts.exportTime ?? '2026-11-03T00:00:00Z', itemCount: lines.length, outputFormat: 'DYNAMODB_JSON', exportType: opts.exportType ?? 'FULL_EXPORT', manifestFilesS3Key: `AWSDynamoDB/${id}/manifest-files.json`,
    }));
    return lines.length;
  }

  const root = (): string => {
    const r = tempDir();
    roots.push(r);
    return r;
  };

  it('rolls up the first of a month exactly from both sources, the neighbouring table included', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    const summary = await runDay(dirConfig(r, { PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}' }), { day: DAY, log: memoryLog(), now: new Date('2026-11-02T04:00:00Z') });
    expect(summary.scanned.map((s) => s.table)).toEqual(['pings_2026_10', 'pings_2026_11']);
    const want = expectedDay([...sample.truth, ...truth], DAY);
    const got = await readDay(join(r, 'out'), DAY);
    expect(got.audit).toEqual(want.audit);
    expect(got.episodes).toEqual(want.episodes);
    expect(got.series).toEqual(want.series);
    // The fixture covers what it claims: cross-source duplicates, and DynamoDB pings that survive.
    expect(want.audit.find((a) => a.source === 'dynamodb' && a.outcome === 'duplicate')?.records).toBe(150);
    expect(want.episodes.some((e) => e.dynamodb_pings > 0)).toBe(true);
  });

  it('scans a closed table once, a live one every run, and a closed one again on --rescan', async () => {
    const r = root();
    const config = dirConfig(r, { PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}' });
    await writeObjects(join(r, 'logs'), sample.objects.slice(0, 1));
    const live = new Date('2026-11-20T04:00:00Z'); // October closed, November live
    const first = await runDay(config, { day: DAY, log: memoryLog(), now: live });
    expect(first.scanned.map((s) => s.table)).toEqual(['pings_2026_10', 'pings_2026_11']);
    expect(first.scanned[0]!.consumedCapacity).toBeGreaterThan(0);
    const second = await runDay(config, { day: DAY, log: memoryLog(), now: live });
    expect(second.scanned.map((s) => s.table)).toEqual(['pings_2026_11']);
    const got = await readDay(join(r, 'out'), DAY);
    // A re-scan replaces the live table's last scan: nothing is counted twice.
    expect(got.audit).toEqual(expectedDay([...sample.objects[0]!.truth, ...truth], DAY).audit);
    const closedLater = new Date('2026-12-05T04:00:00Z');
    const third = await runDay(config, { day: DAY, log: memoryLog(), now: closedLater });
    expect(third.scanned.map((s) => s.table)).toEqual(['pings_2026_11']); // scanned once more, now that it is closed
    const fourth = await runDay(config, { day: DAY, log: memoryLog(), now: closedLater });
    expect(fourth.scanned).toEqual([]);
    const fifth = await runDay(config, { day: DAY, log: memoryLog(), now: closedLater, rescan: true });
    expect(fifth.scanned.map((s) => s.table)).toEqual(['pings_2026_10', 'pings_2026_11']);
  });

  it('counts a ping resent a day later through the legacy table once, on the day it was first sent (contract §4: the ping-id window)', async () => {
    const r = root();
    const config = dirConfig(r, { PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}' });
    await writeObjects(join(r, 'logs'), sample.objects);
    const s = await runDays(config, { from: '2026-10-30', to: '2026-11-02', log: memoryLog(), now: new Date('2026-12-05T04:00:00Z') });
    expect(s.failed).toEqual([]);
    const all = [...sample.truth, ...truth];
    for (const day of ['2026-10-31', DAY, '2026-11-02']) expect(await readDay(join(r, 'out'), day), day).toEqual(expectedDay(all, day, 30));
    // The items resent are November 2's repeats (as the oracle counts them: not vacuous).
    const audit = (await readDay(join(r, 'out'), '2026-11-02')).audit as Array<{ outcome: string; source: string; records: number }>;
    expect(audit.find((a) => a.outcome === 'repeat' && a.source === 'dynamodb')!.records).toBeGreaterThan(25);
  });

  it('backfills across a month boundary: scans each table once, survives a failed day, resumes, then skips', async () => {
    const r = root();
    // The day fails at every read of its manifest; with the ping-id window the days around it read it
    // too (and would fail with it): the window is off here (test/jobs/ping-window.test.ts has it).
    const config = dirConfig(r, { PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}', PINGROLL_DEDUPE_DAYS: '0' });
    await writeObjects(join(r, 'logs'), sample.objects);
    const now = new Date('2026-12-05T04:00:00Z');
    // The day's run is interrupted where it starts, at the read of its manifest.
    const interrupted = await runDays(config, { from: '2026-10-30', to: '2026-11-02', log: memoryLog(), now },
      (b) => ({ ...b, store: crashingStore(b.store, (op, key) => op === 'get' && key === dayManifestKey(DAY), 'interrupted') }));
    expect(interrupted.scanned.map((t) => t.table).sort()).toEqual(['pings_2026_10', 'pings_2026_11']);
    expect(interrupted.done).toEqual(['2026-10-30', '2026-10-31', '2026-11-02']);
    expect(interrupted.failed).toEqual([{ day: DAY, error: 'interrupted' }]);
    expect(interrupted.consumedCapacity).toBeGreaterThan(0);

    const resumed = await runDays(config, { from: '2026-10-30', to: '2026-11-02', log: memoryLog(), now });
    expect(resumed).toMatchObject({ done: [DAY], skipped: ['2026-10-30', '2026-10-31', '2026-11-02'], failed: [], parsedObjects: 0, scanned: [] });
    const all = [...sample.truth, ...truth];
    for (const day of ['2026-10-31', DAY, '2026-11-02']) expect(await readDay(join(r, 'out'), day), day).toEqual(expectedDay(all, day));

    const again = await runDays(config, { from: '2026-10-30', to: '2026-11-02', log: memoryLog(), now });
    expect(again.skipped).toHaveLength(4);
    const forced = await runDays(config, { from: '2026-10-30', to: '2026-11-02', log: memoryLog(), now, force: true });
    expect(forced.done).toHaveLength(4);
  });

  it('reads a closed table from its export instead of scanning it: zero read capacity, same rollup', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    const october = await writeExport(join(r, 'exports'), 'pings_2026_10');
    const log = memoryLog();
    const summary = await runDay(dirConfig(r, { PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}', PINGROLL_DDB_EXPORTS: join(r, 'exports') }),
      { day: DAY, log, now: new Date('2026-12-05T04:00:00Z') });
    expect(summary.scanned).toEqual([
      { table: 'pings_2026_10', items: october, consumedCapacity: 0, throttledRetries: 0 },
      expect.objectContaining({ table: 'pings_2026_11', consumedCapacity: expect.any(Number) }),
    ]);
    expect(log.events.find((e) => e.event === 'table.export')?.fields).toMatchObject({ table: 'pings_2026_10', files: 2 });
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay([...sample.truth, ...truth], DAY));
  });

  it('divides the tables among the shards of a sharded ingest: each reads its share of segments or export files, the day is exact; with a new shard count the last complete reading counts until the new one is whole', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    await writeExport(join(r, 'exports'), 'pings_2026_10'); // two data files
    const config = dirConfig(r, { PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}', PINGROLL_DDB_EXPORTS: join(r, 'exports') });
    const now = new Date('2026-11-20T04:00:00Z'); // October closed (read from its export), November live (scanned)
    const shardRun = (index: number, count: number, log = memoryLog()) =>
      onBackends(config, log, (b) => b, (b) => runIngestJob(config, b, { log, shard: { index, count }, days: [DAY], now })).then((s) => ({ ...s, log }));
    const rollup = () => runDay(config, { day: DAY, log: memoryLog(), now, noIngest: true });
    const want = expectedDay([...sample.truth, ...truth], DAY);
    const reads = async (table: string) => {
      const store = new DirectoryObjectStore(join(r, 'out'));
      const out = [];
      for (const key of await store.list(`_state/scans/${table}/`)) out.push(JSON.parse((await store.get(key))!.toString()) as TableScanCommit);
      return out;
    };

    const three = await Promise.all([0, 1, 2].map((i) => shardRun(i, 3)));
    // November: max(4 segments, 3 shards) = 4 segments, shard 0 two of them; October: two files, shard 2 none.
    expect(three.map((s) => s.log.events.filter((e) => e.event === 'table.scan').map((e) => e.fields.reading))).toEqual([[[0, 3]], [[1]], [[2]]]);
    expect(three.map((s) => s.log.events.filter((e) => e.event === 'table.export').map((e) => e.fields.reading))).toEqual([[[0]], [[1]], []]);
    expect((await reads('pings_2026_11')).map((c) => c.part).sort((a, b) => a!.parts[0]! - b!.parts[0]!)).toEqual([{ of: 4, parts: [0, 3] }, { of: 4, parts: [1] }, { of: 4, parts: [2] }]);
    expect(three.flatMap((s) => s.scanned).filter((t) => t.table === 'pings_2026_10').reduce((n, t) => n + t.items, 0)).toBe(items.filter((i) => i.table === 'pings_2026_10').length);
    expect(three.flatMap((s) => s.scanned).filter((t) => t.table === 'pings_2026_11').reduce((n, t) => n + t.items, 0)).toBe(items.filter((i) => i.table === 'pings_2026_11').length);
    await rollup();
    expect(await readDay(join(r, 'out'), DAY)).toEqual(want);

    // Two shards now: November is still read in four segments, shard 0 of 2 reads segments 0 and 2.
    // With the reads of 3 shards that overlaps segment 0 (counted twice), so the reading of the three
    // stays the one that counts until shard 1 of 2 has read 1 and 3; then the older reads go.
    const byFirst = (a?: TablePart, b?: TablePart): number => JSON.stringify(a!.parts).localeCompare(JSON.stringify(b!.parts));
    await shardRun(0, 2);
    expect((await reads('pings_2026_11')).map((c) => c.part).sort(byFirst)).toEqual([{ of: 4, parts: [0, 2] }, { of: 4, parts: [0, 3] }, { of: 4, parts: [1] }, { of: 4, parts: [2] }]);
    await rollup();
    expect(await readDay(join(r, 'out'), DAY)).toEqual(want);
    await shardRun(1, 2);
    expect((await reads('pings_2026_11')).map((c) => c.part).sort(byFirst)).toEqual([{ of: 4, parts: [0, 2] }, { of: 4, parts: [1, 3] }]);
    await rollup();
    expect(await readDay(join(r, 'out'), DAY)).toEqual(want);
    // Five shards read November in five segments, a new division: while one of them has not run (or
    // failed), the reading in four stays the one that counts; running it completes the new one.
    await Promise.all([0, 1, 2, 3].map((i) => shardRun(i, 5)));
    expect((await reads('pings_2026_11')).length).toBe(6);
    await rollup();
    expect(await readDay(join(r, 'out'), DAY)).toEqual(want);
    await shardRun(4, 5);
    expect((await reads('pings_2026_11')).map((c) => c.part).sort(byFirst)).toEqual([0, 1, 2, 3, 4].map((i) => ({ of: 5, parts: [i] })));
    // October is closed and each of its files was read after it closed: not read again.
    expect((await reads('pings_2026_10')).length).toBe(2);
    await rollup();
    expect(await readDay(join(r, 'out'), DAY)).toEqual(want);
    // One process after them reads each table whole, which replaces the parts.
    await runDay(config, { day: DAY, log: memoryLog(), now, rescan: true });
    expect((await reads('pings_2026_11')).map((c) => c.part)).toEqual([undefined]);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(want);
  });

  it('reads the tables that can hold yesterday in shards given no day (the night\'s clock), and each day of a range given as --date D1,D2 (issue #53)', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    const config = dirConfig(r, { PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}' });
    const nightAfter = new Date('2026-11-02T02:30:00Z');
    const tablesRead = (s: { scanned: Array<{ table: string }> }) => s.scanned.map((t) => t.table).sort();
    // The nightly shards: no day given; their clock's yesterday is DAY, whose records October's table can hold too.
    const night = await Promise.all([0, 1].map((index) => onBackends(config, memoryLog(), (b) => b, (b) => runIngestJob(config, b, { log: memoryLog(), shard: { index, count: 2 }, now: nightAfter }))));
    expect(night.map(tablesRead)).toEqual([['pings_2026_10', 'pings_2026_11'], ['pings_2026_10', 'pings_2026_11']]);
    await runDay(config, { day: DAY, log: memoryLog(), now: nightAfter, noIngest: true });
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay([...sample.truth, ...truth], DAY));
    // A range, on an output of its own: the tables of every day asked, each once.
    const r2 = root();
    await writeObjects(join(r2, 'logs'), sample.objects);
    const other = dirConfig(r2, { PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}' });
    const range = await onBackends(other, memoryLog(), (b) => b, (b) => runIngestJob(other, b, { log: memoryLog(), shard: null, days: ['2026-10-31', DAY, '2026-11-02'], now: new Date('2026-11-04T02:30:00Z') }));
    expect(tablesRead(range)).toEqual(['pings_2026_10', 'pings_2026_11']);
  });

  it('reports a missing table and goes on; the day is incomplete, and says why', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects.slice(0, 1));
    const config = dirConfig(r, { PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}' });
    const summary = await runDay(config, { day: '2026-11-30', log: memoryLog(), now: new Date('2026-12-01T04:00:00Z') });
    expect(summary.missingTables).toEqual(['pings_2026_12']);
    const { statusCommand } = await import('../../../cli/commands/status.js');
    const { text, verdict } = await statusCommand(config, { from: '2026-11-30', to: '2026-11-30', json: true }, new Date('2026-12-05T00:00:00Z'));
    expect(verdict).toBe('attention');
    expect(JSON.parse(text)).toMatchObject({ day: '2026-11-30', state: 'incomplete', reason: 'the table pings_2026_12 that should hold it did not exist' });
  });

  it('completes a scan exactly through throttling the SDK gave up on', async () => {
    const client = ddb.client();
    const real = client.send.bind(client);
    let throttles = 5;
    client.send = ((cmd: unknown) => (cmd instanceof ScanCommand && throttles-- > 0
      ? Promise.reject(Object.assign(new Error('Rate exceeded'), { name: 'ProvisionedThroughputExceededException' }))
      : real(cmd as never))) as typeof client.send;
    const seen: string[] = [];
    const waits: number[] = [];
    const result = await scanTable({
      client, table: 'pings_2026_11', segments: 3, onItems: (xs) => seen.push(...xs.map((x) => `${x.ts_shard!.S}|${x.session_id!.S}`)),
      backoff: { baseMs: 1, capMs: 5 }, onThrottle: (_s, _a, w) => waits.push(w),
    });
    const want = items.filter((i) => i.table === 'pings_2026_11').map((i) => `${i.item.ts_shard!.S}|${i.item.session_id!.S}`);
    expect(seen.sort()).toEqual(want.sort());
    expect(result.throttledRetries).toBe(5);
    expect(waits).toHaveLength(5);
    expect(waits.filter((w) => !(w >= 0 && w <= 5))).toEqual([]);
  });

  it('keeps within a read budget: capacity consumed never runs ahead of the rate', async () => {
    // A simulated clock: sleeping advances it, so the test takes no real time.
    let now = 0;
    const clock = { now: () => now, sleep: async (ms: number) => { now += ms; } };
    const result = await scanTable({
      client: ddb.client(), table: 'pings_2026_11', segments: 1, maxRcu: 2, pageLimit: 20, clock, onItems: () => {},
    });
    expect(result.pages).toBeGreaterThan(5);
    expect(result.consumedCapacity).toBeGreaterThan(4);
    // The bucket starts with 2 units and earns 2 a second; a page is charged after it is read, so at
    // most one page's worth (under 1 unit at 20 items) can run ahead.
    expect(result.consumedCapacity - 2 - (2 * now) / 1000).toBeLessThan(1);
    expect(now).toBeGreaterThan(0);
  });

  // The lifecycle tests work on tables of their own (life_*, old_*), so that deleting one takes nothing from another test.
  it('plans, rotates and retires the monthly tables, deleting only what a completed export holds', async () => {
    const { planTables, rotateTables, retireTables } = await import('../../../infra/tables/table-lifecycle.js');
    const { DirectoryObjectSource } = await import('../../../ingest/object-source/directory-object-source.js');
    const { ExportCatalog } = await import('../../../ingest/dynamodb/table-export.js');
    const client = ddb.client();
    for (const t of ['life_2026_10', 'life_2026_11']) await ddb.createPingTable(t);
    const november = new Date('2026-11-20T04:00:00Z');
    const plan = await planTables(client, 'life_{yyyy}_{mm}', null, november);
    expect(plan.tables.map((t) => [t.table, t.state, t.billingMode])).toEqual([['life_2026_10', 'closed', 'PAY_PER_REQUEST'], ['life_2026_11', 'live', 'PAY_PER_REQUEST']]);
    expect(plan.missingNextMonth).toBe('life_2026_12');

    expect(await rotateTables(client, 'life_{yyyy}_{mm}', { now: november })).toEqual({ table: 'life_2026_12', created: true });
    expect(await rotateTables(client, 'life_{yyyy}_{mm}', { now: november })).toEqual({ table: 'life_2026_12', created: false });
    const after = await planTables(client, 'life_{yyyy}_{mm}', null, november);
    expect(after.tables.find((t) => t.table === 'life_2026_12')).toMatchObject({ state: 'future', status: 'ACTIVE' });
    expect(after.missingNextMonth).toBeNull();

    const r = root();
    await writeExport(join(r, 'exports'), 'life_2026_10');
    const exports = await ExportCatalog.load(new DirectoryObjectSource(join(r, 'exports')));
    const december = new Date('2026-12-05T04:00:00Z');
    const dry = await retireTables(client, 'life_{yyyy}_{mm}', '2026-12', exports, { now: december });
    expect(dry.map((s) => [s.table, s.action, s.done])).toEqual([['life_2026_10', 'delete', false], ['life_2026_11', 'export first', false]]);
    expect((await planTables(client, 'life_{yyyy}_{mm}', exports, december)).tables[0]).toMatchObject({ table: 'life_2026_10', state: 'exported' });
    const applied = await retireTables(client, 'life_{yyyy}_{mm}', '2026-12', exports, { now: december, apply: true });
    expect(applied.map((s) => [s.table, s.done])).toEqual([['life_2026_10', true], ['life_2026_11', false]]);
    expect((await planTables(client, 'life_{yyyy}_{mm}', exports, december)).tables.map((t) => t.table)).toEqual(['life_2026_11', 'life_2026_12']);
  });

  it('retires a table only with a full export taken after the table closed (a day after its month ends)', async () => {
    const { retireTables } = await import('../../../infra/tables/table-lifecycle.js');
    const { DirectoryObjectSource } = await import('../../../ingest/object-source/directory-object-source.js');
    const { ExportCatalog } = await import('../../../ingest/dynamodb/table-export.js');
    const client = ddb.client();
    await ddb.createPingTable('old_2026_10');
    const retire = async (exportOpts: Parameters<typeof writeExport>[2]) => {
      const r = root();
      await writeExport(join(r, 'exports'), 'old_2026_10', exportOpts);
      const exports = await ExportCatalog.load(new DirectoryObjectSource(join(r, 'exports')));
      return (await retireTables(client, 'old_{yyyy}_{mm}', '2026-11', exports, { now: new Date('2026-12-05T04:00:00Z'), apply: true }))
        .map((s) => [s.table, s.action, s.done]);
    };
    // After the month ended but within its day of grace: late writers could still add items.
    expect(await retire({ exportTime: '2026-11-01T12:00:00Z' })).toEqual([['old_2026_10', 'export first', false]]);
    // An incremental export holds only changes, not the table.
    expect(await retire({ exportTime: '2026-11-03T00:00:00Z', exportType: 'INCREMENTAL_EXPORT' })).toEqual([['old_2026_10', 'export first', false]]);
    expect(await retire({ exportTime: '2026-11-02T00:00:00Z' })).toEqual([['old_2026_10', 'delete', true]]);
  });
});
