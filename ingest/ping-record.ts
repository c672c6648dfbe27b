/**
 * The records that leave ingest. Both sources (S3 access logs, DynamoDB items) produce these; the
 * rollup knows nothing else about where a ping came from.
 */
import { MAX_PLATFORM_CHARS } from './access-log/wasm-abi.js';

/** What became of one input record (contract §3). `duplicate` is added by the rollup (contract §4). */
export const OUTCOMES = ['ping', 'not_ping', 'http_error', 'bad_query', 'malformed', 'bad_item'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export type Source = 's3' | 'dynamodb';

/**
 * The day of records that belong to no day (contract §5): those with no time that can be trusted (a
 * malformed record, one whose time is `-`) in a log object whose name holds no date (a file that is no
 * access log: a README, a binary dropped among the logs). They are staged and counted under it like a
 * day's, and rejected under it (UNDATED_REJECTS, datasets/layout.ts), never in a UTC day's audit or rejects.
 */
export const UNDATED = 'undated';

export { MAX_PLATFORM_CHARS };

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
  /** The player's platform (`x-platform`, an item's `platform`) as `normalizePlatform` leaves it; null when it leaves nothing. */
  platform: string | null;
  /** The playhead in whole seconds (`x-pos`, an item's `pos`) as `normalizePos` leaves it; null when it is not one. */
  pos: number | null;
  /**
   * Contract §10, from the client IP and user agent (S3 records; neither is staged): the country
   * (`ZZ` unknown, and for items), the operating system, device type and browser or player
   * (`unknown`), and the bot rule that names the user agent (null: none).
   */
  country: string;
  os: string;
  deviceType: string;
  browser: string;
  agentRule: string | null;
}

/**
 * A playhead as staged: 1 to 9 digits, optionally a point and digits (`754`, `754.25`, `754.`), as
 * its whole seconds; null for anything else (empty, signed, an exponent, blanks, ten digits or more).
 * The client's claim: whether it fits the episode is the rollup's to judge.
 */
export function normalizePos(raw: string | null | undefined): number | null {
  if (!raw) return null;
  const m = /^([0-9]{1,9})(\.[0-9]*)?$/.exec(raw);
  return m ? Number(m[1]) : null;
}

/** The platforms `daily_platform_stats` counts by name unless PINGROLL_PLATFORMS says otherwise (normalised). */
export const DEFAULT_PLATFORMS: readonly string[] = ['web', 'ios', 'android', 'androidtv', 'tvos', 'roku', 'firetv', 'tizen', 'webos', 'chromecast', 'xbox', 'playstation', 'vizio'];

/**
 * A platform as staged: its ASCII letters lowercased and its digits, every other character dropped
 * (`Android TV`, `android_tv` and `ANDROID-TV` are all `androidtv`); null when that leaves nothing or
 * more than MAX_PLATFORM_CHARS. The rollup counts only the platforms PINGROLL_PLATFORMS names and the
 * rest as `unknown`, so no value from a client can add rows without bound.
 */
export function normalizePlatform(raw: string | null | undefined): string | null {
  const out = raw ? raw.replace(/[^A-Za-z0-9]+/g, '').toLowerCase() : '';
  return out !== '' && out.length <= MAX_PLATFORM_CHARS ? out : null;
}

/** The one outcome of a record, with the ping when it is one and the reason when it is a reject. */
export type Verdict =
  | { outcome: 'ping'; ping: PingRecord }
  | { outcome: Exclude<Outcome, 'ping'>; reason: string };
