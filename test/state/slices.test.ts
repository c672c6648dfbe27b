/**
 * A key's slice (state/slices.ts), worked out anew for every key here: sliceOf keeps the last dated
 * name's slice for the keys after it, and must give what a fresh reading of each name gives, whatever
 * came before it.
 */
import { describe, expect, it } from 'vitest';
import { SLICE_MS, sliceOf } from '../../state/slices.js';

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
