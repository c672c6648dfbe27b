/**
 * Seals: what a listing saw of a slice (ingest/listing/slices.ts) when the slice left the listing window for
 * good. A run lists the slices that can still receive objects (those after its window's start, the
 * latest delivery time seen less the margin); once a slice falls before the next window, no listing
 * but a reconciliation sees it again. Its seal records how many objects it held and a digest of them
 * (SHA-256 over each `key\netag\n` in the order the listing gave them, key order as S3 and a directory
 * list; hashed in pieces, each with the digest before it, that end at 64K characters and where the
 * slice's run of keys ends), so that a reconciliation, which lists every slice again, reads a slice's
 * parsed keys only when the slice changed since: an object S3 delivered very late, into a slice long
 * sealed. The same keys listed in the same order make the same digest; in another order, another
 * digest: the slice is read key by key and sealed again, never passed over.
 *
 * A seal is an empty object whose name holds it all, SEALS `<day>/<slice>.<count>.<digest>`,
 * so one listing of a day's folder reads its 144 seals (an event-time day's: its 256 parts' and 00:00's). Resealing puts the new name before deleting
 * the old; a slice found with two names is treated as unsealed (read in full) and sealed again.
 */
import { hash } from 'node:crypto';
import { SEALS } from '../../datasets/layout.js';
import { allEnded } from '../../lib/all-ended.js';
import { removeUnder, type ObjectStore } from '../../state/object-store/object-store.js';
import { SLICE_MS, sliceOf, type SliceOf } from './slices.js';


/** One slice's objects as a listing saw them. */
export class SliceTally {
  count = 0;
  /** SHA-256 (hex) of the text hashed so far, chained: each piece hashed with the digest before it. */
  private hashed = '';
  /** The objects' `key\netag\n` not yet hashed: a slice's run of keys is hashed in a few pieces, not a call an object. */
  private text = '';
  private digested: string | null = null;

  constructor(
    readonly day: string,
    readonly slice: string,
    /** Slices since 1970 (a part of an event-time day: its 00:00 slice's, ingest/listing/slices.ts). */
    readonly number: number,
  ) {}

  add(key: string, etag: string): void {
    this.count++;
    this.digested = null;
    this.text += `${key}\n${etag}\n`;
    if (this.text.length >= HASHED_AT) this.flush();
  }

  /** Hashes what is pending: at HASHED_AT characters, and where its run of keys ends (one slice's text waits at a time). */
  flush(): void {
    if (this.text) this.hashed = hash('sha256', this.hashed + this.text, 'hex');
    this.text = '';
  }

  /** 64 hex digits: the digest of its objects so far, in the order they came; reading it changes nothing (more may be added). */
  get digest(): string {
    return (this.digested ??= this.text ? hash('sha256', this.hashed + this.text, 'hex') : this.hashed || EMPTY);
  }
}

/** Pending text hashed at this length (a slice of a 16M-object day holds about 110,000 keys). */
const HASHED_AT = 1 << 16;
const EMPTY = hash('sha256', '', 'hex');

/**
 * A listing's tallies by slice (`<day>/<slice>`: a number may be a day's 00:00 slice and each of its
 * parts). Hashed a slice's run of keys at a time: a SHA-256 an object, XORed into its slice's digest,
 * was 8.9 ms of a run with nothing to do on the small-object day (2,001 objects, cold).
 */
export class SliceTallies {
  private readonly bySlice = new Map<string, SliceTally>();
  /** The slice whose text waits to be hashed: the last one added to. */
  private open: SliceTally | null = null;

  /** Adds an object to its slice's tally (`s`: its slice, when the caller has it); undated keys have no slice to seal. */
  add(key: string, etag: string, s: SliceOf = sliceOf(key)): SliceTally | null {
    if (s.number === null) return null;
    const at = `${s.day}/${s.slice}`;
    let t = this.bySlice.get(at);
    if (!t) this.bySlice.set(at, (t = new SliceTally(s.day, s.slice, s.number)));
    if (this.open !== t) {
      this.open?.flush();
      this.open = t;
    }
    t.add(key, etag);
    return t;
  }

