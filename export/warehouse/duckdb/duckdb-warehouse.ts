import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { DuckDBConnection, DuckDBInstance as Instance } from '@duckdb/node-api';
import { DuckDBInstance, sqlString } from '../../../lib/duckdb-engine.js';
import { warehouseStatements } from '../sql/ddl.js';
import type { OutputFile } from '../../day-parquet.js';
import type { Warehouse } from '../warehouse.js';

/** The embedded warehouse: a DuckDB file (`PINGROLL_WAREHOUSE=duckdb:<file>`). */
export class DuckDbWarehouse implements Warehouse {
  private db: DuckDBConnection | null = null;
  private instance: Instance | null = null;

  constructor(private readonly file: string) {}

  get description(): string {
    return `duckdb:${this.file}`;
  }

  private async connection(): Promise<DuckDBConnection> {
    if (!this.db) {
      await mkdir(dirname(this.file), { recursive: true });
      try {
        this.instance = await DuckDBInstance.create(this.file);
        this.db = await this.instance.connect();
      } catch (err) {
        throw new Error(`cannot open the warehouse ${this.file}: ${(err as Error).message.split('\n')[0]} (is another process using it?)`);
      }
    }
    return this.db;
  }

  private initialized = false;

  async init(): Promise<void> {
    if (this.initialized) return;
    this.initialized = true;
    const db = await this.connection();
    for (const sql of warehouseStatements('duckdb')) await db.run(sql);
  }

  async loadDay(day: string, files: OutputFile[]): Promise<void> {
    const db = await this.connection();
    await db.run('BEGIN TRANSACTION');
    try {
      for (const f of files) {
        await db.run(`DELETE FROM ${f.table} WHERE day = DATE ${sqlString(day)}`);
        await db.run(`INSERT INTO ${f.table} SELECT * FROM read_parquet(${sqlString(f.local)})`);
      }
      await db.run('COMMIT');
    } catch (err) {
      await db.run('ROLLBACK').catch(() => {});
      throw err;
    }
  }

  /** Releases the file: DuckDB lets one process at a time write it. */
  async close(): Promise<void> {
    this.db?.closeSync();
    this.instance?.closeSync();
    this.db = null;
    this.instance = null;
    this.initialized = false;
  }

  /** Rows of a query, for reports. */
  async query<T>(sql: string): Promise<T[]> {
    const r = await (await this.connection()).runAndReadAll(sql);
    return r.getRowObjects() as T[];
  }
}
