/**
 * The DuckDB engine (the default): a day rolled up in this process from its staged files on this
 * machine (day-rollup.ts), larger than memory when it must be, and each table written as Parquet.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { DayInput, MonthDay, RollupEngine, RolledUpDay } from '../../engine.js';
import { MONTH_TABLE, writeParquet, type OutputFile } from '../../output-file.js';
import { TABLES, type RollupSettings } from '../../rules.js';
import { rollupDay } from './day-rollup.js';
import { rollupMonth } from './month-rollup.js';

export class DuckDbRollup implements RollupEngine {
  readonly name = 'duckdb';
  readonly readsLocalFiles = true;

  constructor(private readonly settings: RollupSettings = {}) {}

  async rollupDay(db: DuckDBConnection, input: DayInput): Promise<RolledUpDay> {
    const files = input.staged.map((f) => {
      if (f.local === null) throw new Error(`the DuckDB rollup of ${input.day} was handed ${f.key} not fetched; it reads local files`);
      return f.local;
    });
    const rollup = await rollupDay(db, input.day, files, input.outcomes, { ...this.settings, catalogFile: input.catalog?.file ?? null });
    const outputs: OutputFile[] = [];
    for (const table of TABLES) outputs.push(await writeParquet(db, `SELECT * FROM ${rollup.tables[table]}`, table, input.day, input.dir));
    return { pings: rollup.pings, duplicates: rollup.duplicates, outputs: [...outputs, input.runs], loaded: false };
  }

  async rollupMonth(db: DuckDBConnection, month: string, days: MonthDay[], dir: string): Promise<OutputFile> {
    const table = await rollupMonth(db, month, days);
    return writeParquet(db, `SELECT * FROM ${table}`, MONTH_TABLE, `${month}-01`, dir, 'month');
  }
}
