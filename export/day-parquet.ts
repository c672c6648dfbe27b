/**
 * The files of one rolled-up day (contract §6): each table as one Parquet file at
 * `<table>/dt=<day>/part-00000.parquet`, and the day's rejects. They are published whole by
 * publish-journal.ts.
 */
import { PARQUET_CODEC } from '../lib/parquet-codec.js';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../lib/duckdb-engine.js';
import { TABLES, type DayRollup } from '../rollup/day-rollup.js';
import { columnNames, type DatasetName } from '../datasets/registry.js';
import type { ObjectStore } from '../state/object-store/object-store.js';

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
  /** The column a load replaces by (`day`, or `month` for the monthly table). */
  dateColumn?: 'day' | 'month';
}

/** Where a table's Parquet of a day is published (contract §6): one file per day, replaced whole. */
export function outputKey(table: OutputTable, day: string): string {
  return `${table}/dt=${day}/part-00000.parquet`;
}

/**
 * A query's rows as the local Parquet file of one table's partition (DuckDB COPY: DATE as DATE, BIGINT
 * as INT64, TIMESTAMP as INT64 µs), to publish at `outputKey(table, partition)`.
 */
export async function writeParquet(engine: DuckDBConnection, select: string, table: OutputTable, partition: string, dir: string,
  dateColumn?: OutputFile['dateColumn']): Promise<OutputFile> {
  const local = join(dir, `${table}.parquet`);
  // The registry's columns, in its order (COPY and the warehouse's loads match columns by position);
  // COPY answers with the number of rows it wrote.
  const columns = columnNames(table).map((c) => `"${c}"`).join(', ');
  const written = await engine.runAndReadAll(`COPY (SELECT ${columns} FROM (${select})) TO ${sqlString(local)} (FORMAT parquet, COMPRESSION ${PARQUET_CODEC})`);
  const rows = Number(written.getRows()[0]![0] as bigint);
  return { table, key: outputKey(table, partition), rows, bytes: (await stat(local)).size, local, ...(dateColumn ? { dateColumn } : {}) };
}

/** The rollup's tables of a day, written locally. */
export async function writeDayParquet(engine: DuckDBConnection, day: string, rollup: DayRollup, dir: string): Promise<OutputFile[]> {
  const out: OutputFile[] = [];
  for (const table of TABLES) out.push(await writeParquet(engine, `SELECT * FROM ${rollup.tables[table]}`, table, day, dir));
  return out;
}

export function rejectsKey(day: string): string {
  return `_runs/dt=${day}/rejects.jsonl.gz`;
}

/**
 * The day's rejects from every batch, as one local gzip file (gzip members concatenate), or null when
 * there are none: copied piece by piece, never held (a day of a binary object's rejects is GBs).
 */
export async function dayRejects(store: ObjectStore, staged: string[], dir: string): Promise<{ file: string; bytes: number } | null> {
  if (staged.length === 0) return null;
  const file = join(dir, 'rejects.jsonl.gz'), part = join(dir, 'rejects-part.gz');
  await rm(file, { force: true });
  for (const s of staged) {
    if ((await store.size(s)) === null) throw new Error(`staged rejects ${s} are missing from ${store.url}; the ledger names them`);
    await store.download(s, part);
    await pipeline(createReadStream(part), createWriteStream(file, { flags: 'a' }));
  }
  await rm(part, { force: true });
  return { file, bytes: (await stat(file)).size };
}
