/**
 * An output written before slices (format 1, made by main at e376f08: test/fixtures/format-1-output)
 * keeps working: the first run brings its indexes to slices once, parses nothing again, and later
 * runs, sharded or not, stay exact. A run killed halfway through the migration is repaired by the next.
 * An output whose event-time names S3 does not write were kept outside their parts (before issue #53)
 * parses none of them again.
 */
import { createHash } from 'node:crypto';
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { memoryLog } from '../../lib/log.js';
import { DAYS, FORMAT_KEY, PARSED } from '../../datasets/layout.js';
import { FORMAT, Ledger } from '../../state/ledger.js';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { expectedDay } from '../support/oracle.js';
import { crashingStore, dirConfig, inEventTimeFolder, readDay, runDay, tempRoots, writeObjects } from '../support/job-fixture.js';
import { LISTER_RULES } from '../../ingest/listing/lister.js';

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
    await expect(Ledger.load(store, LISTER_RULES)).rejects.toThrow(/earlier format: run pingroll rollup .* once/);

    const first = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(first.parsedObjects).toBe(0);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(before);
    expect(JSON.parse(await readFile(join(r, 'out', FORMAT_KEY), 'utf8'))).toMatchObject({ format: FORMAT });
    const state = [...await store.list(PARSED), ...await store.list(DAYS)];
    expect(state.filter((k) => /^_state\/parsed\/[^/]+\/[^/]+\.json$/.test(k))).toEqual([]);
    expect(state.filter((k) => k.endsWith('.keys')).length).toBeGreaterThan(3);
    expect(await store.list('_state/listing-shards/')).toEqual([]);
    // Every object the fixture's batches parsed is known, by slice, to a fresh ledger.
    const ledger = await Ledger.load(store, LISTER_RULES);
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

describe('an output of format 2 that holds an event-time day', () => {
  const days = ['2026-11-01', '2026-11-02'];
  const objects = days.flatMap((day, i) => generateSample({ date: day, sessions: 40, seed: 81 + i, truth: true, recordsPerObject: 40, lateShare: 0, automated: 0 }).objects.map((o, n) => inEventTimeFolder(o, day, n)));

  /** Rewrites a parsed-index file as format 2 wrote it: every event-time name of the day in its 00:00 slice, a 256-bit map. */
  async function asFormatTwo(store: DirectoryObjectStore, key: string): Promise<void> {
    const bySlice = new Map<string, string[]>();
    for (const [slice, keys] of await readIndex(store, key)) {
      const old = slice.startsWith('00-00-00-') ? '00-00' : slice;
      bySlice.set(old, [...(bySlice.get(old) ?? []), ...keys]);
    }
    const [, day, batch] = /^.*\/(\d{4}-\d{2}-\d{2})\/(.+)\.[0-9a-f]+\.keys$/.exec(key)!;
    await store.delete(key);
    await writeIndex(store, day!, batch!, bySlice);
  }

  it('is brought to parts by the next run, which parses nothing again; the day stays exact', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), objects);
    const first = await runDay(dirConfig(r), { day: days[0]!, log: memoryLog() });
    expect(first.parsedObjects).toBe(objects.length);
    const want = await readDay(join(r, 'out'), days[0]!);
    expect(want).toEqual(expectedDay(objects.flatMap((o) => o.truth), days[0]!));
    // The state as format 2 left it: the day's names in its 00:00 slice, sealed as one.
    const store = new DirectoryObjectStore(join(r, 'out'));
    const files = (await store.list(PARSED)).filter((k) => k.endsWith('.keys'));
    expect(files.every((k) => /\.[0-9a-f]{128}\.keys$/.test(k))).toBe(true);
    for (const key of files) await asFormatTwo(store, key);
    for (const key of await store.list('_state/seals/')) await store.delete(key);
    await store.put(FORMAT_KEY, Buffer.from(JSON.stringify({ format: 2 })));
    await expect(Ledger.load(store, LISTER_RULES)).rejects.toThrow(/earlier format: run pingroll rollup .* once/);

    const again = await runDay(dirConfig(r), { day: days[0]!, log: memoryLog() });
    expect(again.parsedObjects).toBe(0);
    expect(await readDay(join(r, 'out'), days[0]!)).toEqual(want);
    expect(JSON.parse(await readFile(join(r, 'out', FORMAT_KEY), 'utf8'))).toMatchObject({ format: FORMAT });
    expect((await store.list(PARSED)).filter((k) => /\.[0-9a-f]{64}\.keys$/.test(k))).toEqual([]);
    const ledger = await Ledger.load(store, LISTER_RULES);
    for (const o of objects) expect(await ledger.hasParsed(o.key)).toBe(true);
  });
});

