import { ConfigError, parseDay, type Config } from '../../infra/config.js';
import { objectStoreAt } from '../../infra/backends.js';
import { dayStatus, type DayStatus } from '../../jobs/day-status.js';
import { daysBetween } from '../../jobs/backfill.js';
import { LISTER_RULES } from '../../ingest/listing/lister.js';
import { RunState } from '../../state/run-state.js';
import { Manifests } from '../../export/manifest.js';
import { ListedDays } from '../../ingest/listing/listing-state.js';
import { addDays } from '../../lib/utc-day.js';

/**
 * `pingroll status [--from D] [--to D] [--json]`: each day's state, the run that last published it,
 * when, its pings, and why it is not complete (a provisional day: when it expects to be final). The
 * range defaults to the 30 days up to yesterday. `verdict`: `complete` when every day is, `provisional`
 * when the others are only waiting for their scheduled listings (nothing to do), else `attention`.
 */
export async function statusCommand(config: Config, opts: { from?: string; to?: string; json?: boolean }, now = new Date()): Promise<{ text: string; verdict: 'complete' | 'provisional' | 'attention' }> {
  const yesterday = addDays(now.toISOString().slice(0, 10), -1);
  const to = opts.to ? parseDay(opts.to, '--to') : yesterday;
  const from = opts.from ? parseDay(opts.from, '--from') : addDays(to, -29);
  if (to < from) throw new ConfigError(`--from=${from} is after --to=${to}`);
  const store = await objectStoreAt(config.output, config);
  await store.check();
  const [state, listed] = await Promise.all([RunState.load(store, LISTER_RULES), ListedDays.load(store, config.schedule)]);
  const manifests = new Manifests(store);
  const statuses: DayStatus[] = [];
  for (const day of daysBetween(from, to)) statuses.push(await dayStatus({ state, listed, manifests }, day, now));
  // A closed day is final: as good as complete.
  const final = (s: DayStatus): boolean => s.state === 'complete' || s.state === 'closed';
  const verdict = statuses.every(final) ? 'complete' : statuses.every((s) => final(s) || s.state === 'provisional') ? 'provisional' : 'attention';
  if (opts.json) return { text: statuses.map((s) => JSON.stringify(s)).join('\n') + '\n', verdict };
  const at = (t: string | null): string => (t?.slice(0, 19).replace('T', ' ') ?? '-').padEnd(20);
  const count = (n: number | null, width: number): string => (n === null ? '-' : n.toLocaleString('en')).padStart(width);
  const lines = [`${'day'.padEnd(10)}  ${'state'.padEnd(10)}  ${'published at'.padEnd(20)}  ${'checked at'.padEnd(20)}  ${'pings'.padStart(10)}  ${'repeats'.padStart(8)}  reason`];
  for (const s of statuses) {
    lines.push(`${s.day}  ${s.state.padEnd(10)}  ${at(s.publishedAt)}  ${at(s.checkedAt)}  ${count(s.pings, 10)}  ${count(s.repeats, 8)}  ${s.reason}`);
  }
  const counts = new Map<string, number>();
  for (const s of statuses) counts.set(s.state, (counts.get(s.state) ?? 0) + 1);
  lines.push('', `${from}..${to}: ${[...counts].map(([state, n]) => `${n} ${state}`).join(', ')}`);
  return { text: lines.join('\n') + '\n', verdict };
}
