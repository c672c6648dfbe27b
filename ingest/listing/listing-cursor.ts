/**
 * A lister's cursor over the logs: what its next listing reads (the incremental window and the
 * delivery days due a full listing, ingest/listing/listing-window.ts and delivery-days.ts), and,
 * once everything that listing found is committed, the seals of the slices it saw whole and its saved
 * state. Two whole operations, `plan` before the listing and `settle` after the commits (lister.ts drives both); a crash in
 * between leaves the state as it was, and the next run lists the same again (the ledger knows what it
 * parsed).
 */
import { dayName, dayStartMs, DAY_MS } from '../../lib/utc-day.js';
import { firstWholeDay, ListingTracker, nameTimeMs, windowStart, type ListPlan } from './listing-window.js';
import { daysToList, follows, followFrom, neededDays, recordListed, type ReconcileSchedule } from './delivery-days.js';
import { inheritedListing, listingKey, loadListing, saveListing, type ListingState } from './listing-state.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { Seals, type SliceTally } from './seals.js';
import { SLICE_MS, type Shard } from './slices.js';

export interface CursorOptions {
  /** How far before the latest delivery time seen the next window starts. */
  marginMs: number;
  schedule: ReconcileSchedule;
  /** A shard of several keeps its own state. */
  shard: Shard | null;
}

/** What one listing reads, and what decides what it read whole. */
export interface CursorPlan extends ListPlan {
  /** The lister's own time, ms: the schedule's clock. */
  nowMs: number;
  /** The days asked for (their records can be on delivery days D to D + lateDays): a day outside them and the followed ones is passed over. */
  asked: readonly string[];
}

export class ListingCursor {
  readonly seals: Seals;
  private tracker: ListingTracker | null = null;
  private planned: { plan: CursorPlan; following: ListingState; wanted: Set<string> } | null = null;

  private constructor(private readonly store: ObjectStore, readonly key: string, private readonly state: ListingState, private readonly opts: CursorOptions,
    private readonly expired: ReadonlySet<string>) {
    this.seals = new Seals(store);
  }

  /** Whether a delivery day's parsed keys expired with the days it holds (lister.ts, `expireDeliveryDay`): its objects are never read again. */
  isExpired(day: string): boolean {
    return this.expired.has(day);
  }

  /** The lister's saved state; a shard with none of its own (the first run after the shard count changed) starts where a complete set of earlier listers left off. */
  static async open(store: ObjectStore, opts: CursorOptions, expired: ReadonlySet<string>): Promise<ListingCursor> {
    const key = listingKey(opts.shard && `${opts.shard.index}-of-${opts.shard.count}`);
    const own = await store.get(key);
    const state = own ? await loadListing(store, opts.schedule, key) : opts.shard ? await inheritedListing(store, opts.schedule) : await loadListing(store, opts.schedule, key);
    return new ListingCursor(store, key, state, opts, expired);
  }

  /** The state as loaded. */
  get saved(): ListingState {
    return this.state;
  }

  /**
   * What to list now, asked for `asked` (days whose records are wanted) at `nowMs`, with `force` days
   * listed in full whatever the schedule (`pingroll reconcile`): the window from the watermark (for a
   * lister that starts following, from its first day), and every delivery day due a full listing.
   */
  plan(asked: readonly string[], nowMs: number, force: readonly string[] = []): CursorPlan {
    const { schedule } = this.opts;
    const following: ListingState = { ...this.state, from: followFrom(this.state, asked, nowMs, schedule) };
    const sinceMs = windowStart(this.state.watermark, this.opts.marginMs) ?? (following.from !== null ? dayStartMs(following.from) : null);
    const windowDay = firstWholeDay(sinceMs);
    const today = dayName(Math.floor(nowMs / DAY_MS));
    const days = new Set(daysToList(following, asked, windowDay, nowMs, schedule, this.state));
    for (const d of force) if (d < today && (windowDay === null || d < windowDay)) days.add(d);
    const plan: CursorPlan = { sinceMs, days: [...days].sort(), shard: this.opts.shard, untilMs: nowMs, nowMs, asked };
    const wanted = new Set([...neededDays(asked, today, schedule), ...force, ...days]);
    this.planned = { plan, following, wanted };
    this.tracker = sinceMs === null ? null : new ListingTracker(this.state.watermark, nowMs);
    return plan;
  }

  /**
   * Whether a key's delivery day (`undated` for a key of no delivery-time shape, always wanted) is
   * one this lister follows or was asked for: a directory is listed whole, and what it holds for other
   * days is passed over (and said), as a bucket's older logs are never listed.
   */
  wants(day: string): boolean {
    const p = this.planned!;
    if (this.expired.has(day)) return false;
    return day === 'undated' || p.wanted.has(day) || follows(p.following, day);
  }

  /** A key the listing returned: it may move the next window. */
  saw(key: string): void {
    this.tracker?.saw(key);
    const t = nameTimeMs(key);
    if (t !== null && t > this.newestMs) this.newestMs = t;
  }

  /** The latest delivery time a returned key named, ms (-Infinity: none): how far behind the logs are. */
  newestMs = -Infinity;

  /**
   * Which of the slices the listing saw whole (`tallies`, of wanted days) are sealed once what it
   * found is committed: a directory's all; of a bucket, those of the days listed in full and those
   * the next window will not reach.
   */
  toSeal(tallies: Iterable<SliceTally>, whole: boolean): SliceTally[] {
    const { plan } = this.planned!;
    const next = this.next();
    const nextSince = windowStart(next.watermark, this.opts.marginMs) ?? -Infinity;
    const days = new Set(plan.days);
    return [...tallies].filter((t) => whole || days.has(t.day) || (plan.sinceMs !== null && t.number * SLICE_MS >= plan.sinceMs && (t.number + 1) * SLICE_MS <= nextSince));
  }

  /** The state after the planned listing: the window moved, the days it listed in full recorded. */
  next(): ListingState {
    const { plan, following } = this.planned!;
    // A shard of several lists its own slices up to its own time, each whole: everything named before
    // it was listed, whatever it saw (its own slices may stay empty for long).
    if (plan.shard && plan.shard.count > 1 && this.tracker) this.tracker.listedAt(plan.untilMs);
    const watermark = this.tracker ? this.tracker.watermark() : this.state.watermark;
    const windowDay = firstWholeDay(plan.sinceMs);
    const listed = new Set(plan.days);
    if (windowDay !== null) for (let d = windowDay; d < dayName(Math.floor(plan.nowMs / DAY_MS)); d = dayName(Math.floor(dayStartMs(d) / DAY_MS) + 1)) listed.add(d);
    return { watermark, ...recordListed(following, listed, plan.nowMs, this.opts.schedule) };
  }

  /** Seals `toSeal` and saves the state after the planned listing, once everything it found is committed; how many slices were sealed anew. */
  async settle(toSeal: readonly SliceTally[], fence?: () => Promise<void>): Promise<number> {
    const next = this.next();
    const moved = JSON.stringify(next) !== JSON.stringify(this.state);
    // Only what changed is written: a run that found nothing new (every slice sealed as it saw it, the
    // window where it was) writes nothing here.
    const unsealed: SliceTally[] = [];
    for (const t of toSeal) if (!await this.seals.matches(t)) unsealed.push(t);
    if (!moved && unsealed.length === 0) return 0;
    await fence?.();
    const sealed = await this.seals.sealAll(unsealed);
    if (moved) await saveListing(this.store, next, this.key);
    return sealed;
  }
}
