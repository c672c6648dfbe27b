/**
 * Delivery days and their full listings (contract §8): what makes a day `complete` rather than
 * `provisional`, and which delivery days a run lists in full.
 *
 * S3 names a log object by its delivery time (or, with PartitionedPrefix, puts it in a date folder),
 * and the incremental listing (listing-window.ts) lists only names after the latest it saw, less a
 * margin. An object that appears later under an older name (replication into a log-archive account,
 * a copy, a restore) is behind that window. So every delivery day is also listed in full, by prefix,
 * on a schedule: `afterMs` after the day ends (by default 2 hours, 1 day and 3 days). The last of
 * those is its final listing. A day D is complete once every delivery day that can hold its records,
 * D through D + `lateDays`, has had its final listing, and everything found is parsed and published.
 *
 * What a lister (one process, or one shard of N) remembers of this, in its listing state:
 * - `from`: the first delivery day it follows. Every day from there on is listed, by the incremental
 *   window as it happens and in full on the schedule. Days before are listed only when a run asks for
 *   them (a backfill, the first run): a bucket that holds years of logs is not read whole.
 * - `final`: the delivery days whose final listing is done, as ranges of days.
 * - `listed`: for the other days listed in full, when the latest such listing started.
 *
 * Everything here is pure: days are `YYYY-MM-DD`, instants epoch ms.
 */
import { addDays, DAY_MS, dayName, dayNumber, dayStartMs } from '../../lib/utc-day.js';

export interface ReconcileSchedule {
  /** When each delivery day is listed in full, after it ends, ascending (ms); the last is its final listing. */
  afterMs: readonly number[];
  /** Delivery days after a day that can still hold its records: D through D + lateDays (S3's documented tail: 2). */
  lateDays: number;
}

export const HOUR_MS = 3_600_000;

export const DEFAULT_SCHEDULE: ReconcileSchedule = { afterMs: [2 * HOUR_MS, DAY_MS, 3 * DAY_MS], lateDays: 2 };

/** What a lister remembers of its delivery days (part of its listing state). */
export interface DeliveryDays {
  /** The first delivery day followed on the schedule; null before any. */
  from: string | null;
  /** Delivery days whose final listing is done: sorted, disjoint, non-adjacent ranges `[first, last]`. */
  final: Array<[string, string]>;
  /** Other delivery days listed in full: when the latest such listing started (ISO). */
  listed: Record<string, string>;
}

export const NO_DELIVERY_DAYS: DeliveryDays = { from: null, final: [], listed: {} };

/** When a delivery day's final full listing is due. */
export function finalDueMs(day: string, schedule: ReconcileSchedule): number {
  return dayStartMs(day) + DAY_MS + schedule.afterMs[schedule.afterMs.length - 1]!;
}

export function isFinal(state: DeliveryDays, day: string): boolean {
  return state.final.some(([a, b]) => a <= day && day <= b);
}

/** When the latest full listing of `day` started, ms; -Infinity when none is known (a final day: +Infinity). */
function listedAt(state: DeliveryDays, day: string): number {
  if (isFinal(state, day)) return Infinity;
  const at = state.listed[day];
  return at === undefined ? -Infinity : Date.parse(at);
}

/** Whether a listing of `day` in full is due at `nowMs`: one of its scheduled listings is past and none has been made since. */
export function listingDue(state: DeliveryDays, day: string, nowMs: number, schedule: ReconcileSchedule): boolean {
  const end = dayStartMs(day) + DAY_MS;
  const last = listedAt(state, day);
  return schedule.afterMs.some((after) => end + after <= nowMs && last < end + after);
}

/** When the next scheduled listing of `day` is due, ms; null when it is final. */
export function nextListingMs(state: DeliveryDays, day: string, schedule: ReconcileSchedule): number | null {
  const end = dayStartMs(day) + DAY_MS;
  const last = listedAt(state, day);
  const next = schedule.afterMs.find((after) => last < end + after);
  return next === undefined ? null : end + next;
}

/** Whether the lister follows `day`: it is on or after `from`, or was listed in full before it. */
export function follows(state: DeliveryDays, day: string): boolean {
  return (state.from !== null && day >= state.from) || isFinal(state, day) || state.listed[day] !== undefined;
}

/**
 * The delivery days a run must list in full, given the days it is asked for (their records can be
 * on delivery days D through D + lateDays, up to today) and the days its incremental window lists
 * whole (from `windowDay` on; null: none): every followed day whose scheduled listing is due, and
 * every day asked for that the lister did not follow before (`before`: the state as saved; a day it
 * followed was listed by its windows as it was delivered). Oldest first.
 */
