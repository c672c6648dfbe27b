/**
 * Retention (contract §9, `PINGROLL_RETENTION_DAYS`): what pingroll keeps of a day of a closed month
 * only to count it again (its staged pings and rejects, its day index and lists of log objects, the
 * parsed keys and seals of its delivery day, and when a run last checked it) is deleted once the day
 * is that many days old. What
 * was published stays: Parquet, the warehouse, manifests, statements. A day is marked expired in its
 * closes first (a ping that arrives for it after that is `too_late`), then its files go; a run killed
 * in between leaves its mark (`dt=<day>` in EXPIRING), and the next run finishes it.
 */
import { EXPIRING } from '../datasets/layout.js';
import { addDays } from '../lib/utc-day.js';
import type { Closes } from './closes.js';
import type { Ledger } from './ledger.js';
import type { ObjectStore } from './object-store/object-store.js';
import { Checks } from './checks.js';
import type { PingIds } from './ping-ids.js';

/** Days being expired: what went of them, and the delivery days whose parsed keys and seals may go now (the lister's to end: ingest/listing/lister.ts). */
export interface Expiring { days: string[]; files: number; deliveryDays: string[] }

/**
 * Expires the covered days of closed months older than `retentionDays` before `today`, and takes up
 * what a run killed while expiring left: each day is marked (`dt=<day>` in EXPIRING), its closes say
 * so, and what the ledger keeps of it goes. The marks stay until `doneExpiring`, after the lister has
 * ended the delivery days this returns: those whose every day of records (the day and the `lateDays`
 * before it) is expired.
 */
export async function expireDays(store: ObjectStore, ledger: Ledger, closes: Closes, pingIds: PingIds, ask: { today: string; retentionDays: number; lateDays: number; dedupeDays: number }): Promise<Expiring> {
  const cutoff = addDays(ask.today, -ask.retentionDays);
  const due = new Set<string>();
  for (const c of closes.list()) for (const [day, d] of Object.entries(c.days)) if (day < cutoff && !d.expired) due.add(day);
  const days = [...due].sort();
  // Marked first (a file each), then each close that covers them says so.
  for (const day of days) await store.put(`${EXPIRING}dt=${day}`, Buffer.alloc(0));
  const at = new Date().toISOString();
  await closes.recordExpired(due, at);
  const expiring = (await store.list(EXPIRING)).map((k) => k.slice(EXPIRING.length).replace(/^dt=/, '')).sort();
  const isExpired = (day: string): boolean => due.has(day) || expiring.includes(day) || closes.covering(day).some((c) => c.days[day]?.expired !== undefined);
  /** Whether `day` and the `back` days before it are all expired. */
  const expiredBack = (day: string, back: number): boolean => {
    for (let k = 0; k <= back; k++) if (!isExpired(addDays(day, -k))) return false;
    return true;
  };
  let files = 0;
  const deliveryDays: string[] = [];
  for (const day of expiring) {
    files += await ledger.dropExpiredDay(day);
    // No run looks at the day again: when one last did goes too.
    await new Checks(store).forget(day);
    // The ping ids §4's window still needs outlive the day: those of the day W before it go now, when
    // every day that could read them (the W after it, up to this one) is expired too.
    if (expiredBack(day, ask.dedupeDays)) files += await pingIds.expire(addDays(day, -ask.dedupeDays));
    // The delivery day's parsed keys and seals, once no day it can hold records of can be counted again.
    if (expiredBack(day, ask.lateDays)) deliveryDays.push(day);
  }
  return { days: expiring, files, deliveryDays };
}

/** The days' marks go: what `expireDays` and the lister had to do for them is done. */
export async function doneExpiring(store: ObjectStore, days: readonly string[]): Promise<void> {
  for (const day of days) await store.delete(`${EXPIRING}dt=${day}`);
}
