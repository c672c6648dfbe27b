/**
 * Listings that follow new data: a window skips what earlier listings saw, over a directory and over
 * the S3 API (moto), for both of S3's access-log layouts; the requests a windowed S3 listing takes do
 * not grow with the history under the prefix.
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeS3Client } from '../../../infra/aws/s3-client.js';
import { DirectoryObjectSource } from '../../../ingest/object-source/directory-object-source.js';
import { ListingTracker, nameStamp, windowFrom, type ListWindow } from '../../../ingest/object-source/listing-window.js';
import type { ObjectSource } from '../../../ingest/object-source/object-source.js';
import { S3ObjectSource } from '../../../ingest/object-source/s3-object-source.js';
import { DAY_MS } from '../../../lib/utc-day.js';
import { ownedSlices, shardOfKey, SLICE_MS } from '../../../state/slices.js';
import { rm, setEnv, tempDir } from '../../helpers/job-fixture.js';
import { startMoto, type Moto } from '../../helpers/moto.js';

const T0 = Date.parse('2026-11-01T00:00:00Z');
const HOUR = 3_600_000;
/** A SimplePrefix name delivered at `ms`. */
const flat = (ms: number, n = 0): string => `${nameStamp(ms)}-${n.toString(16).padStart(16, '0').toUpperCase()}`;
/** A PartitionedPrefix key delivered at `ms`, in the date folder of `ms`. */
const partitioned = (account: string, bucket: string, ms: number, n = 0): string =>
  `${account}/us-east-1/${bucket}/${new Date(ms).toISOString().slice(0, 10).replace(/-/g, '/')}/${flat(ms, n)}`;

async function keys(source: ObjectSource, window?: ListWindow): Promise<string[]> {
  const out: string[] = [];
  for await (const ref of source.list(window)) out.push(ref.key);
  return out.sort();
}

/** History: one object every 6 hours for `days` days from T0; the window's new objects: the last day. */
function history(days: number): { old: string[]; recent: string[]; partOld: string[]; partRecent: string[]; window: ListWindow } {
  const old: string[] = [], recent: string[] = [], partOld: string[] = [], partRecent: string[] = [];
  const last = T0 + days * DAY_MS;
  for (let t = T0; t < last; t += 6 * HOUR) {
    const isRecent = t >= last - DAY_MS;
    (isRecent ? recent : old).push(flat(t));
    // Date folders from two days before the window's day on are listed whole (late event-time objects).
    (t >= last - 3 * DAY_MS ? partRecent : partOld).push(partitioned('123456789012', 'site', t));
  }
  return { old, recent, partOld, partRecent, window: { sinceMs: last - DAY_MS, accounts: ["123456789012/"], folders: [""] } };
}

describe('a listing window', () => {
  it('moves to the latest name seen, never past the listing itself, and gives up on keys of neither shape', () => {
    const before = { watermark: new Date(T0).toISOString(), accounts: [], folders: [''], other: false };
    const t = new ListingTracker(before, false);
    t.saw(flat(T0 + HOUR));
    t.saw(partitioned('210987654321', 'site', T0 + 2 * HOUR));
    t.saw(flat(Date.now() + 30 * DAY_MS)); // a name from the future
    t.saw(`logs/${flat(T0 + HOUR)}`); // SimplePrefix names one folder down
    const next = t.next();
    expect(Date.parse(next.watermark!)).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(next.watermark!)).toBeGreaterThan(T0 + 2 * HOUR);
    expect(next).toMatchObject({ accounts: ['210987654321/'], folders: ['', 'logs/'], other: false, changed: true });
    // From the start of the slice that holds the watermark less the margin (state/seals.ts).
    const since = Date.parse(next.watermark!) - HOUR;
    expect(windowFrom(next, HOUR, false)).toEqual({ sinceMs: since - (since % 600_000), accounts: ['210987654321/'], folders: ['', 'logs/'] });
    expect(windowFrom(next, HOUR, true)).toBeUndefined();

    const odd = new ListingTracker(before, false);
    odd.saw('archive/access.log');
    expect(windowFrom(odd.next(), HOUR, false)).toBeUndefined();
    // A full listing that no longer sees it windows again.
    const full = new ListingTracker({ ...before, other: true }, true);
    full.saw(flat(T0));
    expect(full.next().other).toBe(false);
  });
});

describe('a directory listing with a window', () => {
  const root = tempDir();
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('skips SimplePrefix names and PartitionedPrefix date folders before it', async () => {
    const h = history(10);
    for (const key of [...h.old, ...h.recent, ...h.partOld, ...h.partRecent]) {
      await mkdir(join(root, key, '..'), { recursive: true });
      await writeFile(join(root, key), 'x');
    }
    const source = new DirectoryObjectSource(root);
    expect(await keys(source, h.window)).toEqual([...h.recent, ...h.partRecent].sort());
    expect(await keys(source)).toHaveLength(h.old.length + h.recent.length + h.partOld.length + h.partRecent.length);
  });
});

