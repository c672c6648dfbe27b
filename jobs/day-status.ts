/**
 * Which days are complete (`pingroll status`): each day has one state, decided from what is
 * published (its manifest), what is staged now (the ledger) and what could not be read (the
 * quarantine). Reading only: nothing is created or changed.
 *
 * - `never run`: the day was never published;
 * - `stale`: staged data for the day has arrived since it was last published (the batches and table
 *   scans it would read now differ from the ones its manifest names): run it again;
 * - `incomplete`: quarantined log objects may hold records of it, a table that should hold it was
 *   missing, or a delivery day that can hold it is listed by no run;
 * - `provisional`: a delivery day that can hold its records (D to D + late days) is still to have its
 *   final full listing (ingest/listing/delivery-days.ts), or it has had it and the day's state is still to be
 *   published as complete (the next run that rolls up does it);
 * - `closed`: its UTC month is closed (contract §9): its figures are the statement's, and what arrives
 *   for it is an adjustment (a zone's close freezes its own statement, never a UTC day's rows);
 * - `complete`: published, every delivery day that can hold it listed in full for the last time, and
 *   everything found parsed and published.
 */
import { dayManifestKey, RUNS } from '../datasets/layout.js';
import { inputsChanged, manifestRepeats, type Manifests } from '../export/manifest.js';
import { dayState } from '../state/completeness.js';
import type { ListedDays } from '../ingest/listing/listing-state.js';
import type { ObjectStore } from '../state/object-store/object-store.js';
import type { RunState } from '../state/run-state.js';

export type DayState = 'complete' | 'provisional' | 'stale' | 'incomplete' | 'closed' | 'never run';

export interface DayStatus {
  day: string;
  state: DayState;
  /** The run that last published it, when, and its pings. */
  run: string | null;
  publishedAt: string | null;
  /** When a run last looked at it: its publication, or a later run that found nothing new (state/checks.ts). */
  checkedAt: string | null;
  pings: number | null;
  /** Survivors its publication left out as repeats of pings counted on other days (contract §4's ping-id window); null: never published, or before the window. */
  repeats: number | null;
  /** When a provisional day expects its last full listing (ISO); null otherwise. */
  finalAt: string | null;
  reason: string;
  /** What keeps the day from being complete, whatever is published (unreadable objects, a missing table, listings to come); null: nothing. */
  blocker: string | null;
}

/** What a day's status is read from: the output's state as loaded (read only), and what the listers know of delivery days. */
export interface StateSnapshot {
  state: Pick<RunState, 'ledger' | 'quarantine' | 'closes' | 'checks' | 'pingIds'>;
  listed: ListedDays;
  manifests: Manifests;
}

export async function dayStatus(state: StateSnapshot, day: string, now: Date): Promise<DayStatus> {
  const { state: { ledger, quarantine, closes, checks, pingIds }, listed, manifests } = state;
  const manifest = await manifests.read(day);
  const inputs = await ledger.inputsFor(day);
  const c = dayState(quarantine, day, { missingTables: manifest?.missingTables ?? [], listed, atMs: now.getTime() }).state;
  const check = manifest ? await checks.last(day) : null;
  const checkedAt = check && check.at > (manifest?.finishedAt ?? '') ? check.at : manifest?.finishedAt ?? null;
  const base = { day, run: manifest?.run ?? null, publishedAt: manifest ? manifest.publishedAt ?? manifest.finishedAt : null, checkedAt, pings: manifest?.pings ?? null,
    repeats: manifest ? manifestRepeats(manifest) : null, finalAt: null, blocker: c.state === 'complete' ? null : c.reason };
  // A day of a closed UTC month is what its statement says: late pings of it are adjustments. A
  // zone's close freezes its statement, not the UTC day's rows (contract §9): such a day goes on as any.
  const closed = closes.holding(day);
  if (closed) {
    const expired = closed.days[day]?.expired;
    return { ...base, state: 'closed', reason: `its month is closed: ${closed.month}${closed.tz === 'UTC' ? '' : ` (${closed.tz})`}, version ${closed.version} of ${closed.closedAt.slice(0, 10)}; `
      + (expired ? `what it was counted from expired on ${expired.slice(0, 10)} (PINGROLL_RETENTION_DAYS): pings that arrive for it are too_late` : 'pings that arrive for it are reported as adjustments') };
  }
  if (!manifest) {
    const waiting = listed.waitingFor(day).filter((w) => !w.followed).map((w) => w.day);
    return { ...base, state: 'never run', reason: inputs.length ? `records of it are staged (${inputs.length} batches or scans); run make rollup DATE=${day}`
      : waiting.length ? `its logs were never listed: no run follows the delivery days ${waiting.join(', ')} (older logs are read only when a backfill asks for them); run make backfill FROM=${day} TO=${day}`
        : 'no record of it has been read or published' };
  }
  const arrived = inputsChanged(manifest, inputs.map((i) => i.id));
  if (arrived !== null) return { ...base, state: 'stale', reason: `${arrived}; run make rollup-stale (or make rollup DATE=${day})` };
  const mark = await pingIds.staleMark(day);
  if (mark) {
    return { ...base, state: 'stale', reason: `${mark.ids} ping id${mark.ids === 1 ? '' : 's'} it holds ${mark.ids === 1 ? 'is' : 'are'} counted otherwise since ${mark.by} was published (${mark.at.slice(0, 16)}Z; the ping-id window, PINGROLL_DEDUPE_DAYS); run make rollup-stale (or make rollup DATE=${day})` };
  }
  // Complete only once it is published so: its daily_runs row and manifest say the same as this.
  if (c.state === 'complete' && manifest.state !== undefined && manifest.state !== 'complete') {
    return { ...base, state: 'provisional', reason: `its final listings are done and found nothing more; the next run that rolls up (make rollup or make rollup-stale) publishes it as complete` };
  }
  return { ...base, state: c.state, finalAt: c.finalAt, reason: c.reason };
}

/** Days with a manifest: every day ever published. */
export async function publishedDays(store: ObjectStore): Promise<string[]> {
  const days = new Set<string>();
  for (const key of await store.list(RUNS)) {
    const day = /^dt=(\d{4}-\d{2}-\d{2})\//.exec(key.slice(RUNS.length))?.[1];
    if (day !== undefined && key === dayManifestKey(day)) days.add(day);
  }
  return [...days].sort();
}
