import { withBackends } from '../../infra/backends.js';
import { ConfigError, type Config } from '../../infra/config.js';
import { runClose } from '../../jobs/close.js';
import { isZone, UTC } from '../../lib/time-zone.js';
import { makeLog } from '../run-log.js';

export interface CloseCommandOptions { month?: string; tz?: string; reopen?: boolean; reason?: string }

/** A `--tz` value: an IANA zone this runtime knows, or UTC when none is given. */
export function zoneOption(tz: string | undefined): string {
  if (tz === undefined) return UTC;
  if (!isZone(tz)) throw new ConfigError(`--tz=${tz} is not a time zone: give an IANA name such as America/New_York, Asia/Kolkata or UTC`);
  return tz;
}

/** A `--month` value. */
export function monthOption(month: string | undefined, command: string): string {
  if (!month) throw new ConfigError(`${command} needs --month YYYY-MM`);
  if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) {
    // A month written without its leading zero (2026-1) is shown as it should be.
    const m = /^(\d{4})-(\d{1,2})$/.exec(month);
    const example = m && +m[2]! >= 1 && +m[2]! <= 12 ? `${m[1]}-${m[2]!.padStart(2, '0')}` : '2026-01';
    throw new ConfigError(`--month=${month} is not a month; give it as YYYY-MM (such as ${example})`);
  }
  return month;
}

/** `pingroll close --month YYYY-MM [--tz Z] [--reopen --reason TEXT]`: one summary line on stdout. */
export async function closeCommand(config: Config, opts: CloseCommandOptions): Promise<void> {
  const month = monthOption(opts.month, 'close');
  const tz = zoneOption(opts.tz);
  if (opts.reopen && !opts.reason?.trim()) throw new ConfigError('--reopen needs --reason "...": what changes and why is written down with the new version');
  if (!opts.reopen && opts.reason !== undefined) throw new ConfigError('--reason goes with --reopen');
  const log = makeLog();
  const c = await withBackends(config, log, (backends, config) => runClose(config, backends, { month, tz, reopen: opts.reopen ? opts.reason!.trim() : null, log, waitSeconds: config.waitSeconds }), { makeViewerKey: true });
  process.stdout.write(`${month}${tz === UTC ? '' : ` (${tz})`}: closed, statement version ${c.version} issued ${c.closedAt}; ${c.series} series`
    + `${c.version > 1 ? `; ${c.changed} figures changed from version ${c.version - 1}` : ''}; pingroll report --month ${month}${tz === UTC ? '' : ` --tz ${tz}`} prints it\n`);
}
