/**
 * A key's slice (ingest/listing/slices.ts), worked out anew for every key here: sliceOf keeps the last dated
 * name's slice for the keys after it, and must give what a fresh reading of each name gives, whatever
 * came before it.
 */
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { EVENT_PARTS, eventPrefix, formerSliceOf, partOf, partRange, partSlice, reachOf, shardOfKey, SLICE_MS, sliceOf } from '../../../ingest/listing/slices.js';

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

  it('leaves every other name in its ten-minute slice: SimplePrefix, a delivery time, another folder\'s date', () => {
    for (const key of [`logs/${day}-00-00-00-AB12`, `${folder}${day}-00-00-01-AB12`, `${folder}${day}-00-05-00-AB12`,
      `logs/123456789012/us-east-1/site/2026/10/31/${day}-00-00-00-AB12`, `logs/123456789012/us-east-1/site/x2026/11/01/${day}-00-00-00-AB12`]) {
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

/** A part's start in the unique part, as S3 compares it: `00`..`FF` (part 0 from the start). */
const START = (p: number): Buffer => Buffer.from(p === 0 ? '' : p.toString(16).toUpperCase().padStart(2, '0'));

/** The contract's part of a unique part, on its own: the last part whose start is at or before it in UTF-8 byte order. */
function expectedPart(unique: string): number {
  const bytes = Buffer.from(unique);
  let part = 0;
  for (let p = 1; p < EVENT_PARTS; p++) if (Buffer.compare(START(p), bytes) <= 0) part = p;
  return part;
}

const utf8Order = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('parts as key ranges: every name under an event-time day\'s prefix is in exactly one (issue #53)', () => {
  const day = '2026-11-01';
  const folder = 'logs/123456789012/us-east-1/site/2026/11/01/';
  const midnight = Date.UTC(2026, 10, 1) / SLICE_MS;
  // Characters about every part's edges (`9`/`:`, `@`/`A`, `F`/`G`), ASCII's ends, and past it (two
  // bytes, three, four: an astral character, which JavaScript's UTF-16 orders apart from UTF-8's).
  const chars = ['', ' ', '!', '-', '.', '/', '0', '1', '8', '9', ':', '@', 'A', 'B', 'E', 'F', 'G', 'Z', '_', 'a', 'f', 'z', '~', '\x7f', 'é', 'ÿ', '日', '\ue000', '😀'];
  const uniques = [...new Set([
    '', '0', '00', '0G', '0a', 'ff', 'zz', '~', 'é', '日本', '😀', 'G1', 'ab12', 'FF', 'FFFF', 'F~', 'AB/CD', '0/x', '-x',
    ...chars.flatMap((a) => chars.flatMap((b) => [a + b, `${a}${b}0`, `${a}${b}~`])),
    ...Array.from({ length: EVENT_PARTS }, (_, p) => START(p).toString()).flatMap((s) => [s, `${s}0123456789ABCD`, `${s}~`, `${s}z`]),
  ])].sort(utf8Order);

  it('puts each unique part in the one part whose range holds it: from two hex digits to the next, part 0 from the start, part 255 to the end', () => {
    for (const u of uniques) expect(partOf(u), JSON.stringify(u)).toBe(expectedPart(u));
    // The ranges tile the key space: in S3's order the parts only go up, and each begins where its start is.
    const parts = uniques.map(partOf);
    for (let i = 1; i < parts.length; i++) expect(parts[i]!, JSON.stringify(uniques[i])).toBeGreaterThanOrEqual(parts[i - 1]!);
    expect(new Set(parts).size).toBe(EVENT_PARTS);
    expect([partOf(''), partOf('0'), partOf('00'), partOf('0G'), partOf('0a'), partOf('9:'), partOf('A'), partOf('FF'), partOf('ff'), partOf('zz'), partOf('~'), partOf('é')])
      .toEqual([0, 0, 0, 0x0f, 0x0f, 0x99, 0x9f, 0xff, 0xff, 0xff, 0xff, 0xff]);
  });

  it('gives every key under the prefix, in its date folder, its part of the 00:00 slice, after any other key; its shard follows the part', () => {
    const keys = uniques.map((u) => `${folder}${eventPrefix(day)}${u}`);
    const others = [`${folder}${day}-00-00-01-AB`, `logs/${day}-00-00-00-0`, `${folder}notes.txt`];
    for (const sequence of [keys, [...keys].reverse(), keys.flatMap((k, i) => [k, others[i % others.length]!])]) {
      for (const key of sequence) {
        if (others.includes(key)) continue;
        const part = expectedPart(key.slice(folder.length + 20));
        expect(sliceOf(key), key).toEqual({ day, slice: partSlice(part), number: midnight, part });
        for (const count of [1, 4, 64]) expect(shardOfKey(key, count)).toBe((midnight + part) % count);
      }
    }
  });

  it('gives each part one key range (partRange): its Prefix and StartAfter reach every name partOf puts in it, and before them only the part before\'s (the lister itself: listing-window.test)', () => {
    const seen = new Map<string, number>();
    for (let p = 0; p < EVENT_PARTS; p++) {
      const r = partRange(p);
      // What S3 returns for the request, in its order; the lister keeps the part's names.
      const listed = uniques.filter((u) => u.startsWith(r.prefix) && (r.startAfter === null || utf8Order(u, r.startAfter) > 0));
      const first = listed.findIndex((u) => partOf(u) === p);
      for (const u of listed.slice(0, Math.max(first, 0))) expect(partOf(u), JSON.stringify(u)).toBe(p - 1);
      for (const u of listed) if (partOf(u) === p) seen.set(u, (seen.get(u) ?? 0) + 1);
      // S3's own names (two hex digits) are a Prefix of their own for most parts, as before.
      if (![0x00, 0xff].includes(p) && !/[9F]$/.test(START(p).toString())) expect(r).toEqual({ prefix: START(p).toString(), startAfter: null });
    }
    for (const u of uniques) expect(seen.get(u), JSON.stringify(u)).toBe(1);
  });

  it('says where a name was kept before parts were key ranges, when not in its part', () => {
    const at = (u: string): string => `${folder}${eventPrefix(day)}${u}`;
    expect(formerSliceOf(at('AB12'))).toBeNull();
    expect(formerSliceOf(`${folder}${day}-13-20-00-AB12`)).toBeNull();
    expect(formerSliceOf(at('ab12'))).toMatchObject({ day, slice: '00-00', number: midnight, part: null });
    expect(formerSliceOf(at('0'))).toMatchObject({ day, slice: '00-00', part: null });
    expect(formerSliceOf(at('AB/CD'))).toMatchObject({ day: 'undated', part: null });
    expect(formerSliceOf(at('ab/2026-11-05-13-21-00-X'))).toMatchObject({ day: '2026-11-05', slice: '13-20', part: null });
  });

  it('gives a key the shard whose listing reaches it (reachOf): a slice\'s, a part\'s, a date folder\'s walker for a stray, a hash for what only discovery finds', () => {
    const slice = (t: string): number => Date.parse(t) / SLICE_MS;
    const next = (d: number): string => new Date(Date.parse(`${day}T00:00:00Z`) + d * 86_400_000).toISOString().slice(0, 10);
    const cases: Array<[key: string, reach: { number: number; stray: boolean } | null]> = [
      [`${folder}${eventPrefix(day)}A7`, { number: midnight + 0xa7, stray: false }],
      [`${folder}${day}-13-20-00-AB`, { number: slice(`${day}T13:20:00Z`), stray: false }],
      // Under a slice's Prefix, whatever follows: the slice's listing reaches it.
      [`${folder}${day}-13-2x`, { number: slice(`${day}T13:20:00Z`), stray: false }],
      [`${day}-13-2x`, { number: slice(`${day}T13:20:00Z`), stray: false }],
      // Delivered up to two days after the folder's day; the 00:00 slice's owner lists from after `YYYY-MM-DD-00-00-00.`.
      [`${folder}${next(2)}-23-50-00-AB`, { number: slice(`${next(2)}T23:50:00Z`), stray: false }],
      [`${folder}${day}-00-00-01-AB`, { number: midnight, stray: false }],
      // Strays: the folder's walker (its day's 00:00 slice).
      ...[`${folder}${next(3)}-00-00-00-AB`, `${folder}${next(-1)}-23-50-00-AB`, `${folder}${day}-00-00-00.`, `${folder}${day}-00-00-00`, `${folder}${day}-24-00-00-AB`,
        `${folder}${day}-13-65-00-AB`, `${folder}notes.txt`, `${folder}sub/${day}-13-20-00-AB`, `${folder}2026-02-30-13-20-00-AB`].map((k): [string, { number: number; stray: boolean }] => [k, { number: midnight, stray: true }]),
      // Only discovery finds them.
      ['notes.txt', null], ['logs/2026-11-05-25-00-00-AB', null], ['123456789012/us-east-1/site/2026/13/01/x', null],
    ];
    for (const [key, reach] of cases) {
      expect(reachOf(key), key).toEqual(reach);
      for (const count of [4, 64]) if (reach) expect(shardOfKey(key, count), key).toBe(reach.number % count);
    }
  });
});
