/**
 * `make backfill FROM= TO=`: ingest once (each new log object parsed once, each table that can hold
 * a day of the range scanned at most once), then roll up and publish every day of the range, a few at
 * a time. Resumable: a day whose manifest names exactly the batches and scans it would read now is
 * skipped (unless `force`). One failed day does not stop the others.
 */
import { withStage } from './stages/stage.js';
import { randomUUID } from 'node:crypto';
import PQueue from 'p-queue';
import { inputsChanged, readManifest } from '../export/manifest.js';
import { publishedDays } from './day-status.js';
import { tablesForDay, type MonthlyTable } from '../ingest/dynamodb/monthly-tables.js';
import type { Log } from '../lib/log.js';
import { addDays, addMonths, daysFrom, dayNumber } from '../lib/utc-day.js';
import { MONTH_TABLE, outputKey } from '../rollup/output-file.js';
import type { Backends } from '../infra/backends.js';
import { ConfigError, type Config } from '../infra/config.js';
import { staleAmong, type JobOptions, type JobSummary } from './daily.js';
import { withRun } from './run.js';
import type { RunState } from '../state/run-state.js';
import { ingest, refuseUnlisted, stagedByShards } from './stages/ingest.js';
import { publishMonth, settleStates } from './stages/publish.js';
import { rollupMonth } from './stages/rollup.js';
import { dayThrough } from './stages/day.js';
import { adjust } from './stages/adjust.js';

export interface BackfillOptions extends Omit<JobOptions, 'day' | 'dryRun'> {
  /** The range; with `stale`, optional limits to it. */
  from?: string;
  to?: string;
  /**
   * Publish exactly the published days whose staged data changed since (after one ingest); days that
   * are today or later are refused, with a warning.
   */
  stale?: boolean;
  log: Log;
  /** Publish days even when their manifest shows the same inputs. */
  force?: boolean;
}

export interface BackfillSummary {
  run: string;
  days: number;
  done: string[];
  skipped: string[];
  failed: Array<{ day: string; error: string }>;
  /** Days of closed months, not rolled up again (contract §9). */
  closed: string[];
  /** With `stale`: stale days not published because they are today or later. */
  refused: string[];
  /** With `stale`: months rolled up again because days of theirs were (only months rolled up before, and over). */
  months: string[];
  pings: number;
  parsedObjects: number;
  scanned: JobSummary['scanned'];
  consumedCapacity: number;
  /** Log objects that could not be read (quarantined, retried by every run). */
  unreadable: JobSummary['unreadable'];
  /** Days published before whose state alone was published again (their final listings done: jobs/stages/publish.ts, settleStates). */
  settled: string[];
}

export const MAX_BACKFILL_DAYS = 1000;

export function daysBetween(from: string, to: string): string[] {
  if (to < from) throw new ConfigError(`FROM=${from} is after TO=${to}`);
  const n = dayNumber(to) - dayNumber(from) + 1;
  if (n > MAX_BACKFILL_DAYS) throw new ConfigError(`FROM=${from} TO=${to} spans ${n} days; backfill at most ${MAX_BACKFILL_DAYS} at a time`);
  return daysFrom(from, to);
}

