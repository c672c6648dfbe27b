/**
 * What the WebAssembly ping rules (`wasm/ping-rules.as.ts`) decided about a record, in words: the
 * outcome's name and the reason for a reject, from the codes `wasm-abi.ts` defines for both sides.
 */
import { MAX_ID_LENGTH, OUTCOMES, type Outcome } from '../ping-record.js';
import { SCAN_ERRORS } from './record-layout.js';
import type { ScannedRecord } from './record-reader.js';
import {
  DETAIL_PARAMETER_MASK, DETAIL_PROBLEM_SHIFT, MALFORMED_NO_TIME, O_BAD_QUERY, O_HTTP_ERROR, O_MALFORMED, O_NOT_PING,
  PROBLEM_EMPTY, PROBLEM_MISSING,
} from './wasm-abi.js';

export { O_BAD_QUERY, O_HTTP_ERROR, O_MALFORMED, O_NOT_PING, O_PING } from './wasm-abi.js';

/** The required parameters, in the order the rules number them in a bad_query's detail. */
const REQUIRED = ['series', 'episode', 'session'] as const;

export function outcomeName(r: ScannedRecord): Outcome {
  return OUTCOMES[r.outcome]!;
}

/** Why a record is not a ping (contract §3 reasons, as the rejects file and `parse --reason` give them). */
export function rejectReason(r: ScannedRecord): string {
  switch (r.outcome) {
    case O_NOT_PING: return 'not a ping-key GET';
    case O_HTTP_ERROR: return `status ${r.detail < 0 ? '-' : r.detail}`;
    case O_BAD_QUERY: {
      const name = `x-${REQUIRED[r.detail & DETAIL_PARAMETER_MASK]}`;
      const problem = r.detail >> DETAIL_PROBLEM_SHIFT;
      return problem === PROBLEM_MISSING ? `missing ${name}` : problem === PROBLEM_EMPTY ? `empty ${name}` : `${name} longer than ${MAX_ID_LENGTH} characters`;
    }
    case O_MALFORMED: return r.detail === MALFORMED_NO_TIME ? 'ping without a time' : SCAN_ERRORS[r.error] ?? 'malformed';
    default: return '';
  }
}
