/**
 * `daily_runs` (contract §8): one row per published day, saying how complete it was when published.
 * It is published with the day's tables, in the same warehouse transaction, so that analysts and the
 * licensors' statement can tell a complete day from one still waiting for data.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../lib/duckdb-engine.js';
import { DAY_MS, dayStartMs } from '../lib/utc-day.js';
import { writeParquet, type OutputFile } from './day-parquet.js';

export const RUNS_TABLE = 'daily_runs';
/** Column order of `daily_runs` (Redshift COPY matches Parquet columns by position). */
export const RUNS_COLUMNS = ['day', 'run', 'published_at', 'code_version', 'objects_read', 'tables_read', 'quarantined_objects', 'state'] as const;

/** S3 delivers most log records within a few hours of the request: a day is not complete before this long after it ends. */
export const DELIVERY_DELAY_MS = 3 * 3_600_000;

export interface RunRow {
  day: string;
  run: string;
  publishedAt: Date;
  codeVersion: string;
  objectsRead: number;
  tablesRead: number;
  quarantinedObjects: number;
  /** What the day was as it was published: complete, or incomplete (unreadable objects, a missing table, S3 still delivering). */
  state: 'complete' | 'incomplete';
}

/**
 * Why a published day is not complete, or null when it is: unreadable log objects may hold records
 * of it, a table that should hold it was missing, or S3 may still be delivering its records. The one
 * rule `daily_runs` (as a day is published) and `pingroll status` (at any time) both follow.
 */
export function incompleteReason(day: string, quarantinedKeys: string[], missingTables: string[], now: Date): string | null {
  const n = quarantinedKeys.length;
  if (n) return `${n} unreadable log object${n > 1 ? 's' : ''} may hold records of it (first: ${quarantinedKeys[0]}); see pingroll quarantine list`;
  if (missingTables.length) return `the table${missingTables.length > 1 ? 's' : ''} ${missingTables.join(', ')} that should hold it did not exist`;
  const readyAt = dayStartMs(day) + DAY_MS + DELIVERY_DELAY_MS;
  if (now.getTime() < readyAt) return `S3 may still deliver records of it until about ${new Date(readyAt).toISOString().slice(0, 16)}Z; run it again after that`;
  return null;
}

/** The state a day is published in. */
export function publishedState(day: string, quarantinedKeys: string[], missingTables: string[], now: Date): RunRow['state'] {
  return incompleteReason(day, quarantinedKeys, missingTables, now) === null ? 'complete' : 'incomplete';
}

/** The day's `daily_runs` row as a Parquet file, written locally. */
export function writeRunsParquet(engine: DuckDBConnection, row: RunRow, dir: string): Promise<OutputFile> {
  return writeParquet(engine, `SELECT DATE ${sqlString(row.day)} AS day, ${sqlString(row.run)} AS run,
      make_timestamp(${row.publishedAt.getTime() * 1000}) AS published_at, ${sqlString(row.codeVersion)} AS code_version,
      ${row.objectsRead}::BIGINT AS objects_read, ${row.tablesRead}::BIGINT AS tables_read, ${row.quarantinedObjects}::BIGINT AS quarantined_objects,
      ${sqlString(row.state)} AS state`, RUNS_TABLE, row.day, dir);
}
