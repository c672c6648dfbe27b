/**
 * The embedded default's own viewer key (issue #41): with no PINGROLL_VIEWER_KEY, a DuckDB warehouse
 * and a local output, the first run that publishes makes one and keeps it in the output's state; later
 * runs and `pingroll uniques` read it, so the viewer datasets have rows and uniques work out of the box.
 */
import { spawnSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../infra/config.js';
import { VIEWER_KEY_FILE } from '../../datasets/layout.js';
import { withOutputViewerKey } from '../../infra/generated-viewer-key.js';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { rm, tempDir, writeObjects } from '../support/job-fixture.js';

const CLI = new URL('../../bin/pingroll.js', import.meta.url).pathname;
const root = tempDir();
afterAll(() => rm(root, { recursive: true, force: true }));

describe('the output\'s own viewer key', () => {
  it('is made once by a run that publishes, read by every later one, never made by a read or a dry run, and never overrides a set key', async () => {
    const out = join(root, 'out');
    const env = { PINGROLL_OUTPUT: out, PINGROLL_WAREHOUSE: `duckdb:${join(root, 'wh.duckdb')}` };
    const config = loadConfig(env);
    expect(withOutputViewerKey(config, false).viewerKey).toBeNull();
    const made = withOutputViewerKey(config, true).viewerKey!;
    expect(made.secret).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(statSync(join(out, VIEWER_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(withOutputViewerKey(config, true).viewerKey).toEqual(made);
    expect(withOutputViewerKey(config, false).viewerKey).toEqual(made);
    // A set key wins; an S3 output or another warehouse gets none made.
    expect(withOutputViewerKey(loadConfig({ ...env, PINGROLL_VIEWER_KEY: 'a-key-of-my-own-0123' }), true).viewerKey!.secret).toBe('a-key-of-my-own-0123');
    expect(withOutputViewerKey(loadConfig({ ...env, PINGROLL_WAREHOUSE: 'none' }), true).viewerKey).toBeNull();
    expect(withOutputViewerKey(loadConfig({ ...env, PINGROLL_OUTPUT: 's3://bucket/out/' }), true).viewerKey).toBeNull();
    // A damaged file stops the run, saying what to do.
    writeFileSync(join(out, VIEWER_KEY_FILE), 'no');
    expect(() => withOutputViewerKey(config, true)).toThrow(/_state\/viewer-key does not hold a viewer key .*restore it, or set PINGROLL_VIEWER_KEY/);
  });

  it('gives a first `pingroll rollup` with no key set viewer rows, and `pingroll uniques` its viewers', async () => {
    const r = join(root, 'cli');
    const sample = generateSample({ date: '2026-11-01', sessions: 40, seed: 3, recordsPerObject: 200 });
    await writeObjects(join(r, 'logs'), sample.objects);
    const env = { PATH: process.env.PATH ?? '', PINGROLL_LOGS: join(r, 'logs'), PINGROLL_OUTPUT: join(r, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(r, 'wh.duckdb')}` };
    const run = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8', timeout: 120_000 });
    const dry = run('rollup', '--date', '2026-11-01', '--dry-run');
    expect(dry.status, dry.stderr).toBe(0);
    await expect(readFile(join(r, 'out', VIEWER_KEY_FILE))).rejects.toThrow(/ENOENT/);
    const first = run('rollup', '--date', '2026-11-01');
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/daily_series_viewers [1-9]\d* rows/);
    const key = await readFile(join(r, 'out', VIEWER_KEY_FILE), 'utf8');
    const uniques = run('uniques', '--from', '2026-11-01', '--to', '2026-11-01', '--format', 'json');
    expect(uniques.status, uniques.stderr).toBe(0);
    expect((JSON.parse(uniques.stdout) as { allSeries: { viewers: number } }).allSeries.viewers).toBeGreaterThan(0);
    // A later run reads the same key.
    expect(run('rollup', '--date', '2026-11-01').status).toBe(0);
    expect(await readFile(join(r, 'out', VIEWER_KEY_FILE), 'utf8')).toBe(key);
  });
});
