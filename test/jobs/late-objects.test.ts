/**
 * Complete before it says complete (contract §8): log objects that appear late under older names
 * (replication into a log-archive account, copies, restores) are found by the scheduled full
 * listings of their delivery days, through the normal cron sequence only (the daily job, then
 * `rollup-stale`, night after night), with no `pingroll reconcile`; and no day is `complete` before
 * the final listing of every delivery day that can hold it. On a directory, on moto's S3, with four
 * shards, and in a PartitionedPrefix bucket; a run killed during a full listing is repaired by the next.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusCommand } from '../../cli/commands/status.js';
import { loadConfig, type Config } from '../../infra/config.js';
import { memoryLog } from '../../lib/log.js';
import { addDays, DAY_MS, dayStartMs } from '../../lib/utc-day.js';
import { generateSample, objectBody, rng, type LogObject } from '../../tools/sample/access-log-generator.js';
import { expectedDay } from '../support/oracle.js';
import { crashingStore, dirConfig, query, readDay, runDay, runDays, runIngest, runReconcileDays, setEnv, tempRoots, writeObjects } from '../support/job-fixture.js';
import { startMoto, type Moto } from '../support/moto.js';
import { S3ObjectStore } from '../../state/object-store/s3-object-store.js';
import { mkdir } from 'node:fs/promises';

const D = '2026-11-01';
const HOUR = 3_600_000;
/** The nightly cron, `k` days after D ends: 02:30 UTC. */
const night = (k: number): Date => new Date(dayStartMs(D) + k * DAY_MS + 2.5 * HOUR);
const root = tempRoots();

/** Where the logs are and the output goes: a directory, or buckets on moto's S3. */
interface Place {
  config: Config;
  put(objects: LogObject[]): Promise<void>;
  /** A day's three tables, as published. */
  readDay(day: string): Promise<unknown>;
  warehouse: string;
}

function directory(): Place {
  const r = root();
  return { config: dirConfig(r), put: (o) => writeObjects(join(r, 'logs'), o), readDay: (d) => readDay(join(r, 'out'), d), warehouse: join(r, 'wh.duckdb') };
}

let moto: Moto;
let restore = (): void => {};
let places = 0;
beforeAll(async () => {
  moto = await startMoto(['late-logs', 'late-out']);
  restore = setEnv(moto.env);
}, 60_000);
afterAll(async () => {
  restore();
  await moto?.stop();
});

function s3(): Place {
  const r = root();
  const prefix = `p${places++}/`;
  const client = moto.client();
  const store = new S3ObjectStore(client, 'late-out', prefix);
  return {
    config: loadConfig({ ...moto.env, PINGROLL_LOGS: `s3://late-logs/${prefix}`, PINGROLL_OUTPUT: `s3://late-out/${prefix}`, PINGROLL_WAREHOUSE: `duckdb:${join(r, 'wh.duckdb')}` }),
    put: async (objects) => { for (const o of objects) await client.send(new PutObjectCommand({ Bucket: 'late-logs', Key: prefix + o.key, Body: objectBody(o) })); },
    readDay: async (day) => {
      for (const t of ['daily_episode_stats', 'daily_series_stats', 'daily_ingest_audit']) {
        const key = `${t}/dt=${day}/part-00000.parquet`;
        await mkdir(join(r, 'read', t, `dt=${day}`), { recursive: true });
        await store.download(key, join(r, 'read', key));
      }
      return readDay(join(r, 'read'), day);
    },
    warehouse: join(r, 'wh.duckdb'),
  };
}

/**
 * The cron of one night at `now`, for the day before: the daily job (as one process, or four shards
 * and the rollup after them), then rollup-stale. The new objects the night's full listings of delivery
 * days found (the ones the window had passed).
 */
async function cron(place: Place, now: Date, shards: number): Promise<number> {
  const day = addDays(now.toISOString().slice(0, 10), -1);
  const late = (log: ReturnType<typeof memoryLog>): number => Number(log.events.find((e) => e.event === 'ingest.done')?.fields.lateObjects ?? 0);
  if (shards === 1) {
    const log = memoryLog();
    await runDay(place.config, { day, log, now });
    await runDays(place.config, { stale: true, log: memoryLog(), now });
    return late(log);
  }
  let found = 0;
  for (let i = 0; i < shards; i++) {
    const log = memoryLog();
    await runIngest(place.config, { log, shard: { index: i, count: shards }, now });
    found += late(log);
  }
  await runDay(place.config, { day, log: memoryLog(), now, noIngest: true });
  await runDays(place.config, { stale: true, log: memoryLog(), now, noIngest: true });
  return found;
}

