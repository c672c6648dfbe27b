/**
 * How complete a day is (contract §8): the one rule that a day's `daily_runs` state (as it is
 * published) and `pingroll status` (at any time) both follow.
 */
import type { HeldObjects, Quarantine } from './quarantine.js';

/** What a day is as it is published (contract §8): its `daily_runs` state. */
export type PublishedState = 'complete' | 'provisional' | 'incomplete';

/** A day's completeness: its state, why it is not complete, and when a provisional day expects to be final (ISO). */
export interface Completeness { state: PublishedState; reason: string; finalAt: string | null }

/** A delivery day whose final full listing is still to come (ingest/listing/listing-state.ts, ListedDays.waitingFor). */
export interface Waiting { day: string; dueMs: number; followed: boolean }

/**
 * How complete a published day is: `incomplete` when unreadable log objects may hold records of it,
 * a table that should hold it was missing, or a delivery day that can hold it is listed by no run;
 * `provisional` while the final full listing of a delivery day that can hold it is still to come;
 * else `complete`. The one rule `daily_runs` (as a day is published) and `pingroll status` (at any
 * time) both follow.
 */
export function completeness(quarantinedKeys: string[], missingTables: string[], waiting: readonly Waiting[], nowMs: number): Completeness {
  const n = quarantinedKeys.length;
  if (n) return { state: 'incomplete', finalAt: null, reason: `${n} unreadable log object${n > 1 ? 's' : ''} may hold records of it (first: ${quarantinedKeys[0]}); see pingroll quarantine list` };
  if (missingTables.length) return { state: 'incomplete', finalAt: null, reason: `the table${missingTables.length > 1 ? 's' : ''} ${missingTables.join(', ')} that should hold it did not exist` };
  const unfollowed = waiting.filter((w) => !w.followed).map((w) => w.day);
  if (unfollowed.length) {
    return { state: 'incomplete', finalAt: null, reason: `no run lists the delivery day${unfollowed.length > 1 ? 's' : ''} ${unfollowed.join(', ')} that can hold its records; run pingroll reconcile --from ${unfollowed[0]} --to ${unfollowed[unfollowed.length - 1]}` };
  }
  if (waiting.length === 0) return { state: 'complete', finalAt: null, reason: '' };
  const last = waiting.reduce((a, b) => (b.dueMs > a.dueMs ? b : a));
  const at = new Date(last.dueMs).toISOString();
  const days = waiting.map((w) => w.day).join(', ');
  return {
    state: 'provisional', finalAt: at,
    reason: last.dueMs > nowMs
      ? `waiting for the final full listing of delivery day${waiting.length > 1 ? 's' : ''} ${days}, due ${at.slice(0, 16)}Z (the first run after it makes it)`
      : `the final full listing of delivery day${waiting.length > 1 ? 's' : ''} ${days} was due ${at.slice(0, 16)}Z: the next run makes it`,
  };
}

/**
 * A day's state as it is now: what the quarantine holds of it, and its completeness from those
 * objects, the tables missing and the delivery days still to come (`listed.waitingFor`). The one way
 * the rollup, the rule for an unchanged day, the state published alone and `status` work it out.
 */
export function dayState(quarantine: Pick<Quarantine, 'forDay'>, day: string, now: { missingTables: readonly string[]; listed: { waitingFor(day: string): readonly Waiting[] }; atMs: number }): { held: HeldObjects; state: Completeness } {
  const held = quarantine.forDay(day);
  return { held, state: completeness(held.quarantined.map((o) => o.key), [...now.missingTables], now.listed.waitingFor(day), now.atMs) };
}
