/**
 * A run's ping-ids state (state/ping-ids.ts) asks the store about each file once: what it found is
 * kept for the run, and dropped for each file the run itself puts or deletes (its days' ping ids,
 * their keys, adjustments' ids, retention's expiry). A stale answer here would count a resent ping
 * twice, or read ping ids that are gone.
 */
import { writeFile } from 'node:fs/promises';
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
    expect(await ids.localKeys(key, r)).toBe(inner.localFile(keysKeyOf(key)));
    expect(await ids.localKeys(key, r)).toBe(inner.localFile(keysKeyOf(key)));
    expect(asked.filter((a) => a.startsWith('size '))).toEqual([`size ${key}`, `size ${keysKeyOf(key)}`]);

    // The day published again with other ids: the run's delete of these is seen.
    await ids.keepOnly(DAY, null);
    expect(await ids.kept(key)).toBe(false);
    expect(await ids.localKeys(key, r)).toBeNull();

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
});
