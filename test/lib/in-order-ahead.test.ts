import { describe, expect, it } from 'vitest';
import { inOrderAhead } from '../../lib/in-order-ahead.js';

/** Parts that note each step they take (`start`, each item made, `end`, `closed`), each item after a turn of the event loop, as a page's round trip. */
function parts(sizes: number[], events: string[], fail: number | null = null): Array<() => AsyncIterable<string>> {
  return sizes.map((n, p) => async function* () {
    events.push(`start ${p}`);
    try {
      for (let i = 0; i < n; i++) {
        await new Promise((r) => setImmediate(r));
        if (p === fail) throw new Error(`part ${p} failed`);
        events.push(`made ${p}.${i}`);
        yield `${p}.${i}`;
      }
      events.push(`end ${p}`);
    } finally {
      events.push(`closed ${p}`);
    }
  });
}

async function take<T>(items: AsyncIterable<T>, events: string[], most = Infinity): Promise<T[]> {
  const out: T[] = [];
  for await (const x of items) {
    events.push(`took ${String(x)}`);
    out.push(x);
    if (out.length >= most) break;
  }
  return out;
}

describe('inOrderAhead', () => {
  it('gives every part\'s items in the parts\' order, as one after another would', async () => {
    const sizes = [3, 0, 1, 4, 2];
    const events: string[] = [];
    const want = sizes.flatMap((n, p) => Array.from({ length: n }, (_, i) => `${p}.${i}`));
    for (const ahead of [1, 2, 3, 10]) expect(await take(inOrderAhead(parts(sizes, events), ahead), events), `ahead ${ahead}`).toEqual(want);
  });

  it('starts the next parts while one is read, each of them to its first item only, and at most `ahead` parts at once', async () => {
    const events: string[] = [];
    await take(inOrderAhead(parts([2, 2, 2, 2], events), 3), events);
    const at = (e: string): number => events.indexOf(e);
    // Parts 1 and 2 are started before part 0's first item is taken; part 3 only once part 0 has ended.
    expect(at('start 1')).toBeLessThan(at('took 0.0'));
    expect(at('start 2')).toBeLessThan(at('took 0.0'));
    expect(at('start 3')).toBeGreaterThan(at('end 0'));
    // A part started ahead makes its first item and waits: its second only once its turn has come.
    expect(at('made 1.0')).toBeLessThan(at('took 0.1'));
    expect(at('made 1.1')).toBeGreaterThan(at('took 1.0'));
    expect(at('made 2.1')).toBeGreaterThan(at('took 2.0'));
  });

  it('with ahead 1, one part after another: none starts before the one before it ended', async () => {
    const events: string[] = [];
    await take(inOrderAhead(parts([2, 2, 2], events), 1), events);
    expect(events.indexOf('start 1')).toBeGreaterThan(events.indexOf('end 0'));
    expect(events.indexOf('start 2')).toBeGreaterThan(events.indexOf('end 1'));
  });

  it('throws a part\'s failure at its turn, after the items of the parts before it, and closes what it started ahead', async () => {
    const events: string[] = [];
    const got: string[] = [];
    await expect((async () => {
      for await (const x of inOrderAhead(parts([2, 1, 2, 2], events, 1), 3)) got.push(x);
    })()).rejects.toThrow('part 1 failed');
    // Part 1 failed while part 0 was read: its failure came after part 0's items, not before.
    expect(got).toEqual(['0.0', '0.1']);
    // Parts 2 and 3, started ahead (part 3 at part 1's turn), were closed at their first items.
    for (const p of [2, 3]) expect(events, `part ${p}`).toContain(`closed ${p}`);
    expect(events).not.toContain('made 2.1');
    expect(events).not.toContain('made 3.1');
  });

  it('when the caller stops early, closes the part it reads and the parts started ahead', async () => {
    const events: string[] = [];
    expect(await take(inOrderAhead(parts([3, 3, 3], events), 3), events, 2)).toEqual(['0.0', '0.1']);
    for (const p of [0, 1, 2]) expect(events, `part ${p}`).toContain(`closed ${p}`);
    expect(events.filter((e) => e.startsWith('made 1.') || e.startsWith('made 2.'))).toEqual(['made 1.0', 'made 2.0']);
  });
});
