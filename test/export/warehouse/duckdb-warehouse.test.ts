/**
 * The embedded warehouse as analysts use it: held open read-only by another process, for as long as
 * they like, while the nightly job loads the day again.
 */
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { DuckDbWarehouse } from '../../../export/warehouse/duckdb/duckdb-warehouse.js';
import { memoryLog } from '../../../lib/log.js';
import { generateSample } from '../../../tools/sample/access-log-generator.js';
import { dirConfig, rm, runDay, tempDir, tempRoots, writeObjects } from '../../support/job-fixture.js';
import { DATASETS } from '../../../datasets/registry.js';

const DAY = '2026-11-01';
const root = tempRoots();

/** Another process holding the warehouse open, read-only; `ask` sends it a line and reads its answer. */
function analyst(file: string, sql: string) {
  const child = spawn(process.execPath, [new URL('../../support/warehouse-reader.mjs', import.meta.url).pathname, file, sql], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<unknown> => JSON.parse((await lines.next()).value as string);
  return {
    first: next(),
    ask: (line: string): Promise<unknown> => {
      child.stdin!.write(line + '\n');
      return next();
    },
    stop: () => new Promise((r) => { child.once('exit', r); child.stdin!.end(); }),
  };
}

describe('the embedded warehouse', () => {
  it('never blocks the job while an analyst holds it open: the analyst sees the old day until reopening', async () => {
    const r = root();
    const sample = generateSample({ date: DAY, sessions: 120, seed: 31, recordsPerObject: 300 });
    const half = Math.ceil(sample.objects.length / 2);
    await writeObjects(join(r, 'logs'), sample.objects.slice(0, half));
    const before = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const sql = `SELECT sum(pings)::BIGINT AS pings FROM daily_episode_stats WHERE day = DATE '${DAY}'`;
    const held = analyst(join(r, 'wh.duckdb'), sql);
    expect(await held.first).toEqual([{ pings: String(before.pings) }]);
    try {
      await writeObjects(join(r, 'logs'), sample.objects.slice(half));
      const after = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
      expect(after.pings).toBeGreaterThan(before.pings);
      // The open session keeps the file it opened; a new one sees the new day.
      expect(await held.ask('again')).toEqual([{ pings: String(before.pings) }]);
      expect(await held.ask('reopen')).toEqual([{ pings: String(after.pings) }]);
      expect(await new DuckDbWarehouse(join(r, 'wh.duckdb')).query(sql)).toEqual([{ pings: BigInt(after.pings) }]);
    } finally {
      await held.stop();
    }
  });

  it('reads without creating anything, and says so when there is no warehouse', async () => {
    const r = root();
    const wh = new DuckDbWarehouse(join(r, 'nowhere', 'wh.duckdb'));
    await expect(wh.query('SELECT 1')).rejects.toThrow(/there is no warehouse at .*nowhere.*run make rollup/);
    const { existsSync } = await import('node:fs');
    expect(existsSync(join(r, 'nowhere'))).toBe(false);
  });

  it('is never left torn: a copy a killed load left behind is not the warehouse, and goes once it is old', async () => {
    const r = root();
    const file = join(r, 'wh.duckdb');
    const wh = new DuckDbWarehouse(file);
    // A load killed while writing its copy: an empty file, and one cut at 4 KiB.
    const { utimes } = await import('node:fs/promises');
    for (const [name, bytes] of [['.wh.duckdb.next-dead0001', 0], ['.wh.duckdb.next-dead0002', 4096]] as const) {
      await writeFile(join(r, name), Buffer.alloc(bytes));
      await utimes(join(r, name), new Date(Date.now() - 7_200_000), new Date(Date.now() - 7_200_000));
    }
    await wh.init();
    expect(await wh.query('SELECT count(*)::INT AS n FROM daily_episode_stats')).toEqual([{ n: 0 }]);
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(r)).sort()).toEqual(['wh.duckdb']);
  });

  it('takes in a write-ahead log a writer killed in place left beside the file, before its next change', async () => {
    const r = root();
    const file = join(r, 'wh.duckdb');
    const wh = new DuckDbWarehouse(file);
    await wh.init();
    await wh.close();
    // A writer of the file in place (as versions before the copy-and-rename were), killed after its
    // commit and before any checkpoint: the row is only in wh.duckdb.wal.
    const writer = `const { DuckDBInstance } = require('@duckdb/node-api');
      (async () => {
        const db = await (await DuckDBInstance.create(${JSON.stringify(file)}, { checkpoint_threshold: '1TB' })).connect();
        await db.run("INSERT INTO daily_ingest_audit VALUES (DATE '2026-10-31', 's3', 'ping', 7)");
        process.kill(process.pid, 'SIGKILL');
      })();`;
    const { spawnSync } = await import('node:child_process');
    spawnSync(process.execPath, ['-e', writer], { cwd: process.cwd() });
    const { existsSync } = await import('node:fs');
    expect(existsSync(`${file}.wal`)).toBe(true);
    // The next run's warehouse.
    const next = new DuckDbWarehouse(file);
    await next.init();
    await next.close();
    expect(existsSync(`${file}.wal`)).toBe(false);
    expect(await next.query("SELECT records::INT AS n FROM daily_ingest_audit WHERE day = DATE '2026-10-31'")).toEqual([{ n: 7 }]);
  });

  it('takes a column the registry added since its tables were made: added at the end (NULL in the rows before), and the day loads by name', async () => {
    const r = root();
    const file = join(r, 'wh.duckdb');
    const sample = generateSample({ date: DAY, sessions: 40, seed: 5, recordsPerObject: 200 });
    await writeObjects(join(r, 'logs'), sample.objects);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    // A warehouse of an older release: daily_series_stats without the registry's last column, nor a middle one.
    const series = DATASETS.find((d) => d.name === 'daily_series_stats')!.columns.map((c) => c.name);
    const [middle, last] = [series[3]!, series.at(-1)!];
    const { DuckDBInstance } = await import('../../../lib/duckdb-engine.js');
    const db = await (await DuckDBInstance.create(file)).connect();
    // One row of an older day (the day's other rows go: the run loads them again).
    await db.run('DELETE FROM daily_series_stats WHERE series_id <> (SELECT min(series_id) FROM daily_series_stats)');
    await db.run(`UPDATE daily_series_stats SET day = DATE '2026-10-31'`);
    for (const c of [middle, last]) await db.run(`ALTER TABLE daily_series_stats DROP COLUMN ${c}`);
    db.closeSync();
    // The day as an older release published it (its manifest's settings name that release): the
    // next run rolls it up again, adds both columns, and loads the day by name.
    const manifest = join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json');
    await writeFile(manifest, JSON.stringify({ ...JSON.parse(await readFile(manifest, 'utf8')), settings: '{"version":"0.0.1"}' }));
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const wh = new DuckDbWarehouse(file);
    const columns = (await wh.query<{ name: string }>(`SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'daily_series_stats' ORDER BY ordinal_position`)).map((c) => c.name);
    expect(columns).toEqual([...series.filter((c) => c !== middle && c !== last), middle, last]);
    const rows = await wh.query<Record<string, unknown>>(`SELECT day::VARCHAR AS day, ${middle} AS m, ${last} AS l FROM daily_series_stats ORDER BY day, series_id`);
    expect(rows[0]).toEqual({ day: '2026-10-31', m: null, l: null });
    expect(rows.slice(1).length).toBeGreaterThan(0);
    expect(rows.slice(1).every((row) => row.day === DAY && row.m !== null && row.l !== null)).toBe(true);
  });
});

