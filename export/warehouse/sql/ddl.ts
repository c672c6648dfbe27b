/**
 * The warehouse DDL (`export/warehouse/sql/tables.sql`, `export/warehouse/sql/views.sql`) as statements for
 * each warehouse: one definition of the tables, so their column order cannot drift between them.
 */
import { readFileSync } from 'node:fs';
import { projectFile } from '../../../lib/project-file.js';

/** SQL statements of a file, split at semicolons that end a line; comments dropped. */
export function sqlStatements(text: string): string[] {
  return text.split('\n').filter((l) => !l.trim().startsWith('--')).join('\n')
    .split(/;\s*$/m).map((s) => s.trim()).filter(Boolean);
}

/**
 * Tables then views. Redshift: in `schema`; DuckDB: no schema, no DISTSTYLE/DISTKEY/SORTKEY; Postgres
 * (where the tests run the rollup inside Redshift): the tables in `schema`, without those clauses.
 */
export function warehouseStatements(dialect: 'duckdb' | 'redshift' | 'postgres', schema = 'pingroll'): string[] {
  const tables = sqlStatements(readFileSync(projectFile('export/warehouse/sql/tables.sql'), 'utf8'));
  const views = sqlStatements(readFileSync(projectFile('export/warehouse/sql/views.sql'), 'utf8'));
  if (dialect === 'redshift') return [...tables.map((s) => s.replaceAll('{schema}', schema)), `SET search_path TO ${schema}`, ...views];
  // The distribution and sort clauses that follow a CREATE TABLE's column list are Redshift's own.
  const plain = (s: string): string => s.replace(/\)\s*DISTSTYLE[\s\S]*$/, ')');
  if (dialect === 'postgres') return tables.map((s) => plain(s.replaceAll('{schema}', schema)));
  return [
    ...tables.filter((s) => !s.startsWith('CREATE SCHEMA')).map((s) => plain(s.replaceAll('{schema}.', ''))),
    ...views,
  ];
}
