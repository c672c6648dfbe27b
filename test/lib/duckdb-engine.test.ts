/**
 * The run's DuckDB engine (lib/duckdb-engine.ts): a connection opened at its first use, and a second
 * connection to its engine for work that runs beside a query.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DuckDBInstance, lazyConnection, openEngine, queryRows, sibling } from '../../lib/duckdb-engine.js';
import type { DuckDBConnection } from '@duckdb/node-api';
import { rm, tempDir } from '../support/job-fixture.js';

const dir = tempDir();
afterAll(() => rm(dir, { recursive: true, force: true }));

/** A lazy connection to an engine of its own, and what its opener saw: how many opens, and the connection each made. */
function counted(): { db: DuckDBConnection; opened: DuckDBConnection[] } {
  const opened: DuckDBConnection[] = [];
  const db = lazyConnection(async () => {
    const c = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: 256 });
    opened.push(c);
    return c;
  });
  return { db, opened };
}

describe('a lazy connection', () => {
  it('is opened at its first use, once; never used, never', async () => {
    const never = counted();
    never.db.closeSync();
    expect(never.opened).toHaveLength(0);

    const { db, opened } = counted();
    expect(opened).toHaveLength(0);
    expect(await queryRows<{ n: number }>(db, 'SELECT 42 AS n')).toEqual([{ n: 42 }]);
    expect(await queryRows<{ n: number }>(db, 'SELECT 43 AS n')).toEqual([{ n: 43 }]);
    expect(opened).toHaveLength(1);
    db.closeSync();
  });
});

describe('a second connection to the engine', () => {
  it('sees the engine\'s attached databases, not the first one\'s TEMP tables, and runs a query while the first runs another', async () => {
    const { db } = counted();
    const other = await sibling(db);
    expect(other).not.toBeNull();
    try {
      await db.run(`ATTACH IF NOT EXISTS ':memory:' AS shared`);
      await db.run('CREATE TABLE shared.t AS SELECT range AS x FROM range(100000)');
      await db.run('CREATE TEMP TABLE mine AS SELECT 1 AS y');
      const [sum, big] = await Promise.all([
        queryRows<{ s: bigint }>(other!, 'SELECT sum(x) AS s FROM shared.t'),
        queryRows<{ n: bigint }>(db, 'SELECT count(*) AS n FROM range(20000000)'),
      ]);
      expect([sum[0]!.s, big[0]!.n]).toEqual([4999950000n, 20000000n]);
      await expect(other!.run('SELECT * FROM mine')).rejects.toThrow(/mine/);
    } finally {
      other?.closeSync();
      db.closeSync();
    }
  });

  it('is not had from a connection openEngine did not make', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const c = await instance.connect();
    try {
      expect(await sibling(c)).toBeNull();
    } finally {
      c.closeSync();
    }
  });
});
