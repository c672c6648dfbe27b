/**
 * What the WebAssembly ping rules (`wasm/ping-rules.as.ts`) decided about a record, in words: the
 * outcome's name, the reason for a reject, and the ping's values read back from its staged row.
 */
import { MAX_ID_LENGTH, OUTCOMES, type Outcome, type PingRecord } from '../ping-record.js';
import { SCAN_ERRORS } from './record-layout.js';
import type { ScannedRecord } from './record-reader.js';

export const DEFAULT_PING_KEYS = ['p.gif'] as const;

/** The rules' outcome codes are indexes into OUTCOMES; bad_item is DynamoDB's alone. */
export const O_PING = 0, O_NOT_PING = 1, O_HTTP_ERROR = 2, O_BAD_QUERY = 3, O_MALFORMED = 4;

const REQUIRED = ['series', 'episode', 'session'] as const;

export function outcomeName(r: ScannedRecord): Outcome {
  return OUTCOMES[r.outcome]!;
}

/** Why a record is not a ping (SPEC §3 reasons, as the rejects file and `parse --reason` give them). */
export function rejectReason(r: ScannedRecord): string {
  switch (r.outcome) {
    case O_NOT_PING: return 'not a ping-key GET';
    case O_HTTP_ERROR: return `status ${r.detail < 0 ? '-' : r.detail}`;
    case O_BAD_QUERY: {
      const name = `x-${REQUIRED[r.detail & 15]}`;
      const problem = r.detail >> 4;
      return problem === 0 ? `missing ${name}` : problem === 1 ? `empty ${name}` : `${name} longer than ${MAX_ID_LENGTH} characters`;
    }
    case O_MALFORMED: return r.detail === 1 ? 'ping without a time' : SCAN_ERRORS[r.error] ?? 'malformed';
    default: return '';
  }
}

/** A ping's values, read back from the CSV row the rules staged for it (its source is s3). */
export type StagedPing = Omit<PingRecord, 'source'>;

export function stagedPing(r: ScannedRecord): StagedPing {
  const f = csvRow(r.b, r.rowStart, r.rowEnd);
  return {
    series: f[1]!, episode: f[2]!, session: f[3]!, user: f[4] || null, pingId: f[5] || null,
    eventTimeMs: Number(f[6]), naturalKey: f[7]!,
  };
}

/** The fields of one CSV row `b[s, e)` (ending in a newline; quotes doubled inside quoted fields). */
function csvRow(b: Buffer, s: number, e: number): string[] {
  const out: string[] = [];
  let i = s;
  const end = b[e - 1] === 0x0a ? e - 1 : e;
  for (;;) {
    if (b[i] === 0x22) {
      const parts: string[] = [];
      let from = i + 1;
      for (let j = from; ; j++) {
        if (b[j] !== 0x22) continue;
        parts.push(b.toString('utf8', from, j));
        if (b[j + 1] === 0x22) {
          parts.push('"');
          from = j + 2;
          j++;
          continue;
        }
        i = j + 1;
        break;
      }
      out.push(parts.join(''));
    } else {
      let j = i;
      while (j < end && b[j] !== 0x2c) j++;
      out.push(b.toString('utf8', i, j));
      i = j;
    }
    if (i >= end) return out;
    i++; // the comma
  }
}
