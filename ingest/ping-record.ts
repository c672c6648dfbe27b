/**
 * The records that leave ingest. Both sources (S3 access logs, DynamoDB items) produce these; the
 * rollup knows nothing else about where a ping came from.
 */

/** What became of one input record (contract §3). `duplicate` is added by the rollup (contract §4). */
export const OUTCOMES = ['ping', 'not_ping', 'http_error', 'bad_query', 'malformed', 'bad_item'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export type Source = 's3' | 'dynamodb';

/** Series, episode and session ids longer than this (in code points) are rejected: they would not fit the warehouse's columns. */
export { MAX_ID_CODE_POINTS as MAX_ID_LENGTH } from './access-log/wasm-abi.js';

export interface PingRecord {
  source: Source;
  series: string;
  episode: string;
  session: string;
  /** Viewer id; null when absent or empty. */
  user: string | null;
  /** Client ping id (retries reuse it); null when absent or empty. */
  pingId: string | null;
  /** Event time, epoch milliseconds UTC. */
  eventTimeMs: number;
  /** `r:` + request ID for S3 records, `k:` + ts_shard + `|` + session_id for items (contract §4). */
  naturalKey: string;
}

/** The one outcome of a record, with the ping when it is one and the reason when it is a reject. */
export type Verdict =
  | { outcome: 'ping'; ping: PingRecord }
  | { outcome: Exclude<Outcome, 'ping'>; reason: string };
