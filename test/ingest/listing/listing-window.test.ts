/**
 * Listings that follow new data over the S3 API (moto; an event-time day among many shards on the
 * synthetic S3 endpoint), for both of S3's access-log layouts: a window skips what earlier listings
 * saw, a delivery day is listed in full by its prefix, keys of no delivery-time shape are found by
 * discovering the layout, each key once; the requests a listing takes follow the window and the days,
 * not the history under the prefix. A directory is listed whole.
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeS3Client } from '../../../infra/aws/s3-client.js';
import { DirectoryObjectSource } from '../../../ingest/object-source/directory-object-source.js';
import { ListingTracker, nameStamp, windowStart } from '../../../ingest/listing/listing-window.js';
import type { ListPlan, ObjectSource } from '../../../ingest/object-source/object-source.js';
import { S3ObjectSource } from '../../../ingest/object-source/s3-object-source.js';
import { DAY_MS } from '../../../lib/utc-day.js';
import { EVENT_PARTS, eventPrefix, ownedParts, ownedSlices, partOf, partRange, reachOf, shardOfKey, SLICE_MS } from '../../../ingest/listing/slices.js';
import { rm, setEnv, tempDir } from '../../support/job-fixture.js';
import { startMoto, type Moto } from '../../support/moto.js';
import { startSyntheticS3, type SyntheticS3 } from '../../support/synthetic-s3.js';
import { onListRequests } from '../../support/s3-requests.js';

const T0 = Date.parse('2026-11-01T00:00:00Z');
const HOUR = 3_600_000;
/** A SimplePrefix name delivered at `ms`. */
const flat = (ms: number, n = 0): string => `${nameStamp(ms)}-${n.toString(16).padStart(16, '0').toUpperCase()}`;
/** A PartitionedPrefix key delivered at `ms`, in the date folder of `ms`. */
const partitioned = (account: string, bucket: string, ms: number, n = 0): string =>
  `${account}/us-east-1/${bucket}/${new Date(ms).toISOString().slice(0, 10).replace(/-/g, '/')}/${flat(ms, n)}`;

async function keys(source: ObjectSource, plan?: Partial<ListPlan>): Promise<string[]> {
  const out: string[] = [];
  const refs = plan ? source.listPlanned!({ sinceMs: null, days: [], shard: null, untilMs: Date.now(), ...plan }) : source.list();
  for await (const ref of refs) out.push(ref.key);
  return out.sort();
}

/** History: one object every 6 hours for `days` days from T0; the window's new objects: the last day. */
function history(days: number): { old: string[]; recent: string[]; partOld: string[]; partRecent: string[]; sinceMs: number } {
  const old: string[] = [], recent: string[] = [], partOld: string[] = [], partRecent: string[] = [];
  const last = T0 + days * DAY_MS;
  for (let t = T0; t < last; t += 6 * HOUR) {
    const isRecent = t >= last - DAY_MS;
    (isRecent ? recent : old).push(flat(t));
    // Date folders from two days before the window's day on are listed whole (late event-time objects).
    (t >= last - 3 * DAY_MS ? partRecent : partOld).push(partitioned('123456789012', 'site', t));
  }
  return { old, recent, partOld, partRecent, sinceMs: last - DAY_MS };
}

describe('a listing window', () => {
  it('moves to the latest name seen, never past the listing itself; starts at a slice\'s edge, the margin before', () => {
    const now = Date.now();
    const t = new ListingTracker(new Date(T0).toISOString(), now);
    t.saw(flat(T0 + HOUR));
    t.saw(partitioned('210987654321', 'site', T0 + 2 * HOUR));
    t.saw('archive/access.log'); // no delivery time: no effect
    expect(t.watermark()).toBe(new Date(T0 + 2 * HOUR).toISOString());
    t.saw(flat(now + 30 * DAY_MS)); // a name from the future
    expect(Date.parse(t.watermark()!)).toBeLessThanOrEqual(now);
    const since = T0 + 2 * HOUR - HOUR + 7 * 60_000;
    expect(windowStart(new Date(T0 + 2 * HOUR + 7 * 60_000).toISOString(), HOUR)).toBe(since - (since % 600_000));
    expect(windowStart(null, HOUR)).toBeNull();
  });
});