describe('an S3 listing with a window (moto)', () => {
  let s3: Moto;
  let restore = (): void => {};
  let client: S3Client;
  let lists = 0;

  beforeAll(async () => {
    s3 = await startMoto(['listing']);
    restore = setEnv(s3.env);
    client = makeS3Client({ s3EndpointOverride: true });
    client.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName === 'ListObjectsV2Command') lists++;
      return next(args);
    }, { step: 'initialize' });
  }, 60_000);
  afterAll(async () => {
    restore();
    await s3?.stop();
  });

  async function put(prefix: string, keys: string[]): Promise<void> {
    for (const key of keys) await client.send(new PutObjectCommand({ Bucket: 'listing', Key: prefix + key, Body: 'x' }));
  }

  /** The keys a windowed listing returns, and the ListObjectsV2 requests it took. */
  async function listed(prefix: string, window: ListWindow): Promise<{ keys: string[]; requests: number }> {
    lists = 0;
    const got = await keys(new S3ObjectSource(client, 'listing', prefix, 5), window);
    return { keys: got, requests: lists };
  }

  it('lists only what can be new, in as many requests whatever the history (SimplePrefix)', async () => {
    const short = history(3), long = history(12);
    // The same recent day under both prefixes, behind 2 or 11 days of history.
    await put('short/', [...short.old, ...short.recent]);
    const shift = (k: string): string => flat(Date.parse(k.slice(0, 10) + 'T' + k.slice(11, 19).replace(/-/g, ':') + 'Z') + 9 * DAY_MS);
    await put('long/', long.old);
    await put('long/', short.recent.map(shift));
    const a = await listed('short/', short.window);
    const b = await listed('long/', { ...short.window, sinceMs: short.window.sinceMs + 9 * DAY_MS });
    expect(a.keys).toEqual(short.recent);
    expect(b.keys).toEqual(short.recent.map(shift));
    expect(b.requests).toBe(a.requests);
    // Without a window, the history is listed: more requests.
    lists = 0;
    expect(await keys(new S3ObjectSource(client, 'listing', 'long/', 5))).toHaveLength(long.old.length + short.recent.length);
    expect(lists).toBeGreaterThan(b.requests);
    // SimplePrefix names one folder down (the logs setting names the folder above the log prefix).
    await put('nested/logs/', [...short.old, ...short.recent]);
    const c = await listed('nested/', { ...short.window, folders: ['logs/'] });
    expect(c.keys).toEqual(short.recent.map((k) => `logs/${k}`));
  });

  it('lists each account folder from the window\'s first date folder, in as many requests whatever the history (PartitionedPrefix)', async () => {
    const short = history(4), long = history(12);
    await put('pshort/', [...short.partOld, ...short.partRecent]);
    await put('plong/', [...long.partOld, ...long.partRecent]);
    const a = await listed('pshort/', { ...short.window, folders: [] });
    const b = await listed('plong/', { ...long.window, folders: [] });
    expect(a.keys).toEqual(short.partRecent);
    expect(b.keys).toEqual(long.partRecent);
    expect(b.requests).toBe(a.requests);
    // A new source account is found by the listing of the top (no SimplePrefix keys there).
    await put('plong/', [partitioned('000000000007', 'other', long.window.sinceMs + HOUR)]);
    const c = await listed('plong/', { ...long.window, folders: [] });
    expect(c.keys).toContain(partitioned('000000000007', 'other', long.window.sinceMs + HOUR));
  });

  it('gives each shard of several only its own slices, each by its prefix: N shards list each new key once between them', async () => {
    const since = T0 + 20 * DAY_MS + 22 * HOUR, until = since + 4 * HOUR; // the window crosses midnight
    const times = Array.from({ length: 40 }, (_, i) => since + i * 6 * 60_000);
    const old = [flat(since - 2 * HOUR, 1), partitioned('123456789012', 'site', since - 2 * HOUR, 1)];
    const fresh = times.flatMap((t, i) => [flat(t, i), partitioned('123456789012', 'site', t, i)]);
    await put('sliced/', [...old, ...fresh]);
    const window: ListWindow = { sinceMs: since, accounts: ['123456789012/'], folders: [''] };
    const slices = Math.floor(until / SLICE_MS) - Math.floor(since / SLICE_MS) + 1;
    const seen: string[] = [];
    let requests = 0;
    for (let index = 0; index < 4; index++) {
      lists = 0;
      const got: string[] = [];
      for await (const ref of new S3ObjectSource(client, 'listing', 'sliced/').listOwned(window, { index, count: 4 }, until)) got.push(ref.key);
      // Only its own slices: every key it listed is its own.
      for (const key of got) expect(shardOfKey(key, 4)).toBe(index);
      seen.push(...got);
      // One request for new folders, one a slice at the top, and for the source bucket: its region and
      // bucket folders, then each slice in the three date folders that can hold it.
      const owned = [...ownedSlices(since, until, index, 4)].length;
      expect(lists).toBe(1 + owned + 2 + 3 * owned);
      requests += lists;
    }
    expect(seen.sort()).toEqual([...fresh].sort());
    expect(requests).toBe(4 * 3 + 4 * slices);
  });
});
