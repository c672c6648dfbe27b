/**
 * The job cron runs every night (`make rollup DATE=D`): ingest every log object not yet parsed and
 * read the legacy tables that can hold D, then roll up D from everything staged for it and publish it.
 * A re-run gives the same result as one clean run; objects that arrived late are picked up by the
 * next run of their day. The backends come from the composition root (infra/backends.ts).
 *
 *   lock (run.ts) → ingest (stages/ingest.ts) → roll up (stages/rollup.ts) → publish (stages/publish.ts)
 *   → adjustments of closed months (stages/adjust.ts) → the months due to close (close.ts)
 */
import { withStage, type Stage } from './stages/stage.js';
import { randomUUID } from 'node:crypto';
import { dayManifestKey } from '../datasets/layout.js';
import { manifestRepeats } from '../export/manifest.js';
import { tablesForDay } from '../ingest/dynamodb/monthly-tables.js';
import { allEnded } from '../lib/all-ended.js';
import type { Log } from '../lib/log.js';
import type { Backends } from '../infra/backends.js';
import type { Config } from '../infra/config.js';
import { dryRun } from './dry-run.js';
import { withRun, type Run } from './run.js';
import { expireDeliveryDay } from '../ingest/listing/lister.js';
import { adjust } from './stages/adjust.js';
import { autoClose } from './close.js';
import { resumeReopens } from './stages/close.js';
import { ConfigError } from '../infra/config.js';
import { UTC } from '../lib/time-zone.js';
import { ingest, refuseUnlisted, stagedByShards, type IngestSummary } from './stages/ingest.js';
import { settleStates, type PublishedDay } from './stages/publish.js';
import { settingsOf } from './stages/rollup.js';
import { dayThrough } from './stages/day.js';

export interface JobOptions {
  day: string;
  log: Log;
  dryRun?: boolean;
  /** Seconds to wait for another run's lock before failing. */
  waitSeconds?: number;
  /** Read closed tables again even if they were read after their month ended. */
  rescan?: boolean;
  /** The run's clock (tables are closed, and delivery days listed in full, relative to it); tests set it. */
  now?: Date;
  /** Bytes of staged rows per part (a part is made Parquet while parsing goes on); tests make it small. */
  stagingPartBytes?: number;
  /** Log objects per batch at most (MAX_BATCH_OBJECTS); tests make it small. */
  batchObjects?: number;
  /** Roll up from what is staged (by the shards of a sharded ingest): no listing, no parsing, no table scans. */
  noIngest?: boolean;
}

export interface JobSummary extends IngestSummary {
  day: string;
  run: string;
  dryRun: boolean;
  pings: number;
  /** Survivors the day left out as repeats of pings counted on other days (contract §4). */
  repeats: number;
  outputs: PublishedDay['outputs'];
  manifest: string | null;
}

