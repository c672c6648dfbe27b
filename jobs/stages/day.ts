/**
 * The day pipeline: every job that rolls days up (the daily job, a backfill, `make rollup-stale`
 * after a reconcile, a reopen's frozen days) feeds them here, and one rule says what each needs:
 *
 *   held by a close → as it is | unchanged → as it is (checked) | its state alone changed → settled
 *   (the state published alone) | else → rolled up and published
 *
 * `dayChange` is that rule; `dayThrough` runs it.
 */
import { inputsChanged, manifestQuarantine, type DayManifest } from '../../export/manifest.js';
import { dayState } from '../../state/completeness.js';
import type { RunState } from '../../state/run-state.js';
import { publishDay, publishState, type PublishedDay } from './publish.js';
import { rollupDay, settingsOf, type IngestReport } from './rollup.js';
import type { Stage } from './stage.js';

/**
 * What changed of a published day since (null: nothing):
 * - `new`: it was never published;
 * - `inputs`: the batches and table reads it would be made from, or the tables missing, are not the
 *   manifest's;
 * - `settings`: a setting this run sets is not the one the day was made with (daySettings: the code's
 *   version, the viewer key, the episode catalog and what pings are kept to it, the platforms, the
 *   engine, the warehouse, what rejects keep). A setting the run leaves unset (no viewer key, no
 *   catalog) is no change: a run without the key must not empty a keyed day's viewer rows. Nor are
 *   key and catalog for a day of no ping: it is the same with any.
 * - `window`: another day's publication changed how ping ids it holds are counted (contract §4,
 *   stages/window.ts);
 * - `state`: only its completeness or its unreadable objects: its state is published alone.
 */
export type DayChange = 'new' | 'inputs' | 'settings' | 'window' | 'state' | null;

/** The day as published, and this run's settings and ingest: what `dayChange` compares. */
export interface DayNow {
  day: string;
  manifest: DayManifest | null;
  /** This run's daySettings. */
  settings: string;
  ingest: IngestReport;
}

/** The one rule for whether a day is unchanged, settled or rolled up again (see DayChange). */
export async function dayChange(state: Pick<RunState, 'ledger' | 'quarantine' | 'pingIds'>, now: DayNow, at = new Date()): Promise<DayChange> {
  const { day, manifest, ingest } = now;
  if (!manifest) return 'new';
  if (inputsChanged(manifest, (await state.ledger.inputsFor(day)).map((i) => i.id)) !== null) return 'inputs';
  if (JSON.stringify(manifest.missingTables ?? []) !== JSON.stringify(ingest.missingTables)) return 'inputs';
  if (settingsChanged(manifest, now.settings)) return 'settings';
  if (await state.pingIds.staleMark(day)) return 'window';
  const { held, state: s } = dayState(state.quarantine, day, { missingTables: ingest.missingTables, listed: ingest.listed, atMs: at.getTime() });
  if (s.state !== manifest.state || (s.finalAt ?? null) !== (manifest.finalAt ?? null)) return 'state';
  const q = manifestQuarantine(held);
  if (JSON.stringify(q.quarantined) !== JSON.stringify(manifest.quarantined ?? []) || JSON.stringify(q.acceptedLost) !== JSON.stringify(manifest.acceptedLost ?? [])) return 'state';
  return null;
}

/** Settings a run may leave unset (null), and then are not compared: the viewer key, and the catalog with what pings are kept to it. */
const UNSET_KEEPS: Record<string, readonly string[]> = { viewerKey: ['viewerKey'], catalog: ['catalog', 'catalogOnly'] };

function settingsChanged(manifest: DayManifest, settings: string): boolean {
  if (manifest.settings === settings) return false;
  if (manifest.settings === undefined) return true;
  const was = JSON.parse(manifest.settings) as Record<string, unknown>;
  const mine = JSON.parse(settings) as Record<string, unknown>;
  const skip = new Set<string>();
  for (const [setting, keys] of Object.entries(UNSET_KEEPS)) if (mine[setting] === null || manifest.pings === 0) for (const k of keys) skip.add(k);
  return Object.keys({ ...was, ...mine }).some((k) => !skip.has(k) && JSON.stringify(was[k] ?? null) !== JSON.stringify(mine[k] ?? null));
}

/** What became of a day: rolled up and published, its state alone published, or as it was (unchanged). */
export type DayOutcome = { kind: 'published'; published: PublishedDay } | { kind: 'settled' | 'unchanged'; manifest: DayManifest };

/**
 * A day through the pipeline (a day a close holds is its caller's to refuse or pass over): rolled up
 * and published when it changed (`force`: whatever changed), its state alone published when only that
 * did, else left as it is and the check recorded (status and the next publication say when).
 */
export async function dayThrough(stage: Stage, day: string, ask: { ingest: IngestReport; force?: boolean | undefined; published?: DayManifest | null }): Promise<DayOutcome> {
  const { run, db } = stage;
  // `published`: the manifest as the run read it, holding its lock (no other run publishes meanwhile).
  const manifest = ask.published !== undefined ? ask.published : await run.publisher.manifests.read(day);
  const settings = await settingsOf(stage);
  const change = ask.force ? 'inputs' : await dayChange(run.state, { day, manifest, settings, ingest: ask.ingest });
  if (change === null) {
    await run.state.checks.record(day, run.id);
    // Unchanged, but its partitions may not be in the catalog yet (a registration that failed after it was published).
    await run.publisher.registerPartitions(day);
    return { kind: 'unchanged', manifest: manifest! };
  }
  if (change === 'state') return { kind: 'settled', manifest: await publishState(run, db, { day, manifest: manifest!, listed: ask.ingest.listed }) };
  // The catalog is fetched (and checked) once the day is to be rolled up with it.
  const published = await run.work.withFolder(`day-${day}`, async (dir) => publishDay(run, await rollupDay(stage, dir, day, ask.ingest)));
  // Published: the day's ping ids are the ones its manifest names now, and it is not stale by the window.
  await run.state.pingIds.keepOnly(day, published.pingIds);
  await run.state.pingIds.clearStale(day);
  return { kind: 'published', published };
}
