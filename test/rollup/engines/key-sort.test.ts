/**
 * The day's keys sorted for the window check (rollup/engines/duckdb/key-sort.ts): every entry back
 * once, in ascending batches of at most `max`, with its event time and row, whatever the keys' shape
 * (random, sharing their first bits as time-ordered UUIDs do, sharing all but the last), held or
 * spilled, and no spilled file left behind, when the batches are all read and when they are not.
 */
import { readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KeySort, WORDS } from '../../../rollup/engines/duckdb/key-sort.js';
import { rm, tempDir } from '../../support/job-fixture.js';

const dir = tempDir();
afterAll(async () => { await rm(dir, { recursive: true, force: true }); });

/** xorshift32 from `seed`: the same numbers every run. */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    return x >>> 0;
  };
}

/** `n` entries whose keys have `shape`; entry i's event time is i * 3 and its row i + 2^33 (both past 32 bits where they can be). */
function entries(n: number, shape: 'random' | 'time-ordered' | 'last-word' | 'few-bits', seed: number): Uint32Array {
  const next = random(seed);
  const a = new Uint32Array(n * WORDS);
  for (let i = 0; i < n; i++) {
    const o = i * WORDS;
    const key = shape === 'random' ? [next(), next(), next(), next()]
      // A UUIDv7's first 48 bits are its millisecond: one day's share their first 20 or so.
      : shape === 'time-ordered' ? [0x0192_0000 + (next() & 0xff), next(), next(), next()]
        : shape === 'last-word' ? [0xdeadbeef, 0, 7, next()]
          // Keys that differ in a few bits spread over all four words.
          : [0x80000000 | ((next() & 1) << 3), next() & 0x10, (next() & 3) << 30, next() & 0x0f];
    a.set(key, o);
    const event = i * 3 + 2 ** 40, row = i + 2 ** 33;
    a[o + 4] = event % 2 ** 32; a[o + 5] = Math.floor(event / 2 ** 32);
    a[o + 6] = row % 2 ** 32; a[o + 7] = Math.floor(row / 2 ** 32);
  }
  return a;
}

const keyOf = (a: Uint32Array, i: number, words: number): bigint => {
  let k = 0n;
  for (let w = 0; w < 4; w++) k = (k << 32n) | BigInt(a[i * words + w]!);
  return k;
};

/** Sorts `a` through a KeySort of `max`, added in pieces of `piece`; checks every batch and returns the keys in the order given. */
async function sortAll(a: Uint32Array, max: number, piece: number, spillDir: string): Promise<{ keys: bigint[]; batches: number }> {
  const n = a.length / WORDS;
  const sort = new KeySort(spillDir, max);
  const keys: bigint[] = [];
  let batches = 0, wrong = 0;
  try {
    for (let i = 0; i < n; i += piece) sort.add(a, i, Math.min(piece, n - i));
    for await (const b of sort.batches()) {
      batches++;
      expect(b.n).toBeGreaterThan(0);
      expect(b.n).toBeLessThanOrEqual(max);
      expect(b.keys.buffer).toBeInstanceOf(SharedArrayBuffer);
      for (let j = 0; j < b.n; j++) {
        const k = keyOf(b.keys, j, 4);
        // Each entry's event time and row are its own: i * 3 + 2^40 and i + 2^33.
        const i = Number(b.rowids[j]!) - 2 ** 33;
        if (keyOf(a, i, WORDS) !== k || Number(b.events[j]!) !== i * 3 + 2 ** 40) wrong++;
        keys.push(k);
      }
    }
  } finally {
    sort.close();
  }
  expect(wrong, 'entries whose event time or row is not their key\'s').toBe(0);
  return { keys, batches };
}

describe('the day\'s keys sorted for the window check', () => {
  for (const shape of ['random', 'time-ordered', 'last-word', 'few-bits'] as const) {
    it(`gives back every entry once, ascending, in batches of at most max: ${shape} keys, held and spilled`, async () => {
      const n = 60_000;
      const a = entries(n, shape, 7);
      const want = Array.from({ length: n }, (_, i) => keyOf(a, i, WORDS)).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      for (const max of [n, 5_000, 700]) {
        const spill = join(dir, `${shape}-${max}`);
        await mkdir(spill);
        const got = await sortAll(a, max, 2_048, spill);
        // The first place the keys given differ from the keys sorted (-1: none), the count first.
        expect(got.keys.length).toBe(n);
        expect(got.keys.findIndex((k, i) => k !== want[i])).toBe(-1);
        // Held in memory when the day fits a batch; spilled and read back in several when not.
        if (max === n) expect(got.batches).toBe(1);
        else expect(got.batches).toBeGreaterThanOrEqual(Math.ceil(n / max));
        expect(readdirSync(spill)).toEqual([]);
      }
    });
  }

  it('keeps a batch whole when its arrays grow while it is read (the day spilled at its first entries)', async () => {
    // All at once: past max before anything is held, so a batch's arrays grow from nothing as its ranges are read.
    const n = 60_000;
    const a = entries(n, 'random', 11);
    const spill = join(dir, 'grown');
    await mkdir(spill);
    const got = await sortAll(a, 20_000, n, spill);
    expect(got.keys.length).toBe(n);
    expect(got.keys.findIndex((k, i) => i > 0 && k < got.keys[i - 1]!)).toBe(-1);
    expect(got.batches).toBeGreaterThanOrEqual(3);
  });

  it('removes what it spilled when its batches are not all read (a check that failed)', async () => {
    const spill = join(dir, 'early');
    await mkdir(spill);
    const sort = new KeySort(spill, 1_000);
    sort.add(entries(20_000, 'time-ordered', 3), 0, 20_000);
    for await (const b of sort.batches()) {
      expect(b.n).toBeGreaterThan(0);
      expect(readdirSync(spill).length).toBeGreaterThan(0);
      break;
    }
    sort.close();
    expect(readdirSync(spill)).toEqual([]);
  });

  it('gives nothing for no entries', async () => {
    const sort = new KeySort(dir, 10);
    const batches = [];
    for await (const b of sort.batches()) batches.push(b.n);
    expect(batches).toEqual([]);
  });
});
