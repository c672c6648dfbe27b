/**
 * docs/analysts.md's examples, each run by `pingroll sql` against what `make demo` makes (its day,
 * seed, viewer key and episode catalog; fewer sessions): every statement runs, and each returns rows
 * unless its table is one the demo leaves empty, for the reason given.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSample, sampleEpisodeCatalog } from '../../tools/sample/access-log-generator.js';
import { memoryLog } from '../../lib/log.js';
import { sqlCommand, sqlPrompt } from '../../cli/commands/sql.js';
import { dirConfig, runDay, tempRoots, writeObjects } from '../support/job-fixture.js';
import { writeFile } from 'node:fs/promises';
import type { Config } from '../../infra/config.js';

const DEMO_DATE = '2026-11-01';
/** Tables the demo has no rows in: no month is closed in it, so no statement is issued and nothing is adjusted. */
const EMPTY_IN_DEMO = ['monthly_statements', 'statement_adjustments'];
const root = tempRoots();
let config: Config;

beforeAll(async () => {
  const r = root();
  // As make demo: generate --date 2026-11-01 --seed 7 --catalog, then rollup with the demo's viewer key and the catalog.
  await writeObjects(join(r, 'logs'), generateSample({ date: DEMO_DATE, sessions: 300, seed: 7 }).objects);
  await writeFile(join(r, 'episodes.csv'), sampleEpisodeCatalog());
  config = dirConfig(r, { PINGROLL_VIEWER_KEY: 'demo-viewer-key-not-for-production', PINGROLL_EPISODE_CATALOG: join(r, 'episodes.csv') });
  await runDay(config, { day: DEMO_DATE, log: memoryLog() });
}, 120_000);

/** Every statement of the page's ```sql blocks, with its leading comment. */
async function examples(): Promise<string[]> {
  const page = await readFile(join(import.meta.dirname, '..', '..', 'docs', 'analysts.md'), 'utf8');
  const blocks = [...page.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks.flatMap((b) => b.split(/;\s*\n/).map((s) => s.trim().replace(/;$/, '')).filter((s) => s.replace(/--[^\n]*/g, '').trim() !== ''));
}

describe("docs/analysts.md's examples", () => {
  it('each runs with pingroll sql against the demo, and returns rows unless the demo leaves its table empty', async () => {
    const statements = await examples();
    expect(statements.length).toBeGreaterThan(15);
    for (const sql of statements) {
      const rows = JSON.parse(await sqlCommand(config, sql, 'json')) as unknown[];
      const empty = EMPTY_IN_DEMO.some((t) => new RegExp(`\\bFROM ${t}\\b`).test(sql));
      expect(rows.length > 0, sql).toBe(!empty);
    }
  });

  it('run in turn when piped to pingroll sql (the prompt without a terminal): each answered, a failed one said, and the command failed', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let printed = '';
    output.on('data', (d: Buffer) => { printed += d.toString(); });
    input.end(`-- a comment\nSELECT count(*) AS series\nFROM daily_series_stats;\n\nSELECT nosuch FROM daily_series_stats;\nSELECT 'a;b' AS text;\n`);
    await expect(sqlPrompt(config, 'table', { input, output, interactive: false })).rejects.toThrow(/1 statement\(s\) failed/);
    expect(printed).toMatch(/^series\n-+\n\s*\d+\n\(1 row\)\n/);
    expect(printed).toMatch(/error: .*nosuch/);
    expect(printed).toMatch(/text\n-+\na;b\n\(1 row\)\n$/);
  });
});
