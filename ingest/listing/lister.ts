/**
 * The lister of the access logs: what S3 names (slices.ts, listing-window.ts), when each delivery day
 * is listed (delivery-days.ts), what it remembers between runs (listing-state.ts, listing-cursor.ts)
 * and what it saw whole (seals.ts), behind whole operations, as a file source's checkpointer is:
 *
 *   open → newObjects (what no committed batch parsed, handed on in chunks) → commit (once all of it is
 *   committed or quarantined: the slices it saw whole sealed, its state saved)
 *
 * A crash before `commit` leaves the state as it was: the next run lists the same again, and the
 * ledger knows what was parsed. Retention ends a delivery day here (`expireDeliveryDay`).
 */
import { EXPIRED_DELIVERY_DAYS } from '../../datasets/layout.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import type { Ledger, ListerRules } from '../../state/ledger.js';
import type { ListPlan, ObjectRef, ObjectSource } from '../object-source/object-source.js';
import { owns } from '../batch/shard.js';
import { ListingCursor, type CursorOptions } from './listing-cursor.js';
import { dropShardListings, ListedDays } from './listing-state.js';
import { dropSeals, SliceTallies, type SliceTally } from './seals.js';
import { formerSliceOf, reachOf, sliceOf, type Reach } from './slices.js';

/** What the ledger takes of the lister: where a log object's parsed key is kept (ledger.ts, `ListerRules`). */
export const LISTER_RULES: ListerRules = { sliceOf, formerSliceOf, forgetShardListings: dropShardListings };

/** What one run asks of the listing: the days whose records it wants, its clock, and delivery days to list in full whatever the schedule. */
export interface ListingAsk {
  /** Days whose records the run wants (their delivery days, D to D + lateDays, are listed if never listed). */
  asked: readonly string[];
  /** The run's clock, ms. */
  nowMs: number;
  /** Delivery days listed in full whatever the schedule (`pingroll reconcile`). */
  force?: readonly string[] | undefined;
}

/** What is known of objects already: parsed by a committed batch (the ledger), or accepted as lost by an operator (the quarantine). */
export interface Known {
  ledger: Pick<Ledger, 'hasParsed'>;
  quarantine: { isAcceptedLost(key: string): boolean };
}

/** What a listing found. */
export interface Listed {
  /** Objects the listing returned (new or not). */
  listed: number;
  /** The delivery days it listed in full (besides the window's). */
  days: readonly string[];
  /** The latest delivery time a returned key named, ISO; null when none named one. */
  newest: string | null;
  /** Where the incremental window started, ISO; null: no window (a first listing of asked days). */
  windowFrom: string | null;
  /** Sealed slices found as sealed: their parsed keys were not read. */
  sealedUnchanged: number;
  /** Objects of delivery days no run has asked for and the lister does not follow (a directory's), passed over: how many, and their days. */
  passedOver: { objects: number; days: string[] };
  /** New objects of the delivery days listed in full (found there, not by the window: they appeared after it had passed their names). */
  late: number;
}

/** Objects of one sealed slice a listing holds while it compares them with the seal; past this they are checked one by one. */
const MAX_HELD = 250_000;

/** Days of passed-over objects a listing names; past this it counts them. */
const MAX_PASSED_OVER_DAYS = 31;

export class Lister {
  /** What the listing saw whole, to seal at `commit`; null before a listing. */
  private toSeal: SliceTally[] | null = null;

  private constructor(private readonly store: ObjectStore, private readonly cursor: ListingCursor, private readonly opts: CursorOptions) {}

  /** The lister's saved state; a shard with none of its own (the first run after the shard count changed) starts where a complete set of earlier listers left off. */
  static async open(store: ObjectStore, opts: CursorOptions): Promise<Lister> {
    return new Lister(store, await ListingCursor.open(store, opts, await expiredDeliveryDays(store)), opts);
  }

