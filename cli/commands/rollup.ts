import { withBackends } from '../../infra/backends.js';
import { ConfigError, pastDay, type Config } from '../../infra/config.js';
import { runDailyJob } from '../../jobs/daily.js';
import { runMonthRollup } from '../../jobs/month.js';
import { addDays, addMonths } from '../../lib/utc-day.js';
import { makeLog } from '../run-log.js';
import { unreadableError } from './quarantine.js';
import { monthOption, zoneOption } from './close.js';
import { localMonthMs, UTC } from '../../lib/time-zone.js';

/** `ingest` is commander's --no-ingest: false when given. */
export interface RollupOptions { date?: string; month?: string; tz?: string; dryRun?: boolean; rescan?: boolean; ingest?: boolean }

/** `pingroll rollup --date D`: the daily job for one UTC day; one summary line on stdout. */
export async function rollupCommand(config: Config, opts: RollupOptions): Promise<void> {
  if (opts.month !== undefined) {
    if (opts.ingest === false) throw new ConfigError('--no-ingest is for a day (--date); a month is rolled up from its days');
    return rollupMonthCommand(config, opts);
  }
  if (opts.tz !== undefined) throw new ConfigError('--tz is for a month (--month): daily tables are UTC days');
  // Named as the program takes it, with both ways of calling it: make's DATE= becomes --date.
  const day = pastDay(opts.date, '--date', 'pingroll rollup --date 2026-11-01, or make rollup DATE=2026-11-01');
  const log = makeLog();
  const summary = await withBackends(config, log, (backends, config) =>
    runDailyJob(config, backends, { day, log, dryRun: opts.dryRun, waitSeconds: config.waitSeconds, rescan: opts.rescan, noIngest: opts.ingest === false }), { makeViewerKey: !opts.dryRun });
  if (!summary.dryRun) {
    const scanned = summary.scanned.map((t) => `${t.table} (${t.items} items, ${t.consumedCapacity} RCU)`).join(', ');
    process.stdout.write(`${day}: ${summary.pings} pings${summary.repeats ? ` (and ${summary.repeats} resent with the id of a ping counted before: repeats, left out)` : ''} from ${summary.parsedObjects} newly parsed objects${scanned ? ` and scans of ${scanned}` : ''}; `
      + `${summary.outputs.map((o) => `${o.table} ${o.rows} rows`).join(', ')}${summary.skipped ? `; ${summary.skipped} entries of the log directory skipped (links or not regular files: see the log's object.skipped)` : ''}\n`);
    if (summary.unreadable.length) throw unreadableError(config.output.url, summary.unreadable);
  }
}

/** `pingroll rollup --month YYYY-MM`: the month's `monthly_series_stats`, once the month is over. */
async function rollupMonthCommand(config: Config, opts: RollupOptions): Promise<void> {
  const month = opts.month!;
  if (opts.date) throw new ConfigError('give --date or --month, not both');
  monthOption(month, 'rollup');
  const tz = zoneOption(opts.tz);
  // Its last day must be over, as for a day: the licensors' month is final only then.
  if (tz === UTC) pastDay(addDays(addMonths(`${month}-01`, 1), -1), `--month=${month}: its last day`);
  else if (localMonthMs(month, tz).endMs > Date.now()) throw new ConfigError(`--month=${month} in ${tz} is not over yet: roll a month up once its last day has ended there`);
  const log = makeLog();
  const s = await withBackends(config, log, (backends) => runMonthRollup(config, backends, { month, tz, log, waitSeconds: config.waitSeconds }));
  process.stdout.write(`${month}${tz === UTC ? '' : ` (${tz})`}: monthly_series_stats ${s.series} rows from ${s.days} days; ${s.parsedObjects} newly parsed objects\n`);
  if (s.unreadable.length) throw unreadableError(config.output.url, s.unreadable);
}
