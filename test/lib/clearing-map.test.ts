/** The caches' bound (lib/clearing-map.ts): every entry kept up to the limit, all forgotten past it. */
import { describe, expect, it } from 'vitest';
import { ClearingMap } from '../../lib/clearing-map.js';

describe('ClearingMap', () => {
  it('keeps every entry up to its limit, and forgets them all when one more comes', () => {
    const m = new ClearingMap<string, number>(3);
    for (const [k, v] of [['a', 1], ['b', 2], ['c', 3]] as const) m.set(k, v);
    expect([m.get('a'), m.get('b'), m.get('c')]).toEqual([1, 2, 3]);
    m.set('d', 4);
    expect([m.get('a'), m.get('b'), m.get('c'), m.get('d')]).toEqual([undefined, undefined, undefined, 4]);
  });
});
