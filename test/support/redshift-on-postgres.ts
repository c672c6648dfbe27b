/**
 * Redshift for the tests, played by PostgreSQL through a mocked Data API (the one AWS API with no local
 * stand-in): each BatchExecuteStatement runs on Postgres, in one transaction, with COPY and UNLOAD done
 * here against the S3 store (DuckDB reading and writing the Parquet).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { BatchExecuteStatementCommand } from '@aws-sdk/client-redshift-data';
import type { AwsStub } from 'aws-sdk-client-mock';
import { expect } from 'vitest';
import { queryRows } from '../../lib/duckdb-engine.js';
import { SHA256_HEX } from '../../rollup/viewer-key.js';
import { insertRows, type Postgres } from './postgres.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * Redshift, played by PostgreSQL: COPY and UNLOAD (no local stand-in) are done here, against moto,
 * with DuckDB reading and writing the Parquet; every other statement runs on Postgres as sent. What
 * was sent, the files each COPY read, and the sessions opened.
 */
export function redshiftOnPostgres(rs: AwsStub<any, any, any>, pg: Postgres, store: { get(key: string): Promise<Buffer | null>; size(key: string): Promise<number | null>; download(key: string, file: string): Promise<void>; put(key: string, body: { file: string }): Promise<void> }, c: DuckDBConnection, root: string, lost: string | null = null) {
  const key = (url: string): string => url.replace(/^s3:\/\/rollups\/pingroll\//, '');
  const sent: string[][] = [];
  const copies: number[] = [];
  const sessions: string[] = [];
  rs.on(BatchExecuteStatementCommand).callsFake(async (input: { Sqls: string[]; SessionId?: string; SessionKeepAliveSeconds?: number }) => {
    sent.push(input.Sqls);
    // The warehouse's init (Redshift's DDL and views): the tables are in Postgres already, as its DDL made them.
    if (input.Sqls.some((q) => q.startsWith('CREATE TABLE IF NOT EXISTS'))) return { Id: 'init' };
    // A batch runs in the session it names (here: Postgres's one connection, whose temporary tables stay), or opens one.
    if (input.SessionId) expect(sessions).toContain(input.SessionId);
    else if (input.SessionKeepAliveSeconds) {
      sessions.push(`session-${sessions.length + 1}`);
      // A new session starts with no temporary tables (Postgres's one connection plays every session).
      await pg.exec('DISCARD TEMP');
    }
    await pg.transaction(async (tx) => {
      for (const sql of input.Sqls) {
        const copy = /^COPY (\S+) FROM 's3:\/\/([^']+)' IAM_ROLE '[^']+' FORMAT AS PARQUET( MANIFEST)?$/.exec(sql);
        const unload = /^UNLOAD \('(.*)'\) TO 's3:\/\/([^']+)' IAM_ROLE '[^']+' FORMAT AS PARQUET PARALLEL OFF ALLOWOVERWRITE$/s.exec(sql);
        if (copy) {
          // A manifest names the files, each with its size (which must be right); else the URL is the file.
          const urls = copy[3] ? (JSON.parse((await store.get(key(`s3://${copy[2]}`)))!.toString()) as { entries: Array<{ url: string; mandatory: boolean; meta: { content_length: number } }> }).entries
            : [{ url: `s3://${copy[2]}`, mandatory: true, meta: { content_length: -1 } }];
          copies.push(urls.length);
          for (const entry of urls) {
            expect(entry.mandatory).toBe(true);
            if (copy[3]) expect(entry.meta.content_length).toBe(await store.size(key(entry.url)));
            const local = join(root, 'copy.parquet');
            await store.download(key(entry.url), local);
            const rows = await queryRows<Record<string, unknown>>(c, `SELECT * FROM read_parquet('${local}')`);
            await insertRows(tx, copy[1]!, rows);
          }
        } else if (unload) {
          const rows = (await tx.query<Record<string, unknown>>(unload[1]!.replace(/''/g, "'"))).rows;
          // Whether Redshift's UNLOAD of no rows writes a file is not documented: here it writes none (pingroll makes the empty file).
          // `lost`: an UNLOAD that wrote nothing though the table has rows (pingroll must fail, not publish it empty).
          if (rows.length === 0 || unload[1]!.includes(`pingroll.${lost} `)) continue;
          // (Timestamps come as Postgres writes them, or as Dates from PGlite.)
          const json = join(root, 'unload.json');
          await writeFile(json, rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v instanceof Date ? v.toISOString().replace('Z', '') : v])))).join('\n'));
          // A table of the schema, or the session's temporary one; the columns the query selected, in its order.
          const [, schema, table] = /FROM (pingroll\.)?(\w+)/.exec(unload[1]!)!;
          const all = (await tx.query<{ column_name: string; data_type: string }>(`SELECT column_name, data_type FROM information_schema.columns
            WHERE ${schema ? "table_schema = 'pingroll'" : "table_schema LIKE 'pg_temp%'"} AND table_name = '${table}' ORDER BY ordinal_position`)).rows;
          const types = Object.keys(rows[0]!).map((name) => all.find((t) => t.column_name === name)!);
          const cols = types.map((t) => `'${t.column_name}': '${t.data_type.startsWith('timestamp') ? 'TIMESTAMP' : t.data_type === 'date' ? 'DATE' : t.data_type === 'bigint' ? 'BIGINT' : t.data_type === 'double precision' ? 'DOUBLE' : 'VARCHAR'}'`).join(', ');
          const out = join(root, 'unload.parquet');
          await c.run(`COPY (SELECT * FROM read_json('${json}', format = 'newline_delimited', columns = {${cols}})) TO '${out}' (FORMAT parquet)`);
          await store.put(`${key(`s3://${unload[2]}`)}0000_part_00.parquet`, { file: out });
        } else {
          // Redshift's SHA2(x, 256) is Postgres's sha256 as hex (both: the UTF-8 bytes' digest, lowercase hex).
          await tx.exec(sql.replace(/SHA2\(([^()]*), 256\)/g, (_m, e: string) => SHA256_HEX.postgres(e)));
        }
      }
    });
    return { Id: `b-${sent.length}`, SessionId: input.SessionId ?? (input.SessionKeepAliveSeconds ? sessions.at(-1) : undefined) };
  });
  return { sent, copies, sessions };
}
