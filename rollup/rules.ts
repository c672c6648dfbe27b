/**
 * What every rollup engine shares (contract §4, §5): the tables a day's rollup makes, the completion
 * thresholds, how a platform is counted, and the settings a rollup takes from the configuration. An
 * engine (rollup/engines/<engine>/) computes them its own way; these say what they are.
 */
import { sqlString } from '../lib/duckdb-engine.js';
import { DEFAULT_PLATFORMS } from '../ingest/ping-record.js';
import type { ViewerKey } from './viewer-key.js';
import type { FigureChange } from './engine.js';
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

/** A statement's figures per series (monthly_statements, contract §9), in the registry's order: what a new version says it changed. */
export const STATEMENT_FIGURES = ['episodes', 'pings', 'sessions', 'viewers', 'minutes_watched', 'days_watched'] as const;

/**
 * The figures that differ between two versions of a statement, from rows of a series' figures side by
 * side (`from_<figure>`, `to_<figure>`; null where the series is in one version only), as every
 * engine's query of the two gives them.
 */
export function figureChanges(rows: ReadonlyArray<Record<string, unknown>>): FigureChange[] {
  const out: FigureChange[] = [];
  for (const r of rows) {
    for (const f of STATEMENT_FIGURES) {
      const from = r[`from_${f}`] == null ? null : Number(r[`from_${f}`]);
      const to = r[`to_${f}`] == null ? null : Number(r[`to_${f}`]);
      if (from !== to) out.push({ series_id: String(r.series_id), field: f, from, to });
    }
  }
  return out;
}

/**
 * SQL: a series' share of its month's minutes (`share_of_month`, contract §8): its minutes over the
 * month's, 0 to 1, and 0 in a month with none. `window`: what makes a month of the rows (`PARTITION BY
 * month`; empty when they are one month's). The one definition: the statement a close issues
 * (monthly_statements), the analysts' view (monthly_series_minutes, export/warehouse/sql/views.sql)
 * and `report` for a month not closed use it. The same text on DuckDB, PostgreSQL and Redshift.
 */
export function shareOfMonthSql(minutes: string, window = ''): string {
  return `COALESCE(CAST(${minutes} AS DOUBLE PRECISION) / NULLIF(SUM(${minutes}) OVER (${window}), 0), 0)`;
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

/**
 * PINGROLL_CATALOG_ONLY (contract §10): with an episode catalog, a ping counts only when the catalog
 * lists its series (`series`) or its series and episode (`episodes`); any other is automated traffic
 * by rule `not_in_catalog`, judged per record before duplicates are removed, as the bot list is (a
 * ping's series and episode are whatever its query string says, so anyone can name a new series).
 */
export const CATALOG_ONLY = ['series', 'episodes'] as const;
export type CatalogOnly = (typeof CATALOG_ONLY)[number];
export const CATALOG_RULE = 'not_in_catalog';

/** Why each rule leaves a record out, as its rejects line says (contract §10; docs/contract.md has the reasons). */
export const RULE_REASONS: Record<string, string> = {
  bot_list: 'its user agent is on the bot list (isbot): a crawler, an HTTP library or tool, or a headless browser',
  [SESSION_RATE_RULE]: `its session sent more than ${MAX_PINGS_PER_SESSION_MINUTE} distinct pings in one UTC minute of the day: a loop no person drives`,
  [CATALOG_RULE]: 'PINGROLL_CATALOG_ONLY: the episode catalog does not list its series or episode',
};

/** The catalog a rollup judges `not_in_catalog` by: a relation with `series_id` and `episode_id`, and what it must list. */
export interface CatalogRule { only: CatalogOnly; table: string }

/**
 * SQL (DuckDB, PostgreSQL and Redshift): the staged rows of `rows` with `record_rule`, the rule that
 * leaves a row out on its own (before duplicates are removed), or NULL: the bot list's (staged as
 * `agent_rule`), then the catalog's when `catalog` is given. `key` wraps an id for comparing (Redshift
 * ignores trailing blanks: idKey).
 */
export function ruledRows(rows: string, catalog: CatalogRule | null, key: (column: string) => string = (c) => c): string {
  if (!catalog) return `(SELECT r.*, r.agent_rule AS record_rule FROM ${rows} r)`;
  const listed = catalog.only === 'series'
    ? `(SELECT DISTINCT ${key('series_id')} AS series_k FROM ${catalog.table})`
    : `(SELECT DISTINCT ${key('series_id')} AS series_k, ${key('episode_id')} AS episode_k FROM ${catalog.table})`;
  const on = catalog.only === 'series' ? `c.series_k = ${key('r.series')}` : `c.series_k = ${key('r.series')} AND c.episode_k = ${key('r.episode')}`;
  return `(SELECT r.*, COALESCE(r.agent_rule, CASE WHEN c.series_k IS NULL THEN '${CATALOG_RULE}' END) AS record_rule FROM ${rows} r LEFT JOIN ${listed} c ON ${on})`;
}

/** SQL: a rule's reason (RULE_REASONS), from the column holding the rule. */
export function ruleReasonSql(column: string): string {
  return `CASE ${column} ${Object.entries(RULE_REASONS).map(([rule, why]) => `WHEN ${sqlString(rule)} THEN ${sqlString(why)}`).join(' ')} END`;
}

/** SQL: the audience columns of a staged row, staged format 1 and 2's NULLs as unknown (contract §10). */
export const AUDIENCE_SQL = {
  country: `coalesce(country, 'ZZ')`, os: `coalesce(os, 'unknown')`, device_type: `coalesce(device_type, 'unknown')`, browser: `coalesce(browser, 'unknown')`,
} as const;

/**
 * How days are rolled up, from the configuration (Config has both): the viewer key
 * (PINGROLL_VIEWER_KEY; none: the viewer datasets get no rows), the platforms counted by name
 * (PINGROLL_PLATFORMS; the defaults when not given) and whether pings must be in the catalog.
 */
export interface RollupSettings {
  viewerKey?: ViewerKey | null;
  platforms?: readonly string[] | undefined;
  /** PINGROLL_CATALOG_ONLY (null: off): pings the episode catalog does not list are `not_in_catalog`. */
  catalogOnly?: CatalogOnly | null;
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
