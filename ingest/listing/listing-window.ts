/**
 * What a listing reads. S3 names access-log objects by delivery time (contract §2):
 * - SimplePrefix: `<prefix>YYYY-MM-DD-hh-mm-ss-<unique>`, so keys sort by delivery time and a listing
 *   can start after the last one it saw (ListObjectsV2 StartAfter), less a margin for objects that
 *   become visible a little after the time in their name: the incremental window;
 * - PartitionedPrefix: `<prefix><account>/<region>/<bucket>/YYYY/MM/DD/<name>`, where the date folder
 *   may be the records' event day (then every name in it is `YYYY-MM-DD-00-00-00-...`), so late objects
 *   land in folders up to PARTITION_LATE_DAYS old: the window lists those folders whole.
 * An object that appears later than the window under an older name is found by the full listing of
 * its delivery day (ingest/listing/delivery-days.ts), which a run makes on a schedule: the plan's `days`.
 */
import { DAY_MS, dayName } from '../../lib/utc-day.js';
import { PARTITION_LATE_DAYS, type Shard } from './slices.js';

export { PARTITION_LATE_DAYS };
import { sliceStart } from './seals.js';

/** The delivery time that starts a log object's base name: `YYYY-MM-DD-hh-mm-ss-` (contract §2). */
export const NAME_STAMP = /^(\d{4})-(\d{2})-(\d{2})-(\d{2})-(\d{2})-(\d{2})-/;

/** What one listing reads. */
export interface ListPlan {
  /** The incremental window: names delivered from this instant (a slice's start) on; null for none. */
  sinceMs: number | null;
  /** Delivery days listed in full (`YYYY-MM-DD`): of each, what the window does not list. */
  days: readonly string[];
  /** A shard of several lists only the slices it owns (ingest/listing/slices.ts). */
  shard: Shard | null;
  /** The listing's own time: a shard's window reaches the slice that holds it. */
  untilMs: number;
}



/** `YYYY-MM-DD-hh-mm-ss`, the time as it starts a SimplePrefix name. */
export function nameStamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace(/[-T:]/g, '-');
}

/** The delivery time in an object's name, in ms, or null when its name holds none. */
export function nameTimeMs(key: string): number | null {
  const m = NAME_STAMP.exec(key.slice(key.lastIndexOf('/') + 1));
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : null;
}

/** Whether a folder (relative, ending in `/`) is a PartitionedPrefix account folder (`123456789012/`, at any depth). */
export function isAccountFolder(folder: string): boolean {
  return /(?:^|\/)\d{12}\/$/.test(folder);
}

/** The first date folder's day (`YYYY-MM-DD`) the window lists whole in a PartitionedPrefix source bucket. */
export function firstDateFolder(sinceMs: number): string {
  return dayName(Math.floor(sinceMs / DAY_MS) - PARTITION_LATE_DAYS);
}

/** The window's start from the saved watermark, less the margin, at a slice's edge (a window lists each slice it reaches whole); null without one. */
export function windowStart(watermark: string | null, marginMs: number): number | null {
  return watermark === null ? null : sliceStart(Date.parse(watermark) - marginMs);
}

/** The first delivery day a window from `sinceMs` lists whole, in every layout; null without a window. */
export function firstWholeDay(sinceMs: number | null): string | null {
  if (sinceMs === null) return null;
  return dayName(Math.ceil(sinceMs / DAY_MS));
}

/** The latest delivery time a listing saw, for the next window. */
export class ListingTracker {
  private latest: number;

  /** @param startedMs the listing's own time: no name can move the window past it. */
  constructor(watermark: string | null, private readonly startedMs: number) {
    this.latest = watermark === null ? -Infinity : Date.parse(watermark);
  }

  saw(key: string): void {
    const t = nameTimeMs(key);
    if (t === null) return;
    // A name from the future (a clock gone wrong) must not move the window past objects still to come.
    if (t > this.latest) this.latest = Math.min(t, this.startedMs);
  }

  /** Everything named before `ms` was listed (a shard's own slices, each listed whole; days listed whole): the next window may start there. */
  listedAt(ms: number): void {
    if (ms > this.latest) this.latest = Math.min(ms, this.startedMs);
  }

  watermark(): string | null {
    return Number.isFinite(this.latest) ? new Date(this.latest).toISOString() : null;
  }
}
