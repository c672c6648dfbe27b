/**
 * What a listing can skip. S3 names access-log objects by delivery time (contract §2):
 * - SimplePrefix: `<prefix>YYYY-MM-DD-hh-mm-ss-<unique>`, so keys sort by delivery time and a listing
 *   can start after the last one it saw (ListObjectsV2 StartAfter), less a margin for objects that
 *   become visible a little after the time in their name;
 * - PartitionedPrefix: `<prefix><account>/<region>/<bucket>/YYYY/MM/DD/<name>`, where the date folder
 *   may be the records' event day, so late objects land in folders up to PARTITION_LATE_DAYS old:
 *   those folders are listed whole each time.
 * Anything else under the prefix (a key of neither shape sorting before the window) is seen only by
 * a full listing (`--reconcile`, or a run with no listing state).
 */
import { DAY_MS, dayName } from '../../lib/utc-day.js';
import { NAME_STAMP } from './object-source.js';
import { sliceStart } from '../../state/seals.js';

export interface ListWindow {
  /** Every object named (delivered) before this time, in ms, was seen by an earlier listing. */
  sinceMs: number;
  /** PartitionedPrefix account folders seen before (`123456789012/`): they may sort before the window. */
  accounts: string[];
  /**
   * Folders (relative, `` for the top) that have held SimplePrefix names, each listed from the window's
   * stamp. With none at the top, the top's folders are found with one request.
   */
  folders: string[];
}

/** Date folders of PartitionedPrefix (event-time) logs listed whole before the window's day: records arrive up to two days late. */
export const PARTITION_LATE_DAYS = 2;

const ACCOUNT = /^(\d{12})\/[^/]+\/[^/]+\/\d{4}\/\d{2}\/\d{2}\//;

/** `YYYY-MM-DD-hh-mm-ss`, the time as it starts a SimplePrefix name. */
export function nameStamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace(/[-T:]/g, '-');
}

/** The delivery time in an object's name, in ms, or null when its name holds none. */
export function nameTimeMs(key: string): number | null {
  const m = NAME_STAMP.exec(key.slice(key.lastIndexOf('/') + 1));
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : null;
}

/** The account folder (`123456789012/`) of a PartitionedPrefix key, or null. */
export function accountOf(key: string): string | null {
  const m = ACCOUNT.exec(key);
  return m ? `${m[1]}/` : null;
}

/** Whether a key names an account folder (`123456789012/`). */
export function isAccountFolder(folder: string): boolean {
  return /^\d{12}\/$/.test(folder);
}

/** The first date folder (`YYYY/MM/DD`) a PartitionedPrefix listing must read. */
export function firstDateFolder(window: ListWindow): string {
  return dateFolder(Math.floor(window.sinceMs / DAY_MS) - PARTITION_LATE_DAYS);
}

/**
 * Where a listing of one source bucket's folder (`<account>/<region>/<bucket>/`) starts after:
 * `~` sorts after every name in the folder of the day before the first, and before the first's.
 */
export function partitionStartAfter(window: ListWindow): string {
  return `${dateFolder(Math.floor(window.sinceMs / DAY_MS) - PARTITION_LATE_DAYS - 1)}/~`;
}

function dateFolder(day: number): string {
  return dayName(day).replace(/-/g, '/');
}

/** Whether a SimplePrefix name is older than the window, whose `nameStamp` is `stamp`: in a folder known to hold such names, it was seen. */
export function beforeWindow(name: string, stamp: string): boolean {
  return NAME_STAMP.test(name) && name < stamp;
}

/** What the listing state holds (state/listing-state.ts). */
export interface ListedShape {
  watermark: string | null;
  accounts: string[];
  /** Folders that held SimplePrefix names (`` for the top). */
  folders: string[];
  /** Whether a key of neither S3 shape was seen (a file without a delivery time in its name, a folder of another layout): every listing is then full. */
  other: boolean;
}

/**
 * The window a run lists, from the saved state: none (everything) without a watermark, when a full
 * listing is asked for, or when the prefix holds keys of neither shape, which no window can bound.
 */
export function windowFrom(state: ListedShape, marginMs: number, full: boolean): ListWindow | undefined {
  if (full || state.watermark === null || state.other) return undefined;
  // From the start of a slice: a window lists each slice it reaches whole, so that a slice leaving it can be sealed (state/seals.ts).
  return { sinceMs: sliceStart(Date.parse(state.watermark) - marginMs), accounts: state.accounts, folders: state.folders };
}

/** What a listing saw, for the next window: the latest named delivery time, the account folders, whether SimplePrefix keys are there. */
export class ListingTracker {
  private latest: number;
  private readonly accounts: Set<string>;
  private readonly folders: Set<string>;
  private other: boolean;
  private readonly startedMs = Date.now();
  /** The latest delivery time named by a key this listing returned (not capped): how far behind the logs are. */
  newestMs = -Infinity;

  /** @param full whether the listing is a full one (it alone can say the prefix holds nothing of another shape). */
  constructor(private readonly before: ListedShape, private readonly full: boolean) {
    this.latest = before.watermark === null ? -Infinity : Date.parse(before.watermark);
    this.accounts = new Set(before.accounts);
    this.folders = new Set(before.folders);
    this.other = full ? false : before.other;
  }

  saw(key: string): void {
    const t = nameTimeMs(key);
    if (t !== null && t > this.newestMs) this.newestMs = t;
    // A name from the future (a clock gone wrong) must not move the window past objects still to come.
    if (t !== null && t > this.latest) this.latest = Math.min(t, this.startedMs);
    const account = accountOf(key);
    if (account) this.accounts.add(account);
    else if (t !== null) this.folders.add(key.slice(0, key.lastIndexOf('/') + 1));
    else this.other = true;
  }

  /** Everything named before `ms` was listed (a shard's own minutes, each listed whole): the next window may start there. */
  listedAt(ms: number): void {
    if (ms > this.latest) this.latest = Math.min(ms, this.startedMs);
  }

  /** The state after this listing; `changed` when it differs from the one before. */
  next(): ListedShape & { changed: boolean } {
    const watermark = Number.isFinite(this.latest) ? new Date(this.latest).toISOString() : null;
    const accounts = [...this.accounts].sort();
    const folders = [...this.folders].sort();
    const changed = this.full || watermark !== this.before.watermark || this.other !== this.before.other
      || accounts.join() !== this.before.accounts.join() || folders.join() !== this.before.folders.join();
    return { watermark, accounts, folders, other: this.other, changed };
  }
}
