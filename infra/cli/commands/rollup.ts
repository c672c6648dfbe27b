import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, parseDay } from '../../config.js';
import { runDailyJob } from '../../jobs/daily-job.js';
import { makeLog } from '../../../lib/log.js';

const CONFIG_FLAGS = {
  logs: { type: 'string' }, 'ping-keys': { type: 'string' }, 'ddb-tables': { type: 'string' }, 'ddb-exports': { type: 'string' },
  output: { type: 'string' }, warehouse: { type: 'string' },
} as const;

export function configFrom(values: Record<string, string | boolean | undefined>): ReturnType<typeof loadConfig> {
  const s = (k: string): string | undefined => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
  return loadConfig(process.env, {
    logs: s('logs'), pingKeys: s('ping-keys'), ddbTables: s('ddb-tables'), ddbExports: s('ddb-exports'), output: s('output'), warehouse: s('warehouse'),
  });
}

/** `pingroll rollup --date D`: the daily job for one UTC day. */
export async function rollupCommand(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      ...CONFIG_FLAGS,
      date: { type: 'string' },
      'dry-run': { type: 'boolean' },
      wait: { type: 'string', default: '0' },
      concurrency: { type: 'string', default: '4' },
      rescan: { type: 'boolean' },
      'max-rcu': { type: 'string' },
      segments: { type: 'string', default: '4' },
    },
  });
  const maxRcu = values['max-rcu'] === undefined ? undefined : Number(values['max-rcu']);
  if (maxRcu !== undefined && !(maxRcu > 0)) throw new ConfigError(`--max-rcu=${values['max-rcu']} must be a positive number of read capacity units per second`);
  const segments = Number(values.segments);
  if (!(Number.isInteger(segments) && segments >= 1 && segments <= 1000)) throw new ConfigError(`--segments=${values.segments} must be a whole number from 1 to 1000`);
  if (!values.date) throw new ConfigError('DATE is missing; run as make rollup DATE=YYYY-MM-DD');
  const day = parseDay(values.date);
  const wait = Number(values.wait), concurrency = Number(values.concurrency);
  if (!(wait >= 0)) throw new ConfigError(`--wait=${values.wait} must be a number of seconds`);
  if (!(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 64)) throw new ConfigError(`--concurrency=${values.concurrency} must be a whole number from 1 to 64`);
  const config = configFrom(values);
  const log = makeLog();
  const summary = await runDailyJob(config, { day, log, dryRun: values['dry-run'], waitSeconds: wait, concurrency, rescan: values.rescan, maxRcu, segments });
  if (!summary.dryRun) {
    const scanned = summary.scanned.map((t) => `${t.table} (${t.items} items, ${t.consumedCapacity} RCU)`).join(', ');
    process.stdout.write(`${day}: ${summary.pings} pings from ${summary.parsedObjects} newly parsed objects${scanned ? ` and scans of ${scanned}` : ''}; `
      + `${summary.outputs.map((o) => `${o.table} ${o.rows} rows`).join(', ')}\n`);
  }
}

export { CONFIG_FLAGS };
