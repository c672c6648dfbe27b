/**
 * Which days are complete (`pingroll status`): each day has one state, decided from what is
 * published (its manifest), what is staged now (the ledger) and what could not be read (the
 * quarantine). Reading only: nothing is created or changed.
 *
 * - `never run`: the day was never published;
 * - `stale`: staged data for the day has arrived since it was last published (the batches and table
 *   scans it would read now differ from the ones its manifest names): run it again;
 * - `incomplete`: quarantined log objects may hold records of it, a table that should hold it was
 *   missing, or it ended less than DELIVERY_DELAY_MS ago (S3 delivers log records hours late);
 * - `complete`.
 */
import { inputsChanged, readManifest } from '../../export/manifest.js';
import { incompleteReason } from '../../export/day-runs.js';
import type { Ledger } from '../../state/ledger.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import type { Quarantine } from '../../state/quarantine.js';

export type DayState = 'complete' | 'stale' | 'incomplete' | 'never run';


export interface DayStatus {
  day: string;
  state: DayState;
  /** The run that last published it, when, and its pings. */
  run: string | null;
  publishedAt: string | null;
  pings: number | null;
  reason: string;
}

export async function dayStatus(store: ObjectStore, ledger: Ledger, quarantine: Quarantine, day: string, now: Date): Promise<DayStatus> {
  const manifest = await readManifest(store, day);
  const inputs = await ledger.inputsFor(day);
  const base = { day, run: manifest?.run ?? null, publishedAt: manifest?.finishedAt ?? null, pings: manifest?.pings ?? null };
  if (!manifest) {
    return { ...base, state: 'never run', reason: inputs.length ? `records of it are staged (${inputs.length} batches or scans); run make rollup DATE=${day}` : 'no record of it has been read or published' };
  }
  const arrived = inputsChanged(manifest, inputs.map((i) => i.id));
  if (arrived !== null) return { ...base, state: 'stale', reason: `${arrived}; run make rollup-stale (or make rollup DATE=${day})` };
  const reason = incompleteReason(day, quarantine.forDay(day).quarantined.map((o) => o.key), manifest.missingTables ?? [], now);
  return reason === null ? { ...base, state: 'complete', reason: '' } : { ...base, state: 'incomplete', reason };
}

/** Days with a manifest: every day ever published. */
export async function publishedDays(store: ObjectStore): Promise<string[]> {
  const days = new Set<string>();
  for (const key of await store.list('_runs/')) {
    const m = /^_runs\/dt=(\d{4}-\d{2}-\d{2})\/manifest\.json$/.exec(key);
    if (m) days.add(m[1]!);
  }
  return [...days].sort();
}
