/**
 * A real PostgreSQL for the tests that run SQL meant for Redshift: the machine's PostgreSQL server
 * (`initdb` and `postgres` on the PATH, as Debian's postgresql package installs them), in a fresh
 * data folder, on 127.0.0.1 and a free port, stopped after. Run as root (as CI runs), the server is
 * started as `nobody`, since PostgreSQL refuses root. Without a server on the machine, PGlite
 * (PostgreSQL itself, compiled to WebAssembly, in this process) stands in, and says so: the tests
 * name which one ran in their titles (`PG_NAME`). PINGROLL_TEST_POSTGRES=pglite asks for PGlite;
 * PINGROLL_TEST_POSTGRES=server makes a missing server a failure (where one must have run).
 */
import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startLocalServer } from './local-server.js';

/** What the tests ask of either: statements, rows, a transaction. */
export interface Postgres {
  readonly kind: 'server' | 'pglite';
  exec(sql: string): Promise<void>;
  query<T = Record<string, unknown>>(sql: string): Promise<{ rows: T[] }>;
  transaction(fn: (tx: Omit<Postgres, 'transaction' | 'close' | 'kind'>) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

// Values as text where JavaScript would bend them: DATE and TIMESTAMP (no time zone) as written, BIGINT as a number.
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v);
pg.types.setTypeParser(pg.types.builtins.TIMESTAMP, (v) => v);
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/** Which PostgreSQL the tests run on, decided once: the machine's server, or PGlite where it has none. */
export const PG_KIND: Postgres['kind'] = (() => {
  const asked = process.env.PINGROLL_TEST_POSTGRES;
  const installed = spawnSync('sh', ['-c', 'command -v initdb && command -v postgres'], { encoding: 'utf8' }).status === 0;
  if (asked === 'server' && !installed) throw new Error('PINGROLL_TEST_POSTGRES=server, but no PostgreSQL server is on this machine (initdb, postgres): install Debian\'s postgresql');
  if (asked === 'pglite' || !installed) {
    if (!installed) console.warn('no PostgreSQL server on this machine (initdb, postgres): PGlite stands in for it');
    return 'pglite';
  }
  return 'server';
})();

/** For test titles: which PostgreSQL ran. */
export const PG_NAME = PG_KIND === 'server' ? 'a PostgreSQL server' : 'PGlite (no PostgreSQL server on this machine)';

export async function startPostgres(): Promise<Postgres> {
  if (PG_KIND === 'pglite') return pglite();
  const root = mkdtempSync(join(tmpdir(), 'pingroll-pg-'));
  const asRoot = process.getuid?.() === 0;
  // [command, args], run as nobody when this process is root.
  const as = (...cmd: string[]): [string, string[]] => (asRoot ? ['runuser', ['-u', 'nobody', '--', ...cmd]] : [cmd[0]!, cmd.slice(1)]);
  if (asRoot) chownSync(root, 65534, 65534);
  const init = spawnSync(...as('initdb', '-D', join(root, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'), { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  const [command, args] = as('postgres', '-D', join(root, 'data'), '-h', '127.0.0.1', '-p', String(port), '-k', root, '-F', '-c', 'fsync=off', '-c', 'full_page_writes=off');
  const server = await startLocalServer({
    name: 'PostgreSQL', command, args, startupMs: 30_000,
    listening: /listening on IPv4 address "127\.0\.0\.1", port (\d+)[\s\S]*ready to accept connections/,
  });
  const client = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres' });
  await client.connect();
  const run = {
    exec: async (sql: string) => { await client.query(sql); },
    query: async <T>(sql: string) => ({ rows: (await client.query(sql)).rows as T[] }),
  };
  return {
    kind: 'server',
    ...run,
    async transaction(fn) {
      await client.query('BEGIN');
      try {
        await fn(run);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
    },
    async close() {
      await client.end();
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

async function pglite(): Promise<Postgres> {
  const { PGlite } = await import('@electric-sql/pglite');
  const db = new PGlite();
  const on = (q: { exec(sql: string): Promise<unknown>; query<T>(sql: string): Promise<{ rows: T[] }> }) => ({
    exec: async (sql: string) => { await q.exec(sql); },
    query: async <T>(sql: string) => ({ rows: (await q.query<T>(sql)).rows }),
  });
  return {
    kind: 'pglite',
    ...on(db),
    async transaction(fn) { await db.transaction((tx) => fn(on(tx))); },
    async close() { await db.close(); },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Rows (as DuckDB gives them) into a Postgres table, as INSERTs of 2,000 rows each: how the tests load
 * Parquet where Redshift would COPY it. Numbers as they are, NULL for null, anything else as text.
 */
export async function insertRows(pg: Pick<Postgres, 'exec'>, table: string, rows: Array<Record<string, unknown>>, columns = Object.keys(rows[0] ?? {})): Promise<void> {
  const literal = (v: unknown): string => v === null || v === undefined ? 'NULL'
    : typeof v === 'bigint' || typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`;
  for (let i = 0; i < rows.length; i += 2000) {
    await pg.exec(`INSERT INTO ${table} (${columns.join(', ')}) VALUES `
      + rows.slice(i, i + 2000).map((r) => `(${columns.map((k) => literal(r[k])).join(', ')})`).join(', '));
  }
}