/** A parsed-index file's sections: slice → its keys. */
async function readIndex(store: DirectoryObjectStore, key: string): Promise<Map<string, string[]>> {
  const body = (await store.get(key))!;
  const length = body.readUInt32BE(0);
  const { slices } = JSON.parse(body.subarray(4, 4 + length).toString('utf8')) as { slices: Record<string, [number, number]> };
  return new Map(Object.entries(slices).map(([slice, [at, n]]) => [slice, gunzipSync(body.subarray(4 + length + at, 4 + length + at + n)).toString('utf8').split('\n')]));
}

/** Writes a parsed-index file as the ledger does (contract §6): its name maps its slices, 256 bits or 512 with parts. */
async function writeIndex(store: DirectoryObjectStore, day: string, batch: string, bySlice: Map<string, string[]>): Promise<void> {
  const index = (slice: string): number => (slice.startsWith('u') ? parseInt(slice.slice(1), 16) : slice.length === 11 ? 256 + parseInt(slice.slice(9), 16) : Number(slice.slice(0, 2)) * 6 + Number(slice[3]));
  const where: Record<string, [number, number]> = {};
  const sections: Buffer[] = [];
  const map = Buffer.alloc([...bySlice.keys()].some((slice) => index(slice) >= 256) ? 64 : 32);
  let at = 0;
  for (const [slice, keys] of [...bySlice].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const section = gzipSync(keys.sort().join('\n'));
    where[slice] = [at, section.length];
    at += section.length;
    sections.push(section);
    map[index(slice) >> 3]! |= 1 << (index(slice) & 7);
  }
  const header = Buffer.from(JSON.stringify({ slices: where }));
  const head = Buffer.alloc(4);
  head.writeUInt32BE(header.length);
  await store.put(`${PARSED}${day}/${batch}.${map.toString('hex')}.keys`, Buffer.concat([head, header, ...sections]));
}

describe('an output of format 3 that parsed event-time names S3 does not write before they were in parts (issue #53)', () => {
  const day = '2026-11-01';
  const sample = generateSample({ date: day, sessions: 30, seed: 93, truth: true, recordsPerObject: 40, lateShare: 0, automated: 0 });
  // Lowercase, short, none at all, not hex, past ASCII, with a `/`: a copy's or another tool's names.
  const odd = ['ab12cd34ef56ab12', '0', '', 'G1', 'zz9', 'é', 'AB/CD'];
  const objects = sample.objects.map((o, n) => {
    const e = inEventTimeFolder(o, day, n);
    return n < odd.length ? { ...e, key: e.key.replace(/-00-00-00-[0-9A-F]{16}$/, `-00-00-00-${odd[n]}`) } : e;
  });

  /** Where the code before issue #53 kept a name: in its 00:00 slice, or by its base name (`CD`: undated, by a hash of the key). */
  const formerly = (key: string): { day: string; slice: string } => (key.endsWith('/CD')
    ? { day: 'undated', slice: `u${createHash('sha1').update(key).digest()[0]!.toString(16).padStart(2, '0')}` }
    : { day, slice: '00-00' });

  it('finds them where they were kept, and parses none again; the day stays exact', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), objects);
    const first = await runDay(dirConfig(r), { day, log: memoryLog() });
    expect(first.parsedObjects).toBe(objects.length);
    const want = await readDay(join(r, 'out'), day);
    expect(want).toEqual(expectedDay(objects.flatMap((o) => o.truth), day));
    // The parsed index as that code left it: those names out of their parts; no seal (it sealed other counts).
    const store = new DirectoryObjectStore(join(r, 'out'));
    const moved = new Set(objects.slice(0, odd.length).map((o) => o.key));
    const inParts: string[] = [];
    for (const file of (await store.list(PARSED)).filter((k) => k.endsWith('.keys'))) {
      const bySlice = await readIndex(store, file);
      const out = new Map<string, Map<string, string[]>>();
      for (const [slice, keys] of bySlice) {
        for (const key of keys) {
          if (moved.has(key) && slice.startsWith('00-00-00-')) inParts.push(key);
          const at = moved.has(key) ? formerly(key) : { day, slice };
          if (!out.has(at.day)) out.set(at.day, new Map());
          out.get(at.day)!.set(at.slice, [...(out.get(at.day)!.get(at.slice) ?? []), key]);
        }
      }
      const batch = file.slice(file.lastIndexOf('/') + 1).split('.')[0]!;
      await store.delete(file);
      for (const [d, slices] of out) await writeIndex(store, d, batch, slices);
    }
    expect(inParts.sort()).toEqual([...moved].sort());
    expect((await store.list(`${PARSED}undated/`)).length).toBe(1);
    for (const key of await store.list('_state/seals/')) await store.delete(key);

    const ledger = await Ledger.load(store, LISTER_RULES);
    for (const o of objects) expect(await ledger.hasParsed(o.key), o.key).toBe(true);
    const again = await runDay(dirConfig(r), { day, log: memoryLog() });
    expect(again.parsedObjects).toBe(0);
    expect(await readDay(join(r, 'out'), day)).toEqual(want);
  });
});
