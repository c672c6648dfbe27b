/**
 * What pingroll keeps of the people behind the pings (`PINGROLL_PRIVACY`). Its outputs are
 * aggregates; what else it stores holds personal data only in the rejects (the records it could not
 * count, kept so that an operator can see why): an access-log line carries the client's IP address and,
 * for signed requests, the requester's ARN. With `mask`:
 * - a rejected line whose fields were read keeps them all but those two: the IP cut to its network (an
 *   IPv4 address to its /24, `203.0.113.0`; an IPv6 one to its /48, `2001:db8:1::`), the requester `-`;
 * - a rejected line whose fields cannot be trusted (malformed) keeps no text, only its length and its
 *   SHA-256 (its object and line number say where it is);
 * - a rejected legacy-table item keeps only the attributes the ping rules read.
 * Truncating, not hashing: an unkeyed hash of an IPv4 address is undone by hashing all 2^32 of them,
 * and a keyed one would be a secret to keep. Staged pings hold no IP or ARN (their user id is the
 * player's own `x-user`, which viewer counts need); run state holds object keys and reasons only.
 */
import { createHash } from 'node:crypto';

export type Privacy = 'keep' | 'mask';

/** An IPv4 address to its /24, an IPv6 address to its /48; `-` for anything else (an address there is not one). */
export function truncateIp(ip: string): string {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.\d{1,3}$/.exec(ip);
  if (v4) return `${v4[1]}.${v4[2]}.${v4[3]}.0`;
  if (/^[0-9a-fA-F:]+$/.test(ip) && ip.includes(':')) {
    const [head = ''] = ip.split('::');
    const groups = head.split(':').filter((g) => g !== '');
    // Groups before a `::` are the leading ones; a full address has all eight.
    return `${groups.slice(0, 3).join(':')}::`;
  }
  return '-';
}

/** The line `b[start, end)` with bytes `[ipStart, ipEnd)` as its truncated IP and `[reqStart, reqEnd)` as `-`. */
export function maskedLine(b: Buffer, start: number, end: number, ip: [number, number], requester: [number, number]): Buffer {
  const masked = truncateIp(b.toString('latin1', ip[0], ip[1]));
  return Buffer.concat([b.subarray(start, ip[0]), Buffer.from(masked), b.subarray(ip[1], requester[0]), Buffer.from('-'), b.subarray(requester[1], end)]);
}

/** A rejected record that keeps no text: its length and SHA-256 only. */
export function withheld(b: Buffer, start: number, end: number): { record: string; recordBytes: number; recordSha256: string; masked: true } {
  return { record: '', recordBytes: end - start, recordSha256: createHash('sha256').update(b.subarray(start, end)).digest('hex'), masked: true };
}

/** The item attributes the ping rules read (ingest/dynamodb/item-rules.ts): all a masked reject keeps. */
export const ITEM_ATTRIBUTES_KEPT = ['ts_shard', 'series', 'episode', 'session_id', 'user_id', 'ping_id'] as const;

export function maskedItem<T extends Record<string, unknown>>(item: T): Partial<T> {
  const out: Partial<T> = {};
  for (const k of ITEM_ATTRIBUTES_KEPT) if (k in item) (out as Record<string, unknown>)[k] = item[k];
  return out;
}
