/**
 * Retention (contract §9, `PINGROLL_RETENTION_DAYS`): what pingroll keeps of a day of a closed month
 * only to count it again (its staged pings and rejects, its day index and lists of log objects, the
 * parsed keys and seals of its delivery day, and when a run last checked it) is deleted once the day
 * is that many days old. What
 * was published stays: Parquet, the warehouse, manifests, statements. A day is marked expired in its
 * closes first (a ping that arrives for it after that is `too_late`), then its files go; a run killed
 * in between leaves its mark (`dt=<day>` in EXPIRING), and the next run finishes it.
 */
import { EXPIRED_DELIVERY_DAYS, EXPIRING } from '../datasets/layout.js';
import { dropSeals } from './seals.js';
import { addDays } from '../lib/utc-day.js';
import type { Closes } from './closes.js';
import type { Ledger } from './ledger.js';
import type { ObjectStore } from './object-store/object-store.js';
import { forgetCheck } from './checks.js';

/** The delivery days whose parsed keys and seals retention deleted (EXPIRED_DELIVERY_DAYS): their log objects are never listed or read again. */
export async function expiredDeliveryDays(store: ObjectStore): Promise<Set<string>> {
  const body = await store.get(EXPIRED_DELIVERY_DAYS);
  return new Set(body ? (JSON.parse(body.toString('utf8')) as { days: string[] }).days : []);
}

export interface Expired { days: string[]; files: number }

/**
 * Expires the covered days of closed months older than `retentionDays` before `today`, and finishes
 * what a run killed while expiring left. `lateDays`: a delivery day's parsed keys and seals go only
 * once it and the days before it whose records it can hold are all expired.
 */
export async function expireDays(store: ObjectStore, ledger: Ledger, closes: Closes, today: string, retentionDays: number, lateDays: number): Promise<Expired> {
  const cutoff = addDays(today, -retentionDays);
  const due = new Set<string>();
  for (const c of closes.list()) for (const [day, d] of Object.entries(c.days)) if (day < cutoff && !d.expired) due.add(day);
  const days = [...due].sort();
  // Marked first (a file each), then each close that covers them says so.
  for (const day of days) await store.put(`${EXPIRING}dt=${day}`, Buffer.alloc(0));
  const at = new Date().toISOString();
  await closes.recordExpired(due, at);
  const expiring = (await store.list(EXPIRING)).map((k) => k.slice(EXPIRING.length).replace(/^dt=/, '')).sort();
  const isExpired = (day: string): boolean => due.has(day) || expiring.includes(day) || closes.covering(day).some((c) => c.days[day]?.expired !== undefined);
  let files = 0;
  for (const day of expiring) {
    files += await ledger.dropExpiredDay(day);
    // No run looks at the day again: when one last did goes too.
    await forgetCheck(store, day);
    // The delivery day's parsed keys and seals, once no day it can hold records of can be counted again.
    let held = true;
    for (let back = 0; back <= lateDays; back++) held &&= isExpired(addDays(day, -back));
    if (held) {
      // Recorded first: a listing that found the day's objects with no parsed keys would read them all again.
      const known = await expiredDeliveryDays(store);
      if (!known.has(day)) await store.put(EXPIRED_DELIVERY_DAYS, Buffer.from(JSON.stringify({ days: [...known, day].sort() }) + '\n'));
      files += await ledger.dropParsedDay(day);
      files += await dropSeals(store, day);
    }
    await store.delete(`${EXPIRING}dt=${day}`);
  }
  return { days: expiring, files };
}
