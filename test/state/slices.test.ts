/**
 * A key's slice (state/slices.ts), worked out anew for every key here: sliceOf keeps the last dated
 * name's slice for the keys after it, and must give what a fresh reading of each name gives, whatever
 * came before it.
 */
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { EVENT_PARTS, shardOfKey, SLICE_MS, sliceOf } from '../../state/slices.js';

/** The contract's reading of a name, on its own: `YYYY-MM-DD-hh-mm-ss-` starts a dated base name. */
function expected(key: string): { day: string; slice: string; number: number } | 'undated' {
  const base = key.split('/').pop()!;
  const m = /^(\d{4})-(\d{2})-(\d{2})-(\d{2})-(\d)\d-\d{2}-/.exec(base);
  if (!m) return 'undated';
  const number = Math.floor(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]! * 10) / SLICE_MS);
  return { day: `${m[1]}-${m[2]}-${m[3]}`, slice: `${m[4]}-${m[5]}0`, number };
}

describe('sliceOf', () => {
  it('gives each key the slice its own name says, after any other key', () => {
    const keys = [
      '2026-11-01-13-20-05-AAAA', '2026-11-01-13-29-59-BBBB', 'logs/2026-11-01-13-25-00-CCCC',
      // The last slice's first 15 characters, and the rest of no stamp: undated.
      '2026-11-01-13-2x-00-DDDD', '2026-11-01-13-21-0-EEEE', '2026-11-01-13-2',
      '2026-11-01-13-30-00-FFFF', '2026-11-01-13-20-00-GGGG', '2026-11-02-13-20-00-HHHH',
      'notes.txt', '2026-11-02-13-20-00-IIII', 'a/b/2026-11-02-13-21-09-JJJJ', '2026-11-02-13-21-09',
    ];
    const sequences = [keys, [...keys].reverse(), keys.flatMap((k) => [k, 'other.log', k])];
    for (const sequence of sequences) {
      for (const key of sequence) {
        const want = expected(key);
        const got = sliceOf(key);
        if (want === 'undated') {
          expect(got.day, key).toBe('undated');
          expect(got.number, key).toBeNull();
        } else {
          expect({ day: got.day, slice: got.slice, number: got.number }, key).toEqual(want);
        }
      }
    }
  });

  it('hands out slices no caller can change', () => {
    const s = sliceOf('2026-11-01-13-20-05-AAAA');
    expect(() => { (s as { day: string }).day = '1999-01-01'; }).toThrow();
    expect(sliceOf('2026-11-01-13-20-06-BBBB').day).toBe('2026-11-01');
  });
});

describe('sliceOf on an event-time day (PartitionedPrefix by EventTime)', () => {
  const day = '2026-11-01';
  const folder = `logs/123456789012/us-east-1/site/2026/11/01/`;
  // S3 sets every name's time to 00-00-00; its unique part is 16 uppercase hex digits.
  const names = Array.from({ length: 16_384 }, (_, i) => `${folder}${day}-00-00-00-${createHash('sha1').update(`n${i}`).digest('hex').slice(0, 16).toUpperCase()}`);

  it('spreads the day\'s names over 256 parts by the first two digits of their unique part, each keeping the 00:00 slice\'s time', () => {
    const midnight = Date.UTC(2026, 10, 1) / SLICE_MS;
    const parts = new Map<string, number>();
    for (const key of names) {
      const s = sliceOf(key);
      const digits = key.slice(folder.length + 20, folder.length + 22);
      expect(s).toEqual({ day, slice: `00-00-00-${digits}`, number: midnight, part: parseInt(digits, 16) });
      parts.set(s.slice, (parts.get(s.slice) ?? 0) + 1);
    }
    expect(parts.size).toBe(EVENT_PARTS);
    // 16,384 names: 64 a part on average, none more than 1.5 times that.
    expect(Math.max(...parts.values())).toBeLessThanOrEqual(1.5 * names.length / EVENT_PARTS);
  });

  it('leaves every other name in its ten-minute slice: SimplePrefix, a delivery time, another folder\'s date, a unique part of no two uppercase hex digits', () => {
    for (const key of [`logs/${day}-00-00-00-AB12`, `${folder}${day}-00-00-01-AB12`, `${folder}${day}-00-05-00-AB12`,
      `logs/123456789012/us-east-1/site/2026/10/31/${day}-00-00-00-AB12`, `${folder}${day}-00-00-00-ab12`, `${folder}${day}-00-00-00-G1`, `logs/123456789012/us-east-1/site/x2026/11/01/${day}-00-00-00-AB12`]) {
      const want = expected(key);
      expect(want, key).not.toBe('undated');
      expect(sliceOf(key), key).toEqual({ ...(want as object), part: null });
    }
    // A name directly under the prefix's date folder (`YYYY/MM/DD/`, the prefix being the bucket's folder) is one.
    expect(sliceOf(`2026/11/01/${day}-00-00-00-7F00`).slice).toBe('00-00-00-7F');
  });

  it.each([4, 8, 16, 64, 256])('gives %i shards each an equal share of the day, within 1.5x of the mean', (count) => {
    const per = new Array<number>(count).fill(0);
    for (const key of names) per[shardOfKey(key, count)]!++;
    expect(Math.max(...per), `${per}`).toBeLessThanOrEqual(1.5 * names.length / count);
    expect(Math.min(...per), `${per}`).toBeGreaterThanOrEqual(0.5 * names.length / count);
  });
});
