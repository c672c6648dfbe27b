/**
 * Alerts for cron users (`PINGROLL_NOTIFY_URL`): one JSON POST when a run fails, leaves log objects in
 * the quarantine, or is a backfill (`make rollup-stale` is one) that leaves days stale. A daily rollup
 * leaving yesterday's day stale is the normal course (late records; the second cron line republishes
 * it), so it is counted in the metrics, not notified. Bounded: three attempts, each with a 5-second limit, a second
 * and two between them. It never changes the run's exit code: a notification that cannot be delivered
 * is said in the log and dropped.
 */
import { hostname } from 'node:os';
import type { RunFigures } from './run-figures.js';

export interface Notification {
  source: 'pingroll';
  command: string;
  run: string | null;
  days: string[];
  exitCode: number;
  /** The failure's one line (what to do), or why the run is reported though it succeeded. */
  reason: string;
  counts: { recordsRead: number; objectsParsed: number; pings: number; rejects: number; quarantinedObjects: number; staleDays: number };
  host: string;
  at: string;
}

/** The notification for this run, or null when there is nothing to say (exit 0, nothing quarantined, nothing stale). */
export function notificationFor(f: RunFigures, exitCode: number, failure: string | null, nowMs: number): Notification | null {
  const stale = f.staleDays;
  if (exitCode === 0 && f.quarantinedObjects === 0 && (stale === 0 || f.command !== 'backfill')) return null;
  const reason = failure ?? (f.quarantinedObjects > 0 ? `${f.quarantinedObjects} log objects could not be read (pingroll quarantine list)`
    : `${stale} days received records after they were published: run pingroll backfill --stale`);
  return {
    source: 'pingroll', command: f.command, run: f.run, days: [...f.days].sort(), exitCode, reason,
    counts: { recordsRead: f.recordsRead, objectsParsed: f.objectsParsed, pings: f.pings, rejects: f.rejects, quarantinedObjects: f.quarantinedObjects, staleDays: stale },
    host: hostname(), at: new Date(nowMs).toISOString(),
  };
}

export interface NotifyOptions { attempts?: number; timeoutMs?: number; backoffMs?: number }

/** POSTs `n` to `url`; resolves to null when delivered (2xx), else to why not. Never throws. */
export async function notify(url: string, n: Notification, opts: NotifyOptions = {}): Promise<string | null> {
  const attempts = opts.attempts ?? 3, timeoutMs = opts.timeoutMs ?? 5000, backoffMs = opts.backoffMs ?? 1000;
  let why = '';
  for (let i = 0; i < attempts; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, backoffMs * i));
    try {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(n), signal: AbortSignal.timeout(timeoutMs) });
      await r.body?.cancel();
      if (r.ok) return null;
      why = `HTTP ${r.status}`;
      // A client error will not be different next time (but 408 and 429 may).
      if (r.status < 500 && r.status !== 408 && r.status !== 429) break;
    } catch (err) {
      why = (err as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (err as Error).message;
    }
  }
  return why;
}
