/**
 * The rollup stage: a day (or a month) gathered from what is staged for it (state/day-inputs.ts),
 * its completeness decided (state/completeness.ts), rolled up by the configured engine
 * (rollup/engine.ts), and made ready to publish: its files, its rejects, its manifest. Nothing is
 * published here.
 */
import { stat } from 'node:fs/promises';
import { dayRejectsKey } from '../../datasets/layout.js';
import { dayManifest, type DayManifest } from '../../export/manifest.js';
import type { DayToPublish } from '../../export/publisher.js';
import { daysFrom } from '../../lib/utc-day.js';
import { UTC, utcDaysOfLocalMonth } from '../../lib/time-zone.js';
import { writeRunsParquet } from '../../rollup/daily-runs.js';
import type { MonthDay, RolledUpMonth } from '../../rollup/engine.js';
import { rolledUpOutcomes } from '../../rollup/rules.js';
import { geoDatabase } from '../../ingest/audience/geo-lookup.js';
import { dayState } from '../../state/completeness.js';
import type { ListedDays } from '../../ingest/listing/listing-state.js';
import type { Config } from '../../infra/config.js';
import type { Stage } from './stage.js';
import { markLaterDays, pingIdsFile, windowHistory } from './window.js';

/** What the run's ingest said that a day's manifest and state need. */
export interface IngestReport {
  scanned: DayManifest['scannedThisRun'];
  missingTables: string[];
  /** What the listers know of delivery days (a day's completeness). */
  listed: ListedDays;
}

/**
 * What a day's figures are made with besides its inputs, as one string its manifest keeps: the code's
 * version, the viewer key's id, the episode catalog's bytes (`catalogSha`) and what pings are kept to
 * it, the platforms counted by name, the rollup engine, the warehouse and what rejects keep. (The
 * country and device are looked up when a ping is staged: an IP-to-country database set since changes
 * pings staged from then on, not the day's.) And the ping-id window's days (PINGROLL_DEDUPE_DAYS).)
 */
export function daySettings(config: Config, version: string, catalogSha: string | null, warehouse: string): string {
  return JSON.stringify({ version, viewerKey: config.viewerKey?.id ?? null, catalog: catalogSha, catalogOnly: config.catalogOnly, platforms: config.platforms,
    rollup: config.rollup, warehouse, privacy: config.privacy, dedupeDays: config.dedupeDays });
}

/** This run's daySettings. */
export async function settingsOf({ config, backends, run }: Omit<Stage, 'db'>): Promise<string> {
  return daySettings(config, run.version, await run.work.episodeCatalogSha(), backends.warehouse?.description ?? 'none');
}

/** Rolls `day` up from everything staged for it, with the stage's own connection; `dir` is the day's own folder (the files it hands on are there). */
export async function rollupDay(stage: Stage, dir: string, day: string, ingest: IngestReport): Promise<DayToPublish> {
  const { config, backends, run, db } = stage;
  const settings = await settingsOf(stage);
  const rollup = backends.rollup(db);
  const startedAt = new Date();
  const inputs = await run.state.gatherDay(day, rollup.readsLocalFiles ? dir : null);
  if (inputs.sources.batches.length === 0) run.log.warn('day.empty', { day, hint: 'no record of this day has been read; check PINGROLL_LOGS, PINGROLL_DDB_TABLES and the date' });
  const publishedAt = new Date();
  const { held, state } = dayState(run.state.quarantine, day, { missingTables: ingest.missingTables, listed: ingest.listed, atMs: publishedAt.getTime() });
  const runs = await writeRunsParquet(db, {
    day, run: run.id, publishedAt, codeVersion: run.version, objectsRead: inputs.sources.objectCount, tablesRead: inputs.sources.tables.length,
    quarantinedObjects: held.quarantined.length, state: state.state,
  }, dir);
  const catalog = await run.work.episodeCatalog(db);
  // The ping-id window (stages/window.ts): the ping ids of the days before it in, the day's own out;
  // the published days after it whose ids it now counts otherwise are marked stale before it is published.
  const window = { days: config.dedupeDays, ...(await windowHistory(stage, day, dir)) };
  const rolled = await rollup.rollupDay({ day, staged: inputs.staged, outcomes: inputs.outcomes, runs, catalog, window, dir }, run.context);
  let pingIds: DayManifest['pingIds'] = null;
  if (rolled.pingIds) {
    await markLaterDays(stage, day, { file: rolled.pingIds.file, before: await run.publisher.manifests.read(day) }, dir);
    const bytes = (await stat(rolled.pingIds.file)).size;
    pingIds = { key: await run.state.pingIds.save(day, run.id, rolled.pingIds.file, rolled.pingIds.keys ?? null), rows: rolled.pingIds.rows, bytes };
  }
  const rejects = await run.publisher.dayRejects(inputs.rejects, dir, rolled.invalidRejects);
  const manifest = dayManifest({
    run: run.id, day, version: run.version, startedAt, publishedAt, sources: inputs.sources, scanned: ingest.scanned, missingTables: ingest.missingTables,
    outcomes: rolledUpOutcomes(inputs.outcomes, rolled.invalid), pings: rolled.pings, duplicates: rolled.duplicates, repeats: rolled.repeats, pingIds, outputs: rolled.outputs,
    rejects: rejects ? { key: dayRejectsKey(day), bytes: rejects.bytes } : null,
    warehouse: backends.warehouse?.description ?? 'none', viewerKey: config.viewerKey?.id ?? null,
    episodeCatalog: catalog && { url: catalog.url, sha256: catalog.sha256, episodes: catalog.episodes, ...(config.catalogOnly ? { only: config.catalogOnly } : {}) }, held, state,
    geoip: geoDatabase(config.geoipDb), settings,
  });
  return { day, outputs: rolled.outputs, loaded: rolled.loaded, rejects, manifest };
}

/** Rolls a month of `tz` (`monthly_series_stats`) up from every UTC day that can hold it and has staged data. */
export async function rollupMonth(stage: Stage, dir: string, month: string, tz = UTC): Promise<RolledUpMonth & { days: number }> {
  const { backends, run, db } = stage;
  const rollup = backends.rollup(db);
  const days: MonthDay[] = [];
  const { from, to } = utcDaysOfLocalMonth(month, tz);
  // Fetched only for an engine that reads them here (Redshift's COPYs them where they are).
  for (const day of daysFrom(from, to)) {
    const inputs = await run.state.gatherDay(day, rollup.readsLocalFiles ? dir : null);
    if (!inputs.sources.batches.length) continue;
    // Its repeats (contract §4) are left out as the day's rollup left them out: by its ping ids.
    const ids = (await run.publisher.manifests.read(day))?.pingIds ?? null;
    days.push({ day, staged: inputs.staged, outcomes: inputs.outcomes, pingIds: ids ? await pingIdsFile(stage, ids, dir) : null });
  }
  return { ...(await rollup.rollupMonth(month, tz, days, dir, run.context, await run.work.episodeCatalog(db))), days: days.length };
}
