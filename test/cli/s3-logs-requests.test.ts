/**
 * What a rollup of S3 logs asks of the logs' bucket, as cron runs it: the built CLI with the embedded
 * default warehouse, which makes its own viewer key (infra/backends.ts, withBackends). Through a
 * recording proxy in front of moto: the bucket is checked once, and a day's delivery days are listed
 * together, the next days' first pages asked for while the first day's is still on its way
 * (ingest/object-source/s3-object-source.ts, LISTINGS_AHEAD); the day comes out exact.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { generateSample, objectBody, type Sample } from '../../tools/sample/access-log-generator.js';
import type { AwsCall } from '../support/aws-calls.js';
import { cli } from '../support/cli.js';
import { readStoreDay, rm, tempDir } from '../support/job-fixture.js';
import { startMoto, type Moto } from '../support/moto.js';
import { expectedDay } from '../support/oracle.js';
import { startRecordingProxy, type RecordingProxy } from '../support/recording-proxy.js';

const DAY = '2026-11-01';
/** The delivery days a first run lists in full for DAY: the day and the two after it. */
const DELIVERY_DAYS = [DAY, '2026-11-02', '2026-11-03'];
let moto: Moto;
let proxy: RecordingProxy | undefined;
let sample: Sample;
const root = tempDir();

beforeAll(async () => {
  moto = await startMoto(['logs']);
  sample = generateSample({ date: DAY, sessions: 12, seed: 57, truth: true, recordsPerObject: 40 });
  const client = moto.client();
  for (const o of sample.objects) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: `access/${o.key}`, Body: objectBody(o) }));
}, 60_000);

afterAll(async () => {
  await proxy?.stop();
  await moto?.stop();
  await rm(root, { recursive: true, force: true });
});

/** Whether `call` is the listing of delivery day `day` (its first page; the generator names its objects under `logs/`). */
const listingOf = (call: AwsCall, day: string): boolean => call.command === 'ListObjectsV2' && call.input.Prefix === `access/logs/${day}-`;

describe('a rollup of S3 logs, as cron runs it', () => {
  it("checks the logs' bucket once, and asks for the next delivery days' listings before the first day's is answered; the day is exact", async () => {
    // The first day's listing is held until both later days' listings have been asked for; one after
    // another (the first answered before the next is asked), it would be held the whole 15 s.
    const later = new Set<string>();
    let others: () => void = () => {};
    const bothAsked = new Promise<string>((resolve) => { others = () => resolve('the later days were asked for'); });
    let held: Promise<string> | null = null;
    proxy = await startRecordingProxy(moto.endpoint, {
      hold: (call) => {
        for (const day of DELIVERY_DAYS.slice(1)) if (listingOf(call, day)) later.add(day);
        if (later.size === DELIVERY_DAYS.length - 1) others();
        if (listingOf(call, DAY) && held === null) return (held = Promise.race([bothAsked, sleep(15_000, 'held 15 s: no later day was asked for meanwhile', { ref: false })]));
        return null;
      },
    });
    const out = join(root, 'out');
    const run = await cli({
      PATH: process.env.PATH ?? '', HOME: root, ...moto.env, AWS_ENDPOINT_URL_S3: proxy.endpoint,
      PINGROLL_LOGS: 's3://logs/access/', PINGROLL_OUTPUT: out, PINGROLL_WAREHOUSE: `duckdb:${join(root, 'wh.duckdb')}`,
    }, 'rollup', '--date', DAY);
    expect(run.status, run.stderr).toBe(0);
    expect(await held).toBe('the later days were asked for');
    // One HeadBucket: the run's preflight and its backends made again with the generated viewer key share the checked source.
    expect(proxy.calls.filter((c) => c.command === 'HeadBucket' && c.input.Bucket === 'logs')).toHaveLength(1);
    // Each delivery day listed once, and the day's every figure as the generator's truth has it.
    for (const day of DELIVERY_DAYS) expect(proxy.calls.filter((c) => listingOf(c, day)), day).toHaveLength(1);
    expect(await readStoreDay(new DirectoryObjectStore(out), DAY, join(root, 'read'))).toEqual(expectedDay(sample.truth, DAY));
  }, 60_000);
});
