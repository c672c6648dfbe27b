/**
 * Crash-safe at every instant: a run killed (SIGKILL) at a seeded random moment, then one normal run,
 * equals one clean run, row for row, with no hand repair; the first creation of the warehouse included.
 * (bench/soak.ts does the same hundreds of times, with concurrent runs and bad objects.)
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSample, rng } from '../../../tools/sample/access-log-generator.js';
import { rm, tempDir, writeObjects } from '../../helpers/job-fixture.js';
import { inFlight, publishedDay, runCli } from '../../helpers/kill-run.js';

const DAY = '2026-11-01';
const KILLS = 12;
const base = tempDir();
let clean: unknown;
let cleanMs = 0;

beforeAll(async () => {
  const sample = generateSample({ date: DAY, sessions: 150, seed: 53, recordsPerObject: 150, lateShare: 0.1 });
  await writeObjects(join(base, 'template', 'logs'), sample.objects);
  await cp(join(base, 'template'), join(base, 'clean'), { recursive: true });
  const started = Date.now();
  expect(await runCli(join(base, 'clean'), DAY, null)).toBe(0);
  cleanMs = Date.now() - started;
  clean = await publishedDay(join(base, 'clean'), DAY);
}, 120_000);
afterAll(() => rm(base, { recursive: true, force: true }));

describe('a run killed at any instant', () => {
  it(`is repaired by the next normal run: ${KILLS} kills at seeded random instants`, async () => {
    const rand = rng(2026);
    const outcomes: Array<number | 'killed'> = [];
    for (let k = 0; k < KILLS; k++) {
      const root = join(base, `kill-${k}`);
      await cp(join(base, 'template'), root, { recursive: true });
      // Anywhere from start-up to past the end of a clean run.
      const at = Math.floor(rand() * cleanMs * 1.1);
      outcomes.push(await runCli(root, DAY, at));
      expect(await runCli(root, DAY, null), `kill ${k} at ${at} ms`).toBe(0);
      expect(await publishedDay(root, DAY), `kill ${k} at ${at} ms`).toEqual(clean);
      expect(await inFlight(root)).toEqual([]);
      await rm(root, { recursive: true, force: true });
    }
    // The instants must reach inside the run, or the test proves little.
    expect(outcomes.filter((o) => o === 'killed').length).toBeGreaterThanOrEqual(KILLS / 2);
  }, 300_000);
});
