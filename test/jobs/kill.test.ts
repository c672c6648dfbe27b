/**
 * Crash-safe at every instant: a run killed (SIGKILL) at each named point from start-up to the end of
 * publishing (the lock taken, each step of a batch's commit and compaction, the seals, the listing's
 * save, each step of the publication, the embedded warehouse's first creation, the manifest's move),
 * then one normal run, equals one clean run, row for row, with no hand repair. The kill lands where the
 * test says (test/support/kill-at.mjs), not where a timer falls. (bench/soak.ts kills at random instants,
 * hundreds of times, with concurrent runs and bad objects.)
 */
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { rm, tempDir, writeObjects } from '../support/job-fixture.js';
import { inFlight, publishedDay, runCli } from '../support/kill-run.js';

const DAY = '2026-11-01';
const base = tempDir();
let clean: unknown;

/** Every step of a rollup where a kill must leave a state the next run repairs. */
const POINTS = [
  'store:putIfAbsent:_state/lock/:after',
  'event:run.start',
  'event:ingest.staging',
  'store:put:_state/intents/:after',
  'store:put:_staging/:after',
  'store:put:_state/batches/:before',
  'store:put:_state/batches/:after',
  'store:put:_state/days/:after',
  'store:put:_state/parsed/:after',
  'store:putMarker:_state/seals/:after',
  'store:put:_state/listing.json:after',
  'event:ingest.done',
  `store:put:_state/publish/dt=${DAY}/:after`,
  `store:put:_state/publish/dt=${DAY}.json:after`,
  'fs:rename:wh.duckdb:before',
  'fs:rename:wh.duckdb:after',
  'store:move:daily_series_stats/:after',
  `store:move:_runs/dt=${DAY}/manifest.json:before`,
  `store:move:_runs/dt=${DAY}/manifest.json:after`,
  `store:delete:_state/publish/dt=${DAY}.json:after`,
  'event:day.done',
  'event:run.done',
  // Letting go of the lock, written without a sync: a release lost leaves the lock as a kill does.
  'store:putUnsynced:_state/lock/:before',
];

beforeAll(async () => {
  const sample = generateSample({ date: DAY, sessions: 150, seed: 53, recordsPerObject: 150, lateShare: 0.1 });
  await writeObjects(join(base, 'template', 'logs'), sample.objects);
  await cp(join(base, 'template'), join(base, 'clean'), { recursive: true });
  expect(await runCli(join(base, 'clean'), DAY, null)).toBe(0);
  clean = await publishedDay(join(base, 'clean'), DAY);
}, 120_000);
afterAll(() => rm(base, { recursive: true, force: true }));

describe('a run killed at any point', () => {
  it.each(POINTS)('at %s, is repaired by the next normal run', async (point) => {
    const root = join(base, point.replace(/[^\w]+/g, '-'));
    await cp(join(base, 'template'), root, { recursive: true });
    // Killed there: the point was reached.
    expect(await runCli(root, DAY, point)).toBe('killed');
    expect(await runCli(root, DAY, null)).toBe(0);
    expect(await publishedDay(root, DAY)).toEqual(clean);
    expect(await inFlight(root)).toEqual([]);
    await rm(root, { recursive: true, force: true });
  }, 120_000);

  it('while the next run repairs what a killed one left (completing its publication), is repaired by the run after', async () => {
    const root = join(base, 'twice');
    await cp(join(base, 'template'), root, { recursive: true });
    expect(await runCli(root, DAY, `store:put:_state/publish/dt=${DAY}.json:after`)).toBe('killed');
    expect(await runCli(root, DAY, 'event:publish.recover')).toBe('killed');
    expect(await runCli(root, DAY, null)).toBe(0);
    expect(await publishedDay(root, DAY)).toEqual(clean);
    expect(await inFlight(root)).toEqual([]);
  }, 120_000);
});
