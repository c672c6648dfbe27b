/**
 * The daily job through a real S3 API (moto's server, which honours the lock's conditional writes): logs under one bucket's prefix, output under
 * another's, gzip with and without suffix, listings that take many pages; and a backfill with the
 * ping-id window, which fetches each earlier day's keys once a run.
 */
import { LOCK_PREFIX } from '../../datasets/layout.js';
import { join } from 'node:path';
import { gunzipIfNeeded } from '../../ingest/object-source/gzip.js';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeS3Client } from '../../infra/aws/s3-client.js';
import { loadConfig } from '../../infra/config.js';
import { memoryLog } from '../../lib/log.js';
import { generateSample, objectBody, type LogObject, type Sample } from '../../tools/sample/access-log-generator.js';
import { S3ObjectStore } from '../../state/object-store/s3-object-store.js';
import { S3ObjectSource } from '../../ingest/object-source/s3-object-source.js';
import { expectedDay } from '../support/oracle.js';
import { query, readStoreDay, rm, runDay, runDays, setEnv, tempDir } from '../support/job-fixture.js';
import type { Backends } from '../../infra/backends.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { addDays, daysFrom } from '../../lib/utc-day.js';
import { startMoto, type Moto } from '../support/moto.js';

const DAY = '2026-11-01';
let s3: Moto;
let sample: Sample;
let restoreEnv = (): void => {};
const local = tempDir();

beforeAll(async () => {
  s3 = await startMoto(['access-logs', 'rollups']);
  restoreEnv = setEnv(s3.env);
  sample = generateSample({ date: DAY, sessions: 250, seed: 23, truth: true, recordsPerObject: 400, prefix: 'logs/' });
}, 60_000);

afterAll(async () => {
  restoreEnv();
  await s3?.stop();
  await rm(local, { recursive: true, force: true });
});

async function upload(objects: LogObject[]): Promise<void> {
  const client = makeS3Client({ s3EndpointOverride: true });
  for (const o of objects) await client.send(new PutObjectCommand({ Bucket: 'access-logs', Key: `prod/${o.key}`, Body: objectBody(o) }));
}

/** The day's output, downloaded from the S3 output and read back. */
async function readS3Day(day: string, into: string) {
  return readStoreDay(new S3ObjectStore(makeS3Client({ s3EndpointOverride: true }), 'rollups', 'pingroll/'), day, into);
}

describe('the daily job over the S3 API', () => {
  const config = () => loadConfig({
    ...s3.env, PINGROLL_LOGS: 's3://access-logs/prod/logs/', PINGROLL_OUTPUT: 's3://rollups/pingroll/', PINGROLL_WAREHOUSE: `duckdb:${join(local, 'wh.duckdb')}`,
  });

  it('rolls up exactly, re-runs without change, and takes late objects at the next run', async () => {
    const sorted = [...sample.objects].sort((a, b) => a.deliveredMs - b.deliveredMs);
    const early = sorted.slice(0, Math.ceil(sorted.length / 2));
    // The nightly runs: the first the night after the day, the next ones the night after that.
    const night = (k: number): Date => new Date(Date.parse(`${DAY}T02:30:00Z`) + k * 86_400_000);
    await upload(early);
    const first = await runDay(config(), { day: DAY, log: memoryLog(), now: night(1) });
    expect(first.parsedObjects).toBe(early.length);
    expect(await readS3Day(DAY, join(local, 'a'))).toEqual(expectedDay(early.flatMap((o) => o.truth), DAY));

    await upload(sorted.slice(early.length));
    const second = await runDay(config(), { day: DAY, log: memoryLog(), now: night(2) });
    expect(second.parsedObjects).toBe(sorted.length - early.length);
    const want = expectedDay(sample.truth, DAY);
    expect(await readS3Day(DAY, join(local, 'b'))).toEqual(want);

    const third = await runDay(config(), { day: DAY, log: memoryLog(), now: night(2) });
    expect(third.parsedObjects).toBe(0);
    expect(await readS3Day(DAY, join(local, 'c'))).toEqual(want);
    const store = new S3ObjectStore(makeS3Client({ s3EndpointOverride: true }), 'rollups', 'pingroll/');
    expect(await store.get(`_runs/dt=${DAY}/manifest.json`)).not.toBeNull();
    // On S3 the staged pings are Snappy, as the rollup inside Redshift COPYs them (lib/parquet-codec.ts stagedCodec).
    const staged = (await store.list('_staging/')).find((k) => k.endsWith('.parquet'))!;
    await store.download(staged, join(local, 'staged.parquet'));
    const codecs = await query<{ compression: string }>(`SELECT DISTINCT compression FROM parquet_metadata('${join(local, 'staged.parquet')}')`);
    expect(codecs.map((c) => c.compression)).toEqual(['SNAPPY']);
    // The run let its lock go: the latest generation says released.
    const generations = await store.list(LOCK_PREFIX);
    expect(JSON.parse((await store.get(generations.at(-1)!))!.toString())).toMatchObject({ released: true });
  });
});

