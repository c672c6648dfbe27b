/**
 * The warehouse DDL for each warehouse: the tables rendered from the dataset registry
 * (datasets/registry.ts: columns in order, types, NOT NULL, Redshift's distribution and sort), then
 * the views (`export/warehouse/sql/views.sql`). One definition of the tables, so their column order
 * cannot drift between the warehouses, the Parquet and the Glue catalog.
 *
 * Why the registry's choices: ids are at most 256 characters (contract §1a, §5; longer ones are
 * rejected at ingest), but Redshift's VARCHAR(n) counts bytes, and 256 characters of UTF-8 take up to
 * 1024, so a shorter column would make a whole day's COPY fail on one non-ASCII id. Sort key: the day
 * (the month): every load deletes one, and every analyst query filters on days or months, so zone
 * maps skip all other blocks. Distribution: the tables analysts group by series by `series_id` (the
 * views and the licensors' statement group and window by series, which then happens on each slice
 * without redistribution; series are many and evenly used); the audit, hourly and runs tables are a
 * few rows a day: ALL (a copy on every node).
 */
import { readFileSync } from 'node:fs';
import { createTable, DATASETS, sqlType } from '../../../datasets/registry.js';
import { projectFile } from '../../../lib/project-file.js';
import { shareOfMonthSql } from '../../../rollup/rules.js';

/** SQL statements of a file, split at semicolons that end a line; comments dropped. */
export function sqlStatements(text: string): string[] {
  return text.split('\n').filter((l) => !l.trim().startsWith('--')).join('\n')
    .split(/;\s*$/m).map((s) => s.trim()).filter(Boolean);
}

/**
 * Tables then views. Redshift: in `schema` (made by the bootstrap, not here: the jobs' user may not
 * make schemas), with DISTSTYLE/DISTKEY/SORTKEY; DuckDB: no schema, no distribution; PostgreSQL (where
 * the tests check the rollup's SQL on its own): `schema` and its tables, without distribution, no
 * views. `existing`: the columns the warehouse's tables have now (DuckDB): a column the registry added
 * since a table was made is added to it (`addedColumns`), before the views that may name it.
 */
export function warehouseStatements(dialect: 'duckdb' | 'redshift' | 'postgres', schema = 'pingroll', existing: ReadonlyArray<{ table: string; column: string }> = []): string[] {
  const tables = [...DATASETS.map((d) => createTable(d, dialect, schema)), ...addedColumns(existing, dialect, schema)];
  const views = sqlStatements(viewsSql());
  if (dialect === 'redshift') return [...tables, `SET search_path TO ${schema}`, ...views];
  if (dialect === 'postgres') return [`CREATE SCHEMA IF NOT EXISTS ${schema}`, ...tables];
  return [...tables, ...views];
}

/** views.sql, with each `{{share_of_month: W}}` made the share's one definition (rollup/rules.ts). */
function viewsSql(): string {
  return readFileSync(projectFile('export/warehouse/sql/views.sql'), 'utf8')
    .replace(/\{\{share_of_month:([^}]*)\}\}/g, (_m, window: string) => shareOfMonthSql('minutes_watched', window.trim()));
}

/**
 * The registry's columns that tables made before them lack, as ALTER TABLE ... ADD COLUMN: at the
 * table's end, and NULL in the rows loaded before (a day rolled up again gets them). So a column
 * added to a published dataset goes last in the registry; the embedded warehouse loads by name.
 */
export function addedColumns(existing: ReadonlyArray<{ table: string; column: string }>, dialect: 'duckdb' | 'redshift' | 'postgres', schema = 'pingroll'): string[] {
  const has = new Map<string, Set<string>>();
  for (const { table, column } of existing) (has.get(table) ?? has.set(table, new Set()).get(table)!).add(column);
  const where = dialect === 'duckdb' ? '' : `${schema}.`;
  return DATASETS.flatMap((d) => {
    const columns = has.get(d.name);
    if (!columns) return [];
    return d.columns.filter((c) => !columns.has(c.name)).map((c) => `ALTER TABLE ${where}${d.name} ADD COLUMN ${c.name} ${sqlType(c.type)}`);
  });
}