  /**
   * Lists the log objects no committed batch has parsed and no operator has accepted as lost: the
   * window, the delivery days due a full listing, a shard's own slices (slices.ts). They are handed to
   * `take` in chunks of at most `chunk`, each in key order, as the listing goes. A source with no plan
   * of its own (a directory) is listed whole, and its objects of days the lister does not want passed over.
   *
   * The objects of each sealed slice (seals.ts) are held until the slice's keys end, and the ledger
   * asked about them only when they are not what the seal says: a full listing of a delivery day reads
   * the parsed keys of the slices that changed, not of the whole day.
   */
  async newObjects(source: ObjectSource, ask: ListingAsk & { known: Known; chunk: number }, take: (refs: ObjectRef[]) => Promise<void>): Promise<Listed> {
    const { cursor } = this;
    const shard = this.opts.shard;
    const plan: ListPlan = cursor.plan(ask.asked, ask.nowMs, ask.force);
    const { ledger, quarantine } = ask.known;
    const whole = source.listing === 'whole';
    const refs = source.listPlanned(plan);
    const seals = cursor.seals;
    const tallies = new SliceTallies();
    let todo: ObjectRef[] = [];
    let listed = 0, sealedUnchanged = 0, late = 0;
    const inFull = new Set(plan.days);
    const passedOver = { objects: 0, days: new Set<string>() };
    const flush = async (): Promise<void> => {
      // In key order, each key once (a key two parts of a plan both listed is parsed once).
      todo.sort(byKey);
      const once = todo.filter((r, i) => i === 0 || r.key !== todo[i - 1]!.key);
      todo = [];
      // A source that named its objects alone (a directory) gives their sizes now, of these alone.
      const described = source.describe ? source.describe(once) : once;
      if (described.length) await take(described);
    };
    const consider = async (ref: ObjectRef): Promise<void> => {
      if ((await ledger.hasParsed(ref.key)) || quarantine.isAcceptedLost(ref.key)) return;
      if (inFull.has(sliceOf(ref.key).day)) late++;
      todo.push(ref);
      if (todo.length >= ask.chunk) await flush();
    };
    // The sealed slice whose objects are held, and the slices whose run of keys ended.
    let held: { tally: SliceTally; refs: ObjectRef[] | null } | null = null;
    const ended = new Set<SliceTally>();
    const release = async (): Promise<void> => {
      const h = held!;
      held = null;
      ended.add(h.tally);
      if (h.refs === null) return;
      if (await seals.matches(h.tally)) sealedUnchanged++;
      else for (const ref of h.refs) await consider(ref);
    };
    for await (const ref of refs) {
      listed++;
      cursor.saw(ref.key);
      // Which listing reaches the key (slices.ts): its owner, and whether a slice's listing is the
      // one; worked out once, and for one process only for what it tallies.
      let reach: Reach | null | undefined;
      if (shard && !owns(shard, ref.key, (reach = reachOf(ref.key)))) continue;
      const s = sliceOf(ref.key);
      // Objects of a delivery day retention expired are read never again (their records' days are closed and gone).
      if (cursor.isExpired(s.day)) continue;
      if (!cursor.wants(s.day)) {
        passedOver.objects++;
        if (passedOver.days.size < MAX_PASSED_OVER_DAYS) passedOver.days.add(s.day);
        continue;
      }
      // A stray is not its slice's listing's to tally: a walk found it.
      const t = (reach === undefined ? reachOf(ref.key) : reach)?.stray ? null : tallies.add(ref.key, ref.etag, s);
      if (t) {
        if (held && held.tally !== t) await release();
        if (!held && !ended.has(t) && (await seals.has(t.day, t.slice))) held = { tally: t, refs: [] };
        if (held?.tally === t) {
          if (held.refs === null) await consider(ref);
          else if (held.refs.push(ref) > MAX_HELD) {
            // Too many to hold: checked one by one, as an unsealed slice's are.
            for (const r of held.refs) await consider(r);
            held.refs = null;
          }
          continue;
        }
      }
      await consider(ref);
    }
    if (held) await release();
    if (todo.length) await flush();
    this.toSeal = cursor.toSeal(tallies.values(), whole);
    return {
      listed, days: plan.days, sealedUnchanged, late,
      newest: Number.isFinite(cursor.newestMs) ? new Date(cursor.newestMs).toISOString() : null,
      windowFrom: plan.sinceMs === null ? null : new Date(plan.sinceMs).toISOString(),
      passedOver: { objects: passedOver.objects, days: [...passedOver.days].sort() },
    };
  }

  /**
   * Once everything the listing found is committed or quarantined: seals the slices it saw whole and
   * saves its state, after `fence` (the run still holds its lock). How many slices were sealed anew;
   * nothing is written when nothing changed.
   */
  async commit(fence?: () => Promise<void>): Promise<number> {
    if (this.toSeal === null) throw new Error('the lister commits a listing it made: newObjects first');
    return this.cursor.settle(this.toSeal, fence);
  }

  /** What the listers know of delivery days, this lister's counted as its listing leaves it (saved by `commit`, which may still be under way). */
  listedDays(): Promise<ListedDays> {
    return ListedDays.load(this.store, this.opts.schedule, { key: this.cursor.key, state: this.cursor.next() });
  }
}

function byKey(a: ObjectRef, b: ObjectRef): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** The delivery days retention ended (EXPIRED_DELIVERY_DAYS): their log objects are never listed or read again. */
export async function expiredDeliveryDays(store: ObjectStore): Promise<Set<string>> {
  const body = await store.get(EXPIRED_DELIVERY_DAYS);
  return new Set(body ? (JSON.parse(body.toString('utf8')) as { days: string[] }).days : []);
}

/**
 * Ends a delivery day (retention, once no day it can hold records of is counted again): recorded as
 * expired first (a listing that found its objects with no parsed keys would read them all again), then
 * its parsed keys (the ledger's) and its seals go. How many files went; done again whole after a crash.
 */
export async function expireDeliveryDay(store: ObjectStore, ledger: Pick<Ledger, 'dropParsedDay'>, day: string): Promise<number> {
  const known = await expiredDeliveryDays(store);
  if (!known.has(day)) await store.put(EXPIRED_DELIVERY_DAYS, Buffer.from(JSON.stringify({ days: [...known, day].sort() }) + '\n'));
  return (await ledger.dropParsedDay(day)) + (await dropSeals(store, day));
}
