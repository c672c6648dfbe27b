/**
 * The closed month's figures in this process (contract §9): the statement a close issues
 * (`monthly_statements`: every version of every zone, this version's rows from the month's
 * `monthly_series_stats` with each series' share), what a new version changed, a reported month's
 * `statement_adjustments` from its pieces, and the pings of an expired day kept as `too_late`.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows, sqlString } from '../../../lib/duckdb-engine.js';
import type { FigureChange, IssuedStatement, StatementAsk, TooLateAsk } from '../../engine.js';
import { emptyOf, writeParquet, type OutputFile } from '../../output-file.js';
import { figureChanges, shareOfMonthSql, STATEMENT_FIGURES } from '../../rules.js';
import { stagedRows } from './day-rollup.js';
import { tooLateLinesSql } from '../../rejects-lines.js';

/** The month's monthly_statements: the versions issued before (every zone), and this one's rows; and what this version changed. */
export async function issueStatement(db: DuckDBConnection, ask: StatementAsk): Promise<IssuedStatement> {
  const { month, tz, version, closedAt, monthly, before, dir } = ask;
  const mine = `SELECT month, ${sqlString(tz)} AS tz, ${version}::BIGINT AS version, make_timestamp(${Date.parse(closedAt) * 1000}) AS closed_at, series_id,
      ${STATEMENT_FIGURES.join(', ')}, ${shareOfMonthSql('minutes_watched')} AS share_of_month
    FROM read_parquet(${sqlString(monthly.local)})`;
  if (before && before.local === null) throw new Error(`the DuckDB engine's statement of ${month} was handed ${before.key} not fetched; it reads local files`);
  const rows = before ? `SELECT * FROM read_parquet(${sqlString(before.local!)}) WHERE NOT (tz = ${sqlString(tz)} AND version = ${version}) UNION ALL BY NAME ${mine}` : mine;
  const file = await writeParquet(db, `SELECT * FROM (${rows}) ORDER BY tz, version, series_id`, 'monthly_statements', `${month}-01`, dir, 'month');
  return { file, changed: version > 1 ? await changes(db, file.local, tz, version) : [] };
}

/** What a version changes from the one before, per series and figure. */
async function changes(db: DuckDBConnection, file: string, tz: string, version: number): Promise<FigureChange[]> {
  const pick = (v: number): string => `(SELECT * FROM read_parquet(${sqlString(file)}) WHERE tz = ${sqlString(tz)} AND version = ${v})`;
  return figureChanges(await queryRows<Record<string, unknown>>(db, `SELECT coalesce(a.series_id, b.series_id) AS series_id, ${STATEMENT_FIGURES.map((f) => `a.${f} AS from_${f}, b.${f} AS to_${f}`).join(', ')}
    FROM ${pick(version - 1)} a FULL JOIN ${pick(version)} b USING (series_id) ORDER BY series_id`));
}

/** The order of statement_adjustments' rows in its file (a piece, the month's). */
export const ADJUSTMENTS_ORDER = 'ORDER BY closed_month, tz, day, series_id, episode_id';

/** A reported month's statement_adjustments from its pieces (local Parquet files), in one order. */
export function adjustmentsOf(db: DuckDBConnection, month: string, pieces: readonly string[], dir: string): Promise<OutputFile> {
  const rows = pieces.length
    ? `SELECT * FROM read_parquet([${pieces.map(sqlString).join(', ')}]) ${ADJUSTMENTS_ORDER}`
    : emptyOf('statement_adjustments');
  return writeParquet(db, rows, 'statement_adjustments', `${month}-01`, dir, 'reported_month');
}

/** A batch's staged pings of an expired day as `too_late` rejects lines (gzip JSON, `ask.out`). */
export async function tooLateRejects(db: DuckDBConnection, ask: TooLateAsk): Promise<void> {
  const files = ask.staged.map((f) => f.local ?? (() => { throw new Error(`the DuckDB engine's too-late records of ${ask.day} were handed ${f.key} not fetched; it reads local files`); })());
  await db.run(`COPY (${tooLateLinesSql(stagedRows(files), ask.batch, ask.reason)}) TO ${sqlString(ask.out)} (FORMAT json, COMPRESSION gzip)`);
}
