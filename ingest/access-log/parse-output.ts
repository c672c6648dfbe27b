import type { Verdict } from '../ping-record.js';
import type { PingRules } from './ping-rules.js';
import type { ScannedRecord } from './record-reader.js';
import { isoSeconds, recordFields, type RecordFields } from './record-fields.js';

/** One line of `pingroll parse` output (SPEC §7). */
export interface ParsedLine {
  line: number;
  outcome: Verdict['outcome'];
  fields: RecordFields | null;
  ping: {
    series: string; episode: string; session: string; user: string | null; ping_id: string | null;
    event_time: string;
  } | null;
  /** Only with `--reason`: why a record is not a ping. */
  reason?: string;
}

export function describeRecord(rules: PingRules, r: ScannedRecord, withReason = false): ParsedLine {
  const v = rules.classify(r);
  const out: ParsedLine = {
    line: r.lineNo,
    outcome: v.outcome,
    fields: v.outcome === 'malformed' ? null : recordFields(r),
    ping: v.outcome === 'ping'
      ? {
        series: v.ping.series, episode: v.ping.episode, session: v.ping.session, user: v.ping.user,
        ping_id: v.ping.pingId, event_time: isoSeconds(v.ping.eventTimeMs),
      }
      : null,
  };
  if (withReason && v.outcome !== 'ping') out.reason = v.reason;
  return out;
}
