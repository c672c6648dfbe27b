/**
 * The legacy tables' hash key (contract §1b): an event time followed by a random shard token that spread
 * writes over partitions. The time is 10-digit epoch seconds (`1793485622` + `74`) or ISO-8601 UTC to
 * the second, optionally with a fraction (`2026-11-01T23:33:32Z`, `...32.250Z`); the token is whatever
 * follows, after one optional separator (`#`, `.`, `_`, `-`).
 */

const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z/;

/** The event time in epoch ms, or NaN when `tsShard` holds no readable time. */
export function eventTimeOfShardKey(tsShard: string): number {
  if (/^\d{10}/.test(tsShard)) {
    // An ISO time starts with 4 digits and a dash: 10 digits in a row can only be epoch seconds.
    return Number(tsShard.slice(0, 10)) * 1000;
  }
  const m = ISO.exec(tsShard);
  if (!m) return NaN;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  const check = new Date(ms);
  if (check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) return NaN;
  return ms + (m[7] ? Math.floor(Number(`0.${m[7]}`) * 1000) : 0);
}