describe('a directory listing', () => {
  const root = tempDir();
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('is whole: every file, whatever its name', async () => {
    const h = history(10);
    for (const key of [...h.old, ...h.recent, ...h.partOld, ...h.partRecent, 'README', 'sub/access.log']) {
      await mkdir(join(root, key, '..'), { recursive: true });
      await writeFile(join(root, key), 'x');
    }
    const source = new DirectoryObjectSource(root);
    expect((source as ObjectSource).listing).toBe('whole');
    const all = h.old.length + h.recent.length + h.partOld.length + h.partRecent.length + 2;
    expect(await keys(source)).toHaveLength(all);
    // A plan of one recent day lists it all the same.
    expect(await keys(source, { sinceMs: h.sinceMs, days: [] })).toHaveLength(all);
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
    onListRequests(client, () => { lists++; });
  }, 60_000);
  afterAll(async () => {
    restore();
    await s3?.stop();
  });

  async function put(prefix: string, keys: string[]): Promise<void> {
    for (const key of keys) await client.send(new PutObjectCommand({ Bucket: 'listing', Key: prefix + key, Body: 'x' }));
  }

  /** The keys a planned listing returns, and the ListObjectsV2 requests it took. */
  async function listed(prefix: string, plan: Partial<ListPlan>): Promise<{ keys: string[]; requests: number }> {
    lists = 0;
    const got = await keys(new S3ObjectSource(client, 'listing', prefix, 5), plan);
    return { keys: got, requests: lists };
  }

  it('lists only what can be new, in as many requests whatever the history (SimplePrefix)', async () => {
    const short = history(3), long = history(12);
    // The same recent day under both prefixes, behind 2 or 11 days of history.
    await put('short/', [...short.old, ...short.recent]);
    const shift = (k: string): string => flat(Date.parse(k.slice(0, 10) + 'T' + k.slice(11, 19).replace(/-/g, ':') + 'Z') + 9 * DAY_MS);
    await put('long/', long.old);
    await put('long/', short.recent.map(shift));
    const a = await listed('short/', { sinceMs: short.sinceMs });
    const b = await listed('long/', { sinceMs: short.sinceMs + 9 * DAY_MS });
    expect(a.keys).toEqual(short.recent);
    expect(b.keys).toEqual(short.recent.map(shift));
    expect(b.requests).toBe(a.requests);
    // Everything, page by page: more requests.
    lists = 0;
    expect(await keys(new S3ObjectSource(client, 'listing', 'long/', 5))).toHaveLength(long.old.length + short.recent.length);
    expect(lists).toBeGreaterThan(b.requests);
    // SimplePrefix names one folder down (the logs setting names the folder above the log prefix), found by discovery.
    await put('nested/logs/', [...short.old, ...short.recent]);
    const c = await listed('nested/', { sinceMs: short.sinceMs });
    expect(c.keys).toEqual(short.recent.map((k) => `logs/${k}`));
  });

  it('lists a delivery day in full by its prefix: what the window does not list of it, each key once; keys of no delivery-time shape once, by discovery', async () => {
    const h = history(6);
    const odd = ['README', 'archive/access.log', 'zz/notes.txt'];
    await put('days/', [...h.old, ...h.recent, ...odd]);
    const dayOf = (k: string): string => k.slice(0, 10);
    const days = [...new Set(h.old.map(dayOf))];
    // Two old days in full, and the window: what each holds, and the odd keys, once.
    const wanted = [days[1]!, days[3]!];
    const got = await listed('days/', { sinceMs: h.sinceMs, days: wanted });
    expect(got.keys).toEqual([...h.old.filter((k) => wanted.includes(dayOf(k))), ...h.recent, ...odd].sort());
    // The window starts mid-day: the day it starts in, listed in full, adds its part before the window only.
    const mid = h.sinceMs + 12 * HOUR;
    const split = await listed('days/', { sinceMs: mid, days: [dayOf(h.recent[0]!)] });
    expect(split.keys).toEqual([...h.recent, ...odd].sort());
    // Days alone (a first run's, or a backfill's): no window.
    const alone = await listed('days/', { sinceMs: null, days: [days[0]!] });
    expect(alone.keys).toEqual([...h.old.filter((k) => dayOf(k) === days[0]), ...odd].sort());
  });

  it('lists each account folder from the window\'s first date folder, in as many requests whatever the history (PartitionedPrefix); a date folder before it only as a day listed in full', async () => {
    const short = history(4), long = history(12);
    await put('pshort/', [...short.partOld, ...short.partRecent]);
    await put('plong/', [...long.partOld, ...long.partRecent]);
    const a = await listed('pshort/', { sinceMs: short.sinceMs });
    const b = await listed('plong/', { sinceMs: long.sinceMs });
    expect(a.keys).toEqual(short.partRecent);
    expect(b.keys).toEqual(long.partRecent);
    expect(b.requests).toBe(a.requests);
    // A new source account is found by discovery, wherever it sorts.
    await put('plong/', [partitioned('000000000007', 'other', long.sinceMs + HOUR)]);
    const c = await listed('plong/', { sinceMs: long.sinceMs });
    expect(c.keys).toContain(partitioned('000000000007', 'other', long.sinceMs + HOUR));
    // A date folder the window has left, listed in full as a delivery day; one it lists whole is not listed twice.
    const old = new Date(long.sinceMs - 5 * DAY_MS).toISOString().slice(0, 10);
    const inWindow = new Date(long.sinceMs - DAY_MS).toISOString().slice(0, 10);
    const d = await listed('plong/', { sinceMs: long.sinceMs, days: [old, inWindow] });
    expect(d.keys).toEqual([...c.keys, ...long.partOld.filter((k) => k.includes(`/${old.replace(/-/g, '/')}/`))].sort());
  });


});

