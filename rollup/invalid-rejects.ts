/**
 * The day's automated traffic record by record (contract §10: kept in the rejects with the rule that
 * caught it): each record a rollup left out as `invalid_traffic`, as a line of the day's rejects
 * (`dayRejectsKey`, datasets/layout.ts; export/day-rejects.ts), with its rule, the rule's reason and
 * its staged columns. A staged ping keeps no client address or user agent (contract §10: only what
 * was looked up from them); `natural_key` finds the record where it came from (`r:` and the S3
 * request id, or `k:` and the DynamoDB item's key).
 */
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../lib/duckdb-engine.js';
import { STAGED_COLUMN_NAMES } from '../ingest/staged-ping.js';
import { ruleReasonSql } from './rules.js';

/** The staged columns each left-out record keeps (its rule stands for `agent_rule`), in this order. */
export const EXCLUDED_STAGED_COLUMNS = STAGED_COLUMN_NAMES.filter((c) => c !== 'agent_rule');

/**
 * Writes the records of `relation` (a `rule` and EXCLUDED_STAGED_COLUMNS) as rejects lines, gzip, to
 * `dir`; the file. Ordered by time, then natural key, so that a day rolled up again writes the same file.
 */
export async function writeInvalidRejects(db: DuckDBConnection, relation: string, dir: string): Promise<string> {
  const file = join(dir, 'invalid-traffic.jsonl.gz');
  await db.run(`COPY (SELECT 'invalid_traffic' AS outcome, rule, ${ruleReasonSql('rule')} AS reason, ${EXCLUDED_STAGED_COLUMNS.join(', ')}
      FROM ${relation} ORDER BY event_ms, natural_key, source, rule)
    TO ${sqlString(file)} (FORMAT json, COMPRESSION gzip)`);
  return file;
}
