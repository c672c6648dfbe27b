/**
 * Slices: the unit of listing, of sharding and of state (contract §2, "Slices").
 *
 * S3 names access-log objects by delivery time, `YYYY-MM-DD-hh-mm-ss-<unique>` (at the top of a
 * SimplePrefix, or inside a PartitionedPrefix date folder), so ten minutes of delivery time are one
 * key prefix: `2026-11-01-13-2` holds 13:20:00 to 13:29:59. Those ten minutes are a slice, 144 a day.
 * A shard of a sharded ingest owns the slices whose number (slices since 1970) is its index modulo
 * the shard count, lists only those (each with its own Prefix), and keeps the keys it parsed by day
 * and slice, so that a run reads the state of the slices it lists and nothing else.
 *
 * Why ten minutes: a slice is a LIST request at least, and a file of parsed keys per batch that
 * touched it; a minute would make a day 1,440 of each. Ten minutes keep a day at 144 while a slice at
 * 16M objects a day holds ~115k keys (a process holds one slice's keys at a time), and 64 shards own
 * 2 or 3 slices a day each.
 *
 * A key whose name holds no delivery time (a file of another layout) is in no minute: it belongs to
 * one of UNDATED_BUCKETS by a hash of the key, and is listed only by a full listing.
 *
 * PartitionedPrefix by EventTime is the exception: S3 then sets the hour, minutes and seconds of every
 * name to 00 (`.../YYYY/MM/DD/YYYY-MM-DD-00-00-00-<unique>`), so a whole day (16M objects at the
 * README's volume) would be one slice, owned by one shard and held by one process. Every key under
 * `YYYY-MM-DD-00-00-00-` in its own date folder is instead in one of EVENT_PARTS parts of its day's
 * 00:00 slice, by where its unique part (all that follows, `/` included) sorts in S3's key order: part
 * p holds the unique parts from two hex digits of p (`A7`) up to, not including, those of p + 1 (`A8`),
 * part 0 from the very start (an empty unique part, `0`, `-x` are part 0's) and part 255 to the end of
 * the prefix (`FF...` and all that sorts after: lowercase, `~`, any non-ASCII). S3's unique part is 16
 * uppercase hex digits, so its names fall in the part their first two digits say, ~62k keys a part at
 * 16M objects a day, the ten-minute slice's ~115k or less; a name S3 does not promise (lowercase, short,
 * any other character: a copy, a restore, another tool) is in exactly one part all the same, so that
 * the shards that list the parts between them list it once. A part is a key range, listed as one
 * (`partRange`): most are the Prefix of their two digits; one whose range holds more (part 0, and those
 * whose digits end in `9` or `F`: `A9` to `AA` holds `A:`..`A@`) is listed from a StartAfter under the
 * day's prefix to the next part's first name. A part keeps its slice's time (it is listed, sealed and
 * followed as the 00:00 slice is), and is owned by shard (slice number + part) modulo the count, so 4,
 * 8, 16, 64 or 256 shards own an equal share of an event-time day. A SimplePrefix name (no date
 * folder: always delivery time) is never in a part.
 *
 * Until issue #53 a part held only the names whose unique part starts with two uppercase hex digits,
 * a Prefix each, and the others stayed in the slice their base name says, where no shard listed those
 * that sort before `YYYY-MM-DD-00-00-00-F~` (their records were lost to a sharded ingest):
 * `formerSliceOf` says where such a name's parsed key may be kept.
 */
import { hash } from 'node:crypto';
import { DAY_MS } from '../../lib/utc-day.js';

/** One slice's length: ten minutes of delivery time. */
export const SLICE_MS = 600_000;

/** A shard of a sharded ingest (`--shard I/N`: ingest/batch/shard.ts): it owns the slices whose number is I modulo N. */
export interface Shard {
  /** 0-based. */
  index: number;
  count: number;
}

/** Buckets of keys with no delivery time in their name (by a hash of the key). */
export const UNDATED_BUCKETS = 256;

/** Parts of an event-time day's 00:00 slice: key ranges of the names' unique part, from two hex digits to the next. */
export const EVENT_PARTS = 256;

