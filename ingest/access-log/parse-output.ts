import type { Outcome } from '../ping-record.js';
import { parseStagedRow } from '../staged-ping.js';
import { O_MALFORMED, O_PING, outcomeName, rejectReason } from './outcome-codes.js';
import type { ScannedRecord } from './record-reader.js';
import { isoSeconds, recordFields, type RecordFields } from './record-fields.js';

/** One line of `pingroll parse` output (contract §7). */
export interface ParsedLine {
  line: number;
  outcome: Outcome;
  fields: RecordFields | null;
  ping: {
    series: string; episode: string; session: string; user: string | null; ping_id: string | null;
    event_time: string;
  } | null;
  /** Only with `--reason`: why a record is not a ping. */
  reason?: string;
}

/** A record read with the ping rules, as `pingroll parse` prints it: the ping's values are those ingest stages. */
export function describeRecord(r: ScannedRecord, withReason = false): ParsedLine {
  let ping: ParsedLine['ping'] = null;
  if (r.outcome === O_PING) {
    const p = parseStagedRow(r.b, r.rowStart, r.rowEnd);
    ping = {
      series: p.series, episode: p.episode, session: p.session, user: p.user, ping_id: p.pingId,
      event_time: isoSeconds(p.eventTimeMs),
    };
  }
  const out: ParsedLine = {
    line: r.lineNo,
    outcome: outcomeName(r),
    fields: r.outcome === O_MALFORMED ? null : recordFields(r),
    ping,
  };
  if (withReason && r.outcome !== O_PING) out.reason = rejectReason(r);
  return out;
}
