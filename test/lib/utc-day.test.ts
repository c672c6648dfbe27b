/**
 * One definition of a record's UTC day for every time from 0001 to 9999: `dayOf` in TypeScript, and
 * `dayNumberSql` in the SQL that stages by day, on DuckDB and on PostgreSQL (Redshift's dialect
 * here), agree at the edges: before 1970, leap days, the last millisecond of a day.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { defaultConfig } from '../../infra/config.js';
import { openEngine, queryRows } from '../../lib/duckdb-engine.js';
import { dayName, dayNumber, dayNumberSql, dayOf, dayStartMs } from '../../lib/utc-day.js';
import { PG_NAME, startPostgres, type Postgres } from '../support/postgres.js';
import { rm, tempDir } from '../support/job-fixture.js';

const EDGES: Array<[string, string]> = [
  ['0001-01-01T00:00:00.000Z', '0001-01-01'],
  ['0001-01-01T23:59:59.999Z', '0001-01-01'],
  ['1600-02-29T12:00:00.000Z', '1600-02-29'],
  ['1899-12-31T23:59:59.999Z', '1899-12-31'],
  ['1900-03-01T00:00:00.000Z', '1900-03-01'],
  ['1969-12-31T00:00:00.001Z', '1969-12-31'],
  ['1969-12-31T23:59:59.999Z', '1969-12-31'],
  ['1970-01-01T00:00:00.000Z', '1970-01-01'],
  ['2024-02-29T23:59:59.999Z', '2024-02-29'],
  ['2024-03-01T00:00:00.000Z', '2024-03-01'],
  ['2026-11-01T23:59:59.999Z', '2026-11-01'],
  ['9999-12-31T23:59:59.999Z', '9999-12-31'],
];
const cases = EDGES.map(([t, day]) => ({ ms: Date.parse(t), day }));

describe('a record\'s UTC day', () => {
  let pg: Postgres;
  const dir = tempDir();
  beforeAll(async () => {
    pg = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await pg?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('is the same in TypeScript at every edge, and names round-trip', () => {
    for (const { ms, day } of cases) {
      expect(dayOf(ms), new Date(ms).toISOString()).toBe(day);
      expect(dayName(dayNumber(day))).toBe(day);
      expect(ms >= dayStartMs(day) && ms < dayStartMs(day) + 86_400_000).toBe(true);
    }
  });

  it(`is the same in DuckDB's SQL and on ${PG_NAME}`, async () => {
    const values = cases.map((c) => `(${c.ms}::BIGINT)`).join(', ');
    const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: defaultConfig().memoryLimitMb });
    try {
      const duck = await queryRows<{ ms: bigint; n: bigint }>(engine, `SELECT ms, ${dayNumberSql('ms')} AS n FROM (VALUES ${values}) AS t(ms) ORDER BY ms`);
      expect(duck.map((r) => dayName(Number(r.n)))).toEqual(cases.map((c) => c.day));
      // DuckDB's own integer division truncates: what the staging used to do, a day off before 1970.
      const truncated = await queryRows<{ n: bigint }>(engine, `SELECT ${cases[6]!.ms}::BIGINT // 86400000 AS n`);
      expect(dayName(Number(truncated[0]!.n))).toBe('1970-01-01');
    } finally {
      engine.closeSync();
    }
    const { rows } = await pg.query<{ n: number }>(`SELECT ${dayNumberSql('ms')} AS n FROM (VALUES ${values}) AS t(ms) ORDER BY ms`);
    expect(rows.map((r) => dayName(Number(r.n)))).toEqual(cases.map((c) => c.day));
  });
});
