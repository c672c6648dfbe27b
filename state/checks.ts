/**
 * When a day was last checked (`dt=<day>.json` in CHECKS): a run that finds nothing new for a day
 * publishes nothing, and says here that it looked, so that `pingroll status` shows a fresh check
 * however long ago the day was last published. The next publication of the day carries it too (its
 * manifest's `finishedAt` is then the check).
 */
import { CHECKS } from '../datasets/layout.js';
import type { ObjectStore } from './object-store/object-store.js';

export interface DayCheck { run: string; at: string }

function checkKey(day: string): string {
  return `${CHECKS}dt=${day}.json`;
}

/** When each day was last checked, in CHECKS of the store it was loaded with (RunState). */
export class Checks {
  constructor(private readonly store: ObjectStore) {}

  /**
   * Not waited onto the disk (a sync took 3-18 ms of a 0.12 s run with nothing to do here: issue #42):
   * a check a power cut takes is said again by the next run, and until then `status` shows the one before.
   */
  async record(day: string, run: string, at = new Date()): Promise<void> {
    await this.store.putUnsynced(checkKey(day), Buffer.from(JSON.stringify({ run, at: at.toISOString() } satisfies DayCheck) + '\n'));
  }

  /** Forgets the day's check: retention's, for a day that can never be rolled up again. */
  async forget(day: string): Promise<void> {
    await this.store.delete(checkKey(day));
  }

  /** The day's last check with nothing new; null: none since it was published (or never). */
  async last(day: string): Promise<DayCheck | null> {
    const body = await this.store.get(checkKey(day));
    if (!body) return null;
    try {
      return JSON.parse(body.toString()) as DayCheck;
    } catch {
      return null;
    }
  }
}
