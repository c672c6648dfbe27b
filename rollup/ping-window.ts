/**
 * The ping-id window (contract §4): clients resend a ping they could not deliver when the app is next
 * opened, days later, with its id. A day's survivor is a `repeat` when a counted survivor with the same
 * ping id lies on an earlier day, at most W days (PINGROLL_DEDUPE_DAYS) before it by event time; a
 * repeat is counted nowhere, and its day's audit counts it.
 *
 * What every engine shares: each rolled-up day leaves its **ping ids**, one row per survivor with a
 * ping id (PING_IDS_COLUMNS), in a Parquet file of its own that the day's manifest names (`pingIds`).
 * A later day's rollup reads the ping ids of the W days before it (`historyDays`), their counted rows
 * only; and when a republished day's counted ids change, the published days after it that hold one of
 * those ids are stale (`laterDays`, jobs/stages/window.ts). The DuckDB engine also keeps, beside the
 * file, its counted ids as sorted 128-bit keys, which its check merges against
 * (rollup/engines/duckdb/ping-keys.ts); the Redshift engine keeps them in a table distributed by the
 * id (rollup/engines/redshift/window-table.ts).
 *
 * Only the day W days before needs the event times compared: a record of day D is more than W days
 * after anything before day D - W, and at most W days after anything from D - W + 1 on.
 */
import { addDays } from '../lib/utc-day.js';
import type { DayInput, RunContext } from './engine.js';

/** The columns of a day's ping-ids file, in order: the id, its survivor's event time (epoch ms), whether that survivor is a repeat, and whether the day counts it. */
export const PING_IDS_COLUMNS = [
  { name: 'ping_id', type: 'VARCHAR' },
  { name: 'event_ms', type: 'BIGINT' },
  { name: 'repeat', type: 'BOOLEAN' },
  /** Neither a repeat nor left out as automated traffic (a session caught by the session rate). */
  { name: 'counted', type: 'BOOLEAN' },
] as const;

/** Rows a row group of a ping-ids file holds. */
export const PING_IDS_ROW_GROUP = 100_000;

/**
 * The day's ids one pass of the window check holds at most (DuckDB's engine: window-check.ts): the
 * day's ids are checked a range at a time, so that what a pass holds is bounded whatever the day.
 */
export const WINDOW_PASS_IDS = 2_000_000;

/** The days whose counted ping ids can make a survivor of `day` a repeat: the `w` days before it, oldest first. */
export function historyDays(day: string, w: number): string[] {
  const out: string[] = [];
  for (let k = w; k >= 1; k--) out.push(addDays(day, -k));
  return out;
}

/** The days a survivor of `day` can make a repeat: the `w` days after it. */
export function laterDays(day: string, w: number): string[] {
  const out: string[] = [];
  for (let k = 1; k <= w; k++) out.push(addDays(day, k));
  return out;
}

/**
 * A day's `window.checked` line (docs/operations.md), as each engine writes it: the window, the ids the
 * day kept and its repeats, then the engine's own account of what the check cost (`cost`).
 */
export function logWindowChecked(run: RunContext, input: Pick<DayInput, 'day' | 'window'>, ids: number, repeats: Record<string, number>, cost: Record<string, unknown>): void {
  const { day, window } = input;
  run.log.info('window.checked', { day, days: window.days, historyFiles: window.history.length + window.closedAfter.length, ids,
    repeats: Object.values(repeats).reduce((a, b) => a + b, 0), ...cost });
}
