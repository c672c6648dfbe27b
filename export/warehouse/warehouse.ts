import type { OutputFile } from '../day-parquet.js';

/** Where a rolled-up day is loaded for analysts (contract §6): the embedded DuckDB, or Redshift. */
export interface Warehouse {
  readonly description: string;
  /** Throws LocationError when the warehouse cannot be written (a run's preflight, before any work). */
  checkWritable?(): Promise<void>;
  /** Creates the tables (and views) when missing. Idempotent. */
  init(): Promise<void>;
  /**
   * Replaces `day` in every table with the files' rows, in one transaction (a monthly file replaces
   * the month starting on `day`); creates the tables first when missing (`init`'s work, done once).
   */
  loadDay(day: string, files: OutputFile[]): Promise<void>;
  close(): Promise<void>;
  /**
   * Rolls `day` up inside the warehouse and loads it, in one transaction, where the warehouse can
   * (PINGROLL_ROLLUP=redshift): see RedshiftWarehouse.rollupStatements.
   */
  rollupDay?(day: string, input: WarehouseRollup): Promise<void>;
}

/** What a rollup inside the warehouse reads and where it writes the day's Parquet (output-relative keys). */
export interface WarehouseRollup {
  /** The day's staged pings, with their sizes. */
  staged: Array<{ key: string; size: number }>;
  /** The day's record counts by source and outcome (the rollup adds duplicates). */
  outcomes: Record<string, Record<string, number>>;
  /** The viewer datasets' key id and the one-row Parquet file holding its secret (output-relative key, size); none: they get no rows. */
  viewers?: { keyId: string; secretKey: string; secretSize: number } | null;
  /** The platforms counted by name (PINGROLL_PLATFORMS); the defaults when not given. */
  platforms?: readonly string[] | undefined;
  /** The episode catalog as Parquet (output-relative key, size: rollup/episode-catalog.ts); none: completion figures are NULL. */
  catalog?: { key: string; size: number } | null;
  /** The day's daily_runs row, as Parquet, and its size in bytes. */
  runsKey: string;
  runsSize: number;
  /** Each table's Parquet is unloaded under `<unloadPrefix><table>/`; what else the warehouse must write goes there too. */
  unloadPrefix: string;
  /** Writes an object to the output (output-relative key). */
  put(key: string, body: Buffer): Promise<void>;
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
