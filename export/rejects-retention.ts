/**
 * Rejects are kept `PINGROLL_REJECTS_RETENTION_DAYS` days after their day, then removed: they hold the
 * records pingroll could not count, raw (ingest/privacy.ts says what of people that can be). Each
 * rollup removes those of days past the limit (a listing of `_runs/`, two keys a day whatever the
 * volume), and the rejects of no day (`_runs/undated/`) by when their batch was made; the
 * deployment's S3 lifecycle rule does the same on its own (by the tag, from when each was written).
 * A removed day's manifest still names the file it had; the day's counts by outcome stay in
 * daily_ingest_audit, and a batch's of no day beside its rejects.
 */
import { addDays, dayName } from '../lib/utc-day.js';
import type { Log } from '../lib/log.js';
import type { ObjectStore } from '../state/object-store/object-store.js';

/** The tags a day's rejects are written with: an S3 lifecycle rule selects them by these (deploy/). */
export const REJECTS_TAGS = { 'pingroll-kind': 'rejects' };

/**
 * Where the rejects of records of no day are (contract §5, jobs/stages/undated.ts): a file a batch,
 * `<batch>.jsonl.gz`, whose name starts with when the batch was made (`20261101T033012Z-...`), beside
 * the batch's counts (`<batch>.json`, kept as a day's audit is).
 */
export const UNDATED_REJECTS = '_runs/undated/';

const REJECTS = /^_runs\/dt=(\d{4}-\d{2}-\d{2})\/rejects\.jsonl\.gz$/;
const UNDATED = /^_runs\/undated\/(\d{4})(\d{2})(\d{2})T[^/]*\.jsonl\.gz$/;

/**
 * Removes the rejects of days more than `days` days before `now`'s day, and those of no day that
 * batches made before then; how many it removed.
 */
export async function expireRejects(store: ObjectStore, days: number, now: Date, log: Log): Promise<number> {
  const last = addDays(dayName(Math.floor(now.getTime() / 86_400_000)), -days);
  let removed = 0;
  for (const key of await store.list('_runs/')) {
    const m = REJECTS.exec(key);
    const u = m ? null : UNDATED.exec(key);
    const day = m ? m[1]! : u ? `${u[1]}-${u[2]}-${u[3]}` : null;
    if (day !== null && day < last) {
      await store.delete(key);
      removed++;
    }
  }
  if (removed) log.info('rejects.expired', { files: removed, before: last, retentionDays: days });
  return removed;
}
