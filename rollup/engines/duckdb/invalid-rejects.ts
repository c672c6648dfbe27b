/** The day's automated traffic as rejects lines (rollup/rejects-lines.ts), written by DuckDB. */
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../../../lib/duckdb-engine.js';
import { invalidTrafficLinesSql } from '../../rejects-lines.js';

/** Writes the records of `relation` (a `rule` and EXCLUDED_STAGED_COLUMNS) as rejects lines, gzip, to `dir`; the file. */
export async function writeInvalidRejects(db: DuckDBConnection, relation: string, dir: string): Promise<string> {
  const file = join(dir, 'invalid-traffic.jsonl.gz');
  await db.run(`COPY (${invalidTrafficLinesSql(relation)}) TO ${sqlString(file)} (FORMAT json, COMPRESSION gzip)`);
  return file;
}
