/**
 * `pingroll close --month YYYY-MM [--tz Area/City] [--reopen --reason TEXT]`: close a month, or
 * issue the next version of a closed one (contract §9). Nothing is parsed: what arrived for the
 * month's days is accounted first (the adjustments stage), then the month is closed from what is
 * staged and published.
 *
 *   lock (run.ts) → adjustments (stages/adjust.ts) → close (stages/close.ts)
 */
import { withStage, type Stage } from './stages/stage.js';
import { randomUUID } from 'node:crypto';
import { RUNS } from '../datasets/layout.js';
import type { Log } from '../lib/log.js';
import { addMonths } from '../lib/utc-day.js';
import { UTC } from '../lib/time-zone.js';
import type { Backends } from '../infra/backends.js';
import type { Config } from '../infra/config.js';
import { withRun } from './run.js';
import { adjust } from './stages/adjust.js';
import { CloseRefusedError, closeMonth, resumeReopens, type Closed } from './stages/close.js';

export interface CloseOptions { month: string; tz?: string; reopen?: string | null; log: Log; now?: Date; waitSeconds?: number }

export async function runClose(config: Config, backends: Backends, opts: CloseOptions): Promise<Closed & { run: string }> {
  const id = randomUUID();
  const tz = opts.tz ?? UTC;
  const what = `close ${opts.month}${tz === UTC ? '' : ` --tz ${tz}`}${opts.reopen ? ' --reopen' : ''}`;
  return withRun(backends, { id, command: what, kind: 'close', log: opts.log, waitSeconds: opts.waitSeconds, start: ['close.start', { run: id, month: opts.month, tz, reopen: opts.reopen ?? null }] }, (run) =>
    withStage({ config, backends, run }, 'close', async (stage) => {
      await adjust(stage);
      await resumeReopens(stage, opts.now);
      return { run: id, ...(await closeMonth(stage, { month: opts.month, tz, reopen: opts.reopen ?? null, now: opts.now })) };
    }));
}

/**
 * The daily job's closes (`PINGROLL_CLOSE_AFTER_DAYS`): each UTC month of the last year that ended at
 * least that many days ago and is not closed, oldest first. A month that cannot be closed yet is said
 * (`month.not_closed`, with the days) and tried again by the next run; the months after it wait, so
 * that adjustments are always reported on the next month.
 */
export async function autoClose(stage: Stage, now: Date): Promise<string[]> {
  const { config, backends, run } = stage;
  if (config.closeAfterDays === null) return [];
  const closed: string[] = [];
  const thisMonth = now.toISOString().slice(0, 7);
  for (let back = 12; back >= 1; back--) {
    const month = addMonths(`${thisMonth}-01`, -back).slice(0, 7);
    if (run.state.closes.get(month, UTC)) continue;
    const due = Date.parse(`${addMonths(`${month}-01`, 1)}T00:00:00Z`) + config.closeAfterDays * 86_400_000;
    if (now.getTime() < due) break;
    // A month of which no day was ever published is no month of this output's.
    if (!(await anyPublished(backends, month))) continue;
    try {
      await closeMonth(stage, { month, tz: UTC, now });
      // (The run's closes are as they are now: the next month's adjustments are reported after this one.)
      closed.push(month);
    } catch (err) {
      if (!(err instanceof CloseRefusedError)) throw err;
      run.log.warn('month.not_closed', { month, reason: err.message, hint: 'it is closed by the first run after its days are complete; see pingroll status' });
      break;
    }
  }
  return closed;
}

async function anyPublished(backends: Backends, month: string): Promise<boolean> {
  return (await backends.store.list(`${RUNS}dt=${month}-`)).length > 0;
}
