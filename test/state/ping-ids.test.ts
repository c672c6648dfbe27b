/**
 * A run's ping-ids state (state/ping-ids.ts) asks the store about each file once: what it found is
 * kept for the run, and dropped for each file the run itself puts or deletes (its days' ping ids,
 * their keys, adjustments' ids, retention's expiry). A stale answer here would count a resent ping
 * twice, or read ping ids that are gone. From a store that is not on this machine (S3), each keys
 * file is fetched once a run, and the keys the run puts are not fetched at all.
 */
import { existsSync, readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { keysKeyOf, PingIds } from '../../state/ping-ids.js';
import { tempRoots } from '../support/job-fixture.js';

const root = tempRoots();
const DAY = '2026-11-01';

describe("a run's ping ids", () => {
  it('are asked about once each, and seen again as the run puts and deletes them', async () => {
    const r = root();
    const inner = new DirectoryObjectStore(join(r, 'out'));
    const asked: string[] = [];
    const store = Object.assign(Object.create(inner) as ObjectStore, {
      size: (key: string) => { asked.push(`size ${key}`); return inner.size(key); },
      list: (prefix: string) => { asked.push(`list ${prefix}`); return inner.list(prefix); },
    });
    const ids = new PingIds(store);
    const file = async (name: string, body: string): Promise<string> => {
      const f = join(r, name);
      await writeFile(f, body);
      return f;
    };

    // A day's ping ids and their keys, put by the run: found, each asked about once.
    const key = await ids.save(DAY, 'run-1', await file('ids.parquet', 'ids'), await file('ids.keys', 'keys'));
    expect(await ids.kept(key)).toBe(true);
    expect(await ids.kept(key)).toBe(true);
    expect((await ids.local(key, r)).size).toBe(3);
    expect(await ids.localKeys(key)).toBe(inner.localFile(keysKeyOf(key)));
    expect(await ids.localKeys(key)).toBe(inner.localFile(keysKeyOf(key)));
    expect(asked.filter((a) => a.startsWith('size '))).toEqual([`size ${key}`, `size ${keysKeyOf(key)}`]);

    // The day published again with other ids: the run's delete of these is seen.
    await ids.keepOnly(DAY, null);
    expect(await ids.kept(key)).toBe(false);
    expect(await ids.localKeys(key)).toBeNull();

    // Adjustments' ids: listed once, and again once the run puts or clears them.
    const p = { reported: '2026-12', month: '2026-11', tz: 'UTC', day: DAY };
    expect(await ids.adjusted(DAY)).toEqual([]);
    await ids.saveAdjusted(p, await file('adjusted.parquet', 'adjusted'));
    const adjusted = await ids.adjusted(DAY);
    expect(adjusted).toHaveLength(1);
    expect(adjusted[0]!.bytes).toBe(8);
    // What a caller does to the list it was given is not what the next reads.
    adjusted.pop();
    expect(await ids.adjusted(DAY)).toHaveLength(1);
    expect(asked.filter((a) => a.startsWith('list ') && a.includes('adjusted/'))).toHaveLength(2);
    await ids.clearAdjusted(p.reported, p.month, p.tz);
    expect(await ids.adjusted(DAY)).toEqual([]);
    await ids.saveAdjusted(p, await file('adjusted.parquet', 'adjusted again'));
    expect((await ids.adjusted(DAY))[0]!.bytes).toBe(14);

    // Retention's expiry of the day: its ids and its adjustments' are gone for the run.
    const again = await ids.save(DAY, 'run-2', await file('ids.parquet', 'ids'), null);
    expect(await ids.kept(again)).toBe(true);
    expect(await ids.expire(DAY)).toBe(2);
    expect(await ids.kept(again)).toBe(false);
    expect(await ids.adjusted(DAY)).toEqual([]);
  });

  it('from a store elsewhere, fetch each keys file once a run, the run\'s own not at all, and drop those a day cannot read', async () => {
    const r = root();
    const inner = new DirectoryObjectStore(join(r, 'out'));
    const fetched: string[] = [];
    // The store as S3 is: nothing read in place, each file downloaded.
    const store = Object.assign(Object.create(inner) as ObjectStore, {
      localFile: () => null,
      download: (key: string, file: string) => { fetched.push(key); return inner.download(key, file); },
    });
    const file = async (name: string, body: string): Promise<string> => {
      const f = join(r, name);
      await writeFile(f, body);
      return f;
    };
    // Days another run published: their keys fetched once however often asked, into the run's folder.
    const before = new PingIds(inner);
    const oct = await before.save('2026-10-20', 'run-0', await file('a.parquet', 'a'), await file('a.keys', 'keys of 10-20'));
    const nov = await before.save('2026-11-01', 'run-0', await file('b.parquet', 'b'), await file('b.keys', 'keys of 11-01'));
    const folder = join(r, 'work', 'ping-ids');
    const ids = new PingIds(store, folder);
    const first = await ids.localKeys(nov);
    expect(await ids.localKeys(nov)).toBe(first);
    expect(first!.startsWith(folder)).toBe(true);
    expect(await readFile(first!, 'utf8')).toBe('keys of 11-01');
    expect(await readFile((await ids.localKeys(oct))!, 'utf8')).toBe('keys of 10-20');
    expect(fetched).toEqual([keysKeyOf(nov), keysKeyOf(oct)]);
    expect(ids.fetches).toEqual({ files: 2, bytes: 'keys of 11-01'.length + 'keys of 10-20'.length });

    // The keys of a day the run rolls up: put, and read where the run made them, with no fetch.
    const mine = await ids.save('2026-11-02', 'run-1', await file('c.parquet', 'c'), await file('c.keys', 'keys of 11-02'));
    expect(await readFile((await ids.localKeys(mine))!, 'utf8')).toBe('keys of 11-02');
    expect(await inner.get(keysKeyOf(mine))).toEqual(Buffer.from('keys of 11-02'));
    expect(fetched).toHaveLength(2);

    // A day more than W after 10-20: its keys file goes from the folder, and is fetched again if asked.
    await ids.near('2026-11-20', 30);
    expect(existsSync(first!)).toBe(true);
    expect(readdirSync(folder).sort()).toEqual([keysKeyOf(nov), keysKeyOf(mine)].map((k) => k.slice('_state/ping-ids/'.length).replace(/\//g, '_')).sort());
    await ids.localKeys(oct);
    expect(fetched).toEqual([keysKeyOf(nov), keysKeyOf(oct), keysKeyOf(oct)]);

    // The day published again: its earlier keys go from the store and from the folder.
    await ids.keepOnly('2026-11-01', null);
    expect(await ids.localKeys(nov)).toBeNull();
    expect(existsSync(first!)).toBe(false);

    // A fetch that failed is asked again.
    const broken = await before.save('2026-11-03', 'run-0', await file('d.parquet', 'd'), await file('d.keys', 'keys of 11-03'));
    let fail = true;
    const flaky = new PingIds(Object.assign(Object.create(store) as ObjectStore, {
      download: (key: string, to: string) => (fail ? Promise.reject(new Error('reset')) : store.download(key, to)),
    }), folder);
    await expect(flaky.localKeys(broken)).rejects.toThrow('reset');
    fail = false;
    expect(await readFile((await flaky.localKeys(broken))!, 'utf8')).toBe('keys of 11-03');
  });
});