describe('the S3 log source', () => {
  it('lists every object across many pages, in key order, and reads gzip with or without suffix', async () => {
    const source = new S3ObjectSource(makeS3Client({ s3EndpointOverride: true }), 'access-logs', 'prod/logs/', 7);
    const keys: string[] = [];
    for await (const ref of source.list()) keys.push(ref.key);
    // Keys are relative to the source's prefix (prod/logs/); the sample's keys start with logs/.
    expect(keys).toEqual(sample.objects.map((o) => o.key.slice('logs/'.length)).sort());
    expect(keys.length).toBeGreaterThan(7 * 2);
    const gz = sample.objects.find((o) => o.gzip && !o.key.endsWith('.gz'))!;
    let text = '';
    for await (const c of gunzipIfNeeded(await source.open({ key: gz.key.slice('logs/'.length), size: 0, etag: '' }))) text += c.toString();
    expect(text).toBe(gz.text);
  });
});

describe('a backfill over the S3 API with the ping-id window', () => {
  it("fetches each earlier day's keys once a run, and the keys of the days it rolls up not at all", async () => {
    const B = '2026-10-01';
    const days = daysFrom(B, addDays(B, 3));
    // Sessions on each day, half of whose apps resend pings hours to weeks later: repeats on the days after.
    const samples = days.map((d, k) => generateSample({ date: d, sessions: 30, seed: 40 + k, truth: true, recordsPerObject: 200, resends: 0.5, prefix: 'logs/' }));
    const client = makeS3Client({ s3EndpointOverride: true });
    for (const o of samples.flatMap((x) => x.objects)) await client.send(new PutObjectCommand({ Bucket: 'access-logs', Key: `window/${o.key}`, Body: objectBody(o) }));
    const truth = samples.flatMap((x) => x.truth);
    const config = loadConfig({ ...s3.env, PINGROLL_LOGS: 's3://access-logs/window/logs/', PINGROLL_OUTPUT: 's3://rollups/window/', PINGROLL_WAREHOUSE: `duckdb:${join(local, 'window.duckdb')}` });
    const fetched: string[] = [];
    const counting = (b: Backends): Backends => ({ ...b, store: Object.assign(Object.create(b.store) as ObjectStore, {
      download: (key: string, file: string) => { if (key.endsWith('.keys')) fetched.push(key); return b.store.download(key, file); },
    }) });
    const now = new Date(`${addDays(B, 30)}T02:30:00Z`);
    const runs = [days.slice(0, 2), days.slice(2)];
    const logs = [];
    for (const [i, [from, to]] of runs.entries()) {
      const log = memoryLog();
      expect((await runDays(config, { from: from!, to: to!, log, now }, counting)).done).toEqual(runs[i]);
      logs.push(log.events.filter((e) => e.event === 'window.fetched').map((e) => e.fields));
    }
    // Each day exact with the window: resends of the days before it are its repeats.
    const store = new S3ObjectStore(client, 'rollups', 'window/');
    for (const d of days) expect(await readStoreDay(store, d, join(local, `window-${d}`)), d).toEqual(expectedDay(truth, d, 30));
    // The second run's days hold repeats of the first's (what its fetched keys are read for).
    const repeats = (d: string): number => expectedDay(truth, d, 30).audit.filter((a) => a.outcome === 'repeat').reduce((n, a) => n + a.records, 0);
    expect(repeats(days[2]!) + repeats(days[3]!)).toBeGreaterThan(5);
    // The first run fetched none: each day's keys were read where the run made them. The second
    // fetched the first run's two days once, for its first day, and its second day read them again
    // where they were, with the keys its first day made.
    const keysOf = async (d: string): Promise<string> => (await store.list(`_state/ping-ids/dt=${d}/`)).find((k) => k.endsWith('.keys'))!;
    expect(logs[0]).toEqual([]);
    expect(fetched.sort()).toEqual([await keysOf(days[0]!), await keysOf(days[1]!)].sort());
    expect(logs[1]).toEqual([{ day: days[2], files: 2, bytes: expect.any(Number) }]);
  }, 120_000);
});