/** Where a key's state lives: its delivery day (`undated` without one) and its slice of that day. */
export interface SliceOf {
  /** `YYYY-MM-DD`, or `undated`. */
  day: string;
  /** `hh-m0` of the slice's first minute, `00-00-00-XX` for a part of an event-time day, or `u00`..`uff` for an undated key. */
  slice: string;
  /** Slices since 1970 (a part: its day's 00:00 slice); null for an undated key. */
  number: number | null;
  /** The part (0 to EVENT_PARTS - 1) of an event-time name; null for every other key. */
  part: number | null;
}

const NAME_STAMP = /^(\d{4})-(\d{2})-(\d{2})-(\d{2})-(\d)\d-\d{2}-/;

/** The slice a log object's key belongs to: an event-time name's part, else the slice of the delivery time that starts its base name. */
export function sliceOf(key: string): SliceOf {
  return eventPart(key) ?? nameSlice(key, key.slice(key.lastIndexOf('/') + 1));
}

/** The slice of the delivery time that starts a base name, or the key's undated bucket. */
function nameSlice(key: string, base: string): SliceOf {
  // Keys come in order, a slice's together: the last dated key's slice, when this name has its stamp
  // (4,000 keys in 2.3 ms against 3.4-5.4 ms, cold: the expression and the date arithmetic below).
  if (last !== null && base.startsWith(last.prefix) && STAMP_REST.test(base)) return last.slice;
  const m = NAME_STAMP.exec(base);
  if (m) {
    const number = Math.floor(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]! * 10) / SLICE_MS);
    if (Number.isFinite(number)) {
      const slice: SliceOf = Object.freeze({ day: `${m[1]}-${m[2]}-${m[3]}`, slice: `${m[4]}-${m[5]}0`, number, part: null });
      last = { prefix: base.slice(0, SLICE_PREFIX_CHARS), slice };
      return slice;
    }
  }
  return { day: 'undated', slice: `u${undatedBucket(key).toString(16).padStart(2, '0')}`, number: null, part: null };
}

/** What follows `YYYY-MM-DD` in an event-time name. */
const EVENT_STAMP = '-00-00-00-';
/** A date folder and the name of its day that starts there: `YYYY/MM/DD/YYYY-MM-DD`. */
const EVENT_HEAD = /^(\d{4})\/(\d{2})\/(\d{2})\/\1-\2-\3$/;

/** The key prefix of an event-time day's names in its date folder, `YYYY-MM-DD-00-00-00-`: every name under it is in a part. */
export function eventPrefix(day: string): string {
  return `${day}${EVENT_STAMP}`;
}

/**
 * Where the first event-time name of a key starts (`YYYY-MM-DD-00-00-00-`, in the date folder of its
 * day, at the key's start or after a `/`), or -1. The first: a unique part may hold a `/` (a name S3
 * does not write), and the name is still the one its date folder's listing finds.
 */
function eventNameAt(key: string): number {
  for (let i = key.indexOf(EVENT_STAMP, 21); i >= 0; i = key.indexOf(EVENT_STAMP, i + 1)) {
    const at = i - 10;
    if ((at === 11 || key[at - 12] === '/') && EVENT_HEAD.test(key.slice(at - 11, i))) return at;
  }
  return -1;
}

/** The part of an event-time name (see above), or null when the key holds none. */
function eventPart(key: string): SliceOf | null {
  // Keys come in order, a part's together: the last part's, for a key with its characters up to the
  // unique part's second (a part is a range of those two: the rest never moves a name to another).
  // The stamp first: a delivery-time name after an event-time one fails there, not 60 characters on
  // (4,000 such names in 1.0 ms against 1.75 ms, warm).
  if (lastPart !== null && key.startsWith(EVENT_STAMP, lastPart.head.length - 12) && key.startsWith(lastPart.head)) return lastPart.slice;
  const at = eventNameAt(key);
  if (at < 0) return null;
  const number = Math.floor(Date.UTC(+key.slice(at, at + 4), +key.slice(at + 5, at + 7) - 1, +key.slice(at + 8, at + 10)) / SLICE_MS);
  if (!Number.isFinite(number)) return null;
  const part = partOf(key.slice(at + 20));
  const slice: SliceOf = Object.freeze({ day: key.slice(at, at + 10), slice: partSlice(part), number, part });
  // A unique part of fewer than two characters (`0`) is not one for the keys after it (`0G`).
  if (key.length >= at + 22) lastPart = { head: key.slice(0, at + 22), slice };
  return slice;
}