export async function runBackfill(config: Config, backends: Backends, opts: BackfillOptions): Promise<BackfillSummary> {
  const { log } = opts;
  const { store } = backends;
  if (!opts.stale && (!opts.from || !opts.to)) throw new ConfigError('a backfill needs FROM and TO (or --stale)');
  const range = opts.from && opts.to ? daysBetween(opts.from, opts.to) : null;
  const run = randomUUID();
  const summary: BackfillSummary = { run, days: 0, done: [], skipped: [], closed: [], failed: [], refused: [], months: [], pings: 0, parsedObjects: 0, scanned: [], consumedCapacity: 0, unreadable: [], settled: [] };
  const what = opts.stale ? `backfill --stale${range ? ` ${opts.from}..${opts.to}` : ''}` : `backfill ${opts.from}..${opts.to}`;
  return withRun(backends, { id: run, command: what, kind: 'backfill', log, waitSeconds: opts.waitSeconds,
    start: ['backfill.start', { run, from: opts.from ?? null, to: opts.to ?? null, stale: opts.stale ?? false }] }, async (r) => {
    let days = range ?? [];
    if (opts.stale) {
      // The days ever published (in the range, if one was given); today's and later are still arriving.
      const today = new Date(opts.now ?? Date.now()).toISOString().slice(0, 10);
      const published = (await publishedDays(store)).filter((d) => !range || range.includes(d));
      summary.refused = published.filter((d) => d >= today);
      days = published.filter((d) => d < today);
    }
    summary.days = days.length;
    // Each day goes through the one rule (stages/day.ts): a range's backfill also rolls up again the
    // days made with another viewer key or episode catalog than the one set, or another version or
    // setting; never for a setting left unset (a backfill without the key would empty keyed days'
    // viewer rows). --stale: the days whose staged data changed, no more.
    const tables = new Map<string, MonthlyTable>();
    if (config.ddbTables) for (const d of days) for (const t of tablesForDay(config.ddbTables, d)) tables.set(t.name, t);
    // A bad catalog stops the backfill here, before any work.
    const ingested = await withStage({ config, backends, run: r }, 'ingest', async (stage) => {
      await r.work.episodeCatalog(stage.db);
      // After a sharded ingest: what the shards staged. Else a range asks for its days (their delivery
      // days are listed if they never were); --stale for none: it lists what the schedule and the
      // window say, and republishes what that staged.
      const got = opts.noIngest ? await stagedByShards(stage) : await ingest(stage, { ...opts, asked: range ?? [], tables: [...tables.values()] });
      await got.settle();
      // A range from what shards staged: every day of it was asked of them (--stale rolls up only days that were published, so listed).
      if (opts.noIngest && range && !opts.stale) refuseUnlisted(got.listed, range, opts.now ?? new Date());
      return got;
    });
    summary.parsedObjects = ingested.parsedObjects;
    summary.unreadable = ingested.unreadable;
    summary.scanned = ingested.scanned;
    summary.consumedCapacity = ingested.scanned.reduce((n, t) => n + t.consumedCapacity, 0);

    // With the ping-id window (contract §4), a day's rollup reads the ping ids the days before it were
    // published with, and its publication can make the days after it stale: days one at a time,
    // oldest first, so that each reads its elders as they are now and a day it makes stale comes later.
    const parallel = config.dedupeDays > 0 ? 1 : config.parallelDays;
    const queue = new PQueue({ concurrency: parallel });
    const started = Date.now();
    let finished = 0;
    const progress = (): void => {
      const left = days.length - finished;
      const published = summary.done.length;
      const eta = published > 0 ? Math.round(((Date.now() - started) / published) * left / 1000) : null;
      log.progress('backfill.progress', `backfill ${finished}/${days.length} days: ${published} done, ${summary.skipped.length} skipped, ${summary.failed.length} failed${eta === null ? '' : `, ETA ${eta}s`}`,
        { finished, days: days.length, done: published, skipped: summary.skipped.length, failed: summary.failed.length, etaSeconds: eta });
    };
    for (const day of days) {
      queue.add(async () => {
        try {
          // A day a close holds (its UTC month's close, or one under which its data expired) keeps its
          // figures: what arrived for it is an adjustment (or too late).
          if (r.state.closes.holding(day)) {
            summary.closed.push(day);
            return;
          }
          // --stale: the published days whose staged data changed, no more (with --force, every one).
          if (opts.stale && !opts.force && !(await inputsDiffer(r.state, day)) && !(await r.state.pingIds.staleMark(day))) {
            summary.skipped.push(day);
            return;
          }
          // One engine a day: its temporary tables are its own; the memory limit is shared out among them.
          const through = await withStage({ config, backends, run: r }, day, (stage) => dayThrough(stage, day, { ingest: ingested, force: opts.force }),
            Math.max(256, Math.floor(config.memoryLimitMb / parallel)));
          if (through.kind === 'published') {
            summary.pings += through.published.pings;
            summary.done.push(day);
          } else {
            summary.skipped.push(day);
            if (through.kind === 'settled') summary.settled.push(day);
          }
        } catch (err) {
          summary.failed.push({ day, error: (err as Error).message.split('\n')[0]! });
          log.warn('day.failed', { day, error: (err as Error).message.split('\n')[0] });
        } finally {
          finished++;
          progress();
        }
      });
    }
    await queue.onIdle();
    if (summary.closed.length) log.info('day.closed', { days: summary.closed.sort(), reason: 'their months are closed: pings that arrived for them are reported as adjustments' });
    await withStage({ config, backends, run: r }, 'adjust', adjust);
    // Days published before whose final listings are now done (or whose unreadable objects were accepted as lost): said so.
    summary.settled.push(...await r.work.withEngine('settle', config, (db) => settleStates(r, db, ingested.listed)));
    summary.settled.sort();
    // A stale day that is today or later is named, not published: its logs are still arriving.
    const refusedStale = [];
    for (const day of summary.refused) if (await inputsDiffer(r.state, day)) refusedStale.push(day);
    summary.refused = refusedStale;
    if (refusedStale.length) log.warn('day.refused', { days: refusedStale, reason: 'today or later: its logs are still arriving; it is published once the day is over' });
    if (opts.stale) {
      // A month whose days changed is rolled up again, if it was rolled up before (and is over).
      const today = new Date(opts.now ?? Date.now()).toISOString().slice(0, 10);
      for (const month of [...new Set(summary.done.map((d) => d.slice(0, 7)))].sort()) {
        if (addDays(addMonths(`${month}-01`, 1), -1) >= today) continue;
        if ((await store.size(outputKey(MONTH_TABLE, `${month}-01`))) === null) continue;
        await withStage({ config, backends, run: r }, month, (stage) => r.work.withFolder(`month-${month}`, async (dir) => publishMonth(r, month, await rollupMonth(stage, dir, month))));
        summary.months.push(month);
      }
    }
    for (const list of [summary.done, summary.skipped]) list.sort();
    summary.failed.sort((a, b) => a.day.localeCompare(b.day));
    log.info('backfill.done', { run, days: days.length, done: summary.done.length, skipped: summary.skipped.length, failed: summary.failed.map((f) => f.day),
      pings: summary.pings, parsedObjects: summary.parsedObjects, tablesScanned: summary.scanned.map((t) => t.table), consumedCapacity: summary.consumedCapacity,
      staleDays: await staleAmong(store, ingested.touched, new Set([...summary.done, ...summary.skipped])) });
    return summary;
  });
}

/** Whether what a published day would be made from now is not what its manifest names (a day never published: not). */
async function inputsDiffer({ store, ledger }: Pick<RunState, 'store' | 'ledger'>, day: string): Promise<boolean> {
  const manifest = await readManifest(store, day);
  return manifest !== null && inputsChanged(manifest, (await ledger.inputsFor(day)).map((i) => i.id)) !== null;
}
