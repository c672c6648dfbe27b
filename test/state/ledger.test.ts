/**
 * The ledger read by day: a day's index is read once a run however often it is asked for, and a
 * batch compacted meanwhile is seen at the next asking.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { batchKey, DAYS, INTENTS, Ledger, type BatchCommit } from '../../state/ledger.js';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { crashingStore, rm, tempDir } from '../helpers/job-fixture.js';

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
    const ledger = await Ledger.load(store, { migrate: true });
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
    const again = await Ledger.load(new DirectoryObjectStore(join(dir, 'out')));
    expect((await again.inputsFor(DAY)).map((i) => i.id)).toEqual(['20261102T000000Z-aaaa', '20261102T010000Z-bbbb']);
    expect(await again.hasParsed(`${DAY}-10-00-00-A`)).toBe(true);
    expect(await again.hasParsed(`${DAY}-12-00-00-C`)).toBe(false);
  });

  it('lets a shard of a sharded ingest remove only its own dead batches\' staging: the other shards\' may be staging now', async () => {
    const store = new DirectoryObjectStore(join(dir, 'shards'));
    const ledger = await Ledger.load(store, { migrate: true });
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
    expect(await (await Ledger.load(store)).tidy()).toEqual({ staged: 2, compacted: 0 });
    expect(await store.list(INTENTS)).toEqual([]);
  });
});