/** The last event-time name's part, and the characters of its key up to its unique part's second. */
let lastPart: { head: string; slice: SliceOf } | null = null;

/** Where each part starts: `00` to `FF` (uppercase hex digits sort as their values do). */
const PART_STARTS = Array.from({ length: EVENT_PARTS }, (_, p) => p.toString(16).toUpperCase().padStart(2, '0'));

/** An uppercase hex digit's value, or -1. */
function hexDigit(c: number): number {
  return c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : -1;
}

/**
 * The part of an event-time name's unique part (all that follows `YYYY-MM-DD-00-00-00-`): the last
 * whose start (`00`..`FF`) sorts at or before it, part 0 for what sorts before `00`. Compared as
 * JavaScript strings, which is S3's order (UTF-8 bytes) here: every start is two ASCII characters,
 * below every other character in both orders.
 */
export function partOf(unique: string): number {
  const hi = hexDigit(unique.charCodeAt(0)), lo = hexDigit(unique.charCodeAt(1));
  // S3's own names: the part their two digits say.
  if (hi >= 0 && lo >= 0) return hi * 16 + lo;
  let from = 0, to = EVENT_PARTS - 1;
  while (from < to) {
    const mid = (from + to + 1) >> 1;
    if (PART_STARTS[mid]! <= unique) from = mid;
    else to = mid - 1;
  }
  return from;
}

/** A part's slice name: `00-00-00-XX`, the characters that follow the date in the names that start it. */
export function partSlice(part: number): string {
  return `00-00-00-${PART_STARTS[part]!}`;
}

/**
 * A part as one ListObjectsV2 listing, relative to its day's `eventPrefix` in its date folder: its
 * Prefix, and where it starts (StartAfter; null: at the Prefix's start). The lister keeps the names
 * `partOf` puts in the part: it passes over those of the part before that sort after StartAfter
 * (after `A8~`, part A9's: `A8~x`, `A8é`, none of S3's), and stops at the first name of a part after (a small part costs one
 * request, as a Prefix of its own does).
 */
export interface PartRange {
  prefix: string;
  startAfter: string | null;
}

export function partRange(part: number): PartRange {
  const start = part === 0 ? '' : PART_STARTS[part]!;
  const end = part === EVENT_PARTS - 1 ? null : PART_STARTS[part + 1]!;
  // `A7` to `A8`: no character sorts between `7` and `8`, so the part is the names that start with `A7`.
  if (start !== '' && end === start[0] + String.fromCharCode(start.charCodeAt(1) + 1)) return { prefix: start, startAfter: null };
  // Else a range: `A9` to `AA` holds `A:`..`A@` too, `AF` to `B0` holds `AG`..`Az` and `B`, part 0
  // all that sorts before `01`, part 255 all from `FF` on. S3 lists after a key, not from one, and no
  // key sorts just before `A9`: the listing starts after `A8~`, above every name of the part before
  // but the few that go on past `~`.
  let common = 0;
  while (end !== null && common < start.length && start[common] === end[common]) common++;
  return { prefix: start.slice(0, common), startAfter: start === '' ? null : `${start[0]}${String.fromCharCode(start.charCodeAt(1) - 1)}~` };
}

/**
 * Where a key's parsed key was kept before issue #53 made every event-time name a part's, when that
 * is not its slice now; null when it is. Then a part held only the names in their date folder whose
 * base name (after the last `/`) has two uppercase hex digits after `00-00-00-`; every other name was
 * in the slice its base name says (`.../2026-11-01-00-00-00-ab12` in the 00:00 slice, a unique part
 * with a `/` mostly undated). The ledger looks there too, so that none of them is parsed twice.
 */
