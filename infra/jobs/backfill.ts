/**
 * `make backfill FROM= TO=`: ingest once (each new log object parsed once, each table that can hold
 * a day of the range scanned at most once), then roll up and publish every day of the range, a few at
 * a time. Resumable: a day whose manifest names exactly the batches and scans it would read now is
 * skipped (unless `force`). One failed day does not stop the others.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import PQueue from 'p-queue';
import { Ledger } from '../../state/ledger.js';
import { tablesForDay, type MonthlyTable } from '../../ingest/dynamodb/monthly-tables.js';
import { ConfigError, type Config } from '../config.js';
import { ingestEverything, inputIds, logSourceFor, outputStoreFor, publishDay, warehouseFor, type JobOptions, type JobSummary, type RunContext } from './daily-job.js';
import { openEngine } from '../../lib/duckdb-engine.js';
import type { Log } from '../../lib/log.js';
import { acquireLock } from '../../state/run-lock.js';

export interface BackfillOptions extends Omit<JobOptions, 'day' | 'hooks' | 'dryRun'> {
  from: string;
  to: string;
  log: Log;
  /** Publish days even when their manifest shows the same inputs. */
  force?: boolean;
  /** Days rolled up at once. */
  parallelDays?: number;
  hooks?: { beforeDay?: (day: string) => Promise<void> };
}

export interface BackfillSummary {
  run: string;
  days: number;
  done: string[];
  skipped: string[];
  failed: Array<{ day: string; error: string }>;
  pings: number;
  parsedObjects: number;
  scanned: JobSummary['scanned'];
  consumedCapacity: number;
}

export const MAX_BACKFILL_DAYS = 1000;

export function daysBetween(from: string, to: string): string[] {
  const start = Date.parse(`${from}T00:00:00Z`), end = Date.parse(`${to}T00:00:00Z`);
  if (end < start) throw new ConfigError(`FROM=${from} is after TO=${to}`);
  const n = (end - start) / 86_400_000 + 1;
  if (n > MAX_BACKFILL_DAYS) throw new ConfigError(`FROM=${from} TO=${to} spans ${n} days; backfill at most ${MAX_BACKFILL_DAYS} at a time`);
  return Array.from({ length: n }, (_, i) => new Date(start + i * 86_400_000).toISOString().slice(0, 10));
}

export async function runBackfill(config: Config, opts: BackfillOptions): Promise<BackfillSummary> {
  const { log } = opts;
  const days = daysBetween(opts.from, opts.to);
  const run = randomUUID();
  const source = await logSourceFor(config);
  const store = await outputStoreFor(config);
  const warehouse = await warehouseFor(config, log);
  const summary: BackfillSummary = { run, days: days.length, done: [], skipped: [], failed: [], pings: 0, parsedObjects: 0, scanned: [], consumedCapacity: 0 };
  const release = await acquireLock(store, run, `backfill ${opts.from}..${opts.to}`, opts.waitSeconds ?? 0,
    (holder) => log.info('lock.wait', { holder: `${holder.command} pid ${holder.pid} on ${holder.host}` }));
  const dir = await mkdtemp(join(tmpdir(), 'pingroll-backfill-'));
  try {
    log.info('backfill.start', { run, from: opts.from, to: opts.to, days: days.length, logs: source.url, output: store.url });
    const { hooks: _dayHooks, ...jobOpts } = opts;
    const ctx: RunContext = { run, config, source, store, warehouse, ledger: await Ledger.load(store), dir, log, opts: jobOpts, warehouseQueue: Promise.resolve() };
    const tables = new Map<string, MonthlyTable>();
    if (config.ddbTables) for (const d of days) for (const t of tablesForDay(config.ddbTables, d)) tables.set(t.name, t);
    const ingestEngine = await openEngine({ tempDir: join(dir, 'spill-ingest') });
    const ingested = { parsedObjects: 0, parsedRecords: 0, scanned: [] as JobSummary['scanned'], missingTables: [] as string[] };
    try {
      await ingestEverything(ctx, ingestEngine, [...tables.values()], ingested);
    } finally {
      ingestEngine.closeSync();
    }
    summary.parsedObjects = ingested.parsedObjects;
    summary.scanned = ingested.scanned;
    summary.consumedCapacity = ingested.scanned.reduce((n, t) => n + t.consumedCapacity, 0);

    const parallel = opts.parallelDays ?? 2;
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
          if (!opts.force && await sameInputs(ctx, day)) {
            summary.skipped.push(day);
            return;
          }
          await opts.hooks?.beforeDay?.(day);
          // One engine a day: its temporary tables are its own; memory is shared out among them.
          const engine = await openEngine({ tempDir: join(dir, `spill-${day}`), memoryLimit: `${Math.max(256, Math.floor(2048 / parallel))}MB` });
          try {
            const r = await publishDay(ctx, engine, day, ingested.scanned, ingested.missingTables);
            summary.pings += r.pings;
            summary.done.push(day);
          } finally {
            engine.closeSync();
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
    for (const list of [summary.done, summary.skipped]) list.sort();
    summary.failed.sort((a, b) => a.day.localeCompare(b.day));
    log.info('backfill.done', { run, days: days.length, done: summary.done.length, skipped: summary.skipped.length, failed: summary.failed.map((f) => f.day),
      pings: summary.pings, parsedObjects: summary.parsedObjects, tablesScanned: summary.scanned.map((t) => t.table), consumedCapacity: summary.consumedCapacity });
    return summary;
  } finally {
    await warehouse?.close();
    await rm(dir, { recursive: true, force: true });
    await release();
  }
}

/** Whether the day's manifest names exactly the batches and scans the day would read now. */
async function sameInputs(ctx: RunContext, day: string): Promise<boolean> {
  const body = await ctx.store.get(`_runs/dt=${day}/manifest.json`);
  if (!body) return false;
  try {
    const manifest = JSON.parse(body.toString('utf8')) as { inputs?: { batches?: string[] } };
    return JSON.stringify(manifest.inputs?.batches ?? null) === JSON.stringify(inputIds(ctx.ledger, day));
  } catch {
    return false;
  }
}
