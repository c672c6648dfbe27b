/**
 * `pingroll rollup --month YYYY-MM`: parse what is new (as every run does), then roll up the month's
 * `monthly_series_stats` from every day of it that has staged data, and publish it whole.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { tablesForDay, type MonthlyTable } from '../ingest/dynamodb/monthly-tables.js';
import { openEngine } from '../lib/duckdb-engine.js';
import type { Log } from '../lib/log.js';
import { addDays, addMonths, daysFrom } from '../lib/utc-day.js';
import type { Backends } from '../infra/backends.js';
import type { Config } from '../infra/config.js';
import { ingest, withRun, type IngestSummary } from './daily.js';

export interface MonthOptions { month: string; log: Log; waitSeconds?: number; now?: Date }

export async function runMonthRollup(config: Config, backends: Backends, opts: MonthOptions): Promise<IngestSummary & { run: string; series: number; days: number }> {
  const run = randomUUID();
  const { log, month } = opts;
  return withRun(backends, { run, command: `rollup --month ${month}`, kind: 'month', log, waitSeconds: opts.waitSeconds, start: ['month.start', { run, month }], settings: config }, async (state) => {
    const days = daysFrom(`${month}-01`, addDays(addMonths(`${month}-01`, 1), -1));
    const tables = new Map<string, MonthlyTable>();
    if (config.ddbTables) for (const d of days) for (const t of tablesForDay(config.ddbTables, d)) tables.set(t.name, t);
    const engine = await openEngine({ tempDir: join(state.dir, 'spill'), memoryLimitMb: config.memoryLimitMb });
    try {
      const { settled: _, ...ingested } = await ingest(config, backends, state.ledger, engine, [...tables.values()], { log, now: opts.now, asked: days, fence: state.fence, quarantine: state.quarantine });
      const published = await state.publisher.publishMonth(engine, month);
      return { run, ...ingested, ...published };
    } finally {
      engine.closeSync();
    }
  });
}
