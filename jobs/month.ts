/**
 * `pingroll rollup --month YYYY-MM`: parse what is new (as every run does), then roll up the month's
 * `monthly_series_stats` from every day of it that has staged data, and publish it whole.
 *
 *   lock (run.ts) → ingest (stages/ingest.ts) → roll up the month (stages/rollup.ts) → publish (stages/publish.ts)
 */
import { withStage } from './stages/stage.js';
import { randomUUID } from 'node:crypto';
import { tablesForDay, type MonthlyTable } from '../ingest/dynamodb/monthly-tables.js';
import type { Log } from '../lib/log.js';
import { daysFrom } from '../lib/utc-day.js';
import { UTC, utcDaysOfLocalMonth } from '../lib/time-zone.js';
import { ConfigError } from '../infra/config.js';
import type { Backends } from '../infra/backends.js';
import type { Config } from '../infra/config.js';
import { withRun } from './run.js';
import { ingest, type IngestSummary } from './stages/ingest.js';
import { publishMonth } from './stages/publish.js';
import { rollupMonth } from './stages/rollup.js';

export interface MonthOptions { month: string; tz?: string; log: Log; waitSeconds?: number; now?: Date }

export async function runMonthRollup(config: Config, backends: Backends, opts: MonthOptions): Promise<IngestSummary & { run: string; series: number; days: number }> {
  const id = randomUUID();
  const { log, month } = opts;
  const tz = opts.tz ?? UTC;
  const { from, to } = utcDaysOfLocalMonth(month, tz);
  const days = daysFrom(from, to);
  const tables = new Map<string, MonthlyTable>();
  if (config.ddbTables) for (const d of days) for (const t of tablesForDay(config.ddbTables, d)) tables.set(t.name, t);
  return withRun(backends, { id, command: `rollup --month ${month}${tz === UTC ? '' : ` --tz ${tz}`}`, kind: 'month', log, waitSeconds: opts.waitSeconds, start: ['month.start', { run: id, month, tz }] }, (run) =>
    withStage({ config, backends, run }, 'month', async (stage) => {
      const closed = run.state.closes.get(month, tz);
      if (closed) throw new ConfigError(`${month}${tz === UTC ? '' : ` (${tz})`} is closed (version ${closed.version}, ${closed.closedAt.slice(0, 10)}): its figures are its statement's (pingroll report --month ${month}${tz === UTC ? '' : ` --tz ${tz}`}); to change them: pingroll close --month ${month}${tz === UTC ? '' : ` --tz ${tz}`} --reopen --reason "..."`);
      const { settle, ...ingested } = await ingest(stage, { now: opts.now, asked: days, tables: [...tables.values()] });
      await settle();
      const published = await run.work.withFolder(`month-${month}`, async (dir) => publishMonth(run, month, await rollupMonth(stage, dir, month, tz)));
      return { run: id, ...ingested, ...published };
    }));
}
