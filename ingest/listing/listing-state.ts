/**
 * What a lister remembers of the logs (LISTING_KEY, or a shard's own in LISTING_SHARDS): where its next
 * incremental listing starts (ingest/listing/listing-window.ts) and which delivery days it
 * follows and has listed in full (ingest/listing/delivery-days.ts). Saved after the batches that parsed what a
 * listing found are committed: a crash before leaves the old state, and the next run lists that
 * stretch again (the ledger knows what it parsed).
 */
import { LISTING_KEY, LISTING_SHARDS } from '../../datasets/layout.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { addDays, DAY_MS, dayName } from '../../lib/utc-day.js';
import { finalDueMs, follows, isFinal, NO_DELIVERY_DAYS, together, type DeliveryDays, type ReconcileSchedule } from './delivery-days.js';

/**
 * Where a listing's state is kept: a shard of a sharded ingest keeps its own (a shard that fails must
 * not move the others' window past what it did not commit).
 */
export function listingKey(shard: string | null = null): string {
  return shard === null ? LISTING_KEY : `${LISTING_SHARDS}${shard}.json`;
}

export interface ListingState extends DeliveryDays {
  /** The latest delivery time named by an object a listing saw (capped at the listing's own time), ISO; null before any. */
  watermark: string | null;
}

export const NO_LISTING: ListingState = { watermark: null, ...NO_DELIVERY_DAYS };

/** The state as a run written before delivery days were followed left it (no `from`). */
interface ListingStateV1 { watermark: string | null; fullListingAt?: string | null }

/**
 * The saved state; a missing or unreadable one is none. A state written before delivery days were
 * followed (every run then listed from the watermark, and a reconciliation everything) is taken as
 * following every day: those whose final listing was due before its last full listing are final, the
 * rest follow on the schedule from the day after.
 */
export async function loadListing(store: ObjectStore, schedule: ReconcileSchedule, key = LISTING_KEY): Promise<ListingState> {
  const body = await store.get(key);
  let saved: Partial<ListingState> & ListingStateV1;
  try {
    saved = body ? (JSON.parse(body.toString('utf8')) as Partial<ListingState> & ListingStateV1) : { watermark: null };
  } catch {
    return NO_LISTING;
  }
  const watermark = saved.watermark ?? null;
  if (saved.from !== undefined || watermark === null) {
    return { watermark, from: saved.from ?? null, final: saved.final ?? [], listed: saved.listed ?? {} };
  }
  const listedAllAt = Date.parse(saved.fullListingAt ?? watermark);
  let last = Math.floor(listedAllAt / DAY_MS);
  while (finalDueMs(dayName(last), schedule) > listedAllAt) last--;
  return { watermark, from: dayName(last + 1), final: [['1970-01-01', dayName(last)]], listed: {} };
}

export async function saveListing(store: ObjectStore, state: ListingState, key = LISTING_KEY): Promise<void> {
  const { watermark, from, final, listed } = state;
  await store.put(key, Buffer.from(JSON.stringify({ watermark, from, final, listed }, null, 2) + '\n'));
}

/**
 * Forgets every shard's listing state: each shard lists in full once. The ledger's migration from
 * format 1 asks for it (shards owned keys by object then; they own them by slice now), after the
 * parsed keys and days entries it rewrites are in place.
 */
export async function dropShardListings(store: ObjectStore): Promise<void> {
  for (const key of await store.list(LISTING_SHARDS)) await store.delete(key);
}

/** Every lister's saved state, by its key: the single process's and each shard's. */
async function listerStates(store: ObjectStore, schedule: ReconcileSchedule): Promise<Map<string, ListingState>> {
  const out = new Map<string, ListingState>();
  if (await store.get(LISTING_KEY)) out.set(LISTING_KEY, await loadListing(store, schedule));
  for (const key of await store.list(LISTING_SHARDS)) if (SHARD_STATE.test(key.slice(LISTING_SHARDS.length))) out.set(key, await loadListing(store, schedule, key));
  return out;
}

