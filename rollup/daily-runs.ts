/**
 * `daily_runs` (contract §8): one row per published day, saying how complete it was when published.
 * It is published with the day's tables, in the same warehouse transaction, so that analysts and the
 * licensors' statement can tell a complete day from one still waiting for data.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../lib/duckdb-engine.js';
import { writeParquet, type OutputFile } from './output-file.js';
import type { PublishedState } from '../state/completeness.js';


export interface RunRow {
  day: string;
  run: string;
  publishedAt: Date;
  codeVersion: string;
  objectsRead: number;
  tablesRead: number;
  quarantinedObjects: number;
  state: PublishedState;
}

/** The day's `daily_runs` row as a Parquet file, written locally. */
export function writeRunsParquet(engine: DuckDBConnection, row: RunRow, dir: string): Promise<OutputFile> {
  return writeParquet(engine, `SELECT DATE ${sqlString(row.day)} AS day, ${sqlString(row.run)} AS run,
      make_timestamp(${row.publishedAt.getTime() * 1000}) AS published_at, ${sqlString(row.codeVersion)} AS code_version,
      ${row.objectsRead}::BIGINT AS objects_read, ${row.tablesRead}::BIGINT AS tables_read, ${row.quarantinedObjects}::BIGINT AS quarantined_objects,
      ${sqlString(row.state)} AS state`, 'daily_runs', row.day, dir);
}
