/**
 * Rejects are kept `PINGROLL_REJECTS_RETENTION_DAYS` days after their day, then removed: they hold the
 * records pingroll could not count, raw (ingest/privacy.ts says what of people that can be). Each
 * rollup removes those of days past the limit (a listing of RUNS, two keys a day whatever the
 * volume), and the rejects of no day (UNDATED_REJECTS) by when their batch was made; the
 * deployment's S3 lifecycle rule does the same on its own (by REJECTS_TAGS, from when each was
 * written; the keys and the tags are datasets/layout.ts's).
 * A removed day's manifest still names the file it had; the day's counts by outcome stay in
 * daily_ingest_audit, and a batch's of no day beside its rejects.
 */
import { dayRejectsKey, RUNS, UNDATED_REJECTS } from '../datasets/layout.js';
import { addDays, dayName } from '../lib/utc-day.js';
import type { Log } from '../lib/log.js';
import type { ObjectStore } from '../state/object-store/object-store.js';

/** The day folder of a key under RUNS, `dt=<day>/`: its day. */
const DAY_FOLDER = /^dt=(\d{4}-\d{2}-\d{2})\//;
/**
 * The rejects of records of no day (contract §5, jobs/stages/undated.ts): a file a batch in
 * UNDATED_REJECTS, `<batch>.jsonl.gz`, whose name starts with when the batch was made
 * (`20261101T033012Z-...`), beside the batch's counts (`<batch>.json`, kept as a day's audit is).
 */
const UNDATED = /^(\d{4})(\d{2})(\d{2})T[^/]*\.jsonl\.gz$/;

/** The day of a key under RUNS that is rejects, a day's or of no day (by when its batch was made); null for any other. */
function rejectsDay(key: string): string | null {
  const day = DAY_FOLDER.exec(key.slice(RUNS.length))?.[1];
  if (day !== undefined && key === dayRejectsKey(day)) return day;
  const u = key.startsWith(UNDATED_REJECTS) ? UNDATED.exec(key.slice(UNDATED_REJECTS.length)) : null;
  return u ? `${u[1]}-${u[2]}-${u[3]}` : null;
}

/**
 * Removes the rejects of days more than `days` days before `now`'s day, and those of no day that
 * batches made before then; how many it removed.
 */
export async function expireRejects(store: ObjectStore, days: number, now: Date, log: Log): Promise<number> {
  const last = addDays(dayName(Math.floor(now.getTime() / 86_400_000)), -days);
  let removed = 0;
  for (const key of await store.list(RUNS)) {
    const day = rejectsDay(key);
    if (day !== null && day < last) {
      await store.delete(key);
      removed++;
    }
  }
  if (removed) log.info('rejects.expired', { files: removed, before: last, retentionDays: days });
  return removed;
}
