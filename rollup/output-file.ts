/**
 * What a rollup engine hands on (rollup/engine.ts): each table of a day (or month) as one local
 * Parquet file, to publish at `<table>/dt=<day>/part-00000.parquet` (contract §6), in the registry's
 * column order. export/ publishes them whole (publish-journal.ts).
 */
import { PARQUET_CODEC } from '../lib/parquet-codec.js';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../lib/duckdb-engine.js';
import { columnNames, dataset, duckdbType, type DatasetName } from '../datasets/registry.js';
import { UTC, zoneSlug } from '../lib/time-zone.js';

/** The tables pingroll publishes (datasets/registry.ts): the day's rollup, `daily_runs`, and the month's `monthly_series_stats`. */
export type OutputTable = DatasetName;
export const MONTH_TABLE = 'monthly_series_stats';

export interface OutputFile {
  table: OutputTable;
  key: string;
  rows: number;
  bytes: number;
  /** The local copy, for the warehouse load. */
  local: string;
  /** Where the file waits in the store until the day is published (what Redshift COPYs). */
  stagedKey?: string;
  /** The column a load replaces by (`day`; `month` for the monthly tables, `reported_month` for adjustments). */
  dateColumn?: 'day' | 'month' | 'reported_month';
  /** The time zone a load replaces (a month's rows in one zone: `tz`); none: every row of the date. */
  zone?: string;
}

/**
 * Where a table's Parquet of a day is published (contract §6): one file per day, replaced whole; a
 * month in a zone other than UTC is a file of its own beside the UTC one (`part-tz-<zone>`).
 */
export function outputKey(table: OutputTable, day: string, zone?: string): string {
  return `${table}/dt=${day}/${zone && zone !== UTC ? `part-tz-${zoneSlug(zone)}` : 'part-00000'}.parquet`;
}

/**
 * A query's rows as the local Parquet file of one table's partition (DuckDB COPY: DATE as DATE, BIGINT
 * as INT64, TIMESTAMP as INT64 µs), to publish at `outputKey(table, partition)`.
 */
export async function writeParquet(engine: DuckDBConnection, select: string, table: OutputTable, partition: string, dir: string,
  dateColumn?: OutputFile['dateColumn'], zone?: string): Promise<OutputFile> {
  const local = join(dir, `${table}${zone ? `-${zoneSlug(zone)}` : ''}.parquet`);
  // The registry's columns, in its order (COPY and the warehouse's loads match columns by position);
  // COPY answers with the number of rows it wrote.
  const columns = columnNames(table).map((c) => `"${c}"`).join(', ');
  const written = await engine.runAndReadAll(`COPY (SELECT ${columns} FROM (${select})) TO ${sqlString(local)} (FORMAT parquet, COMPRESSION ${PARQUET_CODEC})`);
  const rows = Number(written.getRows()[0]![0] as bigint);
  return { table, key: outputKey(table, partition, zone), rows, bytes: (await stat(local)).size, local, ...(dateColumn ? { dateColumn } : {}), ...(zone ? { zone } : {}) };
}

/** A query of no rows with a dataset's columns and types (for an output with nothing in it). */
export function emptyOf(table: OutputTable): string {
  return `SELECT ${dataset(table).columns.map((c) => `NULL::${duckdbType(c.type)} AS "${c.name}"`).join(', ')} WHERE false`;
}
