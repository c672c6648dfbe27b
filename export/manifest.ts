/**
 * The run manifest of a day (contract §6): `dayManifestKey(day)` (datasets/layout.ts), written last when a day
 * is published. It names what the day was made from (log objects, batches, table scans), what the
 * records came to, and what was written.
 */
import { dayManifestKey } from '../datasets/layout.js';
import { ClearingMap, keptUntilFailed } from '../lib/clearing-map.js';
import type { DaySources } from '../state/day-inputs.js';
import type { Completeness } from '../state/completeness.js';
import type { HeldObjects } from '../state/quarantine.js';
import type { ObjectStore } from '../state/object-store/object-store.js';

export interface DayManifest {
  run: string;
  day: string;
  version: string;
  startedAt: string;
  finishedAt: string;
  /**
   * The day's publication time as its `daily_runs` row says it (`published_at`), which `pingroll
   * status` shows: set when the day is rolled up, and again when its state alone is published
   * (settleStates). Absent from manifests written before it was kept: `finishedAt` stands for it.
   */
  publishedAt?: string;
  /** What the day was made from (state/day-inputs.ts). */
  inputs: DaySources;
  scannedThisRun: Array<{ table: string; items: number; consumedCapacity: number; throttledRetries: number }>;
  missingTables: string[];
  outcomes: Record<string, Record<string, number>>;
  pings: number;
  duplicates: Record<string, number>;
  /** Survivors left out as repeats of pings counted on earlier days (contract §4), by source. Absent from manifests written before the window. */
  repeats?: Record<string, number>;
  /**
   * The day's ping ids (rollup/ping-window.ts): what later days' windows read, the file and its rows
   * (survivors with a ping id). Absent from manifests written before they were kept; null: the
   * engine keeps none.
   */
  pingIds?: { key: string; rows: number; bytes: number } | null;
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
   * `only`: what PINGROLL_CATALOG_ONLY kept pings to (absent: nothing).
   */
  episodeCatalog?: { url: string; sha256: string; episodes: number; only?: 'series' | 'episodes' } | null;
  /**
   * What the figures were made with besides the inputs (jobs/stages/rollup.ts daySettings): a run that
   * finds the inputs, the state and these unchanged publishes nothing again. Absent from manifests
   * written before it: such a day is rolled up again once.
   */
  settings?: string;
  /**
   * The IP-to-country database of this run's configuration (contract §10: PINGROLL_GEOIP_DB, else the
   * one shipped) and its build time. Each ping's country was looked up when it was staged, by the run
   * that read it. Absent from manifests written before countries existed.
   */
  geoip?: { database: string; builtAt: string };
  /** Log objects that could not be read and may hold records of the day: still retried, or accepted as lost. */
  quarantined: Array<{ key: string; etag: string; reason: string; since: string }>;
  acceptedLost: Array<{ key: string; etag: string; reason: string; acceptedAt: string }>;
  /**
   * What the day was as published (its `daily_runs` state, state/completeness.ts), and when a provisional
   * day expects its final listing (ISO). Absent from manifests written before delivery days were
   * listed in full on a schedule.
   */
  state?: 'complete' | 'provisional' | 'incomplete';
  finalAt?: string | null;
  /** The run that last published the day's state alone (its data unchanged: settleStates, jobs/stages/publish.ts), and when. */
  stateSetBy?: { run: string; at: string };
}

/** The day's unreadable objects, as its manifest names them. */
export function manifestQuarantine({ quarantined, acceptedLost }: HeldObjects): Pick<DayManifest, 'quarantined' | 'acceptedLost'> {
  return {
    quarantined: quarantined.map((o) => ({ key: o.key, etag: o.etag, reason: o.reason, since: o.firstFailedAt })),
    acceptedLost: acceptedLost.map((o) => ({ key: o.key, etag: o.etag, reason: o.reason, acceptedAt: o.acceptedLostAt! })),
  };
}

