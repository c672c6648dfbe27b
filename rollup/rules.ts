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
