import { FIELD_NAMES, KNOWN_FIELDS, type FieldName } from './record-layout.js';
import type { ScannedRecord } from './record-reader.js';

/** The five numeric fields: numbers in `pingroll parse` output (contract §7). */
const NUMERIC = new Set<FieldName>(['http_status', 'bytes_sent', 'object_size', 'total_time', 'turn_around_time']);

export type RecordFields = Record<FieldName, string | number | null>;

/** One field as logged: quotes removed, `-` and absent fields as null. */
export function fieldText(r: ScannedRecord, i: number): string | null {
  const s = r.start(i);
  if (s < 0) return null;
  const e = r.end(i);
  if (e - s === 1 && r.b[s] === 0x2d) return null;
  return r.b.toString('utf8', s, e);
}

/** A digits-only field as a number (the scanner has checked its shape); null for `-`. */
export function fieldNumber(r: ScannedRecord, i: number): number | null {
  const s = r.start(i);
  if (s < 0) return null;
  const e = r.end(i);
  if (e - s === 1 && r.b[s] === 0x2d) return null;
  let v = 0;
  for (let k = s; k < e; k++) v = v * 10 + (r.b[k]! - 0x30);
  return v;
}

/** ISO-8601 UTC to the second, as contract §7 prints times: `2026-11-01T10:20:30Z`. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19) + 'Z';
}

/** Every known field by name, as `pingroll parse` prints them. */
export function recordFields(r: ScannedRecord): RecordFields {
  const out = {} as RecordFields;
  for (let i = 0; i < KNOWN_FIELDS; i++) {
    const name = FIELD_NAMES[i]!;
    if (name === 'time') out.time = Number.isNaN(r.timeMs) ? null : isoSeconds(r.timeMs);
    else out[name] = NUMERIC.has(name) ? fieldNumber(r, i) : fieldText(r, i);
  }
  return out;
}
