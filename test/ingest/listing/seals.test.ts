/** Seals made many at once: each slice's, the day's seals listed once, a reseal replacing the old name. */
import { describe, expect, it } from 'vitest';
import { DirectoryObjectStore } from '../../../state/object-store/directory-object-store.js';
import { SEALS } from '../../../datasets/layout.js';
import { Seals, tally, type SliceTally } from '../../../ingest/listing/seals.js';
import { tempRoots } from '../../support/job-fixture.js';

const root = tempRoots();

/** The tallies of `perSlice` objects in each ten-minute slice of a day's first `slices`. */
function dayTallies(day: string, slices: number, perSlice: number, etag = 'e'): SliceTally[] {
  const tallies = new Map<string, SliceTally>();
  for (let s = 0; s < slices; s++) {
    const hh = String(Math.floor(s / 6)).padStart(2, '0');
    for (let k = 0; k < perSlice; k++) tally(tallies, `${day}-${hh}-${s % 6}${k % 10}-00-${String(k).padStart(16, '0')}`, etag);
  }
  return [...tallies.values()];
}

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
