/**
 * The synthetic S3 endpoint of the scale benchmarks (test/support/synthetic-s3.ts), held to brute force on a
 * small log bucket through the S3 client pingroll makes: listings (pages, prefixes, start-after,
 * delimiters, a hidden tail), log objects that pingroll's own parser reads as distinct pings, the
 * output bucket's conditional writes, ranges, copies and deletes, the counters, and one real
 * `pingroll ingest` against it, then another after 5% more objects arrive.
 */
import { createReadStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CopyObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, type ListObjectsV2CommandInput,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_FOLDERS, startSyntheticS3, type SyntheticS3 } from './synthetic-s3.js';
import { s3ClientConfig } from '../../infra/aws/s3-client.js';
import { O_PING } from '../../ingest/access-log/outcome-codes.js';
import { ObjectParser } from '../../ingest/batch/object-parser.js';
import { nameStamp } from '../../ingest/listing/listing-window.js';
import { projectFile } from '../../lib/project-file.js';
import { OUTCOMES } from '../../ingest/ping-record.js';
import { parseStagedRow, stagedRowSpans } from '../../ingest/staged-ping.js';
import { DAY_MS } from '../../lib/utc-day.js';
import { MAX_PINGS_PER_SESSION_MINUTE } from '../../rollup/rules.js';
import { S3ObjectStore } from '../../state/object-store/s3-object-store.js';
import { tempRoots } from './job-fixture.js';
import { cli } from './cli.js';

const DAYS = [{ day: '2026-11-01', count: 1500 }, { day: '2026-11-02', count: 1000 }];
const RECORDS = 3;
const root = tempRoots();

/** The log keys as the endpoint promises them, made independently: day D's object i, delivered at D + i/count of a day. */
const EXPECTED = DAYS.flatMap(({ day, count }) => Array.from({ length: count }, (_, i) =>
  `logs/${nameStamp(Date.parse(`${day}T00:00:00Z`) + Math.floor((i * DAY_MS) / count))}-${i.toString(16).toUpperCase().padStart(16, '0')}`));

interface Listing { entries: string[]; keys: string[]; prefixes: string[]; sizes: number[]; etags: string[]; pages: number }

/** A listing followed to its end; `entries` holds keys and common prefixes in the order S3 lists them. */
async function listAll(client: S3Client, input: ListObjectsV2CommandInput): Promise<Listing> {
  const out: Listing = { entries: [], keys: [], prefixes: [], sizes: [], etags: [], pages: 0 };
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ ...input, ContinuationToken: token }));
    out.pages++;
    const here = [...(page.Contents ?? []).map((o) => o.Key!), ...(page.CommonPrefixes ?? []).map((p) => p.Prefix!)].sort();
    expect(page.KeyCount).toBe(here.length);
    out.entries.push(...here);
    for (const o of page.Contents ?? []) {
      out.keys.push(o.Key!);
      out.sizes.push(o.Size!);
      out.etags.push(o.ETag!);
      expect(o.StorageClass).toBe('STANDARD');
      expect(o.LastModified).toBeInstanceOf(Date);
    }
    out.prefixes.push(...(page.CommonPrefixes ?? []).map((p) => p.Prefix!));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

/** What S3 lists, by brute force over every key: after `startAfter`, under `prefix`, folders collapsed at `delimiter`. */
function bruteList(keys: string[], prefix = '', delimiter = '', startAfter = ''): string[] {
  const out: string[] = [];
  for (const k of [...keys].sort()) {
    if (!k.startsWith(prefix) || k <= startAfter) continue;
    const d = delimiter ? k.indexOf(delimiter, prefix.length) : -1;
    const entry = d < 0 ? k : k.slice(0, d + delimiter.length);
    if (out[out.length - 1] !== entry) out.push(entry);
  }
  return out;
}