  values(): IterableIterator<SliceTally> {
    return this.bySlice.values();
  }
}

function sealName(t: Pick<SliceTally, 'day' | 'slice' | 'count' | 'digest'>): string {
  return `${SEALS}${t.day}/${t.slice}.${t.count}.${t.digest}`;
}

/** A day's seals, read with one listing: slice → its seal's name, or null when the slice has two (a reseal a crash cut short). */
export class Seals {
  private readonly days = new Map<string, Promise<Map<string, string | null>>>();
  /** Seal folders listed, for the tests and the scale bench. */
  listings = 0;

  constructor(private readonly store: ObjectStore) {}

  /** A day's seals, listed once (the listing's promise is kept, so that seals made at once list the day once). */
  private day(day: string): Promise<Map<string, string | null>> {
    let seals = this.days.get(day);
    if (!seals) {
      this.listings++;
      seals = this.store.list(`${SEALS}${day}/`).then((keys) => {
        const bySlice = new Map<string, string | null>();
        for (const key of keys) {
          const slice = key.slice(SEALS.length + day.length + 1).split('.')[0]!;
          bySlice.set(slice, bySlice.has(slice) ? null : key);
        }
        return bySlice;
      });
      // A failed listing is not kept: the next question lists the day again.
      seals.catch(() => this.days.delete(day));
      this.days.set(day, seals);
      // A day's seals are few (144, or 256 parts and a slice); a reconciliation of a long history keeps the recent days'.
      if (this.days.size > 64) this.days.delete(this.days.keys().next().value!);
    }
    return seals;
  }

  /** Whether the slice has one seal (it may then be matched). */
  async has(day: string, slice: string): Promise<boolean> {
    return typeof (await this.day(day)).get(slice) === 'string';
  }

  /** Whether what a listing saw of a slice is what its seal says. */
  async matches(t: SliceTally): Promise<boolean> {
    return (await this.day(t.day)).get(t.slice) === sealName(t);
  }

  /** Seals a slice as `t` saw it, unless it is sealed so already; the old seal (or seals) go after the new one is in place. */
  async seal(t: SliceTally): Promise<boolean> {
    const seals = await this.day(t.day);
    const name = sealName(t);
    const old = seals.get(t.slice);
    if (old === name) return false;
    // Not waited onto the disk: a seal a power cut takes makes its slice unsealed (its keys read by
    // the next reconciliation), never wrong; the ledger's commit it follows is on disk before it.
    await this.store.putMarker(name);
    const stale = old === undefined ? [] : (await this.store.list(`${SEALS}${t.day}/${t.slice}.`)).filter((k) => k !== name);
    for (const key of stale) await this.store.delete(key);
    seals.set(t.slice, name);
    return true;
  }

  /**
   * Seals every slice of `tallies` (each of its own slice), SEALS_AT_ONCE at a time: a seal is a put
   * of its own, and a run that saw a day whole seals its 144 slices (one by one, a put's round trip
   * each: 0.29 s of the small-object day on a local disk, seconds on S3). How many were new or changed;
   * every put has ended before it returns or throws.
   */
  async sealAll(tallies: readonly SliceTally[]): Promise<number> {
    return (await allEnded(tallies.map((t) => () => this.seal(t)), SEALS_AT_ONCE)).filter(Boolean).length;
  }
}

/** Drops a delivery day's seals (retention, with its parsed keys: the day is never listed again). How many went. */
export function dropSeals(store: ObjectStore, day: string): Promise<number> {
  return removeUnder(store, `${SEALS}${day}/`);
}

/** Seals put at once. */
const SEALS_AT_ONCE = 16;

/** The start of the slice that holds `ms`: a window starts on a slice's edge, so that it lists every slice it starts in whole. */
export function sliceStart(ms: number): number {
  return Math.floor(ms / SLICE_MS) * SLICE_MS;
}
