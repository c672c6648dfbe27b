import type { OutputFile } from '../../rollup/output-file.js';

/** Where a rolled-up day is loaded for analysts (contract §6): the embedded DuckDB, or Redshift. */
export interface Warehouse {
  readonly description: string;
  /** Throws LocationError when the warehouse cannot be written (a run's preflight, before any work). */
  checkWritable(): Promise<void>;
  /** Creates the tables (and views) when missing. Idempotent. */
  init(): Promise<void>;
  /**
   * Replaces `day` in every table with the files' rows, in one transaction (a monthly file replaces
   * the month starting on `day`); creates the tables first when missing (`init`'s work, done once).
   */
  loadDay(day: string, files: OutputFile[]): Promise<void>;
  close(): Promise<void>;
}

/** Whether a query failed because its table does not exist (DuckDB's catalog error, Redshift's and Postgres's "relation ... does not exist"). */
export function isMissingTable(err: unknown): boolean {
  return /Catalog Error: Table with name|relation .* does not exist/.test(String((err as Error)?.message ?? err));
}

/** A query's rows, or none where its table does not exist (a warehouse loaded before the table was added). */
export async function rowsOrNoneIfMissing<T>(rows: Promise<T[]>): Promise<T[]> {
  return rows.catch((err: unknown) => {
    if (isMissingTable(err)) return [];
    throw err;
  });
}