function bodyOf(r: { Body?: unknown }): Promise<Uint8Array> {
  return (r.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray();
}

describe('the synthetic S3 endpoint', () => {
  let s3: SyntheticS3;
  let client: S3Client;
  let dir: string;

  beforeAll(async () => {
    dir = join(root(), 'out');
    s3 = await startSyntheticS3({ days: DAYS, prefix: 'logs/', dir, recordsPerObject: RECORDS, logBucket: 'logs', outputBucket: 'out' });
    // pingroll's own settings for an endpoint override.
    client = new S3Client({ ...s3ClientConfig({ s3EndpointOverride: true }), endpoint: s3.url, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  });
  afterAll(async () => {
    client?.destroy();
    await s3?.close();
  });

  it('lists every key in order, page by page, as brute force names them', async () => {
    expect(EXPECTED).toEqual([...EXPECTED].sort());
    const all = await listAll(client, { Bucket: 'logs' });
    expect(all.keys).toEqual(EXPECTED);
    expect(all.pages).toBe(3);
    expect(new Set(all.sizes).size).toBe(1);
    expect(new Set(all.etags).size).toBe(EXPECTED.length);
    const small = await listAll(client, { Bucket: 'logs', Prefix: 'logs/', MaxKeys: 333 });
    expect([small.keys, small.pages]).toEqual([EXPECTED, Math.ceil(EXPECTED.length / 333)]);
    // S3 sends 1000 keys at most, whatever is asked.
    const big = await client.send(new ListObjectsV2Command({ Bucket: 'logs', MaxKeys: 5000 }));
    expect([big.KeyCount, big.IsTruncated]).toEqual([1000, true]);
  });

  it('lists a prefix, from a start-after, with folders collapsed at a delimiter, as brute force does', async () => {
    for (const prefix of ['logs/2026-11-01-03-1', 'logs/2026-11-02-23', 'logs/2026-11-0', 'logs/2026-11-01-00-00-00-', 'logs/2026-11-03', 'nope/', `${EXPECTED[777]}`]) {
      expect((await listAll(client, { Bucket: 'logs', Prefix: prefix, MaxKeys: 100 })).keys, prefix).toEqual(bruteList(EXPECTED, prefix));
    }
    const cases: Array<[prefix: string, delimiter: string, startAfter: string]> = [
      ['', '', EXPECTED[1234]!],
      ['', '', `${EXPECTED[1499]!}Z`],
      ['logs/2026-11-01-03-1', '', 'logs/2026-11-01-03-15'],
      // pingroll's windowed listing: the top's keys after a stamp, folders collapsed.
      ['logs/', '/', `logs/${nameStamp(Date.parse('2026-11-02T20:00:00Z'))}`],
      ['', '/', ''],
      ['', '/', 'logs/'],
      ['logs/2026-11-01-', '-', ''],
      ['logs/2026-11-01-', '-', 'logs/2026-11-01-05-30'],
      ['logs/2026-11-0', '-', 'logs/2026-11-01-23-59-59'],
    ];
    for (const [prefix, delimiter, startAfter] of cases) {
      // Small pages where folders collapse: a page can end, and the next start, inside a folder.
      const got = await listAll(client, { Bucket: 'logs', Prefix: prefix, Delimiter: delimiter || undefined, StartAfter: startAfter || undefined, MaxKeys: delimiter ? 5 : 250 });
      expect(got.entries, `${prefix} ${delimiter} ${startAfter}`).toEqual(bruteList(EXPECTED, prefix, delimiter, startAfter));
    }
    // The bucket's top, as pingroll first lists it under a prefix: the prefix's folder alone.
    expect(await listAll(client, { Bucket: 'logs', Delimiter: '/' })).toMatchObject({ keys: [], prefixes: ['logs/'], pages: 1 });
    expect((await listAll(client, { Bucket: 'logs', Prefix: 'logs/2026-11-01-', Delimiter: '-' })).prefixes).toHaveLength(24);
  });

  it('hides the tail of a day until it is made visible, in process or over HTTP', async () => {
    s3.setVisible('2026-11-01', 1400);
    const hidden = EXPECTED.slice(1400, 1500);
    expect((await listAll(client, { Bucket: 'logs' })).keys).toEqual(EXPECTED.filter((k) => !hidden.includes(k)));
    await expect(client.send(new GetObjectCommand({ Bucket: 'logs', Key: hidden[0] }))).rejects.toMatchObject({ name: 'NoSuchKey' });
    await expect(client.send(new HeadObjectCommand({ Bucket: 'logs', Key: hidden[99] }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
    const r = await fetch(`${s3.url}/__visible`, { method: 'POST', body: JSON.stringify({ day: '2026-11-01', count: 1500 }) });
    expect(r.status).toBe(200);
    expect((await listAll(client, { Bucket: 'logs' })).keys).toEqual(EXPECTED);
    expect((await fetch(`${s3.url}/__visible`, { method: 'POST', body: JSON.stringify({ day: '2026-11-01', count: 1501 }) })).status).toBe(400);
    expect(() => s3.setVisible('2026-10-31', 1)).toThrow(/no day 2026-10-31/);
  });

  it('serves log objects of the listed size, each of distinct pings that pingroll\'s parser accepts', async () => {
    const listing = await listAll(client, { Bucket: 'logs' });
    const picked = [...listing.keys.keys()].filter((n) => n % 25 === 0 || n === 1499 || n === 1500 || n === EXPECTED.length - 1);
    const rows: string[] = [];
    const parser = new ObjectParser({
      pingKeys: ['p.gif'], dir: root(), name: 'synthetic', partBytes: 1 << 30,
      onPart: (path) => { rows.push(path); },
    });
    const delivered = new Map<string, number>();
    for (const n of picked) {
      const key = listing.keys[n]!;
      const got = await client.send(new GetObjectCommand({ Bucket: 'logs', Key: key }));
      const bytes = await bodyOf(got);
      expect(bytes.length).toBe(listing.sizes[n]);
      expect(got.ETag).toBe(listing.etags[n]);
      const head = await client.send(new HeadObjectCommand({ Bucket: 'logs', Key: key }));
      expect([head.ContentLength, head.ETag]).toEqual([listing.sizes[n], listing.etags[n]]);
      const day = key.slice(5, 15);
      const parsed = parser.parse({ index: n, key, day, bytes });
      expect(parsed.unreadable).toBeUndefined();
      // Every record a ping of the object's own day: no other outcome, no rejects.
      expect(parsed.counts).toEqual([[day, OUTCOMES.map((_, k) => (k === O_PING ? RECORDS : 0))]]);
      for (let j = 0; j < RECORDS; j++) delivered.set(`${n}:${j}`, Date.parse(`${day}T${key.slice(16, 24).replace(/-/g, ':')}Z`));
    }
    parser.flush();
    expect(rows).toHaveLength(1);
    const csv = await readFile(rows[0]!);
    const pings = [];
    for (const [s, e] of stagedRowSpans(csv)) pings.push(parseStagedRow(csv, s, e));
    expect(pings).toHaveLength(picked.length * RECORDS);
    expect(new Set(pings.map((p) => p.pingId)).size).toBe(pings.length);
    expect(new Set(pings.map((p) => p.naturalKey)).size).toBe(pings.length);
    // Each a few seconds before its object's delivery (its name's second), never before its day.
    const times = [...delivered.values()];
    pings.forEach((p, k) => {
      const at = times[k]!;
      expect(p.eventTimeMs).toBeLessThanOrEqual(at);
      expect(p.eventTimeMs).toBeGreaterThanOrEqual(Math.max(Math.floor(at / DAY_MS) * DAY_MS, at - 60_000));
      expect(p.user).toMatch(/^u\d+$/);
    });
    // A range of a log object.
    const whole = await bodyOf(await client.send(new GetObjectCommand({ Bucket: 'logs', Key: EXPECTED[5] })));
    const part = await client.send(new GetObjectCommand({ Bucket: 'logs', Key: EXPECTED[5], Range: 'bytes=10-19' }));
    expect([part.ContentRange, Buffer.from(await bodyOf(part)).toString()]).toEqual([`bytes 10-19/${whole.length}`, Buffer.from(whole.subarray(10, 20)).toString()]);
    await expect(client.send(new GetObjectCommand({ Bucket: 'logs', Key: 'logs/2026-11-01-00-00-00-0000000000000001' }))).rejects.toMatchObject({ name: 'NoSuchKey' });
  });

  it('sends each session\'s pings a minute apart from a browser, as a player does, at a busy day\'s density too', async () => {
    // 150,000 pings a day, 104 a minute: consecutive records in one session would be dozens a minute,
    // and pingroll would leave every such session out as automated traffic (contract §10).
    const busy = await startSyntheticS3({ days: [{ day: '2026-11-03', count: 3000 }], prefix: 'b/', dir: root(), recordsPerObject: 50, logBucket: 'logs', outputBucket: 'out' });
    try {
      const rows: string[] = [];
      const parser = new ObjectParser({ pingKeys: ['p.gif'], dir: root(), name: 'busy', partBytes: 1 << 30, onPart: (path) => { rows.push(path); } });
      const keys = Array.from({ length: 3000 }, (_, i) => `b/${nameStamp(Date.parse('2026-11-03T00:00:00Z') + Math.floor((i * DAY_MS) / 3000))}-${i.toString(16).toUpperCase().padStart(16, '0')}`);
      for (let i = 0; i < keys.length; i += 100) {
        const bodies = await Promise.all(keys.slice(i, i + 100).map(async (key) => new Uint8Array(await (await fetch(`${busy.url}/logs/${key}`)).arrayBuffer())));
        bodies.forEach((bytes, k) => parser.parse({ index: i + k, key: keys[i + k]!, day: '2026-11-03', bytes }));
      }
      parser.flush();
      const csv = await readFile(rows[0]!);
      const perMinute = new Map<string, number>();
      const sessions = new Set<string>();
      let pings = 0, ruled = 0;
      for (const [s, e] of stagedRowSpans(csv)) {
        const p = parseStagedRow(csv, s, e);
        if (p.agentRule !== null) ruled++;
        const k = `${p.session} ${Math.floor(p.eventTimeMs / 60_000)}`;
        perMinute.set(k, (perMinute.get(k) ?? 0) + 1);
        sessions.add(p.session);
        pings++;
      }
      expect(pings).toBe(150_000);
      // Its user agent is a browser's, on no bot list.
      expect(ruled).toBe(0);
      expect([...perMinute.values()].reduce((a, b) => Math.max(a, b), 0)).toBeLessThanOrEqual(MAX_PINGS_PER_SESSION_MINUTE);
      // Half-hour sessions: 30 pings each (the day's last few fewer).
      expect(sessions.size).toBeGreaterThanOrEqual(5000);
      expect(sessions.size).toBeLessThan(5000 + 105);
    } finally {
      await busy.close();
    }
  });

  it('keeps the output bucket on disk: conditional writes, ranges, copies, deletes, listings', async () => {
    const store = new S3ObjectStore(client, 'out', 'o/');
    await store.check();
    await store.put('a/b.json', Buffer.from('0123456789'));
    expect((await store.get('a/b.json'))?.toString()).toBe('0123456789');
    expect(await store.size('a/b.json')).toBe(10);
    expect((await store.getRange('a/b.json', 2, 6))?.toString()).toBe('2345');
    expect((await store.getRange('a/b.json', 8, 20))?.toString()).toBe('89');
    expect(await store.getRange('a/b.json', 10, 20)).toEqual(Buffer.alloc(0));
    // If-None-Match: the run lock's write; of ten at once, one wins.
    expect(await store.putIfAbsent('lock', Buffer.from('me'))).toBe(true);
    expect(await store.putIfAbsent('lock', Buffer.from('you'))).toBe(false);
    await expect(client.send(new PutObjectCommand({ Bucket: 'out', Key: 'o/lock', Body: 'x', IfNoneMatch: '*' }))).rejects.toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } });
    expect((await store.get('lock'))?.toString()).toBe('me');
    expect((await Promise.all(Array.from({ length: 10 }, (_, i) => store.putIfAbsent('race', Buffer.from(String(i)))))).filter(Boolean)).toHaveLength(1);
    // A file streamed up (3 MB: the SDK asks Expect: 100-continue first).
    const file = join(root(), 'big.bin');
    const big = Buffer.alloc(3 << 20, 7);
    big.write('start');
    await writeFile(file, big);
    await store.put('big.bin', { file });
    expect((await store.get('big.bin'))?.equals(big)).toBe(true);
    // The SDK's defaults stream it aws-chunked, its checksum in a trailer: stored as the plain bytes.
    const plain = new S3Client({ endpoint: s3.url, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    await plain.send(new PutObjectCommand({ Bucket: 'out', Key: 'o/chunked.bin', Body: createReadStream(file), ContentLength: big.length }));
    plain.destroy();
    expect((await store.get('chunked.bin'))?.equals(big)).toBe(true);
    // Keys that need encoding, and a key that is also a folder.
    const odd = ['odd/a b+c%d', 'odd/ünï', 'odd/./..//x', 'odd/a', 'odd/a/b'];
    for (const k of odd) await store.put(k, Buffer.from(k));
    for (const k of odd) expect((await store.get(k))?.toString()).toBe(k);
    // Enough keys for listings of several pages.
    const many = Array.from({ length: 1010 }, (_, i) => `many/${String(i * 7919 % 1010).padStart(4, '0')}`);
    for (let i = 0; i < many.length; i += 100) await Promise.all(many.slice(i, i + 100).map((k) => store.put(k, Buffer.from(k))));
    const keys = ['a/b.json', 'lock', 'race', 'big.bin', 'chunked.bin', ...odd, ...many];
    expect(await store.list('')).toEqual([...keys].sort());
    expect(await store.list('many/01')).toEqual(bruteList(many, 'many/01'));
    expect((await listAll(client, { Bucket: 'out', Prefix: 'o/', Delimiter: '/' })).entries).toEqual(bruteList(keys.map((k) => `o/${k}`), 'o/', '/'));
    expect((await listAll(client, { Bucket: 'out', Prefix: 'o/many/', StartAfter: 'o/many/0500', MaxKeys: 77 })).keys).toEqual(bruteList(many.map((k) => `o/${k}`), 'o/many/', '', 'o/many/0500'));
    // A move is a copy and a delete.
    await store.move('a/b.json', 'c/d.json');
    expect([(await store.get('c/d.json'))?.toString(), await store.get('a/b.json'), await store.size('a/b.json')]).toEqual(['0123456789', null, null]);
    await expect(client.send(new GetObjectCommand({ Bucket: 'out', Key: 'o/a/b.json' }))).rejects.toMatchObject({ name: 'NoSuchKey' });
    // A copy from the log bucket.
    const copied = await client.send(new CopyObjectCommand({ Bucket: 'out', Key: 'o/copied', CopySource: encodeURI(`logs/${EXPECTED[3]}`) }));
    expect(copied.CopyObjectResult?.ETag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(await store.get('copied')).toEqual(Buffer.from(await bodyOf(await client.send(new GetObjectCommand({ Bucket: 'logs', Key: EXPECTED[3] })))));
    await store.delete('copied');
    await store.delete('never-was');
    expect(await store.get('copied')).toBeNull();
    // The log bucket is read-only; other buckets do not exist.
    await expect(client.send(new PutObjectCommand({ Bucket: 'logs', Key: 'x', Body: 'x' }))).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    await expect(client.send(new ListObjectsV2Command({ Bucket: 'nope' }))).rejects.toMatchObject({ name: 'NoSuchBucket' });
    // Another server on the same folder serves what this one stored.
    const again = await startSyntheticS3({ days: [], dir });
    try {
      const other = new S3ObjectStore(new S3Client({ ...s3ClientConfig({ s3EndpointOverride: true }), endpoint: again.url, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } }), 'out', 'o/');
      expect(await other.list('')).toEqual(await store.list(''));
      expect((await other.get('odd/./..//x'))?.toString()).toBe('odd/./..//x');
      expect((await other.getRange('big.bin', 0, 5))?.toString()).toBe('start');
    } finally {
      await again.close();
    }
  });

  it('counts requests and body bytes by bucket and operation, here and over HTTP', async () => {
    s3.resetStats();
    await listAll(client, { Bucket: 'logs' });
    const a = await bodyOf(await client.send(new GetObjectCommand({ Bucket: 'logs', Key: EXPECTED[0] })));
    const b = await bodyOf(await client.send(new GetObjectCommand({ Bucket: 'logs', Key: EXPECTED[2499] })));
    await client.send(new PutObjectCommand({ Bucket: 'out', Key: 'o/counted', Body: Buffer.alloc(1234) }));
    await client.send(new GetObjectCommand({ Bucket: 'out', Key: 'o/not-there' })).catch(() => {});
    const st = s3.stats();
    expect(st.buckets.logs!.ops.ListObjectsV2).toMatchObject({ requests: 3, errors: 0, bytesIn: 0 });
    expect(st.buckets.logs!.ops.GetObject).toEqual({ requests: 2, errors: 0, bytesIn: 0, bytesOut: a.length + b.length });
    expect(st.buckets.out!.ops.PutObject).toEqual({ requests: 1, errors: 0, bytesIn: 1234, bytesOut: 0 });
    expect(st.buckets.out!.ops.GetObject).toMatchObject({ requests: 1, errors: 1 });
    expect(st.total.requests).toBe(7);
    expect(st.total.bytesOut).toBe(st.buckets.logs!.total.bytesOut + st.buckets.out!.total.bytesOut);
    const served = await (await fetch(`${s3.url}/__stats`)).json() as typeof st;
    expect({ ...served, cpuMs: null }).toEqual({ ...st, cpuMs: null });
    expect((await fetch(`${s3.url}/__stats/reset`, { method: 'POST' })).status).toBe(200);
    expect(s3.stats()).toMatchObject({ total: { requests: 0, bytesOut: 0 }, buckets: {} });
  });

  it('runs a real pingroll ingest: every visible object parsed, then only the 5% delivered since', async () => {
    const env = {
      PATH: process.env.PATH ?? '', TMPDIR: process.env.TMPDIR ?? '/tmp', PINGROLL_LOGS: 's3://logs/logs/', PINGROLL_OUTPUT: 's3://out/ingest/', PINGROLL_WAREHOUSE: 'none',
      AWS_ENDPOINT_URL_S3: s3.url, AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'x', AWS_REGION: 'us-east-1',
    };
    // Each run on a clock of its own, as the nightly job's (test/support/fake-clock.mjs): the first when 950 of
    // the 2nd's objects are delivered (22:48), asked for the day before (the 1st), so that it follows
    // delivery days from then on; the second at the day's end.
    const at = (iso: string) => ({ ...env, NODE_OPTIONS: `--import ${projectFile('test/support/fake-clock.mjs')}`, BENCH_CLOCK_MS: String(Date.parse(iso)) });
    s3.setVisible('2026-11-02', 950);
    const first = await cli(at('2026-11-02T22:50:00Z'), 'ingest');
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`^ingest: 2450 log objects parsed, ${2450 * RECORDS} records`));
    s3.setVisible('2026-11-02', 1000);
    s3.resetStats();
    const second = await cli(at('2026-11-02T23:59:00Z'), 'ingest');
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout).toMatch(new RegExp(`^ingest: 50 log objects parsed, ${50 * RECORDS} records`));
    // Only the new objects are read; the listing follows the window, not the bucket.
    const logs = s3.stats().buckets.logs!.ops;
    expect(logs.GetObject?.requests).toBe(50);
    expect(logs.ListObjectsV2!.requests).toBeLessThan(5);
  });
});

describe('the synthetic S3 endpoint, event layout (PartitionedPrefix by EventTime)', () => {
  let s3: SyntheticS3;
  let client: S3Client;
  /** Day D's object i: in D's date folder, at 00-00-00, its unique part i modulo 256 (two digits), then i / 256 (14). */
  const eventKeys = (visible: number): string[] => DAYS.flatMap(({ day, count }) => Array.from({ length: Math.min(count, day === '2026-11-01' ? visible : count) }, (_, i) =>
    `logs/${EVENT_FOLDERS}${day.replace(/-/g, '/')}/${day}-00-00-00-${(i % 256).toString(16).padStart(2, '0').toUpperCase()}${Math.floor(i / 256).toString(16).padStart(14, '0').toUpperCase()}`)).sort();
  const keys = eventKeys(Infinity);

  beforeAll(async () => {
    s3 = await startSyntheticS3({ days: DAYS, prefix: 'logs/', dir: join(root(), 'out'), recordsPerObject: RECORDS, layout: 'event' });
    client = new S3Client({ ...s3ClientConfig({ s3EndpointOverride: true }), endpoint: s3.url, region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  });
  afterAll(async () => {
    client?.destroy();
    await s3?.close();
  });

  it('lists its keys, by prefix, part and folder, as brute force does, and serves each; its parts hold a day, and its first objects, evenly', async () => {
    expect((await listAll(client, { Bucket: 'logs' })).keys).toEqual(keys);
    // The first objects delivered (a day's visible ones) are spread over every part.
    for (const visible of [1, 255, 256, 257, 700, 1499]) {
      s3.setVisible('2026-11-01', visible);
      expect((await listAll(client, { Bucket: 'logs', MaxKeys: 333 })).keys, `${visible}`).toEqual(eventKeys(visible));
    }
    s3.setVisible('2026-11-01', 1500);
    const folder = `logs/${EVENT_FOLDERS}2026/11/01/`;
    for (const [prefix, delimiter, startAfter] of [['logs/', '/', ''], [`logs/${EVENT_FOLDERS}`, '/', ''], [folder, '', ''], [`${folder}2026-11-01-00-00-00-A7`, '', ''],
      // A part as a key range (ingest/listing/slices.ts, partRange: 9F, A9), and the 00:00 slice after the parts.
      [`${folder}2026-11-01-00-00-00-`, '', `${folder}2026-11-01-00-00-00-9E~`], [`${folder}2026-11-01-00-00-00-A`, '', `${folder}2026-11-01-00-00-00-A8~`],
      [`${folder}2026-11-01-00-0`, '', `${folder}2026-11-01-00-00-00.`], [`logs/${EVENT_FOLDERS}2026/11/`, '/', `logs/${EVENT_FOLDERS}2026/11/01/~`]] as const) {
      const got = await listAll(client, { Bucket: 'logs', Prefix: prefix, Delimiter: delimiter || undefined, StartAfter: startAfter || undefined, MaxKeys: 97 });
      expect(got.entries, `${prefix} ${delimiter} ${startAfter}`).toEqual(bruteList(keys, prefix, delimiter, startAfter));
    }
    const parts = new Map<string, number>();
    for (const k of keys.filter((k) => k.startsWith(folder))) parts.set(k.slice(folder.length + 20, folder.length + 22), (parts.get(k.slice(folder.length + 20, folder.length + 22)) ?? 0) + 1);
    expect([parts.size, Math.max(...parts.values()) - Math.min(...parts.values())]).toEqual([256, 1]);
    for (const key of [keys[0]!, keys[777]!, keys.at(-1)!]) expect((await bodyOf(await client.send(new GetObjectCommand({ Bucket: 'logs', Key: key })))).length).toBeGreaterThan(0);
    await expect(client.send(new GetObjectCommand({ Bucket: 'logs', Key: `${folder}2026-11-01-00-00-00-00FFFFFFFFFFFFFF` }))).rejects.toMatchObject({ name: 'NoSuchKey' });
  });
});
