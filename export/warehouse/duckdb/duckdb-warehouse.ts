/**
 * The embedded warehouse: a DuckDB file (`PINGROLL_WAREHOUSE=duckdb:<file>`).
 *
 * The job never writes the file analysts read. Each change (a day's load, `warehouse init`) copies
 * the file to a new one beside it, makes the change there in one transaction, checkpoints and syncs
 * it, and renames it over the old name (then syncs the directory). So:
 * - a reader holding the file open (read-only, for hours: a notebook, the DuckDB CLI) never blocks
 *   the job, and keeps seeing the file it opened, the old day, until it reopens it;
 * - a reader that opens the file after the rename sees the new day; none sees a mix;
 * - a kill at any instant leaves the old file whole, or the new one, never a torn or empty file
 *   (the first creation included); copies left by killed runs are removed by a later one.
 * DuckDB takes a file lock per open file: one writer, or many read-only readers. Writing a new file
 * each time is what keeps the two apart. Copying costs a read and write of the file per load where
 * the file system cannot clone it (ext4; XFS and Btrfs clone it in `copy_file_range`, which copyFile
 * reaches): a year of per-minute figures for 400 series is 1.4 GB, 1.7-2.0 s more a load on
 * ext4 (bench/warehouse-growth.ts; docs/operations.md, *The embedded warehouse's size*).
 *
 * The copy is ATTACHed to one small in-memory DuckDB the warehouse keeps for the process, and
 * DETACHed before the rename: opening a DuckDB of its own for each change cost 25-30 ms, most of a
 * load's 75 ms on the job bench's day (ATTACH, DDL, load and CHECKPOINT together: about 10 ms).
 */
import { randomBytes } from 'node:crypto';
import { constants, existsSync } from 'node:fs';
import { access, copyFile, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance as Instance } from '@duckdb/node-api';
import { syncDirOf, syncFile } from '../../../lib/durable-file.js';
import { bounded, makeDirs } from '../../../lib/location.js';
import { DuckDBInstance, sqlString } from '../../../lib/duckdb-engine.js';
import { warehouseStatements } from '../sql/ddl.js';
import type { OutputFile } from '../../../rollup/output-file.js';
import type { Warehouse } from '../warehouse.js';

/** Copies older than this are a killed run's: no load takes an hour. */
const LEFTOVER_AGE_MS = 3_600_000;

/** The name a warehouse file is ATTACHed under while it is changed (a copy) or its journal replayed. */
const COPY = 'warehouse_copy';

export class DuckDbWarehouse implements Warehouse {
  /** Where each change's copy is ATTACHed: made at the first change, closed by `close`. */
  private host: { instance: Instance; db: DuckDBConnection } | null = null;

  constructor(private readonly file: string) {}

  get description(): string {
    return `duckdb:${this.file}`;
  }

  /** Every change runs the DDL first: once one has, init has nothing left to do. */
  private initialized = false;

  /** Creates the tables and views when missing. Idempotent. */
  async init(): Promise<void> {
    if (!this.initialized) await this.change(async () => {});
  }