async function stateOf(place: Place, day: string, now: Date): Promise<{ state: string; reason: string; finalAt: string | null }> {
  const { text } = await statusCommand(place.config, { from: day, to: day, json: true }, now);
  return JSON.parse(text) as { state: string; reason: string; finalAt: string | null };
}

/**
 * A day's objects, a random part visible as S3 delivered them and the rest replicated late: they
 * appear at D+1 12:00 (or when delivered, if later) under their original names, which sort before
 * much of what the first night listed.
 */
function replicationLag(seed: number): { objects: Array<LogObject & { appearMs: number }>; truth: LogObject['truth'] } {
  const sample = generateSample({ date: D, sessions: 120, seed, truth: true, recordsPerObject: 80, lateShare: 0.1 });
  const rand = rng(seed * 7);
  const lagged = dayStartMs(D) + DAY_MS + 12 * HOUR;
  const objects = sample.objects.map((o) => ({ ...o, appearMs: rand() < 0.6 ? o.deliveredMs : Math.max(o.deliveredMs, lagged) }));
  return { objects, truth: sample.objects.flatMap((o) => o.truth) };
}

describe('objects that appear late under older names, through the nightly cron alone', () => {
  it.each([
    ['a directory', directory, 1],
    ["moto's S3", s3, 1],
    ["moto's S3, four shards", s3, 4],
  ] as const)('on %s: the day is exact once its delivery days are listed in full, and complete only after their final listing', async (_name, make, shards) => {
    const place = make();
    const { objects, truth } = replicationLag(101);
    const put = new Set<LogObject>();
    // Lagged objects whose names the first night's window had already passed.
    const behind = objects.filter((o) => o.appearMs > night(1).getTime() && o.deliveredMs < night(1).getTime() - HOUR);
    expect(behind.length).toBeGreaterThan(3);
    const states: string[] = [];
    for (let k = 1; k <= 6; k++) {
      const now = night(k);
      const due = objects.filter((o) => o.appearMs <= now.getTime() && !put.has(o));
      await place.put(due);
      for (const o of due) put.add(o);
      const late = await cron(place, now, shards);
      const s = await stateOf(place, D, new Date(now.getTime() + 60_000));
      states.push(s.state);
      if (k === 1) {
        // Published from what the first night saw: short of the lagged objects, and provisional until D+2's final listing.
        expect(s).toMatchObject({ state: 'provisional', finalAt: new Date(dayStartMs(addDays(D, 3)) + 3 * DAY_MS).toISOString() });
        expect(s.reason).toMatch(/waiting for the final full listing of delivery days 2026-11-01, 2026-11-02, 2026-11-03, due 2026-11-07T00:00Z/);
        expect(await place.readDay(D)).not.toEqual(expectedDay(truth, D));
        expect(await query(`SELECT state FROM daily_runs WHERE day = DATE '${D}'`, place.warehouse)).toEqual([{ state: 'provisional' }]);
      }
      // The lagged objects the window had passed are found by the second night's full listings (and said so: the runs' lateObjects).
      if (k === 2) expect(late).toBeGreaterThanOrEqual(behind.length);
      // From the second night on, the day holds every object that has appeared: its listings of delivery
      // days D and D+1 in full find the lagged objects, and rollup-stale republishes D.
      if (k >= 2) expect(await place.readDay(D), `night ${k}`).toEqual(expectedDay([...put].flatMap((o) => o.truth), D));
    }
    expect(put.size).toBe(objects.length);
    expect(await place.readDay(D)).toEqual(expectedDay(truth, D));
    // Complete only once D+2's final listing (3 days after it ends: D+6 00:00) is made, by the sixth night.
    expect(states).toEqual(['provisional', 'provisional', 'provisional', 'provisional', 'provisional', 'complete']);
    expect(await query(`SELECT state FROM daily_runs WHERE day = DATE '${D}'`, place.warehouse)).toEqual([{ state: 'complete' }]);
  }, 300_000);

  it('in a PartitionedPrefix bucket (event time): an object that appears in a date folder the window has left is found by that day\'s final listing', async () => {
    const place = s3();
    const account = '123456789012';
    // Event-time partitioning: a folder per event day, every name in it `YYYY-MM-DD-00-00-00-...`.
    const days = [0, 1, 2, 3, 4].map((i) => addDays(D, i));
    const inFolder = (day: string, o: LogObject, n: number): LogObject & { appearMs: number } => ({
      ...o, key: `${account}/us-east-1/site/${day.replace(/-/g, '/')}/${day}-00-00-00-${n.toString(16).padStart(16, '0').toUpperCase()}`,
      truth: o.truth.map((t) => (Number.isNaN(t.eventTimeMs) ? { ...t, day } : t)), appearMs: o.deliveredMs,
    });
    const objects = days.flatMap((day, i) => generateSample({ date: day, sessions: 30, seed: 200 + i, truth: true, recordsPerObject: 100, lateShare: 0 }).objects.map((o, n) => inFolder(day, o, i * 1000 + n)));
    // Copied into D's folder on D+3 at noon, long after the window left it.
    const straggler = { ...inFolder(D, generateSample({ date: D, sessions: 10, seed: 299, truth: true, recordsPerObject: 100 }).objects[0]!, 9999), appearMs: dayStartMs(D) + 3 * DAY_MS + 12 * HOUR };
    const all = [...objects, straggler];
    const put = new Set<LogObject>();
    for (let k = 1; k <= 6; k++) {
      const now = night(k);
      const due = all.filter((o) => o.appearMs <= now.getTime() && !put.has(o));
      await place.put(due);
      for (const o of due) put.add(o);
      await cron(place, now, 1);
      if (k === 3) expect(await place.readDay(D)).toEqual(expectedDay(objects.flatMap((o) => o.truth), D));
    }
    expect(await place.readDay(D)).toEqual(expectedDay(all.flatMap((o) => o.truth), D));
    expect((await stateOf(place, D, new Date(night(6).getTime() + 60_000))).state).toBe('complete');
  }, 300_000);

  it.each([
    ['at the commit of the batch a full listing found', (op: string, key: string) => op === 'put' && key.startsWith('_state/batches/')],
    ['while sealing the slices it saw', (op: string, key: string) => op === 'put' && key.startsWith('_state/seals/')],
    ['at the save of its listing state', (op: string, key: string) => op === 'put' && key === '_state/listing.json'],
  ])('a run killed during a full listing of a delivery day, %s, is repaired by the next run', async (_when, crashAt) => {
    const place = s3();
    const { objects } = replicationLag(131);
    await place.put(objects.filter((o) => o.appearMs <= night(1).getTime()));
    await cron(place, night(1), 1);
    await place.put(objects.filter((o) => o.appearMs > night(1).getTime() && o.appearMs <= night(2).getTime()));
    const truth = objects.filter((o) => o.appearMs <= night(2).getTime()).flatMap((o) => o.truth);
    // The second night's daily job lists D and D+1 in full, and dies.
    await expect(runDay(place.config, { day: addDays(D, 1), log: memoryLog(), now: night(2) }, (b) => ({ ...b, store: crashingStore(b.store, crashAt) }))).rejects.toThrow('simulated crash');
    // The next run (the same night, again) lists them again, parses what the dead one did not commit, and nothing twice.
    await cron(place, night(2), 1);
    expect(await place.readDay(D)).toEqual(expectedDay(truth, D));
  }, 300_000);
});