/**
 * How an event-time day's shards list it: the day in full (a first run, a schedule's listing), and
 * (4 shards) a window that starts after its midnight: objects of an event day arrive for days, and
 * its date folder is listed by the window for two days more, as one process's is (a window that
 * holds a midnight: the test before).
 */
function eventPlans(day: string, count: number): { start: number; midnight: number; plans: Array<Omit<ListPlan, 'shard'>> } {
  const start = Date.parse(`${day}T00:00:00Z`);
  return { start, midnight: start / SLICE_MS, plans: [{ sinceMs: null, days: [day], untilMs: start + 2 * DAY_MS },
    ...(count === 4 ? [{ sinceMs: start + 30 * HOUR, days: [], untilMs: start + 32 * HOUR }] : [])] };
}

/**
 * Shards, each listing its own slices and parts, on the synthetic S3 endpoint
 * (test/support/synthetic-s3.ts, whose listings its own test checks against moto): moto reads every
 * key of the bucket for each ListObjectsV2 request, and these take a thousand of them.
 */
describe('shards splitting the listings (the synthetic S3 endpoint)', () => {
  let s3: SyntheticS3;
  let restore = (): void => {};
  let client: S3Client;
  let lists = 0;
  /** The Prefix of each ListObjectsV2 request, and its Delimiter after a `|` when it has one. */
  let prefixes: string[] = [];
  /** The Prefix and StartAfter of each ListObjectsV2 request (`Prefix>StartAfter`). */
  let requests: string[] = [];
  /** The event-time day's objects, put once for every shard count. */
  let eventDay: Promise<void> | undefined;
  /** The event-time day of names S3 does not write, put once for every shard count. */
  let eventOdd: Promise<void> | undefined;
  /** A date folder with strays, put once for every shard count. */
  let eventStrays: Promise<void> | undefined;

  beforeAll(async () => {
    s3 = await startSyntheticS3({ days: [], dir: tempDir() });
    restore = setEnv({ AWS_ENDPOINT_URL_S3: s3.url, AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'x', AWS_REGION: 'us-east-1' });
    client = makeS3Client({ s3EndpointOverride: true });
    onListRequests(client, ({ prefix, delimiter, startAfter }) => {
      lists++;
      prefixes.push(`${prefix}${delimiter ? `|${delimiter}` : ''}`);
      requests.push(`${prefix}>${startAfter ?? ''}`);
    });
  });
  afterAll(async () => {
    restore();
    await s3?.close();
  });

  async function put(prefix: string, keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 64) await Promise.all(keys.slice(i, i + 64).map((k) => client.send(new PutObjectCommand({ Bucket: 'out', Key: prefix + k, Body: 'x' }))));
  }

  it('gives each shard of several only its own slices, each by its prefix: N shards list each new key once between them, of the window and of the days listed in full', async () => {
    const since = T0 + 20 * DAY_MS + 22 * HOUR, until = since + 4 * HOUR; // the window crosses midnight
    const times = Array.from({ length: 40 }, (_, i) => since + i * 6 * 60_000);
    const old = [flat(since - 2 * HOUR, 1), partitioned('123456789012', 'site', since - 2 * HOUR, 1)];
    const fresh = times.flatMap((t, i) => [flat(t, i), partitioned('123456789012', 'site', t, i)]);
    const earlier = Array.from({ length: 12 }, (_, i) => flat(Math.floor((since - 3 * DAY_MS) / DAY_MS) * DAY_MS + i * 2 * HOUR, 100 + i));
    await put('sliced/', [...old, ...fresh, ...earlier]);
    const oldDay = new Date(since - 3 * DAY_MS).toISOString().slice(0, 10);
    const slices = Math.floor(until / SLICE_MS) - Math.floor(since / SLICE_MS) + 1;
    const seen: string[] = [];
    let requests = 0;
    for (let index = 0; index < 4; index++) {
      lists = 0;
      const got: string[] = [];
      for await (const ref of new S3ObjectSource(client, 'out', 'sliced/').listPlanned({ sinceMs: since, days: [], shard: { index, count: 4 }, untilMs: until })) got.push(ref.key);
      // Only its own slices: every key it listed is its own.
      for (const key of got) expect(shardOfKey(key, 4)).toBe(index);
      seen.push(...got);
      // Discovery (the top, jumping its year of names, then the account's region and bucket folders),
      // one request a slice at the top, and each slice in the three date folders that can hold it; and
      // its quarter of the 256 event-time parts (ingest/listing/slices.ts) of the new day's date folder and of
      // the three the window lists whole before it (the window's day and the two before).
      const owned = [...ownedSlices(since, until, index, 4)].length;
      expect(lists).toBe(2 + 2 + owned + 3 * owned + 4 * EVENT_PARTS / 4);
      requests += lists;
    }
    expect(seen.sort()).toEqual([...fresh].sort());
    expect(requests).toBe(4 * 4 + 4 * slices + 4 * EVENT_PARTS);
    // A delivery day listed in full, by four shards: each of its keys once between them.
    const full: string[] = [];
    for (let index = 0; index < 4; index++) {
      for await (const ref of new S3ObjectSource(client, 'out', 'sliced/').listPlanned({ sinceMs: since, days: [oldDay], shard: { index, count: 4 }, untilMs: until })) full.push(ref.key);
    }
    expect(full.filter((k) => k.startsWith(oldDay)).sort()).toEqual(earlier);
  });

  /** The requests that list the parts `parts` of the event-time day `day` in `folder` (under the source's prefix `top`), as `requests` holds them: a key range each. */
  const partRequests = (top: string, folder: string, day: string, parts: number[]): string[] => parts.map((p) => {
    const r = partRange(p);
    const head = `${top}${folder}${eventPrefix(day)}`;
    return `${head}${r.prefix}>${r.startAfter === null ? '' : head + r.startAfter}`;
  });

  it.each([4, 64])('splits an event-time day (PartitionedPrefix by EventTime, every name at 00-00-00) among %i shards by the names\' unique parts: each lists only its own parts, a key range each, and parses within 1.5x of the mean', async (count) => {
    const day = '2026-11-21';
    const folder = `123456789012/us-east-1/site/${day.replace(/-/g, '/')}/`;
    // S3's unique part: 16 uppercase hex digits (here a hash of the object's number).
    const names = Array.from({ length: 4096 }, (_, i) => `${folder}${day}-00-00-00-${createHash('sha1').update(String(i)).digest('hex').slice(0, 16).toUpperCase()}`);
    eventDay ??= put('event/', names);
    await eventDay;
    const { midnight, plans } = eventPlans(day, count);
    for (const plan of plans) {
      const parsed: number[] = [];
      const all: string[] = [];
      for (let index = 0; index < count; index++) {
        prefixes = [];
        requests = [];
        const got = await keys(new S3ObjectSource(client, 'out', 'event/'), { ...plan, shard: { index, count } });
        for (const key of got) expect(shardOfKey(key, count)).toBe(index);
        // The day's parts it owns, each by its own key range, once, in one request (a part holds ~16
        // names here): most by the Prefix of its two digits, as S3's names are; part 0, 255 and those
        // whose range holds more than their digits' names (`A9`..`A@`, `AF`..`B`) from a StartAfter
        // under the day's `YYYY-MM-DD-00-00-00-`. No request lists the whole day or its folder (the
        // folder's walker lists its runs of names, `-` their delimiter: the next test).
        const own = partRequests('event/', folder, day, ownedParts(midnight, index, count));
        expect(requests.filter((r) => r.startsWith(`event/${folder}${day}-00-00-00-`)).sort()).toEqual(own.sort());
        expect(prefixes.filter((p) => p === `event/${folder}` || p === `event/${folder}${day}-`)).toEqual([]);
        parsed.push(got.length);
        all.push(...got);
      }
      expect(all.sort()).toEqual([...names].sort());
      const mean = names.length / count;
      expect(Math.max(...parsed), `${parsed}`).toBeLessThanOrEqual(1.5 * mean);
      expect(Math.min(...parsed), `${parsed}`).toBeGreaterThanOrEqual(0.5 * mean);
    }
  }, 300_000);

  it.each([1, 4, 64])('lists every name under an event-time day\'s `YYYY-MM-DD-00-00-00-` once between %i shards, whatever its unique part: lowercase hex, odd, short, not hex (issue #53)', async (count) => {
    const day = '2026-11-23';
    const folder = `123456789012/us-east-1/site/${day.replace(/-/g, '/')}/`;
    const sha = (i: number): string => createHash('sha1').update(`odd${i}`).digest('hex').slice(0, 16);
    const uniques = [
      // S3's own, and the same in lowercase hex (a tool that copied or renamed them).
      ...Array.from({ length: 128 }, (_, i) => sha(i).toUpperCase()), ...Array.from({ length: 64 }, (_, i) => sha(1000 + i)),
      // Short: nothing at all, one character, the parts' edges themselves.
      '', '0', '00', '0G', '9', '9:', 'A', 'A0', 'F', 'FF', 'FFFF', 'G', 'z', '~',
      // Odd, or no hex at all: ASCII's other characters, a `/`, past ASCII.
      'G1', '0a', 'A9z', 'A@x', 'AF~', 'F~', 'ff', 'zz', 'ZZZZ', '-x', '_x', 'a b', '!', 'AB/CD', '0/x', 'é', 'éé', '日本', '😀x', '\u007f',
      // Of a part, after where the next part's listing starts (`A8~`, `9E~`): that listing passes over them.
      'A8~x', '9E~~',
    ];
    const names = uniques.map((u) => `${folder}${eventPrefix(day)}${u}`);
    // Beside them, names the 00:00 slice's owner lists: delivery times in the folder, one after the parts' names.
    const delivered = [`${folder}${day}-00-00-01-AB`, `${folder}${day}-00-09-59-00`, `${folder}${day}-13-20-00-0A`];
    const all = [...names, ...delivered].sort();
    eventOdd ??= put('odd/', all);
    await eventOdd;
    const { start, midnight, plans } = eventPlans(day, count);
    for (const plan of plans) {
      const listed: string[] = [];
      for (let index = 0; index < count; index++) {
        requests = [];
        const got = await keys(new S3ObjectSource(client, 'out', 'odd/'), { ...plan, shard: { index, count } });
        // Only its own, each part in one request (they are small).
        for (const key of got) expect(shardOfKey(key, count), key).toBe(index);
        expect(requests.filter((r) => r.startsWith(`odd/${folder}${day}-00-00-00-`)).sort()).toEqual(partRequests('odd/', folder, day, ownedParts(midnight, index, count)).sort());
        listed.push(...got);
      }
      // Each name once between them: the window's listing after midnight lists the parts only.
      expect(listed.sort()).toEqual(plan.sinceMs === null ? all : [...names].sort());
    }
    // Pages of 5 keys: a part's listing goes on with its continuation token, passes over the part
    // before's names, and asks for no page past its own last name.
    if (count === 4) {
      const listed: string[] = [];
      for (let index = 0; index < count; index++) {
        requests = [];
        const got = await keys(new S3ObjectSource(client, 'out', 'odd/', 5), { ...plans[0]!, shard: { index, count } });
        for (const key of got) expect(shardOfKey(key, count), key).toBe(index);
        listed.push(...got);
        const pages = ownedParts(midnight, index, count).reduce((n, p) => {
          const after = partRange(p).startAfter;
          const m = uniques.filter((u) => partOf(u) === p || (partOf(u) === p - 1 && after !== null && u > after)).length;
          return n + Math.floor(m / 5) + 1;
        }, 0);
        expect(requests.filter((r) => r.startsWith(`odd/${folder}${day}-00-00-00-`)).length).toBeLessThanOrEqual(pages);
      }
      expect(listed.sort()).toEqual(all);
    }
    // One process of no shard (`--shard 0/1` is one shard, above) lists its date folders whole.
    if (count === 1) expect(await keys(new S3ObjectSource(client, 'out', 'odd/'), { days: [day], untilMs: start + 2 * DAY_MS })).toEqual(all);
  }, 300_000);

  it.each([1, 4, 64])('lists each stray of a date folder (a key no slice\'s or part\'s listing reaches) once between %i shards, by the folder\'s walker, whenever its day is listed in full', async (count) => {
    const day = '2026-11-24';
    const folder = `123456789012/us-east-1/site/${day.replace(/-/g, '/')}/`;
    // What the slices and parts reach: event-time names, a delivery time each hour, a name under a slice's Prefix that holds no delivery time.
    const reached = [...['0A', 'A1B2C3D4E5F60718', 'FF00'].map((u) => `${day}-00-00-00-${u}`), `${day}-00-00-01-AB`, `${day}-13-2x`,
      ...Array.from({ length: 24 }, (_, h) => `${day}-${String(h).padStart(2, '0')}-30-00-${h}`)];
    // Strays: no delivery time, a sub-folder, an hour or minute that is none, another day's names, the names the 00:00 slice's owner starts after.
    const strays = ['README', 'README-old', '.DS_Store', '_SUCCESS', 'sub/x', `sub/${day}-13-20-00-0B`, `${day}-README`, `${day}-24-00-00-0C`,
      `${day}-13-65-00-0D`, `${day}-1-x`, `${day}-00-00-00`, `${day}-00-00-00.`, `${day}-00-00-00!x`, `${day}x`, '2026-11-2', '2026-11-30-13-20-00-0E',
      '2026-10-01-00-00-00-0F', '2025-11-24-13-20-00-10', '2026-12-24-00-00-00-A0', 'a-b-c', '~', '日本-x'];
    const all = [...reached, ...strays].map((k) => folder + k).sort();
    for (const key of all) expect(reachOf(key)?.stray, key).toBe(strays.includes(key.slice(folder.length)));
    eventStrays ??= put('stray/', all);
    await eventStrays;
    const start = Date.parse(`${day}T00:00:00Z`);
    const walker = (start / SLICE_MS) % count;
    // A day listed in full (every key of the folder), and one whose folder the window lists (its parts and strays).
    const plans = [{ plan: { sinceMs: null, days: [day], untilMs: start + 2 * DAY_MS }, expected: all },
      { plan: { sinceMs: start + 30 * HOUR, days: [day], untilMs: start + 32 * HOUR }, expected: all.filter((k) => k.includes('-00-00-00-') || strays.includes(k.slice(folder.length))) }];
    for (const { plan, expected } of plans) {
      for (const pageSize of count === 4 ? [1000, 5] : [1000]) {
        const listed: string[] = [];
        for (let index = 0; index < count; index++) {
          prefixes = [];
          const got = await keys(new S3ObjectSource(client, 'out', 'stray/', pageSize), { ...plan, shard: { index, count } });
          for (const key of got) expect(shardOfKey(key, count), key).toBe(index);
          listed.push(...got);
          // Only the walker walks, with the delimiter `-`: the folder, then each run of names it goes
          // into (2026-, 2026-11-, the day, its 24 hours, its 00:00 run; 2025- and 2026-12- are
          // listed whole, the 00:00 run's parts and each hour's ten minutes passed over).
          const walked = new Set(prefixes.filter((p) => p.endsWith('|-')));
          expect(walked.size).toBe(index === walker ? 1 + 1 + 1 + 1 + 24 + 1 : 0);
        }
        expect(listed.sort(), `${plan.sinceMs} ${pageSize}`).toEqual(expected);
      }
    }
    // One process of no shard lists the folder whole: the same keys.
    if (count === 1) expect(await keys(new S3ObjectSource(client, 'out', 'stray/'), { days: [day], untilMs: start + 2 * DAY_MS })).toEqual(all);
  }, 300_000);
});