/** UTC days, as pingroll names them (`YYYY-MM-DD`) and counts them (days since 1970-01-01). */

export const DAY_MS = 86_400_000;

/**
 * The day number of an epoch-ms column in SQL, floored like `dayOf` for every time from 0001 to 9999
 * (DuckDB's `//` and integer `/` on PostgreSQL and Redshift truncate toward zero, which puts a time
 * before 1970 that is not at midnight in the day after its own). Exact: below 2^53 a double holds
 * every ms, and its quotient by a day is never rounded across a whole number.
 */
export function dayNumberSql(ms: string): string {
  return `CAST(FLOOR(${ms} / ${DAY_MS}.0) AS BIGINT)`;
}

/** The `YYYY-MM-DD` of day number `n` (days since 1970-01-01, UTC). */
export function dayName(n: number): string {
  return new Date(n * DAY_MS).toISOString().slice(0, 10);
}

/** The day number of a `YYYY-MM-DD`. */
export function dayNumber(day: string): number {
  return Math.floor(Date.parse(`${day}T00:00:00Z`) / DAY_MS);
}

/** The first instant of a `YYYY-MM-DD`, epoch ms. */
export function dayStartMs(day: string): number {
  return Date.parse(`${day}T00:00:00Z`);
}

let last = { start: NaN, name: '' };

/** The UTC day of an instant. Records come in time order mostly: the last day's bounds are kept. */
export function dayOf(ms: number): string {
  if (ms >= last.start && ms < last.start + DAY_MS) return last.name;
  const start = Math.floor(ms / DAY_MS) * DAY_MS;
  last = { start, name: new Date(start).toISOString().slice(0, 10) };
  return last.name;
}

/** Every day from `from` to `to`, both included. */
export function daysFrom(from: string, to: string): string[] {
  const start = dayNumber(from), end = dayNumber(to);
  return Array.from({ length: Math.max(0, end - start + 1) }, (_, i) => dayName(start + i));
}

/** The day `n` days after (or before, for negative `n`) a `YYYY-MM-DD`. */
export function addDays(day: string, n: number): string {
  return dayName(dayNumber(day) + n);
}

/** The first day of the month `n` months after the one of a `YYYY-MM-DD`. */
export function addMonths(day: string, n: number): string {
  const d = new Date(`${day.slice(0, 7)}-01T00:00:00Z`);
  d.setUTCMonth(d.getUTCMonth() + n);
  return d.toISOString().slice(0, 10);
}
