/** Viewer keys: the product's, in JavaScript and in each SQL dialect, against the documented formula and a fixed vector. */
import { describe, expect, it } from 'vitest';
import { DuckDBInstance, queryRows, sqlString } from '../../lib/duckdb-engine.js';
import { SHA256_HEX, viewerKey, viewerKeyOf, viewerKeySql } from '../../rollup/viewer-key.js';
import { viewerKeyFor } from '../support/oracle.js';

const SECRET = 'test-viewer-key-0123456789';

describe('a viewer key', () => {
  it('is the documented formula: a fixed vector, and the oracle', () => {
    expect(viewerKeyFor(SECRET, 'u1')).toBe('62f3ec22b1bb06c3dcd00a75ce7b9f2b');
    expect(viewerKeyFor(SECRET, 'session:é')).toBe('62f3ec22737aa693745a44dede6aeafb');
    const key = viewerKey(SECRET);
    for (const viewer of ['u1', 'session:é', 'session:s-1', '']) expect(viewerKeyOf(key, viewer)).toBe(viewerKeyFor(SECRET, viewer));
  });

  it('is the same in DuckDB\'s SQL', async () => {
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    try {
      const key = viewerKey(SECRET);
      const rows = await queryRows<{ k: string }>(c, `SELECT ${viewerKeySql(key.id, sqlString(SECRET), sqlString('session:é'), SHA256_HEX.duckdb)} AS k`);
      expect(rows[0]!.k).toBe(viewerKeyFor(SECRET, 'session:é'));
    } finally {
      c.closeSync();
      db.closeSync();
    }
  });
});
