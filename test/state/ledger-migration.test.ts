/**
 * An output written before slices (format 1, made by main at e376f08: test/fixtures/format-1-output)
 * keeps working: the first run brings its indexes to slices once, parses nothing again, and later
 * runs, sharded or not, stay exact. A run killed halfway through the migration is repaired by the next.
 */
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { memoryLog } from '../../lib/log.js';
import { DAYS, FORMAT_KEY, Ledger, PARSED } from '../../state/ledger.js';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { expectedDay } from '../support/oracle.js';
import { crashingStore, dirConfig, readDay, runDay, tempRoots, writeObjects } from '../support/job-fixture.js';

const DAY = '2026-11-01';
const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'format-1-output', 'out');
const root = tempRoots();
// The logs the fixture was made from, written again (without the automated traffic the generator has sent since).
const sample = generateSample({ date: DAY, sessions: 60, seed: 71, truth: true, recordsPerObject: 40, lateShare: 0.3, automated: 0 });
const more = generateSample({ date: DAY, sessions: 20, seed: 72, truth: true, recordsPerObject: 40, lateShare: 0.3, automated: 0 });

async function formatOneOutput(): Promise<string> {
  const r = root();
  await cp(FIXTURE, join(r, 'out'), { recursive: true });
  await writeObjects(join(r, 'logs'), sample.objects);
  return r;
}

describe('an output of format 1', () => {
  it('is migrated once by the next run, which parses nothing again; new objects are then parsed once', async () => {
    const r = await formatOneOutput();
    const store = new DirectoryObjectStore(join(r, 'out'));
    const before = await readDay(join(r, 'out'), DAY);
    expect(before).toEqual(expectedDay(sample.truth, DAY));
    // A read-only look (status, a dry run) does not migrate: it says what to do.
    await expect(Ledger.load(store)).rejects.toThrow(/earlier format: run pingroll rollup .* once/);

    const first = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(first.parsedObjects).toBe(0);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(before);
    expect(JSON.parse(await readFile(join(r, 'out', FORMAT_KEY), 'utf8'))).toMatchObject({ format: 2 });
    const state = [...await store.list(PARSED), ...await store.list(DAYS)];
    expect(state.filter((k) => /^_state\/parsed\/[^/]+\/[^/]+\.json$/.test(k))).toEqual([]);
    expect(state.filter((k) => k.endsWith('.keys')).length).toBeGreaterThan(3);
    expect(await store.list('_state/listing-shards/')).toEqual([]);
    // Every object the fixture's batches parsed is known, by slice, to a fresh ledger.
    const ledger = await Ledger.load(store);
    for (const o of sample.objects) expect(await ledger.hasParsed(o.key)).toBe(true);

    await writeObjects(join(r, 'logs'), more.objects);
    const second = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(second.parsedObjects).toBe(more.objects.length);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay([...sample.truth, ...more.truth], DAY));
  });

  it.each([
    ['after the first parsed-index file', (key: string) => key.startsWith(PARSED) && key.endsWith('.keys')],
    ['after the parsed index, at the first days entry', (key: string) => key.startsWith(DAYS)],
    ['before the format is written', (key: string) => key === FORMAT_KEY],
  ])('is repaired by the next run when a run is killed during the migration %s', async (_when, crashAt) => {
    const r = await formatOneOutput();
    let puts = 0;
    await expect(runDay(dirConfig(r), { day: DAY, log: memoryLog() }, (b) => ({ ...b, store: crashingStore(b.store, (op, key) => op === 'put' && crashAt(key) && ++puts === 1) })))
      .rejects.toThrow('simulated crash');
    const rerun = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(rerun.parsedObjects).toBe(0);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(sample.truth, DAY));
  });
});
