/**
 * Time zones for licensors' months (contract §9): an IANA zone's local month, as the UTC minutes it
 * holds. Minutes are UTC minutes of event time; each belongs to the local month (and local day) its
 * start falls in, by the zone's offset at that instant (DST, half-hour and 45-minute offsets alike).
 * Node's own ICU data answers; the SQL that assigns pings does the same with DuckDB's ICU.
 */
import { addMonths, dayOf } from './utc-day.js';

/** The zone a month is in when none is given. */
export const UTC = 'UTC';

/** Whether `tz` is a zone this runtime knows (an IANA name, or UTC). */
export function isZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return /^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(tz);
  } catch {
    return false;
  }
}

/** The zone's name as a path segment and a file name: `Asia/Kolkata` as `Asia.Kolkata` (IANA names hold no dot). */
export function zoneSlug(tz: string): string {
  return tz.replace(/\//g, '.');
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** The local date and time of an instant in `tz`, as `YYYY-MM-DD hh:mm`. */
export function localMinute(ms: number, tz: string): string {
  let f = formats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    formats.set(tz, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
}

/** The local day (`YYYY-MM-DD`) of an instant in `tz`. */
export function localDay(ms: number, tz: string): string {
  return localMinute(ms, tz).slice(0, 10);
}

/** The UTC days that hold minutes of `month`'s local month in `tz`: the month's own in UTC, one more at an end elsewhere. */
export function utcDaysOfLocalMonth(month: string, tz: string): { from: string; to: string } {
  const { startMs, endMs } = localMonthMs(month, tz);
  return { from: dayOf(startMs), to: dayOf(endMs - 1) };
}

/** The zone's offset from UTC at an instant, ms (local minus UTC). */
export function zoneOffsetMs(ms: number, tz: string): number {
  const m = localMinute(ms, tz);
  const local = Date.UTC(+m.slice(0, 4), +m.slice(5, 7) - 1, +m.slice(8, 10), +m.slice(11, 13), +m.slice(14, 16));
  return local - Math.floor(ms / 60000) * 60000;
}

/** The UTC instant a local day starts in `tz` (its first minute; where DST skips midnight, the first that exists). */
export function localDayStartMs(day: string, tz: string): number {
  const wall = Date.parse(`${day}T00:00:00Z`);
  let t = wall;
  for (let i = 0; i < 3; i++) t = wall - zoneOffsetMs(t, tz);
  // A midnight DST skipped: the first minute of the day that exists.
  while (localDay(t, tz) < day) t += 60_000;
  while (localDay(t - 60_000, tz) === day) t -= 60_000;
  return t;
}

/** A local month of `tz` as UTC instants: [startMs, endMs). */
export function localMonthMs(month: string, tz: string): { startMs: number; endMs: number } {
  return { startMs: localDayStartMs(`${month}-01`, tz), endMs: localDayStartMs(addMonths(`${month}-01`, 1), tz) };
}
