/**
 * The run manifest of a day (contract §6): `_runs/dt=YYYY-MM-DD/manifest.json`, written last when a day
 * is published. It names what the day was made from (log objects, batches, table scans), what the
 * records came to, and what was written.
 */
import type { TablePart } from '../state/ledger.js';
import type { ObjectStore } from '../state/object-store/object-store.js';

export interface DayManifest {
  run: string;
  day: string;
  version: string;
  startedAt: string;
  finishedAt: string;
  inputs: {
    /** Log objects that held records of the day. */
    objectCount: number;
    /**
     * Where they are listed, a list per batch (JSON lines of key, size, etag, records; gzip), with its
     * count and the SHA-256 of its bytes. A list is never rewritten once its batch is committed.
     */
    objectLists: Array<{ batch: string; key: string | null; objects: number; sha256: string | null }>;
    /** The staged ping files the day was rolled up from (under `_staging/`), with their sizes. */
    staged: Array<{ key: string; size: number }>;
    /** The table reads: a sharded ingest's are parts (`part`: of how many, which), together the whole table. */
    tables: Array<{ table: string; scan: string; items: number; consumedCapacity: number; part?: TablePart }>;
    /** The ids of the batches and table scans the day was rolled up from. */
    batches: string[];
  };
  scannedThisRun: Array<{ table: string; items: number; consumedCapacity: number; throttledRetries: number }>;
  missingTables: string[];
  outcomes: Record<string, Record<string, number>>;
  pings: number;
  duplicates: Record<string, number>;
  outputs: Array<{ table: string; key: string; rows: number; bytes: number }>;
  rejects: { key: string; bytes: number } | null;
  warehouse: string;
  /**
   * The id of the PINGROLL_VIEWER_KEY the viewer datasets were made with (viewer-key.ts; never the
   * secret); null: made without one, so they have no rows. Absent from manifests written before those
   * datasets existed. A backfill rolls a day up again when it differs from the current key's.
   */
  viewerKey?: string | null;
  /**
   * The episode catalog the completion dataset was made with (PINGROLL_EPISODE_CATALOG): where it was
   * read, the SHA-256 of its bytes and its episodes; null: none. Absent from manifests written before
   * completion existed. A range backfill with a catalog set rolls a day up again when it differs.
   */
  episodeCatalog?: { url: string; sha256: string; episodes: number } | null;
  /** Log objects that could not be read and may hold records of the day: still retried, or accepted as lost. */
  quarantined: Array<{ key: string; etag: string; reason: string; since: string }>;
  acceptedLost: Array<{ key: string; etag: string; reason: string; acceptedAt: string }>;
  /**
   * What the day was as published (its `daily_runs` state, export/day-runs.ts), and when a provisional
   * day expects its final listing (ISO). Absent from manifests written before delivery days were
   * listed in full on a schedule.
   */
  state?: 'complete' | 'provisional' | 'incomplete';
  finalAt?: string | null;
  /** The run that last published the day's state alone (its data unchanged: DayPublisher.settleStates), and when. */
  stateSetBy?: { run: string; at: string };
}

/**
 * What the day would read now (the ids of its batches and table scans) that its manifest does not
 * name, in words; null when it would read exactly what it was published from.
 */
export function inputsChanged(manifest: DayManifest, now: string[]): string | null {
  const then = manifest.inputs?.batches ?? [];
  if (JSON.stringify(then) === JSON.stringify(now)) return null;
  const added = now.filter((id) => !then.includes(id)).length;
  const gone = then.filter((id) => !now.includes(id)).length;
  return `${added} batch${added === 1 ? '' : 'es'} or scans staged since it was published${gone ? ` (${gone} replaced)` : ''}`;
}

export function manifestKey(day: string): string {
  return `_runs/dt=${day}/manifest.json`;
}

/** The day's manifest, or null when the day was never published (or its manifest is unreadable). */
export async function readManifest(store: ObjectStore, day: string): Promise<DayManifest | null> {
  const body = await store.get(manifestKey(day));
  if (!body) return null;
  try {
    return JSON.parse(body.toString('utf8')) as DayManifest;
  } catch {
    return null;
  }
}
