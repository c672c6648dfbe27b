/**
 * The rejects lines an engine makes (contract §9, §10), as SQL both engines run (DuckDB here, Redshift
 * in an UNLOAD), so a line reads the same whichever made it:
 * - the day's automated traffic record by record: each record a rollup left out as `invalid_traffic`,
 *   a line of the day's rejects (`dayRejectsKey`, datasets/layout.ts; export/day-rejects.ts), with its
 *   rule, the rule's reason and its staged columns. A staged ping keeps no client address or user
 *   agent (contract §10: only what was looked up from them); `natural_key` finds the record where it
 *   came from (`r:` and the S3 request id, or `k:` and the DynamoDB item's key);
 * - a batch's pings of a day whose staged data expired, `too_late`, with the reason and the batch.
 * Each in one order (time, then natural key), so a day rolled up again writes the same file.
 */
import { sqlString } from '../lib/duckdb-engine.js';
import { STAGED_COLUMN_NAMES } from '../ingest/staged-ping.js';
import { ruleReasonSql } from './rules.js';

/** The staged columns each left-out record keeps (its rule stands for `agent_rule`), in this order. */
export const EXCLUDED_STAGED_COLUMNS = STAGED_COLUMN_NAMES.filter((c) => c !== 'agent_rule');

/** SQL: the records of `relation` (a `rule` and EXCLUDED_STAGED_COLUMNS) as `invalid_traffic` rejects lines, in order. */
export function invalidTrafficLinesSql(relation: string): string {
  return `SELECT 'invalid_traffic' AS outcome, rule, ${ruleReasonSql('rule')} AS reason, ${EXCLUDED_STAGED_COLUMNS.join(', ')}
    FROM ${relation} ORDER BY event_ms, natural_key, source, rule`;
}

/** SQL: the staged pings of `relation` (every staged column) as `too_late` rejects lines of `batch`, in order. */
export function tooLateLinesSql(relation: string, batch: string, reason: string): string {
  return `SELECT 'too_late' AS outcome, ${sqlString(reason)} AS reason, ${sqlString(batch)} AS batch, ${STAGED_COLUMN_NAMES.join(', ')}
    FROM ${relation} ORDER BY event_ms, natural_key, source`;
}