describe('what a full listing cannot see', () => {
  it('an object that appears after its delivery day\'s final listing: a directory finds it at the next run; a bucket only with pingroll reconcile, which makes its day stale', async () => {
    const sample = generateSample({ date: D, sessions: 60, seed: 141, truth: true, recordsPerObject: 100, lateShare: 0 });
    const extra = generateSample({ date: D, sessions: 10, seed: 142, truth: true, recordsPerObject: 100, lateShare: 0 }).objects;
    const truth = [...sample.objects, ...extra].flatMap((o) => o.truth);
    const late = new Date(dayStartMs(D) + 10 * DAY_MS);
    for (const make of [directory, s3]) {
      const place = make();
      await place.put(sample.objects);
      await cron(place, night(1), 1);
      await cron(place, late, 1);
      expect((await stateOf(place, D, late)).state).toBe('complete');
      await place.put(extra);
      const lateLog = memoryLog();
      await runDay(place.config, { day: addDays(late.toISOString().slice(0, 10), -1), log: lateLog, now: new Date(late.getTime() + DAY_MS) });
      if (make === directory) {
        expect(lateLog.events.find((e) => e.event === 'ingest.done')?.fields.objects).toBe(extra.length);
      } else {
        expect(lateLog.events.find((e) => e.event === 'ingest.done')?.fields.objects).toBe(0);
        const r = await runReconcileDays(place.config, { from: D, to: addDays(D, 1), log: memoryLog(), shard: null, now: new Date(late.getTime() + DAY_MS) });
        expect(r.parsedObjects).toBe(extra.length);
        expect(r.stale).toEqual([D]);
      }
      expect((await stateOf(place, D, new Date(late.getTime() + DAY_MS))).state).toBe('stale');
      await runDays(place.config, { stale: true, log: memoryLog(), now: new Date(late.getTime() + DAY_MS) });
      expect(await place.readDay(D)).toEqual(expectedDay(truth, D));
      expect((await stateOf(place, D, new Date(late.getTime() + DAY_MS))).state).toBe('complete');
    }
  }, 300_000);
});

