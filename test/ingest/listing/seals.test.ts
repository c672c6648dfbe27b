/** Seals made many at once: each slice's, the day's seals listed once, a reseal replacing the old name. */
import { describe, expect, it } from 'vitest';
import { DirectoryObjectStore } from '../../../state/object-store/directory-object-store.js';
import { SEALS } from '../../../datasets/layout.js';
import { Seals, SliceTallies, type SliceTally } from '../../../ingest/listing/seals.js';
import { tempRoots } from '../../support/job-fixture.js';

const root = tempRoots();

/** The tallies of `perSlice` objects in each ten-minute slice of a day's first `slices`. */
function dayTallies(day: string, slices: number, perSlice: number, etag = 'e'): SliceTally[] {
  const tallies = new SliceTallies();
  for (let s = 0; s < slices; s++) {
    const hh = String(Math.floor(s / 6)).padStart(2, '0');
    for (let k = 0; k < perSlice; k++) tallies.add(`${day}-${hh}-${s % 6}${k % 10}-00-${String(k).padStart(16, '0')}`, etag);
  }
  return [...tallies.values()];
}

describe('a slice\'s tally', () => {
  const keys = Array.from({ length: 5000 }, (_, i) => `2026-11-01-0${i % 2}-00-00-${String(i).padStart(16, '0')}`);
  const digests = (tallies: SliceTallies): string[] => [...tallies.values()].map((t) => `${t.slice}.${t.count}.${t.digest}`).sort();

  it('is the same whenever its digest is read, and whatever slices came before and after it', () => {
    const sorted = [...keys].sort();
    const read = new SliceTallies();
    sorted.forEach((k, i) => {
      read.add(k, 'e');
      // Read while keys are still coming (each slice's text is past a piece's 64K characters).
      if (i % 777 === 0) for (const t of read.values()) expect(t.digest).toMatch(/^[0-9a-f]{64}$/);
    });
    const unread = new SliceTallies();
    for (const k of sorted) unread.add(k, 'e');
    expect(digests(read)).toEqual(digests(unread));
    expect(digests(unread)).toHaveLength(2);
    // Each slice listed alone.
    const alone = (hour: string): string[] => {
      const tallies = new SliceTallies();
      for (const k of sorted) if (k.startsWith(`2026-11-01-${hour}-`)) tallies.add(k, 'e');
      return digests(tallies);
    };
    expect([...alone('00'), ...alone('01')].sort()).toEqual(digests(unread));
  });

  it('changes with any object\'s key or etag, whatever the count', () => {
    const of = (edit: (k: string) => [string, string]): string[] => {
      const tallies = new SliceTallies();
      for (const k of keys) tallies.add(...edit(k));
      return digests(tallies);
    };
    const base = of((k) => [k, 'e']);
    expect(of((k) => [k, k.endsWith('4321') ? 'f' : 'e'])).not.toEqual(base);
    expect(of((k) => [k.endsWith('4321') ? k.replace('4321', '4322') : k, 'e'])).not.toEqual(base);
    // Where a key ends and its etag begins counts: the same characters, the last of each key moved to its etag.
    expect(of((k) => [k.slice(0, -1), `${k.slice(-1)}e`])).not.toEqual(base);
    expect(of((k) => [k, 'e'])).toEqual(base);
  });
});

describe('sealing many slices at once', () => {
  it('seals every slice, lists each day once, and reseals a changed slice under its new name alone', async () => {
    const store = new DirectoryObjectStore(root());
    const seals = new Seals(store);
    const all = [...dayTallies('2026-11-01', 144, 3), ...dayTallies('2026-11-02', 20, 1)];
    expect(await seals.sealAll(all)).toBe(164);
    // One listing a day, however many of its seals were made at once.
    expect(seals.listings).toBe(2);
    const keys = await store.list(SEALS);
    expect(keys).toHaveLength(164);
    const first = keys.filter((k) => k.startsWith(`${SEALS}2026-11-01/`));
    expect(first).toHaveLength(144);
    expect(first.filter((k) => !/\/\d\d-\d0\.3\.[0-9a-f]{64}$/.test(k))).toEqual([]);

    // Sealed again as they are: nothing new. A fresh Seals (the next run) sees them all as matching.
    expect(await seals.sealAll(all)).toBe(0);
    const next = new Seals(store);
    for (const t of all) expect(await next.matches(t)).toBe(true);

    // Two slices changed (another etag): only they are resealed, each under one name.
    const changed = dayTallies('2026-11-01', 2, 3, 'other');
    expect(await next.sealAll(changed)).toBe(2);
    const after = await store.list(SEALS);
    expect(after).toHaveLength(164);
    for (const t of changed) expect(await new Seals(store).matches(t)).toBe(true);
  });

  it('makes seals as markers, not through the synced put: an empty file at its own name', async () => {
    const inner = new DirectoryObjectStore(root());
    // A store whose every synced put fails: sealing must not need one.
    const store = Object.assign(Object.create(inner) as DirectoryObjectStore, { put: async () => { throw new Error('a synced put'); } });
    const t = dayTallies('2026-11-01', 1, 2)[0]!;
    expect(await new Seals(store).seal(t)).toBe(true);
    const [key] = await inner.list(SEALS);
    expect((await inner.get(key!))!.length).toBe(0);
  });

  it('lets every put end before it throws the first failure', async () => {
    const store = new DirectoryObjectStore(root());
    let puts = 0, inFlight = 0, ended = 0;
    const slow = async (key: string): Promise<void> => {
      const n = ++puts;
      inFlight++;
      // A turn of the event loop: the put stays in flight while others start.
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      ended++;
      if (n === 3) throw new Error('disk full');
      return store.putMarker(key);
    };
    const failing = Object.assign(Object.create(store) as DirectoryObjectStore, { putMarker: slow });
    await expect(new Seals(failing).sealAll(dayTallies('2026-11-01', 40, 1))).rejects.toThrow('disk full');
    expect(inFlight).toBe(0);
    expect(ended).toBe(40);
  });
});
