import { withBackends } from '../../backends.js';
import { ConfigError, pastDay, type Config } from '../../config.js';
import { runDailyJob } from '../../jobs/daily-job.js';
import { makeLog } from '../run-log.js';
import { unreadableError } from './quarantine.js';

export interface RollupOptions { date?: string; dryRun?: boolean; wait: string; rescan?: boolean }

/** `pingroll rollup --date D`: the daily job for one UTC day; one summary line on stdout. */
export async function rollupCommand(config: Config, opts: RollupOptions): Promise<void> {
  if (!opts.date) throw new ConfigError('DATE is missing; run as make rollup DATE=YYYY-MM-DD');
  const day = pastDay(opts.date);
  const waitSeconds = Number(opts.wait);
  if (!(waitSeconds >= 0)) throw new ConfigError(`--wait=${opts.wait} must be a number of seconds`);
  const log = makeLog();
  const summary = await withBackends(config, log, (backends) =>
    runDailyJob(config, backends, { day, log, dryRun: opts.dryRun, waitSeconds, rescan: opts.rescan }));
  if (!summary.dryRun) {
    const scanned = summary.scanned.map((t) => `${t.table} (${t.items} items, ${t.consumedCapacity} RCU)`).join(', ');
    process.stdout.write(`${day}: ${summary.pings} pings from ${summary.parsedObjects} newly parsed objects${scanned ? ` and scans of ${scanned}` : ''}; `
      + `${summary.outputs.map((o) => `${o.table} ${o.rows} rows`).join(', ')}\n`);
    if (summary.unreadable.length) throw unreadableError(config.output.url, summary.unreadable);
  }
}
