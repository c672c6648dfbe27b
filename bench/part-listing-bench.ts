/**
 * What listing an event-time day's 256 parts as key ranges costs (ingest/listing/slices.ts, `partRange`):
 * the ListObjectsV2 requests one full listing of the day takes, against the least any listing of
 * the same parts could take (a request per 1,000 names of each part, at least one). The day is the
 * synthetic S3 endpoint's (test/support/synthetic-s3.ts, PartitionedPrefix by EventTime, S3's
 * 16-hex-digit unique parts), listed in this process by one shard of one (every part).
 *
 *   node dist/bench/part-listing-bench.js [objects, default 1000000]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ListObjectsV2CommandInput } from '@aws-sdk/client-s3';
import { makeS3Client } from '../infra/aws/s3-client.js';
import { S3ObjectSource } from '../ingest/object-source/s3-object-source.js';
import { DAY_MS } from '../lib/utc-day.js';
import { EVENT_PARTS, eventPrefix, partOf, partRange } from '../ingest/listing/slices.js';
import { startSyntheticS3 } from '../test/support/synthetic-s3.js';

const size = Number(process.argv[2] ?? 1_000_000);
const day = '2026-11-01';
const dir = await mkdtemp(join(tmpdir(), 'part-listing-'));
const s3 = await startSyntheticS3({ days: [{ day, count: size }], dir, layout: 'event' });
try {
  Object.assign(process.env, { AWS_ENDPOINT_URL_S3: s3.url, AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench', AWS_REGION: 'us-east-1' });
  const client = makeS3Client({ s3EndpointOverride: true });
  const stamp = eventPrefix(day);
  let requests = 0, partRequests = 0, rangeRequests = 0;
  client.middlewareStack.add((next, context) => async (args) => {
    if (context.commandName === 'ListObjectsV2Command') {
      requests++;
      const { Prefix = '', StartAfter } = args.input as ListObjectsV2CommandInput;
      const at = Prefix.indexOf(stamp);
      if (at >= 0) {
        partRequests++;
        // A part listed by a range, not by the exact Prefix of its two digits.
        if (StartAfter !== undefined || Prefix.length - at - stamp.length !== 2) rangeRequests++;
      }
    }
    return next(args);
  }, { step: 'initialize' });
  const perPart = new Array<number>(EVENT_PARTS).fill(0);
  let listed = 0;
  const started = process.hrtime.bigint();
  const plan = { sinceMs: null, days: [day], shard: { index: 0, count: 1 }, untilMs: Date.parse(`${day}T00:00:00Z`) + 3 * DAY_MS };
  for await (const ref of new S3ObjectSource(client, 'logs', '').listPlanned(plan)) {
    listed++;
    const at = ref.key.indexOf(stamp);
    if (at >= 0) perPart[partOf(ref.key.slice(at + stamp.length))]!++;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const least = perPart.reduce((k, n) => k + Math.max(1, Math.ceil(n / 1000)), 0);
  const ranged = perPart.map((_, p) => partRange(p)).filter((r) => r.startAfter !== null || r.prefix.length !== 2).length;
  process.stdout.write(`${JSON.stringify({ objects: size, listed, requests, partRequests, least, extra: partRequests - least, rangeParts: ranged, rangeRequests, seconds: Math.round(seconds) })}\n`);
} finally {
  await s3.close();
  await rm(dir, { recursive: true, force: true });
}
