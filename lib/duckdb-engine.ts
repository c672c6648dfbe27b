import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import type * as DuckDBApi from '@duckdb/node-api';
import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * @duckdb/node-api, loaded with `require` at its first use: it is CommonJS, and importing it as ESM
 * makes Node scan the source of each module it re-exports for export names, a tenth of a second at
 * every start; and a run with nothing to do never uses it.
 */
let api: typeof DuckDBApi | null = null;
function duckdb(): typeof DuckDBApi {
  return (api ??= createRequire(import.meta.url)('@duckdb/node-api') as typeof DuckDBApi);
}

/** DuckDB's DuckDBInstance, its module loaded when the first is made. */
export const DuckDBInstance = {
  create: (...args: Parameters<typeof DuckDBApi.DuckDBInstance.create>): ReturnType<typeof DuckDBApi.DuckDBInstance.create> => duckdb().DuckDBInstance.create(...args),
};

/** The engine each connection openEngine made is of: what `sibling` connects to. */
const engines = new WeakMap<DuckDBConnection, DuckDBApi.DuckDBInstance>();
/** What a lazy connection answers `sibling` through (its engine is opened first). */
const SIBLING = Symbol('sibling');

/**
 * A connection opened at its first use (`open`), for work that may find nothing to do: a run with
 * nothing new never loads DuckDB. Every method but closeSync waits for the opening; closeSync of one
 * never opened does nothing.
 */
export function lazyConnection(open: () => Promise<DuckDBConnection>): DuckDBConnection {
  let opening: Promise<DuckDBConnection> | null = null;
  let opened: DuckDBConnection | null = null;
  const connection = async (): Promise<DuckDBConnection> => (opened ??= await (opening ??= open()));
  return new Proxy({} as DuckDBConnection, {
    get(_target, prop) {
      if (prop === 'closeSync') return () => opened?.closeSync();
      if (prop === SIBLING) return async () => sibling(await connection());
      // Not a promise (await and Promise.resolve look for `then`).
      if (prop === 'then') return undefined;
      return async (...args: unknown[]) => {
        const c = await connection();
        return (c[prop as keyof DuckDBConnection] as (...a: unknown[]) => unknown).apply(c, args);
      };
    },
  });
}

export interface EngineOptions {
  /** DuckDB's memory limit in MB (from `PINGROLL_MEMORY_LIMIT`); beyond it, aggregations spill to `tempDir`. */
  memoryLimitMb: number;
  /** DuckDB's threads (`PINGROLL_THREADS`); null or unset: one per core (on a 16-core host the staging conversions and the rollup use them all). */
  threads?: number | null | undefined;
  /** Where it spills: a folder of the caller's, which the caller removes (a run's work folder: jobs/run.ts). */
  tempDir: string;
}

/** What a run's engine is opened with besides its spill folder: the configured memory limit and threads. */
export type EngineSettings = Omit<EngineOptions, 'tempDir'>;

/**
 * An in-memory DuckDB for one run: pingroll's aggregation and Parquet engine. It spills to a local
 * temporary directory past its memory limit, which is how a day larger than memory stays exact.
 */
export async function openEngine(opts: EngineOptions): Promise<DuckDBConnection> {
  const instance = await DuckDBInstance.create(':memory:', {
    memory_limit: `${opts.memoryLimitMb}MB`,
    threads: String(opts.threads ?? availableParallelism()),
    temp_directory: opts.tempDir,
    preserve_insertion_order: 'false',
  });
  const connection = await instance.connect();
  engines.set(connection, instance);
  return connection;
}

/**
 * Another connection to the engine `db` is of, for a query to run while `db` runs another (DuckDB
 * runs one at a time a connection): it sees the engine's tables and attached databases, not `db`'s
 * TEMP tables. Null for a connection openEngine did not make (a caller then runs both on `db`, one
 * after the other). The caller closes it.
 */
export async function sibling(db: DuckDBConnection): Promise<DuckDBConnection | null> {
  const lazy = (db as unknown as Record<symbol, unknown>)[SIBLING];
  if (typeof lazy === 'function') return (lazy as () => Promise<DuckDBConnection | null>)();
  const instance = engines.get(db);
  return instance ? instance.connect() : null;
}

/** A SQL string literal. */
export function sqlString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

/**
 * A SQL string expression that reads the same on DuckDB, PostgreSQL and Redshift, for values from the
 * data (series and episode ids): Redshift reads a backslash in a literal as an escape (`'a\'` never
 * ends), the others as itself, so each backslash is CHR(92), which all three have.
 */
export function portableString(s: string): string {
  return s.includes('\\') ? s.split('\\').map(sqlString).join(' || CHR(92) || ') : sqlString(s);
}

/**
 * An id as SQL groups, compares and orders it the same on DuckDB, PostgreSQL and Redshift: the id
 * and CHR(1). Redshift ignores trailing blanks when it compares VARCHARs ('a' = 'a '); a character
 * after them makes them count, and CHR(1) sorts before any character an id holds, so 'a' still sorts
 * before 'a '. (Cast: Redshift's CHR returns a CHAR, whose own trailing-blank rules must not apply.)
 */
export function idKey(expr: string): string {
  return `${expr} || CAST(CHR(1) AS VARCHAR(1))`;
}

/** Rows of a query as objects. */
export async function queryRows<T>(engine: DuckDBConnection, sql: string): Promise<T[]> {
  const r = await engine.runAndReadAll(sql);
  return r.getRowObjects() as T[];
}
