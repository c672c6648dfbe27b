/**
 * The ledger read by day: a day's index is read once a run however often it is asked for, and a
 * batch compacted meanwhile is seen at the next asking.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DAYS, INTENTS, PARSED } from '../../datasets/layout.js';
import { batchKey, Ledger, type BatchCommit } from '../../state/ledger.js';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { crashingStore, rm, tempDir } from '../support/job-fixture.js';
import { LISTER_RULES } from '../../ingest/listing/lister.js';

const dir = tempDir();
afterAll(() => rm(dir, { recursive: true, force: true }));

const DAY = '2026-11-01';
const batch = (id: string, key: string): BatchCommit => ({
  batch: id, committedAt: '2026-11-02T00:00:00Z', objects: [{ key, size: 10, etag: 'e', records: 1 }],
  days: { [DAY]: { pings: [`_staging/${id}/dt=${DAY}/part-0.parquet`], pingCount: 1, rejects: null, outcomes: { s3: { ping: 1 } }, inputs: [0] } },
});

describe('the ledger', () => {
  it('reads a day\'s index once, and again only after a compaction wrote to it', async () => {
    const lists: string[] = [];
    const store = crashingStore(new DirectoryObjectStore(join(dir, 'out')), (op, key) => (op === 'list' && lists.push(key), false));
    const ledger = await Ledger.load(store, LISTER_RULES, { migrate: true });
    await ledger.commit(batch('20261102T000000Z-aaaa', `${DAY}-10-00-00-A`));
    await ledger.compact();
    expect((await ledger.inputsFor(DAY)).map((i) => i.id)).toEqual(['20261102T000000Z-aaaa']);
    const [input] = await ledger.inputsFor(DAY);
    expect((await ledger.objectsOf(input!, DAY)).map((o) => o.key)).toEqual([`${DAY}-10-00-00-A`]);
    expect(lists.filter((k) => k === `${DAYS}dt=${DAY}/`)).toHaveLength(1);

    await ledger.commit(batch('20261102T010000Z-bbbb', `${DAY}-11-00-00-B`));
    await ledger.compact();
    expect((await ledger.inputsFor(DAY)).map((i) => i.id)).toEqual(['20261102T000000Z-aaaa', '20261102T010000Z-bbbb']);
    expect(lists.filter((k) => k === `${DAYS}dt=${DAY}/`)).toHaveLength(2);
    expect(await ledger.hasParsed(`${DAY}-11-00-00-B`)).toBe(true);
    // A fresh load sees the same, from the indexes alone.
    const again = await Ledger.load(new DirectoryObjectStore(join(dir, 'out')), LISTER_RULES);
    expect((await again.inputsFor(DAY)).map((i) => i.id)).toEqual(['20261102T000000Z-aaaa', '20261102T010000Z-bbbb']);
    expect(await again.hasParsed(`${DAY}-10-00-00-A`)).toBe(true);
    expect(await again.hasParsed(`${DAY}-12-00-00-C`)).toBe(false);
  });

  it('lets a shard of a sharded ingest remove only its own dead batches\' staging: the other shards\' may be staging now', async () => {
    const store = new DirectoryObjectStore(join(dir, 'shards'));
    const ledger = await Ledger.load(store, LISTER_RULES, { migrate: true });
    const staged = (id: string): string => `_staging/${id}/dt=${DAY}/part-0.parquet`;
    for (const [id, owner] of [['b-mine', '0-of-2'], ['b-theirs', '1-of-2'], ['b-alone', undefined]] as const) {
      await ledger.intend(id, batchKey(id), owner);
      await store.put(staged(id), Buffer.from('x'));
    }
    expect(await ledger.tidy('0-of-2')).toEqual({ staged: 1, compacted: 0 });
    expect(await store.size(staged('b-mine'))).toBeNull();
    expect(await store.size(staged('b-theirs'))).not.toBeNull();
    expect(await store.size(staged('b-alone'))).not.toBeNull();
    // A run that holds the output alone knows no batch is staging: every dead one goes.
    expect(await (await Ledger.load(store, LISTER_RULES)).tidy()).toEqual({ staged: 2, compacted: 0 });
    expect(await store.list(INTENTS)).toEqual([]);
  });

  it('knows every key it parsed from a fresh load, slice by slice, whatever bytes a key holds; a whole day\'s batch is one file a day', async () => {
    const store = new DirectoryObjectStore(join(dir, 'slices'));
    const ledger = await Ledger.load(store, LISTER_RULES, { migrate: true });
    // Every slice of a day (144 sections), a key of the next day, keys with no time, and odd bytes.
    const keys = Array.from({ length: 144 }, (_, i) => `logs/${DAY}-${String(Math.floor(i / 6)).padStart(2, '0')}-${i % 6}7-09-K${i}`);
    keys.push(`logs/2026-11-02-00-00-01-late`, 'other/no-time-in-name', '%25-starts-with-percent', 'line\nbreak', 'cr\rkey', `${DAY}-23-59-59-last`);
    const objects = keys.map((key) => ({ key, size: 1, etag: 'e', records: 1 }));
    await ledger.commit({ batch: 'b-all', committedAt: '2026-11-02T00:00:00Z', objects, days: {} });
    await ledger.compact();
    const files = await store.list(PARSED);
    expect(files.filter((k) => k.startsWith(`${PARSED}${DAY}/`))).toHaveLength(1);
    expect(files).toHaveLength(3); // 2026-11-01, 2026-11-02, undated
    // Each file's header is read once, however many of its slices are asked for.
    let reads = 0;
    const counted = Object.assign(Object.create(store) as DirectoryObjectStore, { getRange: (key: string, start: number, end: number) => (start === 0 && reads++, store.getRange(key, start, end)) });
    const fresh = await Ledger.load(counted, LISTER_RULES);
    for (const key of keys) expect(await fresh.hasParsed(key), key).toBe(true);
    expect(reads).toBe(3);
    for (const key of [`logs/${DAY}-05-37-09-K0`, 'other/no-time', `${DAY}-23-59-59-lasT`, 'line\nbreaK']) expect(await fresh.hasParsed(key), key).toBe(false);
  });
});