  async loadDay(day: string, files: OutputFile[]): Promise<void> {
    await this.change(async (db) => {
      await db.run('BEGIN TRANSACTION');
      try {
        for (const f of files) {
          await db.run(`DELETE FROM ${f.table} WHERE ${f.dateColumn ?? 'day'} = DATE ${sqlString(day)}${f.zone ? ` AND coalesce(tz, 'UTC') = ${sqlString(f.zone)}` : ''}`);
          // By name: a table made before a column was added has it at its end (ddl.ts, addedColumns).
          await db.run(`INSERT INTO ${f.table} BY NAME SELECT * FROM read_parquet(${sqlString(f.local)})`);
        }
        await db.run('COMMIT');
      } catch (err) {
        await db.run('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  }

  /**
   * The warehouse is changed by writing a copy beside its file and renaming it over (`change`): its
   * folder must take a new file, and an existing file must be writable too (a read-only one is kept
   * so on purpose).
   */
  async checkWritable(): Promise<void> {
    const dir = dirname(this.file);
    const probe = join(dir, `.${basename(this.file)}.probe-${process.pid}`);
    await bounded(async () => {
      await makeDirs(dir);
      await writeFile(probe, '');
      await rm(probe, { force: true });
      if (existsSync(this.file)) await access(this.file, constants.W_OK);
    }, (reason) => `cannot write the warehouse ${this.file} (${reason}); set PINGROLL_WAREHOUSE to duckdb:<a file this user can write>, or none`);
  }

  /** No file stays open between changes; `close` lets go of the in-memory DuckDB they are made in. */
  async close(): Promise<void> {
    this.host?.db.closeSync();
    this.host?.instance.closeSync();
    this.host = null;
  }

  /**
   * Rows of a query, read-only: for reports and the tests. Never creates a file: a warehouse that
   * does not exist is an error that says so.
   */
  async query<T>(sql: string): Promise<T[]> {
    if (!existsSync(this.file)) {
      throw new Error(`there is no warehouse at ${this.file}: check PINGROLL_WAREHOUSE, or run make rollup DATE=YYYY-MM-DD first`);
    }
    const instance = await DuckDBInstance.create(this.file, { access_mode: 'READ_ONLY' });
    const db = await instance.connect();
    try {
      return (await db.runAndReadAll(sql)).getRowObjects() as T[];
    } finally {
      db.closeSync();
      instance.closeSync();
    }
  }

  /** Makes `fn`'s change (after the DDL) in a copy of the file, and publishes the copy with a rename. */
  private async change(fn: (db: DuckDBConnection) => Promise<void>): Promise<void> {
    const dir = dirname(this.file);
    await mkdir(dir, { recursive: true });
    await this.removeLeftovers();
    await this.replayJournal();
    const next = join(dir, `.${basename(this.file)}.next-${randomBytes(4).toString('hex')}`);
    try {
      if (existsSync(this.file)) await copyFile(this.file, next);
      await this.attached(next, async (db) => {
        // The tables and views; and the columns the registry added since the tables were made.
        const existing = (await db.runAndReadAll(`SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns WHERE table_catalog = '${COPY}' AND table_schema = 'main'`)).getRowObjects() as Array<{ table: string; column: string }>;
        for (const sql of warehouseStatements('duckdb', undefined, existing)) await db.run(sql);
        await fn(db);
      });
      await syncFile(next);
      await rename(next, this.file);
      await syncDirOf(this.file);
      this.initialized = true;
    } catch (err) {
      // The in-memory DuckDB is let go too (whatever it still had ATTACHed): the next change makes a new one.
      await this.close().catch(() => {});
      await rm(next, { force: true });
      await rm(`${next}.wal`, { force: true });
      throw new Error(`loading the warehouse ${this.file} failed: ${(err as Error).message.split('\n')[0]}`);
    }
  }

  /**
   * A write-ahead log beside the file is what a writer killed in place left (versions before the
   * copy-and-rename did that): open the file once to take it in, so that the copy holds it.
   */
  private async replayJournal(): Promise<void> {
    if (!existsSync(`${this.file}.wal`) || !existsSync(this.file)) return;
    await this.attached(this.file, async () => {});
  }

  /**
   * `file` ATTACHed to the in-memory DuckDB (made at the first call) as the database in use for `fn`,
   * then checkpointed, everything into the file itself (a copy is published without a write-ahead
   * log), and DETACHed.
   */
  private async attached(file: string, fn: (db: DuckDBConnection) => Promise<void>): Promise<void> {
    if (!this.host) {
      const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
      this.host = { instance, db: await instance.connect() };
    }
    const { db } = this.host;
    await db.run(`ATTACH ${sqlString(file)} AS ${COPY}`);
    try {
      await db.run(`USE ${COPY}`);
      await fn(db);
      await db.run(`CHECKPOINT ${COPY}`);
    } finally {
      await db.run('USE memory');
      await db.run(`DETACH ${COPY}`);
    }
  }

  private async removeLeftovers(): Promise<void> {
    const prefix = `.${basename(this.file)}.next-`;
    for (const name of await readdir(dirname(this.file)).catch(() => [] as string[])) {
      if (!name.startsWith(prefix)) continue;
      const path = join(dirname(this.file), name);
      const age = await stat(path).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > LEFTOVER_AGE_MS) await rm(path, { force: true });
    }
  }
}
