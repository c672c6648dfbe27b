import type { OutputFile } from '../day-parquet.js';

/** Where a rolled-up day is loaded for analysts (contract §6): the embedded DuckDB, or Redshift. */
export interface Warehouse {
  readonly description: string;
  /** Creates the tables (and views) when missing. Idempotent. */
  init(): Promise<void>;
  /** Replaces `day` in every table with the files' rows, in one transaction (a monthly file replaces the month starting on `day`). */
  loadDay(day: string, files: OutputFile[]): Promise<void>;
  close(): Promise<void>;
}
