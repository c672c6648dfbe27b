/**
 * `pingroll rollup --month YYYY-MM`: parse what is new (as every run does), then roll up the month's
 * `monthly_series_stats` from every day of it that has staged data, and publish it whole.
 *
 *   lock (run.ts) → ingest (stages/ingest.ts) → roll up the month (stages/rollup.ts) → publish (stages/publish.ts)
 */
import { randomUUID } from 'node:crypto';
import { tablesForDay, type MonthlyTable } from '../ingest/dynamodb/monthly-tables.js';
import type { Log } from '../lib/log.js';
import { addDays, addMonths, daysFrom } from '../lib/utc-day.js';
import type { Backends } from '../infra/backends.js';
import type { Config } from '../infra/config.js';
import { withRun } from './run.js';
import { ingest, type IngestSummary } from './stages/ingest.js';
import { publishMonth } from './stages/publish.js';
import { rollupMonth } from './stages/rollup.js';

export interface MonthOptions { month: string; log: Log; waitSeconds?: number; now?: Date }

export async function runMonthRollup(config: Config, backends: Backends, opts: MonthOptions): Promise<IngestSummary & { run: string; series: number; days: number }> {
  const id = randomUUID();
  const { log, month } = opts;
  const days = daysFrom(`${month}-01`, addDays(addMonths(`${month}-01`, 1), -1));
  const tables = new Map<string, MonthlyTable>();
  if (config.ddbTables) for (const d of days) for (const t of tablesForDay(config.ddbTables, d)) tables.set(t.name, t);
  return withRun(backends, { id, command: `rollup --month ${month}`, kind: 'month', log, waitSeconds: opts.waitSeconds, start: ['month.start', { run: id, month }] }, (run) =>
    run.withEngine('month', config.memoryLimitMb, async (db) => {
      const { settle, ...ingested } = await ingest(config, backends, run, db, { now: opts.now, asked: days, tables: [...tables.values()] });
      await settle();
      const published = await run.withFolder(`month-${month}`, async (dir) => publishMonth(run, month, await rollupMonth(backends, run, db, dir, month)));
      return { run: id, ...ingested, ...published };
    }));
}
