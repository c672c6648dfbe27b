/**
 * LocalFiles (rollup/engine.ts) done by DuckDB, with a stage's local connection: the shapes of files
 * an engine that works elsewhere hands on. Nothing here reads staged pings or works out a figure.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../../../lib/duckdb-engine.js';
import { PARQUET_CODEC } from '../../../lib/parquet-codec.js';
import { createTable, DATASETS } from '../../../datasets/registry.js';
import type { LocalFiles } from '../../engine.js';
import { PING_IDS_COLUMNS } from '../../ping-window.js';

export function duckdbLocalFiles(db: DuckDBConnection): LocalFiles {
  let shapes: Promise<void> | null = null;
  return {
    async emptyParquet(table, file) {
      if (table === 'ping_ids') {
        await db.run(`COPY (SELECT ${PING_IDS_COLUMNS.map((c) => `NULL::${c.type} AS "${c.name}"`).join(', ')} LIMIT 0) TO ${sqlString(file)} (FORMAT parquet)`);
        return;
      }
      // The registry's tables as the warehouse has them (its UNLOAD's types), made once a connection.
      await (shapes ??= (async () => {
        await db.run('CREATE SCHEMA IF NOT EXISTS unload_shapes');
        for (const d of DATASETS) await db.run(createTable(d, 'postgres', 'unload_shapes'));
      })());
      await db.run(`COPY (SELECT * FROM unload_shapes.${table}) TO ${sqlString(file)} (FORMAT parquet, COMPRESSION ${PARQUET_CODEC})`);
    },
    async valueParquet(column, value, file) {
      await db.run(`COPY (SELECT ${sqlString(value)}::VARCHAR AS "${column}") TO ${sqlString(file)} (FORMAT parquet)`);
    },
    async jsonLines(parquet, out) {
      await db.run(`COPY (SELECT * EXCLUDE (file_row_number) FROM read_parquet(${sqlString(parquet)}, file_row_number = true) ORDER BY file_row_number)
        TO ${sqlString(out)} (FORMAT json, COMPRESSION gzip)`);
    },
  };
}