export function daysToList(state: DeliveryDays, asked: readonly string[], windowDay: string | null, nowMs: number, schedule: ReconcileSchedule, before: DeliveryDays = state): string[] {
  const today = dayName(Math.floor(nowMs / DAY_MS));
  const out = new Set<string>();
  const outsideWindow = (d: string): boolean => d < today && (windowDay === null || d < windowDay);
  for (const d of neededDays(asked, today, schedule)) if (outsideWindow(d) && !follows(before, d)) out.add(d);
  // Every followed day not final: those from `from` to yesterday, and any listed outside it.
  const candidates = new Set(Object.keys(state.listed));
  if (state.from !== null) for (let n = dayNumber(state.from); n < dayNumber(today); n++) {
    const d = dayName(n);
    const range = state.final.find(([a, b]) => a <= d && d <= b);
    if (range) n = dayNumber(range[1]);
    else candidates.add(d);
  }
  for (const d of candidates) if (outsideWindow(d) && listingDue(state, d, nowMs, schedule)) out.add(d);
  return [...out].sort();
}

/** The delivery days that can hold records of the days asked for: each D through D + lateDays, up to today. */
export function neededDays(asked: readonly string[], today: string, schedule: ReconcileSchedule): string[] {
  const out = new Set<string>();
  for (const day of asked) for (let i = 0; i <= schedule.lateDays; i++) {
    const d = addDays(day, i);
    if (d <= today) out.add(d);
  }
  return [...out].sort();
}

/**
 * Where a lister starts following (`from`) when it asks for days it does not follow: a day asked for
 * whose delivery days are not all past their final listing must be followed on the schedule, from the
 * earliest day asked (a gap between it and an earlier `from` is a few days at most, since every day
 * in it is recent). Days whose final listings are all due already are listed once, and need no
 * following. The same `from` when nothing changes.
 */
export function followFrom(state: DeliveryDays, asked: readonly string[], nowMs: number, schedule: ReconcileSchedule): string | null {
  const today = dayName(Math.floor(nowMs / DAY_MS));
  let from = state.from;
  for (const day of [...asked].sort()) {
    if (from !== null && day >= from) continue;
    const recent = neededDays([day], today, schedule).some((d) => finalDueMs(d, schedule) > nowMs) || addDays(day, schedule.lateDays) > today;
    if (recent) from = from === null || day < from ? day : from;
  }
  return from;
}

/**
 * The state after a listing that started at `atMs` and listed `days` in full: each gets that time;
 * those it makes final join `final`.
 */
export function recordListed(state: DeliveryDays, days: Iterable<string>, atMs: number, schedule: ReconcileSchedule): DeliveryDays {
  const listed = { ...state.listed };
  const final = [...state.final];
  const at = new Date(atMs).toISOString();
  for (const day of days) {
    if (isFinal({ ...state, final }, day)) continue;
    if (atMs >= finalDueMs(day, schedule)) {
      delete listed[day];
      final.push([day, day]);
    } else if (listed[day] === undefined || Date.parse(listed[day]!) < atMs) {
      listed[day] = at;
    }
  }
  return { from: state.from, final: mergeRanges(final), listed };
}

/** Ranges of days sorted and merged (overlapping or adjacent ones become one). */
export function mergeRanges(ranges: Array<[string, string]>): Array<[string, string]> {
  const sorted = ranges.map(([a, b]) => [a, b] as [string, string]).sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  const out: Array<[string, string]> = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && dayNumber(a) <= dayNumber(last[1]) + 1) {
      if (b > last[1]) last[1] = b;
    } else out.push([a, b]);
  }
  return out;
}

/** The days in both lists of ranges. */
export function intersectRanges(x: Array<[string, string]>, y: Array<[string, string]>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [a, b] of x) for (const [c, d] of y) {
    const lo = a > c ? a : c, hi = b < d ? b : d;
    if (lo <= hi) out.push([lo, hi]);
  }
  return mergeRanges(out);
}

/**
 * What several listers (every shard of one count) know together: a day is final, or was listed at
 * some time, only when each of them says so (the earliest time); they follow from the latest `from`.
 */
export function together(states: readonly DeliveryDays[]): DeliveryDays {
  if (states.length === 0) return NO_DELIVERY_DAYS;
  if (states.length === 1) return states[0]!;
  const from = states.some((s) => s.from === null) ? null : states.map((s) => s.from!).sort().pop()!;
  const final = states.slice(1).reduce((acc, s) => intersectRanges(acc, s.final), states[0]!.final);
  // A day listed (not final) by one of them: listed together at the earliest time, if every one has it listed or final.
  const listed: Record<string, string> = {};
  const days = new Set(states.flatMap((s) => Object.keys(s.listed)));
  for (const day of days) {
    if (isFinal({ from, final, listed: {} }, day)) continue;
    const times = states.map((s) => (isFinal(s, day) ? Infinity : s.listed[day] ? Date.parse(s.listed[day]!) : -Infinity));
    const earliest = Math.min(...times);
    if (Number.isFinite(earliest)) listed[day] = new Date(earliest).toISOString();
  }
  return { from, final, listed };
}
