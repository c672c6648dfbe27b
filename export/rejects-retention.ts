/**
 * Rejects are kept `PINGROLL_REJECTS_RETENTION_DAYS` days after their day, then removed: they hold the
 * records pingroll could not count, raw (ingest/privacy.ts says what of people that can be). Each
 * rollup removes those of days past the limit (a listing of `_runs/`, two keys a day whatever the
 * volume); the deployment's S3 lifecycle rule does the same on its own. A removed day's manifest still
 * names the file it had; the day's counts by outcome stay in daily_ingest_audit.
 */
import { addDays, dayName } from '../lib/utc-day.js';
import type { Log } from '../lib/log.js';
import type { ObjectStore } from '../state/object-store/object-store.js';

/** The tags a day's rejects are written with: an S3 lifecycle rule selects them by these (deploy/). */
export const REJECTS_TAGS = { 'pingroll-kind': 'rejects' };

const REJECTS = /^_runs\/dt=(\d{4}-\d{2}-\d{2})\/rejects\.jsonl\.gz$/;

/** Removes the rejects of days more than `days` days before `now`'s day; how many it removed. */
export async function expireRejects(store: ObjectStore, days: number, now: Date, log: Log): Promise<number> {
  const last = addDays(dayName(Math.floor(now.getTime() / 86_400_000)), -days);
  let removed = 0;
  for (const key of await store.list('_runs/')) {
    const m = REJECTS.exec(key);
    if (m && m[1]! < last) {
      await store.delete(key);
      removed++;
    }
  }
  if (removed) log.info('rejects.expired', { files: removed, before: last, retentionDays: days });
  return removed;
}
