import { parseArgs } from 'node:util';
import { runBackfill } from '../../jobs/backfill.js';
import { ConfigError, parseDay } from '../../config.js';
import { makeLog } from '../../../lib/log.js';
import { CONFIG_FLAGS, configFrom } from './rollup.js';

export class SomeDaysFailed extends Error {}

/** `pingroll backfill --from D --to D`: every day of a range; exit 1 naming the days that failed. */
export async function backfillCommand(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      ...CONFIG_FLAGS, from: { type: 'string' }, to: { type: 'string' }, force: { type: 'boolean' },
      days: { type: 'string', default: '2' }, wait: { type: 'string', default: '0' }, rescan: { type: 'boolean' },
      'max-rcu': { type: 'string' }, segments: { type: 'string', default: '4' }, concurrency: { type: 'string', default: '4' },
    },
  });
  if (!values.from || !values.to) throw new ConfigError('FROM and TO are required; run as make backfill FROM=YYYY-MM-DD TO=YYYY-MM-DD');
  const from = parseDay(values.from, 'FROM'), to = parseDay(values.to, 'TO');
  const parallelDays = Number(values.days);
  if (!(Number.isInteger(parallelDays) && parallelDays >= 1 && parallelDays <= 16)) throw new ConfigError(`--days=${values.days} must be a whole number from 1 to 16`);
  const maxRcu = values['max-rcu'] === undefined ? undefined : Number(values['max-rcu']);
  if (maxRcu !== undefined && !(maxRcu > 0)) throw new ConfigError(`--max-rcu=${values['max-rcu']} must be a positive number of read capacity units per second`);
  const s = await runBackfill(configFrom(values), {
    from, to, log: makeLog(), force: values.force, parallelDays, waitSeconds: Number(values.wait), rescan: values.rescan, maxRcu,
    segments: Number(values.segments), concurrency: Number(values.concurrency),
  });
  process.stdout.write(`backfill ${from}..${to}: ${s.done.length} days done, ${s.skipped.length} skipped (unchanged), ${s.failed.length} failed; `
    + `${s.pings} pings; ${s.parsedObjects} log objects parsed; ${s.scanned.length} tables scanned, ${s.consumedCapacity} RCU\n`);
  if (s.failed.length) {
    throw new SomeDaysFailed(`${s.failed.length} of ${s.days} days failed: ${s.failed.map((f) => `${f.day} (${f.error})`).join('; ')}; run the same backfill again to retry them`);
  }
}