describe('adopting a bucket that already holds logs', () => {
  it('a first run lists and parses only the delivery days that can hold its day; older days are never parsed unless a backfill asks, and status says so', async () => {
    const place = s3();
    const days = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => addDays(D, i));
    const samples = days.map((day, i) => generateSample({ date: day, sessions: 20, seed: 300 + i, truth: true, recordsPerObject: 100, lateShare: 0 }));
    await place.put(samples.flatMap((s) => s.objects));
    const last = days[9]!;
    const log = memoryLog();
    const first = await runDay(place.config, { day: last, log, now: new Date(dayStartMs(last) + DAY_MS + 2.5 * HOUR) });
    // Only objects named on the last day and the next (what S3 delivered of it by then) were listed.
    const named = (o: LogObject): string => o.key.slice(o.key.lastIndexOf('/') + 1);
    const needed = samples.flatMap((s) => s.objects).filter((o) => named(o) >= last);
    expect(log.events.find((e) => e.event === 'ingest.done')?.fields.listed).toBe(needed.length);
    expect(first.parsedObjects).toBe(needed.length);
    const now = new Date(dayStartMs(last) + DAY_MS + 3 * HOUR);
    const older = await stateOf(place, days[3]!, now);
    expect(older.state).toBe('never run');
    expect(older.reason).toMatch(/its logs were never listed.*run make backfill FROM=2026-11-04 TO=2026-11-04/);
    // A backfill of an old day lists its delivery days (D to D+2) in full, once: the day is exact and complete.
    const back = await runDays(place.config, { from: days[3]!, to: days[3]!, log: memoryLog(), now });
    expect(back.done).toEqual([days[3]]);
    expect(back.parsedObjects).toBe(samples.flatMap((s) => s.objects).filter((o) => named(o) >= days[3]! && named(o) < addDays(days[3]!, 3)).length);
    expect(await place.readDay(days[3]!)).toEqual(expectedDay(samples.flatMap((s) => s.objects.flatMap((o) => o.truth)), days[3]!));
    expect((await stateOf(place, days[3]!, now)).state).toBe('complete');
  }, 300_000);

  it('a directory counts what a run asks for and says what it passed over', async () => {
    const r = root();
    const place = { ...directory(), config: dirConfig(r) };
    const recent = generateSample({ date: D, sessions: 20, seed: 401, truth: true, recordsPerObject: 100, lateShare: 0 });
    await writeObjects(join(r, 'logs'), recent.objects);
    await runDay(place.config, { day: D, log: memoryLog(), now: night(1) });
    // `pingroll generate` of a day weeks before: its objects are named then.
    const old = generateSample({ date: '2026-10-01', sessions: 20, seed: 402, truth: true, recordsPerObject: 100, lateShare: 0 });
    await writeObjects(join(r, 'logs'), old.objects);
    const log = memoryLog();
    const next = await runDay(place.config, { day: addDays(D, 1), log, now: night(2) });
    expect(next.parsedObjects).toBe(0);
    expect(log.events.find((e) => e.event === 'objects.passed_over')?.fields).toMatchObject({ objects: old.objects.length, deliveryDays: ['2026-10-01', '2026-10-02'], hint: 'run make backfill FROM=2026-10-01 TO=2026-10-02 to count them' });
    const back = await runDays(place.config, { from: '2026-10-01', to: '2026-10-01', log: memoryLog(), now: night(2) });
    expect(back.parsedObjects).toBe(old.objects.length);
    expect(await readDay(join(r, 'out'), '2026-10-01')).toEqual(expectedDay(old.truth, '2026-10-01'));
  }, 60_000);
});