/** A day's manifest, from what its run read, rolled up and wrote. */
/** A day's repeats over its sources (contract §4); null: a manifest written before the window. */
export function manifestRepeats(m: Pick<DayManifest, 'repeats'>): number | null {
  return m.repeats ? Object.values(m.repeats).reduce((n, v) => n + v, 0) : null;
}

export function dayManifest(d: {
  run: string; day: string; version: string; startedAt: Date; publishedAt: Date; sources: DaySources; scanned: DayManifest['scannedThisRun']; missingTables: string[];
  outcomes: DayManifest['outcomes']; pings: number; duplicates: Record<string, number>; repeats: Record<string, number>; pingIds: DayManifest['pingIds']; outputs: ReadonlyArray<{ table: string; key: string; rows: number; bytes: number }>;
  rejects: { key: string; bytes: number } | null; warehouse: string; viewerKey: string | null; episodeCatalog: DayManifest['episodeCatalog']; held: HeldObjects; state: Completeness;
  geoip: DayManifest['geoip']; settings: string;
}): DayManifest {
  return {
    run: d.run, day: d.day, version: d.version, startedAt: d.startedAt.toISOString(), finishedAt: new Date().toISOString(), publishedAt: d.publishedAt.toISOString(),
    inputs: d.sources, scannedThisRun: d.scanned, missingTables: d.missingTables,
    outcomes: d.outcomes, pings: d.pings, duplicates: d.duplicates, repeats: d.repeats, pingIds: d.pingIds,
    outputs: d.outputs.map(({ table, key, rows, bytes }) => ({ table, key, rows, bytes })), rejects: d.rejects,
    warehouse: d.warehouse, viewerKey: d.viewerKey, episodeCatalog: d.episodeCatalog, ...(d.geoip ? { geoip: d.geoip } : {}), settings: d.settings,
    ...manifestQuarantine(d.held),
    state: d.state.state, finalAt: d.state.finalAt,
  };
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

/** Manifests a run keeps read: the ping-id window's 2W + 1 days, and more. */
const KEPT_MANIFESTS = 256;

/**
 * The days' manifests in the output: the store is handed over once (a job's publisher holds one;
 * `pingroll status` makes its own).
 *
 * A manifest read is kept for the next read of the same day. Only the run that holds the run lock
 * publishes (state/run-lock.ts), through its publisher, which drops a day's kept manifest when it
 * publishes the day (`forget`), and all of them when it completes what a killed run left. So a
 * kept manifest is the one published. (A run's rollups read the manifests of the W days around each
 * day: a month's backfill read each manifest up to 73 times, a GET each.) What is kept is the
 * manifest's text, parsed at each read: a caller may change the object it is given.
 */
export class Manifests {
  private readonly kept = new ClearingMap<string, Promise<string | null>>(KEPT_MANIFESTS);

  constructor(private readonly store: ObjectStore) {}

  /** The manifest `day` was last published with; null: never published (or unreadable). */
  async read(day: string): Promise<DayManifest | null> {
    // A read that failed is not kept: the next asks the store again.
    return parseManifest(await keptUntilFailed(this.kept, day, () => this.store.get(dayManifestKey(day)).then((body) => (body ? body.toString('utf8') : null))));
  }

  /** Drops what is kept of `day`'s manifest (every day's without one): it is being published. */
  forget(day?: string): void {
    if (day === undefined) this.kept.clear();
    else this.kept.delete(day);
  }
}

/** The day's manifest, or null when the day was never published (or its manifest is unreadable). */
export async function readManifest(store: ObjectStore, day: string): Promise<DayManifest | null> {
  const body = await store.get(dayManifestKey(day));
  return parseManifest(body ? body.toString('utf8') : null);
}

function parseManifest(text: string | null): DayManifest | null {
  if (text === null) return null;
  try {
    return JSON.parse(text) as DayManifest;
  } catch {
    return null;
  }
}
