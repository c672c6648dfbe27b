/**
 * A closed month's statement as portable SQL (Redshift, PostgreSQL, DuckDB): the rows of
 * monthly_statements, what a new version changed, and a reported month's statement_adjustments from
 * its pieces (contract §9). The warehouse holds the versions
 * issued before (each close's publication loads monthly_statements whole) and the month's
 * monthly_series_stats in its zone, which the month's rollup has just replaced there.
 */
import { idKey, sqlString } from '../../../lib/duckdb-engine.js';
import type { StatementAsk } from '../../engine.js';
import { shareOfMonthSql, STATEMENT_FIGURES } from '../../rules.js';

/** The month's monthly_statements: every version of every zone issued before but this one, and this one's rows, in the file's order. */
export function statementSql(schema: string, ask: Pick<StatementAsk, 'month' | 'tz' | 'version' | 'closedAt'>): string {
  const first = `DATE ${sqlString(`${ask.month}-01`)}`;
  const zone = sqlString(ask.tz);
  const figures = STATEMENT_FIGURES.join(', ');
  const at = new Date(ask.closedAt).toISOString().slice(0, 23).replace('T', ' ');
  return `SELECT * FROM (
  SELECT month, tz, version, closed_at, series_id, ${figures}, share_of_month FROM ${schema}.monthly_statements
  WHERE month = ${first} AND NOT (tz = ${zone} AND version = ${ask.version})
  UNION ALL
  SELECT month, CAST(${zone} AS VARCHAR(64)) AS tz, CAST(${ask.version} AS BIGINT) AS version, CAST(TIMESTAMP ${sqlString(at)} AS TIMESTAMP) AS closed_at, series_id, ${figures},
    ${shareOfMonthSql('minutes_watched')} AS share_of_month
  FROM ${schema}.monthly_series_stats WHERE month = ${first} AND COALESCE(tz, 'UTC') = ${zone}
) s ORDER BY tz, version, ${idKey('series_id')}`;
}

/** Per series, the figures of the version before beside this version's (as statementSql makes them), by series. */
export function changesSql(schema: string, ask: Pick<StatementAsk, 'month' | 'tz' | 'version'>): string {
  const first = `DATE ${sqlString(`${ask.month}-01`)}`;
  const zone = sqlString(ask.tz);
  return `SELECT COALESCE(a.series_id, b.series_id) AS series_id, ${STATEMENT_FIGURES.map((f) => `a.${f} AS from_${f}, b.${f} AS to_${f}`).join(', ')}
FROM (SELECT * FROM ${schema}.monthly_statements WHERE month = ${first} AND tz = ${zone} AND version = ${ask.version - 1}) a
FULL JOIN (SELECT * FROM ${schema}.monthly_series_stats WHERE month = ${first} AND COALESCE(tz, 'UTC') = ${zone}) b ON ${idKey('a.series_id')} = ${idKey('b.series_id')}
ORDER BY ${idKey('COALESCE(a.series_id, b.series_id)')}`;
}

/** A reported month's statement_adjustments from the rows of its pieces (`pieces`, a table of its columns), in the file's order. */
export function adjustmentsSql(pieces: string): string {
  return `SELECT * FROM ${pieces} ORDER BY closed_month, tz, day, ${idKey('series_id')}, ${idKey('episode_id')}`;
}

