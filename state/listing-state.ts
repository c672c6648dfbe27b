/**
 * Where the next listing of the logs can start (`_state/listing.json`), so that a run lists what can
 * be new instead of the whole history (ingest/object-source/listing-window.ts). Saved after the batch
 * that parsed what the listing found is committed: a crash before leaves the old state, and the next
 * run lists that stretch again (the ledger knows what it parsed). No state, or a lost one, means one
 * full listing.
 */
import type { ObjectStore } from './object-store/object-store.js';

export const LISTING_KEY = '_state/listing.json';

/**
 * Where a listing's state is kept: a shard of a sharded ingest keeps its own (a shard that fails must
 * not move the others' window past what it did not commit).
 */
export function listingKey(shard: string | null = null): string {
  return shard === null ? LISTING_KEY : `${SHARD_STATES}${shard}.json`;
}

/** Each shard's listing state: `<index>-of-<count>.json`. */
const SHARD_STATES = '_state/listing-shards/';

export interface ListingState {
  /** The latest delivery time named by an object a listing saw (capped at the listing's own time), ISO; null before any. */
  watermark: string | null;
  /** PartitionedPrefix account folders seen (`123456789012/`). */
  accounts: string[];
  /** Folders (relative, `` for the top) where SimplePrefix names have been seen. */
  folders: string[];
  /** Whether keys of neither shape were seen: then every listing is full. */
  other: boolean;
  /** When the logs were last listed whole. */
  fullListingAt: string | null;
}

export const NO_LISTING: ListingState = { watermark: null, accounts: [], folders: [], other: false, fullListingAt: null };

/** The saved state; a missing or unreadable one is none (the next listing is full, which repairs it). */
export async function loadListing(store: ObjectStore, key = LISTING_KEY): Promise<ListingState> {
  const body = await store.get(key);
  try {
    return body ? { ...NO_LISTING, ...(JSON.parse(body.toString('utf8')) as Partial<ListingState>) } : NO_LISTING;
  } catch {
    return NO_LISTING;
  }
}

export async function saveListing(store: ObjectStore, state: ListingState, key = LISTING_KEY): Promise<void> {
  await store.put(key, Buffer.from(JSON.stringify(state, null, 2) + '\n'));
}

/**
 * Where a shard with no state of its own may start (the first run after the shard count changed):
 * from the state of a complete set of earlier listers, one process or every shard of a count, each of
 * which listed everything it owned before its watermark; so before the earliest of them, everything
 * was listed. The most advanced complete set is taken; none, and the shard lists everything.
 */
export async function inheritedListing(store: ObjectStore): Promise<ListingState> {
  const sets = new Map<number, Map<number, ListingState>>();
  for (const key of await store.list(SHARD_STATES)) {
    const m = /^(\d+)-of-(\d+)\.json$/.exec(key.slice(SHARD_STATES.length));
    if (!m) continue;
    const [index, count] = [Number(m[1]), Number(m[2])];
    if (!sets.has(count)) sets.set(count, new Map());
    sets.get(count)!.set(index, await loadListing(store, key));
  }
  const candidates: ListingState[][] = [[await loadListing(store)]];
  for (const [count, states] of sets) if (states.size === count) candidates.push([...states.values()]);
  let best = NO_LISTING;
  for (const states of candidates) {
    if (states.some((s) => s.watermark === null)) continue;
    const watermark = states.map((s) => s.watermark!).sort()[0]!;
    if (best.watermark !== null && watermark <= best.watermark) continue;
    best = {
      watermark, other: states.some((s) => s.other), fullListingAt: states.map((s) => s.fullListingAt ?? '').sort()[0] || null,
      accounts: [...new Set(states.flatMap((s) => s.accounts))].sort(), folders: [...new Set(states.flatMap((s) => s.folders))].sort(),
    };
  }
  return best;
}