export async function runDailyJob(config: Config, backends: Backends, opts: JobOptions): Promise<JobSummary> {
  const { day, log } = opts;
  const id = randomUUID();
  const summary: JobSummary = { day, run: id, dryRun: Boolean(opts.dryRun), parsedObjects: 0, parsedRecords: 0, scanned: [], missingTables: [], unreadable: [], skipped: 0, pings: 0, repeats: 0, outputs: [], manifest: null };
  const tables = config.ddbTables ? tablesForDay(config.ddbTables, day) : [];
  if (opts.dryRun) {
    await dryRun(config, backends, { ...opts, tables });
    return summary;
  }
  return withRun(backends, { id, command: `rollup ${day}`, kind: 'run', log, waitSeconds: opts.waitSeconds, start: ['run.start', { run: id, day }] }, (run) =>
    // DuckDB is loaded at the engine's first use: a run that finds nothing new never loads it.
    withStage({ config, backends, run }, 'day', async (stage) => {
      const { db } = stage;
      refuseClosed(run, day);
      // A bad episode catalog stops the run here, before any work; one whose bytes the day was last
      // published with was checked then.
      const settings = await settingsOf(stage);
      const published = await run.publisher.manifests.read(day);
      if (published?.settings !== settings) await run.work.episodeCatalog(db);
      const ingested = opts.noIngest ? await stagedByShards(stage)
        : await ingest(stage, { ...opts, asked: [day], tables });
      if (opts.noIngest) refuseUnlisted(ingested.listed, [day], opts.now ?? new Date());
      const { batches: _, touched, listed, settle, listedObjects: __, ...read } = ingested;
      Object.assign(summary, read);
      // The listing's seals are written (a put each: 288 for a day's two delivery days) while the day
      // is rolled up and published; the run ends when both have.
      await allEnded([settle, async () => {
        // One rule for every job (stages/day.ts): nothing new for the day (no batch or scan, the same
        // settings, state and unreadable objects) leaves it as published, and the check is recorded
        // (status and the next publication say when); a new state alone is published alone.
        const through = await dayThrough(stage, day, { ingest: { ...read, listed }, published });
        if (through.kind === 'published') {
          Object.assign(summary, through.published);
        } else {
          const m = through.manifest;
          if (through.kind === 'unchanged') log.info('day.unchanged', { run: id, day, state: m.state, publishedBy: m.run, publishedAt: m.publishedAt ?? m.finishedAt, pings: m.pings });
          Object.assign(summary, { pings: m.pings, repeats: manifestRepeats(m) ?? 0, outputs: m.outputs, manifest: dayManifestKey(day) });
        }
        // Days published before, whose final listings are now done (or whose unreadable objects were accepted as lost): said so.
        await settleStates(run, db, listed);
      }], 2);
      // What arrived for closed months: adjustments; a reopen a killed run left, completed; then the months due to close.
      await adjust(stage);
      await resumeReopens(stage, opts.now ?? new Date());
      await autoClose(stage, opts.now ?? new Date());
      await retain(stage, opts.now ?? new Date());
      if (config.rejectsRetentionDays !== null) await run.publisher.expireRejects(config.rejectsRetentionDays, opts.now ?? new Date());
      log.info('run.done', { run: id, day, pings: summary.pings, parsedObjects: summary.parsedObjects, scanned: summary.scanned.map((t) => t.table), unreadable: summary.unreadable.length, staleDays: await staleAmong(run.state.store, touched, new Set([day])) });
      return summary;
    }));
}

/** A day of a closed month is not rolled up again: its figures are its statement's (contract §9). */
export function refuseClosed(run: Run, day: string): void {
  const c = run.state.closes.holding(day);
  if (!c) return;
  if (c.days[day]?.expired) throw new ConfigError(`${day} cannot be rolled up again: it belongs to ${c.month}${c.tz === UTC ? '' : ` (${c.tz})`}, closed, and what it was counted from expired on ${c.days[day]!.expired!.slice(0, 10)} (PINGROLL_RETENTION_DAYS); its published rows and statement stay as they are`);
  throw new ConfigError(`${day} belongs to ${c.month}, closed (version ${c.version}, ${c.closedAt.slice(0, 10)}): its figures do not change, and pings that arrive for it are reported as adjustments on ${run.state.closes.reportedIn(c.month, c.tz)}; to change it: pingroll close --month ${c.month} --reopen --reason "..."`);
}

/** Retention (`PINGROLL_RETENTION_DAYS`): what days of closed months were counted from, deleted once they are that old (state/retention.ts). */
export async function retain({ config, run }: Stage, now: Date): Promise<void> {
  if (config.retentionDays === null) return;
  const { store } = run.state;
  const expired = await run.state.expireDays({ today: now.toISOString().slice(0, 10), retentionDays: config.retentionDays, lateDays: config.schedule.lateDays, dedupeDays: config.dedupeDays });
  for (const day of expired.deliveryDays) expired.files += await expireDeliveryDay(store, run.state.ledger, day);
  await run.state.doneExpiring(expired.days);
  if (expired.days.length) run.log.info('days.expired', { run: run.id, days: expired.days, files: expired.files, retentionDays: config.retentionDays });
}

/** How many of `days` (that a run added records to) were published before and not by this run (`done`): each is stale until rolled up again. */
export async function staleAmong(store: Backends['store'], days: string[], done: Set<string>): Promise<number> {
  let stale = 0;
  for (const d of days) if (!done.has(d) && (await store.size(dayManifestKey(d))) !== null) stale++;
  return stale;
}