export function formerSliceOf(key: string, now: Pick<SliceOf, 'day' | 'slice' | 'part'> = sliceOf(key)): SliceOf | null {
  if (now.part === null) return null;
  const base = key.slice(key.lastIndexOf('/') + 1);
  const at = key.length - base.length;
  let was: SliceOf;
  const m = FORMER_PART_NAME.exec(base);
  if (m && at >= 11 && key.slice(at - 11, at) === `${m[1]}/${m[2]}/${m[3]}/` && (at === 11 || key[at - 12] === '/')) {
    const part = parseInt(m[4]!, 16);
    was = { day: `${m[1]}-${m[2]}-${m[3]}`, slice: partSlice(part), number: Math.floor(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!) / SLICE_MS), part };
  } else {
    was = nameSlice(key, base);
  }
  return was.day === now.day && was.slice === now.slice ? null : was;
}

/** A part's base name until issue #53: `YYYY-MM-DD-00-00-00-XX...`, XX two uppercase hex digits. */
const FORMER_PART_NAME = /^(\d{4})-(\d{2})-(\d{2})-00-00-00-([0-9A-F]{2})/;

/** The parts of a day's 00:00 slice (`number`) a shard owns. */
export function ownedParts(number: number, index: number, count: number): number[] {
  const out: number[] = [];
  for (let p = 0; p < EVENT_PARTS; p++) if (count === 1 || (number + p) % count === index) out.push(p);
  return out;
}

function undatedBucket(key: string): number {
  return hash('sha1', key, 'buffer')[0]! % UNDATED_BUCKETS;
}

/**
 * The shard (of `count`) that owns a key: the shard whose listing reaches it (`reachOf`): its slice's
 * owner (slice number modulo count; a part of an event-time day, slice number plus part modulo count),
 * a stray's date folder's walker, or for a key only discovery finds the first 4 bytes of its SHA-1
 * modulo count. Stable across processes, machines and releases; consecutive slices go to different
 * shards, so a day's traffic spreads evenly.
 */
export function shardOfKey(key: string, count: number, reach?: Reach | null): number {
  if (count === 1) return 0;
  const r = reach === undefined ? reachOf(key) : reach;
  if (r !== null) return sliceOwner(r.number, count);
  return hash('sha1', key, 'buffer').readUInt32BE(0) % count;
}

/** The shard (of `count`) that owns slice number `n` (a part: its slice's number plus the part). */
export function sliceOwner(n: number, count: number): number {
  return ((n % count) + count) % count;
}

/** Which listing reaches a key (`reachOf`). */
export interface Reach { number: number; stray: boolean }

/** Days after a PartitionedPrefix date folder's own whose delivery-time names it may hold (objects delivered late into their event day's folder). */
export const PARTITION_LATE_DAYS = 2;

/**
 * Which listing of a sharded ingest reaches a key: `number` is what its owner is reckoned from (a
 * slice's number, plus the part of an event-time name), `stray` whether that listing is a date
 * folder's walk rather than its slice's; null for a key that only discovery finds (no delivery time,
 * outside any PartitionedPrefix date folder: every shard finds it, and one keeps it by a hash).
 *
 * In a PartitionedPrefix date folder `<account>/<region>/<bucket>/YYYY/MM/DD/` a slice's listing
 * reaches the names under its Prefix (`YYYY-MM-DD-hh-m`, of the folder's day or the
 * PARTITION_LATE_DAYS after it) and a part's the names under `YYYY-MM-DD-00-00-00-`; anything else
 * there (a README, a sub-folder, a name of another day, `...-13-65-...`) is a stray, which the
 * folder's walker lists (ingest/object-source/s3-object-source.ts, `strays`) when its day is listed in
 * full: the owner of the folder day's 00:00 slice. Elsewhere a name under a slice's Prefix is that
 * slice's whatever follows (`2026-11-01-13-2x` too).
 */