const SHARD_STATE = /^(\d+)-of-(\d+)\.json$/;

/**
 * The listers whose states together cover the logs: the single process's, and each complete set of
 * shards (every shard of one count). A shard of N lists only its own slices, so a day it lists in
 * full is listed in full only once every shard of N has.
 */
function completeSets(states: Map<string, ListingState>): ListingState[][] {
  const out: ListingState[][] = [];
  const byCount = new Map<number, ListingState[]>();
  for (const [key, state] of states) {
    if (key === LISTING_KEY) {
      out.push([state]);
      continue;
    }
    const m = SHARD_STATE.exec(key.slice(LISTING_SHARDS.length))!;
    const count = Number(m[2]);
    byCount.set(count, [...(byCount.get(count) ?? []), state]);
  }
  for (const [count, set] of byCount) if (set.length === count) out.push(set);
  return out;
}

/** What a set of listers knows together: its watermark is the earliest (before it, each listed its own share), its delivery days each says. */
export function combined(states: readonly ListingState[]): ListingState {
  if (states.length === 1) return states[0]!;
  const watermark = states.some((s) => s.watermark === null) ? null : states.map((s) => s.watermark!).sort()[0]!;
  return { watermark, ...together(states) };
}

/**
 * Where a shard with no state of its own may start (the first run after the shard count changed):
 * from the state of a complete set of earlier listers, one process or every shard of a count. Before
 * the earliest of their watermarks everything was listed, and a day each of them listed in full was
 * listed in full. The most advanced complete set is taken; none, and the shard starts afresh.
 */
export async function inheritedListing(store: ObjectStore, schedule: ReconcileSchedule): Promise<ListingState> {
  let best = NO_LISTING;
  for (const set of completeSets(await listerStates(store, schedule))) {
    const c = combined(set);
    if (c.watermark !== null && (best.watermark === null || c.watermark > best.watermark)) best = c;
  }
  return best;
}


/**
 * What the listers together know of delivery days (for `pingroll status`, `daily_runs` and the
 * manifest): a delivery day is final once one complete set of listers (one process, or every shard
 * of a count) has made its final listing. `own` puts a run's state after its listing in place of the
 * one saved (a run publishes its day while its state is being saved).
 */
export class ListedDays {
  private constructor(private readonly sets: ListingState[], readonly schedule: ReconcileSchedule) {}

  static async load(store: ObjectStore, schedule: ReconcileSchedule, own?: { key: string; state: ListingState }): Promise<ListedDays> {
    const states = await listerStates(store, schedule);
    if (own) states.set(own.key, own.state);
    return new ListedDays(completeSets(states).map(combined), schedule);
  }

  isFinal(day: string): boolean {
    return this.sets.some((s) => isFinal(s, day));
  }

  /**
   * The delivery days that can hold records of `day` (D to D + lateDays) whose final listing is still
   * to come, each with when it is due (ms), and whether any lister follows it (none: only a backfill
   * or `pingroll reconcile` of it will list it).
   */
  /**
   * The delivery days that can hold records of `day` (D to D + lateDays, up to `today`) that no lister
   * has listed or follows: no run's listing can have found their objects. A rollup from what others
   * staged (`--no-ingest`) would publish the day without them.
   */
  neverListed(day: string, today: string): string[] {
    return this.waitingFor(day).filter((w) => !w.followed && w.day <= today).map((w) => w.day);
  }

  waitingFor(day: string): Array<{ day: string; dueMs: number; followed: boolean }> {
    const out: Array<{ day: string; dueMs: number; followed: boolean }> = [];
    for (let i = 0; i <= this.schedule.lateDays; i++) {
      const d = addDays(day, i);
      if (!this.isFinal(d)) out.push({ day: d, dueMs: finalDueMs(d, this.schedule), followed: this.sets.some((s) => follows(s, d)) });
    }
    return out;
  }
}
