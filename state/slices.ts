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
 * README's volume) would be one slice, owned by one shard and held by one process. A name at
 * `00-00-00` in its own date folder whose unique part starts with two uppercase hex digits (S3's
 * unique part is 16 of them) is instead in one of EVENT_PARTS parts of its day's 00:00 slice, by those
 * two digits: a Prefix each (`...-00-00-00-A7`), ~62k keys a part at 16M objects a day, which is
 * the ten-minute slice's ~115k or less. A part keeps its slice's time (it is listed, sealed and
 * followed as the 00:00 slice is), and is owned by shard (slice number + part) modulo the count, so
 * 4, 8, 16, 64 or 256 shards own an equal share of an event-time day. A SimplePrefix name (no date
 * folder: always delivery time) is never in a part.
 */
import { hash } from 'node:crypto';

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

/** Parts of an event-time day's 00:00 slice: two hex digits of the names' unique part. */
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

/** The slice a log object's key belongs to, from the delivery time that starts its base name. */
export function sliceOf(key: string): SliceOf {
  const base = key.slice(key.lastIndexOf('/') + 1);
  if (base.startsWith(EVENT_STAMP, 10)) {
    const part = eventPart(key, base);
    if (part !== null) return part;
  }
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
/** An event-time name in its date folder: `YYYY/MM/DD/YYYY-MM-DD-00-00-00-XX...`, XX two uppercase hex digits. */
const EVENT_NAME = /^(\d{4})-(\d{2})-(\d{2})-00-00-00-([0-9A-F]{2})/;

/** The part of an event-time name (see above), or null when the name is not one. */
function eventPart(key: string, base: string): SliceOf | null {
  const at = key.length - base.length;
  // Keys come in order, a part's together: the last part's, for a key with its folder and digits.
  if (lastPart !== null && key.length >= lastPart.head.length && key.startsWith(lastPart.head) && at === lastPart.at) return lastPart.slice;
  const m = EVENT_NAME.exec(base);
  if (!m) return null;
  // Only in its own date folder: a name there is PartitionedPrefix's, whose time may be the event's.
  if (at < 11 || key.slice(at - 11, at) !== `${m[1]}/${m[2]}/${m[3]}/` || (at > 11 && key[at - 12] !== '/')) return null;
  const number = Math.floor(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!) / SLICE_MS);
  if (!Number.isFinite(number)) return null;
  const part = parseInt(m[4]!, 16);
  const slice: SliceOf = Object.freeze({ day: `${m[1]}-${m[2]}-${m[3]}`, slice: partSlice(part), number, part });
  lastPart = { head: key.slice(0, at + 22), at, slice };
  return slice;
}

/** The last event-time name's part, and the characters of its key up to its two digits. */
let lastPart: { head: string; at: number; slice: SliceOf } | null = null;

/** A part's slice name: `00-00-00-XX`, the characters that follow the date in its names. */
export function partSlice(part: number): string {
  return `00-00-00-${part.toString(16).toUpperCase().padStart(2, '0')}`;
}

/** The key prefix of a part's names in the date folder of `day`: `YYYY-MM-DD-00-00-00-XX`. */
export function partPrefix(day: string, part: number): string {
  return `${day}-${partSlice(part)}`;
}

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
 * The shard (of `count`) that owns a key: the owner of its slice (slice number modulo count; a part of
 * an event-time day, slice number plus part modulo count), or for an undated key the first 4 bytes of its SHA-1 modulo count. Stable across processes, machines and
 * releases; consecutive slices go to different shards, so a day's traffic spreads evenly.
 */
export function shardOfKey(key: string, count: number): number {
  if (count === 1) return 0;
  const { number, part } = sliceOf(key);
  if (number !== null) return (((number + (part ?? 0)) % count) + count) % count;
  return hash('sha1', key, 'buffer').readUInt32BE(0) % count;
}

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

/**
 * A parsed-key list as stored: sorted keys, one a line. A key holding a line break or starting with
 * `%` is written `%` + its percent-encoding, so that every key, whatever its bytes, reads back as it was.
 */
export function encodeKeys(keys: readonly string[]): string {
  return keys.map((k) => (/[\n\r]/.test(k) || k.startsWith('%') ? `%${encodeURIComponent(k)}` : k)).join('\n');
}

export function decodeKeys(text: string): string[] {
  if (text === '') return [];
  return text.split('\n').map((l) => (l.startsWith('%') ? decodeURIComponent(l.slice(1)) : l));
}
