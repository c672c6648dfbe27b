/**
 * What every rollup engine shares (contract §4, §5): the tables a day's rollup makes, the completion
 * thresholds, how a platform is counted, and the settings a rollup takes from the configuration. An
 * engine (rollup/engines/<engine>/) computes them its own way; these say what they are.
 */
import { sqlString } from '../lib/duckdb-engine.js';
import { DEFAULT_PLATFORMS } from '../ingest/ping-record.js';
import type { ViewerKey } from './viewer-key.js';
import { DAY_TABLES, dataset, type Dataset } from '../datasets/registry.js';

/** The completion thresholds, in percent of the duration. */
export const COMPLETION_THRESHOLDS = [25, 50, 75, 95] as const;

/** The tables a day's rollup makes, in order, as the registry declares them (datasets/registry.ts). */
export const TABLES = DAY_TABLES;
export type TableName = (typeof DAY_TABLES)[number];
/** The tables that have rows only with a viewer key. */
export const VIEWER_TABLES: readonly TableName[] = TABLES.filter((t) => (dataset(t) as Dataset).needsViewerKey === true);

/**
 * SQL: the platform a staged `platform` (normalised, or NULL) is counted as: itself when `platforms`
 * names it, else `unknown`. The same text on DuckDB, PostgreSQL and Redshift.
 */
export function platformSql(column: string, platforms: readonly string[] = DEFAULT_PLATFORMS): string {
  return platforms.length ? `CASE WHEN ${column} IN (${platforms.map(sqlString).join(', ')}) THEN ${column} ELSE 'unknown' END` : `'unknown'`;
}

/**
 * Automated traffic (contract §10) the rollup leaves out, by rule (`daily_invalid_traffic.rule`):
 * `bot_list`, staged with the ping (ingest/audience/agent-lookup.ts), and `session_rate`, a session
 * with more than MAX_PINGS_PER_SESSION_MINUTE distinct pings (after duplicates are removed) in one UTC
 * minute of the day. A player sends one a minute; a retry is a duplicate, and a restart or a clock's
 * second boundary makes two or three. Every ping of such a session that day is left out.
 */
export const SESSION_RATE_RULE = 'session_rate';
export const MAX_PINGS_PER_SESSION_MINUTE = 5;

/** SQL: the audience columns of a staged row, staged format 1 and 2's NULLs as unknown (contract §10). */
export const AUDIENCE_SQL = {
  country: `coalesce(country, 'ZZ')`, os: `coalesce(os, 'unknown')`, device_type: `coalesce(device_type, 'unknown')`, browser: `coalesce(browser, 'unknown')`,
} as const;

/**
 * How days are rolled up, from the configuration (Config has both): the viewer key
 * (PINGROLL_VIEWER_KEY; none: the viewer datasets get no rows) and the platforms counted by name
 * (PINGROLL_PLATFORMS; the defaults when not given).
 */
export interface RollupSettings {
  viewerKey?: ViewerKey | null;
  platforms?: readonly string[] | undefined;
}

/** A day's record counts by source and outcome (the batch commits'); a rollup adds `duplicate`. */
export type Outcomes = Record<string, Record<string, number>>;

/** The day's outcomes once rolled up: the pings it left out as automated traffic are `invalid_traffic`, not `ping` (contract §3, §10). */
export function rolledUpOutcomes(outcomes: Outcomes, invalid: Record<string, number>): Outcomes {
  const out: Outcomes = {};
  for (const [source, counts] of Object.entries(outcomes)) {
    const n = invalid[source] ?? 0;
    out[source] = n > 0 ? { ...counts, ping: (counts.ping ?? 0) - n, invalid_traffic: n } : { ...counts };
  }
  return out;
}