export function reachOf(key: string): Reach | null {
  const folder = dateFolderOf(key);
  if (folder !== null) {
    const rest = key.slice(folder.prefix.length);
    const { day, own } = folder;
    if (rest.startsWith(day) && rest.startsWith(EVENT_STAMP, 10)) return { number: own + partOf(rest.slice(20)), stray: false };
    const n = slicePrefixNumber(rest);
    const late = n === null ? -1 : Math.floor((n - own) / DAY_SLICES);
    // The 00:00 slice's own listing starts after the parts' names (`YYYY-MM-DD-00-00-00.`).
    if (n !== null && late >= 0 && late <= PARTITION_LATE_DAYS && !(n === own && rest <= `${day}-00-00-00.`)) return { number: n, stray: false };
    return { number: own, stray: true };
  }
  const { number, part } = sliceOf(key);
  if (part !== null) return { number: number! + part, stray: false };
  const n = slicePrefixNumber(key.slice(key.lastIndexOf('/') + 1));
  return n === null ? null : { number: n, stray: false };
}

/** Slices a day. */
const DAY_SLICES = DAY_MS / SLICE_MS;

/** A PartitionedPrefix date folder: after an account folder (12 digits), its region and bucket folders. */
const BUCKET_DATE_FOLDER = /(?:^|\/)\d{12}\/[^/]+\/[^/]+\/(\d{4})\/(\d{2})\/(\d{2})\//;

/** A key's PartitionedPrefix date folder (the key up to it, its day, the day's 00:00 slice), or null. */
function dateFolderOf(key: string): { prefix: string; day: string; own: number } | null {
  // Keys come in order, a folder's together; a SimplePrefix name at the top has no folder at all.
  if (lastFolder !== null && key.startsWith(lastFolder.prefix)) return lastFolder;
  if (!key.includes('/')) return null;
  const m = BUCKET_DATE_FOLDER.exec(key);
  if (!m) return null;
  const day = `${m[1]}-${m[2]}-${m[3]}`;
  const own = slicePrefixNumber(`${day}-00-0`);
  if (own === null) return null;
  lastFolder = { prefix: key.slice(0, m.index + m[0].length), day, own };
  return lastFolder;
}

let lastFolder: { prefix: string; day: string; own: number } | null = null;

/** A slice's Prefix at a name's start: `YYYY-MM-DD-hh-m`, a real day, hour and ten minutes. */
const SLICE_HEAD = /^(\d{4})-(\d{2})-(\d{2})-([01]\d|2[0-3])-([0-5])/;

/** The slice whose Prefix starts a name (`YYYY-MM-DD-hh-m`: a real day, hour and ten minutes), or null. */
function slicePrefixNumber(name: string): number | null {
  if (lastHead !== null && name.startsWith(lastHead.head)) return lastHead.number;
  const m = SLICE_HEAD.exec(name);
  if (!m) return null;
  const midnight = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!);
  // Not 2026-02-30.
  if (!Number.isFinite(midnight) || new Date(midnight).toISOString().slice(0, 10) !== name.slice(0, 10)) return null;
  lastHead = { head: name.slice(0, SLICE_PREFIX_CHARS), number: (midnight + +m[4]! * 3_600_000) / SLICE_MS + +m[5]! };
  return lastHead.number;
}

let lastHead: { head: string; number: number } | null = null;

/** Characters of a delivery-time name that make its slice's key prefix: `YYYY-MM-DD-hh-m`. */
export const SLICE_PREFIX_CHARS = 15;

/** The slice of the last dated name, and the characters of that name that make it (`YYYY-MM-DD-hh-m`). */
let last: { prefix: string; slice: SliceOf } | null = null;
/** A name whose first SLICE_PREFIX_CHARS are a dated name's: the rest of NAME_STAMP, from there. */
const STAMP_REST = new RegExp(`^.{${SLICE_PREFIX_CHARS}}\\d-\\d{2}-`);

/** The slices a shard owns from `fromMs` to `toMs` (both included), oldest first. */
export function* ownedSlices(fromMs: number, toMs: number, index: number, count: number): Generator<number> {
  const last = Math.floor(toMs / SLICE_MS);
  let m = Math.floor(fromMs / SLICE_MS);
  if (count > 1) m += (((index - m) % count) + count) % count;
  for (; m <= last; m += count) yield m;
}
