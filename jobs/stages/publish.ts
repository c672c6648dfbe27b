/**
 * The publish stage: a rolled-up day handed to the publisher (export/publisher.ts), and said; the
 * days published before whose state has changed since published again, their state alone; a month.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { dayManifestKey } from '../../datasets/layout.js';
import { inputsChanged, manifestQuarantine, manifestRepeats, type DayManifest } from '../../export/manifest.js';
import type { DayToPublish } from '../../export/publisher.js';
import { writeRunsParquet } from '../../rollup/daily-runs.js';
import type { OutputFile } from '../../rollup/output-file.js';
import { dayState } from '../../state/completeness.js';
import type { ListedDays } from '../../ingest/listing/listing-state.js';
import type { Run } from '../run.js';

/** What a published day comes to. */
export interface PublishedDay {
  pings: number;
  /** Survivors left out as repeats of pings counted on other days (contract §4). */
  repeats: number;
  /** The key of the ping ids its manifest names (rollup/ping-window.ts); null: none. */
  pingIds: string | null;
  outputs: DayManifest['outputs'];
  manifest: string;
}

export async function publishDay(run: Run, d: DayToPublish): Promise<PublishedDay> {
  await run.publisher.publishDay(d);
  const m = d.manifest;
  // Records that are not pings (every outcome but ping, both sources): the day's rejects.
  let records = 0, rejects = 0;
  for (const bySource of Object.values(m.outcomes)) {
    for (const [outcome, n] of Object.entries(bySource)) {
      records += n;
      if (outcome !== 'ping') rejects += n;
    }
  }
  run.log.info('day.done', { run: run.id, day: d.day, state: m.state, ...(m.finalAt ? { finalAt: m.finalAt } : {}), pings: m.pings, duplicates: m.duplicates, repeats: m.repeats ?? {}, records, rejects, outputs: m.outputs.map((o) => `${o.table}:${o.rows}`) });
  return { pings: m.pings, repeats: manifestRepeats(m) ?? 0, pingIds: m.pingIds?.key ?? null, outputs: m.outputs, manifest: dayManifestKey(d.day) };
}

/**
 * The days published not yet complete whose state has changed since, with nothing new staged for
 * them (a delivery day's final listing found nothing more, or an unreadable object was accepted as
 * lost): published again as they are now, their `daily_runs` row and manifest alone, so that
 * `daily_runs`, the manifest and `pingroll status` say the same. A day with new staged data is
 * stale, and left to its next rollup (`make rollup-stale`). The days whose state changed.
 */
export async function settleStates(run: Run, db: DuckDBConnection, listed: ListedDays): Promise<string[]> {
  const { publisher } = run;
  const { ledger, quarantine } = run.state;
  const changed: string[] = [];
  for (const day of await publisher.unsettledDays()) {
    const manifest = await publisher.manifests.read(day);
    if (!manifest) {
      await publisher.forgetUnsettled(day);
      continue;
    }
    if (inputsChanged(manifest, (await ledger.inputsFor(day)).map((i) => i.id)) !== null) continue;
    const { state } = dayState(quarantine, day, { missingTables: manifest.missingTables ?? [], listed, atMs: Date.now() });
    if (state.state === manifest.state) {
      if (state.state === 'complete') await publisher.forgetUnsettled(day);
      continue;
    }
    await publishState(run, db, { day, manifest, listed });
    changed.push(day);
  }
  return changed;
}

/** Publishes a rolled-up month. */
export async function publishMonth(run: Run, month: string, rolled: { file: OutputFile; days: number; loaded: boolean }): Promise<{ series: number; days: number }> {
  await run.publisher.publishMonth(month, rolled.file, rolled.loaded);
  run.log.info('month.done', { run: run.id, month, series: rolled.file.rows, days: rolled.days });
  return { series: rolled.file.rows, days: rolled.days };
}

/**
 * Publishes a day's state alone, as it is now (its completeness, its unreadable objects), when nothing
 * staged for it changed: its `daily_runs` row and manifest, so that `daily_runs`, the manifest and
 * `pingroll status` say the same. The manifest published.
 */
export async function publishState(run: Run, db: DuckDBConnection, at: { day: string; manifest: DayManifest; listed: ListedDays }): Promise<DayManifest> {
  const { day, manifest, listed } = at;
  const now = new Date();
  const { held, state } = dayState(run.state.quarantine, day, { missingTables: manifest.missingTables ?? [], listed, atMs: now.getTime() });
  const next = await run.work.withFolder(`state-${day}`, async (dir) => {
    const runs: OutputFile = await writeRunsParquet(db, {
      day, run: run.id, publishedAt: now, codeVersion: run.version, objectsRead: manifest.inputs.objectCount, tablesRead: manifest.inputs.tables.length,
      quarantinedObjects: held.quarantined.length, state: state.state,
    }, dir);
    const next: DayManifest = { ...manifest, ...manifestQuarantine(held), state: state.state, finalAt: state.finalAt, publishedAt: now.toISOString(), stateSetBy: { run: run.id, at: now.toISOString() },
      outputs: manifest.outputs.map((o) => (o.table === runs.table ? { table: runs.table, key: runs.key, rows: runs.rows, bytes: runs.bytes } : o)) };
    await run.publisher.publishState(day, runs, next);
    return next;
  });
  run.log.info('day.settled', { run: run.id, day, was: manifest.state ?? null, state: state.state, ...(state.finalAt ? { finalAt: state.finalAt } : {}) });
  return next;
}
