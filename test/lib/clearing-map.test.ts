/** The caches' bound (lib/clearing-map.ts): every entry kept up to the limit, all forgotten past it. */
import { describe, expect, it } from 'vitest';
import { ClearingMap, keptUntilFailed } from '../../lib/clearing-map.js';

describe('ClearingMap', () => {
  it('keeps every entry up to its limit, and forgets them all when one more comes', () => {
    const m = new ClearingMap<string, number>(3);
    for (const [k, v] of [['a', 1], ['b', 2], ['c', 3]] as const) m.set(k, v);
    expect([m.get('a'), m.get('b'), m.get('c')]).toEqual([1, 2, 3]);
    m.set('d', 4);
    expect([m.get('a'), m.get('b'), m.get('c'), m.get('d')]).toEqual([undefined, undefined, undefined, 4]);
  });

  it('forgets one entry, those a test picks, or all', () => {
    const m = new ClearingMap<string, number>(10);
    for (const [k, v] of [['a/1', 1], ['a/2', 2], ['b/1', 3], ['c', 4]] as const) m.set(k, v);
    m.delete('c');
    m.clear((k) => k.startsWith('a/'));
    expect([m.get('a/1'), m.get('a/2'), m.get('b/1'), m.get('c')]).toEqual([undefined, undefined, 3, undefined]);
    m.clear();
    expect(m.get('b/1')).toBeUndefined();
  });

  it('keeps a started promise until it fails: asks share it, and the ask after a failure starts again', async () => {
    const kept = new Map<string, Promise<number>>();
    let starts = 0, fail = true;
    const start = (): Promise<number> => { starts++; return fail ? Promise.reject(new Error('no')) : Promise.resolve(starts); };
    const [a, b] = [keptUntilFailed(kept, 'k', start), keptUntilFailed(kept, 'k', start)];
    expect(a).toBe(b);
    await expect(a).rejects.toThrow('no');
    fail = false;
    expect(await keptUntilFailed(kept, 'k', start)).toBe(2);
    expect(await keptUntilFailed(kept, 'k', start)).toBe(2);
    expect(starts).toBe(2);
  });
});
