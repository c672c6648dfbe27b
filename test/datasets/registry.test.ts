/**
 * The dataset registry (datasets/registry.ts) is what every published dataset is: the Parquet a real
 * run publishes has its columns, in order, with its types; the warehouses' tables are made from it
 * (test/export/warehouse/); the Glue tables too (deploy/test); and docs/analysts.md shows its column
 * tables as it declares them (`make docs` writes them).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATASETS, columnTable, duckdbType, type Dataset } from '../../datasets/registry.js';
import { memoryLog } from '../../lib/log.js';
import { projectFile } from '../../lib/project-file.js';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { ANALYSTS, withColumnTables } from '../../tools/datasets-docs.js';
import { dirConfig, onBackends, query, runDay, tempRoots, writeObjects } from '../support/job-fixture.js';
import { runMonthRollup } from '../../jobs/month.js';

const root = tempRoots();

describe('the dataset registry', () => {
  it('is what a run publishes: every dataset\'s Parquet has its columns, in order, with its types', async () => {
    const r = root();
    const days = ['2026-10-30', '2026-10-31'];
    for (const [i, date] of days.entries()) await writeObjects(join(r, 'logs'), generateSample({ date, sessions: 30, seed: 90 + i, recordsPerObject: 200 }).objects);
    const config = dirConfig(r, { PINGROLL_VIEWER_KEY: 'registry-test-key-0123456789' });
    for (const day of days) await runDay(config, { day, log: memoryLog() });
    await onBackends(config, memoryLog(), (b) => b, (b) => runMonthRollup(config, b, { month: '2026-10', log: memoryLog() }));
    // A close's datasets (monthly_statements, statement_adjustments) are held to the registry where a month is closed: test/jobs/close.test.ts.
    for (const d of (DATASETS as readonly Dataset[]).filter((x) => x.producer !== 'close' && x.producer !== 'adjustments')) {
      const dt = d.by === 'month' ? '2026-10-01' : '2026-10-31';
      const described = await query<{ column_name: string; column_type: string }>(`DESCRIBE SELECT * FROM read_parquet('${join(r, 'out', d.name, `dt=${dt}`, 'part-00000.parquet')}', hive_partitioning = false)`);
      expect(described.map((c) => [c.column_name, c.column_type]), d.name).toEqual(d.columns.map((c) => [c.name, duckdbType(c.type)]));
      const rows = await query<{ n: number }>(`SELECT count(*)::INT AS n FROM read_parquet('${join(r, 'out', d.name, `dt=${dt}`, 'part-00000.parquet')}')`);
      expect(rows[0]!.n, d.name).toBeGreaterThan(0);
    }
  }, 120_000);

  it("is what docs/analysts.md shows: each dataset's column table as make docs writes it", () => {
    const page = readFileSync(projectFile(ANALYSTS), 'utf8');
    const { page: written, missing } = withColumnTables(page);
    expect(missing).toEqual([]);
    expect(written, 'the column tables of docs/analysts.md differ from datasets/registry.ts: run make docs').toBe(page);
    for (const d of DATASETS) expect(page).toContain(columnTable(d));
  });

  it('declares each dataset\'s grain among its columns, and its distribution key too', () => {
    for (const d of DATASETS as readonly Dataset[]) {
      const names = d.columns.map((c) => c.name);
      for (const g of [...d.grain, ...(d.distKey ? [d.distKey] : []), d.by]) expect(names, d.name).toContain(g);
      expect(new Set(names).size, d.name).toBe(names.length);
    }
  });
});
