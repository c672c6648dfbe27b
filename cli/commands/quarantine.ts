import { objectStoreAt } from '../../infra/backends.js';
import { ConfigError, type Config } from '../../infra/config.js';
import { QUARANTINE_KEY } from '../../datasets/layout.js';
import { Quarantine } from '../../state/quarantine.js';
import { acquireLock } from '../../state/run-lock.js';
import { randomUUID } from 'node:crypto';

import { UnreadableObjectsError } from '../exit-errors.js';

/** The one line a run that met unreadable objects ends with. */
export function unreadableError(storeUrl: string, unreadable: Array<{ key: string; reason: string }>): UnreadableObjectsError {
  const first = unreadable[0]!;
  return new UnreadableObjectsError(`completed, but ${unreadable.length} log object${unreadable.length > 1 ? 's' : ''} could not be read (first: ${first.key}: ${first.reason}); `
    + `they are listed in ${storeUrl}${QUARANTINE_KEY} and every run tries them again; if one is lost for good: pingroll quarantine accept KEY (or --all)`);
}

/** `pingroll quarantine list | accept KEY | accept --all`. */
export async function quarantineCommand(config: Config, action: string, key: string | undefined, opts: { all?: boolean }): Promise<string> {
  const store = await objectStoreAt(config.output, config);
  if (action === 'list') {
    const q = await Quarantine.load(store);
    const rows = q.all().map((o) => `${o.acceptedLostAt ? 'accepted lost' : 'quarantined  '}  ${o.key}  (${o.reason}; ${o.attempts} attempts since ${o.firstFailedAt})`);
    return (rows.length ? rows.join('\n') : `no log object is quarantined under ${store.url}`) + '\n';
  }
  if (action !== 'accept') throw new ConfigError(`quarantine needs list or accept (got '${action}')`);
  if (!key && !opts.all) throw new ConfigError('quarantine accept needs a KEY (as pingroll quarantine list shows it) or --all');
  // The quarantine is the runs' state: change it only while holding the run lock.
  const lock = await acquireLock(store, randomUUID(), 'quarantine accept');
  try {
    const q = await Quarantine.load(store);
    const accepted = q.accept(opts.all ? null : key!);
    if (accepted.length === 0) throw new ConfigError(`${key ?? 'nothing'} is not a quarantined log object; see pingroll quarantine list`);
    await lock.assertHeld();
    await q.save();
    return accepted.map((o) => `accepted as lost: ${o.key}; runs skip it from now on, and the manifests of the days it may hold say so\n`).join('');
  } finally {
    await lock.release();
  }
}
