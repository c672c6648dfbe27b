/**
 * Reopens under way (contract §9): a reopen republishes the days its close froze, then publishes its
 * month's next version. `<month>.<zone>.json` in REOPENING says one has begun, with its reason, until
 * that version is published: a run killed in between leaves it, and the next run that holds the lock
 * completes the reopen (jobs/stages/close.ts, `resumeReopens`). Written and removed here only.
 */
import { REOPENING } from '../datasets/layout.js';
import { zoneSlug } from '../lib/time-zone.js';
import type { ObjectStore } from './object-store/object-store.js';

/** A reopen asked for: its month and zone, its reason, the version it reopens, and when it began. */
export interface Reopen { month: string; tz: string; reason: string; from: number; at: string }

function reopenKey(month: string, tz: string): string {
  return `${REOPENING}${month}.${zoneSlug(tz)}.json`;
}

/** The reopens under way, in REOPENING of the store they were loaded with (RunState). */
export class Reopens {
  constructor(private readonly store: ObjectStore) {}

  /** Says a reopen has begun: before any of its days is published again, so that a run killed after that finds it. */
  async begin(r: Reopen): Promise<void> {
    const { month, tz, reason, from, at } = r;
    await this.store.put(reopenKey(month, tz), Buffer.from(JSON.stringify({ month, tz, reason, from, at }) + '\n'));
  }

  /** Lets go of the reopen of `month` in `tz`: only once its version is published. */
  async finish(month: string, tz: string): Promise<void> {
    await this.store.delete(reopenKey(month, tz));
  }

  /** The reopens that have begun and not finished: what runs killed midway left. */
  async unfinished(): Promise<Reopen[]> {
    const out: Reopen[] = [];
    for (const key of await this.store.list(REOPENING)) {
      const body = await this.store.get(key);
      if (body) out.push(JSON.parse(body.toString('utf8')) as Reopen);
    }
    return out;
  }
}
