/**
 * The lean GetObject and ListObjectsV2 (ingest/object-source/s3-lean-get.ts): the same bytes as the
 * SDK's GetObjectCommand from moto, for keys S3 must see encoded, and the same pages as its
 * ListObjectsV2Command, for keys XML must escape; every request signed as SigV4 says,
 * checked by a local server with a verifier of its own (not the SDK's signer), session tokens
 * included; S3's errors shaped as the SDK's and retried as its standard strategy does.
 */
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { S3ObjectSource } from '../../../ingest/object-source/s3-object-source.js';
import { encodeKey, LeanGet, listPage, sdkListPage } from '../../../ingest/object-source/s3-lean-get.js';
import { startMoto, type Moto } from '../../support/moto.js';

const KEYS = ['plain-2026-11-01-00-00-00-ABC', 'with space/and+plus', "odd!'()*&$@=;:,?[]~", 'ünïcødé/日本', 'a//double/slash', '%41-percent'];

async function read(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of body) parts.push(Buffer.from(c));
  return Buffer.concat(parts);
}

const hmac = (key: Buffer | string, s: string): Buffer => createHmac('sha256', key).update(s).digest();
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const rfc3986 = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** SigV4 as AWS documents it, checked against the request as it arrived; null when it holds, else why not. */
function sigV4Problem(req: IncomingMessage, secrets: Record<string, string>): string | null {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(req.headers.authorization ?? '');
  if (!m) return `no SigV4 authorization header: ${req.headers.authorization}`;
  const [, accessKey, date, region, signedHeaders, signature] = m as unknown as [string, string, string, string, string, string];
  const secret = secrets[accessKey];
  if (secret === undefined) return `unknown access key ${accessKey}`;
  for (const h of ['host', 'x-amz-date', 'x-amz-content-sha256']) if (!signedHeaders.split(';').includes(h)) return `${h} is not signed`;
  if (req.headers['x-amz-security-token'] !== undefined && !signedHeaders.split(';').includes('x-amz-security-token')) return 'the session token is not signed';
  const [path, query = ''] = (req.url ?? '').split('?');
  const canonicalQuery = query.split('&').filter(Boolean).map((kv) => kv.split('=').map((p) => rfc3986(decodeURIComponent(p ?? ''))))
    .map(([k, v]) => `${k}=${v ?? ''}`).sort().join('&');
  const canonicalHeaders = signedHeaders.split(';').map((h) => `${h}:${String(req.headers[h] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonical = [req.method, path, canonicalQuery, canonicalHeaders, signedHeaders, req.headers['x-amz-content-sha256']].join('\n');
  const amzDate = String(req.headers['x-amz-date']);
  const toSign = ['AWS4-HMAC-SHA256', amzDate, `${date}/${region}/s3/aws4_request`, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), 's3'), 'aws4_request');
  return hmac(key, toSign).toString('hex') === signature ? null : 'the signature does not match';
}

interface Fake {
  url: string;
  /** Every request: the object key it asked for, whether the SDK sent it (its user agent), the status answered. */
  seen: Array<{ key: string; sdk: boolean; status: number; token?: string }>;
  /** Answers to give, per key, before the object itself: statuses with S3 error codes (and a Date header, S3's clock). */
  failures: Map<string, Array<{ status: number; code: string; date?: string }>>;
  close(): Promise<void>;
}

/** An S3 stand-in on 127.0.0.1 that refuses any request whose signature is wrong, serving `objects` (path style, bucket `logs`). */
async function fakeS3(objects: Map<string, Buffer>, secrets: Record<string, string>): Promise<Fake> {
  const seen: Fake['seen'] = [];
  const failures = new Map<string, Array<{ status: number; code: string; date?: string }>>();
  const server: Server = createServer((req, res) => {
    req.resume();
    const key = decodeURIComponent((req.url ?? '').split('?')[0]!.replace(/^\/logs\//, ''));
    const answer = (status: number, code?: string, date?: string): void => {
      seen.push({ key, sdk: /aws-sdk-js/.test(String(req.headers['user-agent'] ?? '') + String(req.headers['x-amz-user-agent'] ?? '')), status, ...(req.headers['x-amz-security-token'] ? { token: String(req.headers['x-amz-security-token']) } : {}) });
      if (code) {
        res.writeHead(status, { 'content-type': 'application/xml', ...(date ? { date } : {}) });
        res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${code} from the fake</Message><RequestId>1</RequestId></Error>`);
        return;
      }
      const body = objects.get(key)!;
      res.writeHead(200, { 'content-length': body.length, etag: '"e"' });
      res.end(body);
    };
    const problem = sigV4Problem(req, secrets);
    if (problem) return answer(403, 'SignatureDoesNotMatch');
    const fail = failures.get(key)?.shift();
    if (fail) return answer(fail.status, fail.code, fail.date);
    const query = new URL(req.url ?? '', 'http://x').searchParams;
    if (req.method === 'HEAD' && key === '') {
      // A HeadBucket.
      seen.push({ key: 'HEAD', sdk: /aws-sdk-js/.test(String(req.headers['user-agent'] ?? '') + String(req.headers['x-amz-user-agent'] ?? '')), status: 200 });
      res.writeHead(200);
      res.end();
      return;
    }
    if (query.get('list-type') === '2') {
      // A ListObjectsV2 of the bucket (its key here is ``): every object under the prefix, one page.
      seen.push({ key, sdk: /aws-sdk-js/.test(String(req.headers['user-agent'] ?? '') + String(req.headers['x-amz-user-agent'] ?? '')), status: 200, ...(req.headers['x-amz-security-token'] ? { token: String(req.headers['x-amz-security-token']) } : {}) });
      const esc = (t: string): string => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
      const under = [...objects.keys()].filter((k) => k.startsWith(query.get('prefix') ?? '')).sort();
      res.writeHead(200, { 'content-type': 'application/xml' });
      res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>logs</Name><Prefix>${esc(query.get('prefix') ?? '')}</Prefix><KeyCount>${under.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>`
        + under.map((k) => `<Contents><Key>${esc(k)}</Key><LastModified>2026-11-01T00:00:00.000Z</LastModified><ETag>&quot;e&quot;</ETag><Size>${objects.get(k)!.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`).join('')
        + '</ListBucketResult>');
      return;
    }
    if (!objects.has(key)) return answer(404, 'NoSuchKey');
    answer(200);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, failures, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('the lean GetObject and ListObjectsV2', () => {
  let moto: Moto;
  beforeAll(async () => { moto = await startMoto(['logs']); }, 60_000);
  afterAll(async () => { await moto.stop(); });

  it('encodes keys as the SDK does', () => {
    expect(encodeKey("a b/c+d!'()*")).toBe('a%20b/c%2Bd%21%27%28%29%2A');
    expect(encodeKey('日')).toBe('%E6%97%A5');
  });

  it('reads from moto the same bytes as the SDK, for keys S3 must see encoded', async () => {
    const client = moto.client();
    const bodies = KEYS.map((k, i) => Buffer.from(`object ${i} ${k}\n`.repeat(i + 1)));
    for (const [i, k] of KEYS.entries()) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: `access/${k}`, Body: bodies[i] }));
    const lean = new S3ObjectSource(moto.client(), 'logs', 'access/', 1000, 'lean');
    const sdk = new S3ObjectSource(moto.client(), 'logs', 'access/', 1000, 'sdk');
    for (const [i, k] of KEYS.entries()) {
      const ref = { key: k, size: bodies[i]!.length, etag: '' };
      expect(await read(await lean.open(ref))).toEqual(bodies[i]);
      expect(await read(await sdk.open(ref))).toEqual(bodies[i]);
    }
    // A key that is not there: the SDK's error shape (its code as the name, the status).
    await expect(lean.open({ key: 'missing', size: 1, etag: '' })).rejects.toMatchObject({ name: 'NoSuchKey', $metadata: { httpStatusCode: 404 } });
  });

  it('signs every request as SigV4 says (a verifier of its own), the session token too; after the first, the SDK is not on the path', async () => {
    const objects = new Map(KEYS.map((k, i) => [`access/${k}`, Buffer.from(`body ${i}`)]));
    const fake = await fakeS3(objects, { AKIDLEAN: 'lean-secret' });
    try {
      const client = new S3Client({ endpoint: fake.url, region: 'eu-west-1', forcePathStyle: true, credentials: { accessKeyId: 'AKIDLEAN', secretAccessKey: 'lean-secret', sessionToken: 'the-session' } });
      const source = new S3ObjectSource(client, 'logs', 'access/', 1000, 'lean');
      // Several reads at once from the start: they wait for the first, which shows the endpoint.
      const got = await Promise.all(KEYS.map(async (k) => (await read(await source.open({ key: k, size: 6, etag: '' }))).toString()));
      expect(got).toEqual(KEYS.map((_, i) => `body ${i}`));
      expect(fake.seen.every((s) => s.status === 200 && s.token === 'the-session')).toBe(true);
      expect(fake.seen.filter((s) => s.sdk)).toHaveLength(1);
      expect(fake.seen).toHaveLength(KEYS.length);
      // A wrong secret is refused by the verifier: it checks, it does not wave through.
      const wrong = new S3ObjectSource(new S3Client({ endpoint: fake.url, region: 'eu-west-1', forcePathStyle: true, maxAttempts: 1, credentials: { accessKeyId: 'AKIDLEAN', secretAccessKey: 'other' } }), 'logs', 'access/', 1000, 'lean');
      await expect(wrong.open({ key: KEYS[0]!, size: 6, etag: '' })).rejects.toMatchObject({ name: 'SignatureDoesNotMatch' });
    } finally {
      await fake.close();
    }
  });

  it("retries as the SDK's standard strategy does: throttling and server errors again, up to the client's attempts; client errors at once", async () => {
    const objects = new Map([['access/first', Buffer.from('1')], ['access/slow', Buffer.from('slow')], ['access/broken', Buffer.from('x')], ['access/denied', Buffer.from('x')]]);
    const fake = await fakeS3(objects, { AKID: 'secret' });
    try {
      const client = new S3Client({ endpoint: fake.url, region: 'us-east-1', forcePathStyle: true, maxAttempts: 3, credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' } });
      const source = new S3ObjectSource(client, 'logs', 'access/', 1000, 'lean');
      expect((await read(await source.open({ key: 'first', size: 1, etag: '' }))).toString()).toBe('1');
      fake.failures.set('access/slow', [{ status: 503, code: 'SlowDown' }, { status: 500, code: 'InternalError' }]);
      expect((await read(await source.open({ key: 'slow', size: 4, etag: '' }))).toString()).toBe('slow');
      expect(fake.seen.filter((s) => s.key === 'access/slow').map((s) => s.status)).toEqual([503, 500, 200]);
      fake.failures.set('access/broken', Array.from({ length: 5 }, () => ({ status: 500, code: 'InternalError' })));
      await expect(source.open({ key: 'broken', size: 1, etag: '' })).rejects.toMatchObject({ name: 'InternalError', $metadata: { httpStatusCode: 500 } });
      expect(fake.seen.filter((s) => s.key === 'access/broken')).toHaveLength(3);
      fake.failures.set('access/denied', [{ status: 403, code: 'AccessDenied' }]);
      await expect(source.open({ key: 'denied', size: 1, etag: '' })).rejects.toMatchObject({ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
      expect(fake.seen.filter((s) => s.key === 'access/denied')).toHaveLength(1);
      // A skewed clock: S3's Date corrects the client's offset (as the SDK does), and the request is made again.
      const s3Time = new Date(Date.now() + 3_600_000);
      fake.failures.set('access/first', [{ status: 403, code: 'RequestTimeTooSkewed', date: s3Time.toUTCString() }]);
      const before = Date.now();
      expect((await read(await source.open({ key: 'first', size: 1, etag: '' }))).toString()).toBe('1');
      const after = Date.now();
      expect(fake.seen.filter((s) => s.key === 'access/first').map((s) => s.status)).toEqual([200, 403, 200]);
      // The offset is S3's time (to the second, as its Date header says it) less the client's when it read it.
      const offset = (client.config as { systemClockOffset?: number }).systemClockOffset!;
      const said = Math.floor(s3Time.getTime() / 1000) * 1000;
      expect(offset).toBeGreaterThanOrEqual(said - after);
      expect(offset).toBeLessThanOrEqual(said - before);
      expect(fake.seen.filter((s) => s.sdk)).toHaveLength(1);
    } finally {
      await fake.close();
    }
  });

  it('reads a ListObjectsV2 answer as the SDK does: each key, size and ETag and each common prefix in order, entities decoded; anything else is an error', () => {
    const page = listPage('<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>logs</Name><Prefix>a/</Prefix>'
      + '<NextContinuationToken>1ue/x+y=</NextContinuationToken><KeyCount>3</KeyCount><MaxKeys>2</MaxKeys><Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>'
      + '<Contents><Key>a/ b+c&amp;&lt;d&gt;&#x41;&#66;&apos;</Key><LastModified>2026-11-01T00:00:00.000Z</LastModified><ETag>&quot;abc&quot;</ETag><Size>12</Size><Owner><ID>x</ID></Owner><StorageClass>STANDARD</StorageClass></Contents>'
      + '<Contents><Key>a/日本</Key><ETag>&#34;def-2&#34;</ETag><Size>0</Size></Contents>'
      + '<CommonPrefixes><Prefix>a/Prefix/</Prefix></CommonPrefixes></ListBucketResult>');
    expect(page).toEqual({
      Contents: [{ Key: "a/ b+c&<d>AB'", Size: 12, ETag: '"abc"' }, { Key: 'a/日本', Size: 0, ETag: '"def-2"' }],
      CommonPrefixes: [{ Prefix: 'a/Prefix/' }], IsTruncated: true, NextContinuationToken: '1ue/x+y=',
    });
    // The last page of a listing, and an empty one (no token).
    expect(listPage('<ListBucketResult><Name>logs</Name><Prefix/><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>'))
      .toEqual({ Contents: [], CommonPrefixes: [], IsTruncated: false });
    // Not a listing (a proxy's page, an error that came with 200), or an entry without its size: errors, never an empty page.
    expect(() => listPage('<html><body>502</body></html>')).toThrow(/no ListBucketResult/);
    expect(() => listPage('<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key></Contents></ListBucketResult>')).toThrow(/no Key or Size/);
    // The SDK's page read the same way: a key listed with no size is an error, not a size of 0 (which a fetch bounded by it would take as grown).
    expect(() => sdkListPage({ Contents: [{ Key: 'k', ETag: '"e"' }], IsTruncated: false })).toThrow(/no Key or Size/);
    expect(sdkListPage({ Contents: [{ Key: 'k', Size: 0 }], IsTruncated: false })).toEqual({ Contents: [{ Key: 'k', Size: 0, ETag: '' }], CommonPrefixes: [], IsTruncated: false });
    expect(() => listPage('<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>1</Size>')).toThrow(/unclosed/);
  });

  it("lists from moto what the SDK's ListObjectsV2Command lists, page by page, with and without a delimiter, for keys that XML must escape", async () => {
    const client = moto.client();
    const keys = [...KEYS, 'dir/<lt>&amp;"quote"', 'dir/sub/x', 'dir/sub/y', 'dir2/z'];
    for (const k of keys) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: `listed/${k}`, Body: k }));
    const learner = moto.client();
    const { lean, out: first } = await LeanGet.learnRoot(learner, 'logs', async () => sdkListPage(await learner.send(new ListObjectsV2Command({ Bucket: 'logs', Prefix: 'listed/', MaxKeys: 3 }))));
    expect(lean).not.toBeNull();
    expect(first.Contents).toHaveLength(3);
    for (const shape of [{ Prefix: 'listed/' }, { Prefix: 'listed/', Delimiter: '/' }, { Prefix: 'listed/dir', Delimiter: '/' }, { Prefix: 'listed/', StartAfter: 'listed/dir/sub/x' }]) {
      for (const MaxKeys of [2, 1000]) {
        const pages: unknown[][] = [[], []];
        for (const [i, list] of [(input: object) => lean!.list(input), async (input: object) => sdkListPage(await client.send(new ListObjectsV2Command({ Bucket: 'logs', ...input })))].entries()) {
          let token: string | undefined;
          do {
            const page = await list({ ...shape, MaxKeys, ...(token ? { ContinuationToken: token } : {}) });
            pages[i]!.push({ ...page, NextContinuationToken: undefined });
            token = page.IsTruncated ? page.NextContinuationToken : undefined;
          } while (token);
        }
        expect(pages[0], JSON.stringify(shape)).toEqual(pages[1]);
        expect(pages[0]!.length).toBeGreaterThan(0);
      }
    }
    const all = (pages: Array<{ Contents: Array<{ Key: string }> }>): string[] => pages.flatMap((p) => p.Contents.map((c) => c.Key));
    let token: string | undefined;
    const leanPages = [];
    do {
      const page = await lean!.list({ Prefix: 'listed/', MaxKeys: 4, ...(token ? { ContinuationToken: token } : {}) });
      leanPages.push(page);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    expect(all(leanPages)).toEqual(keys.map((k) => `listed/${k}`).sort((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b)))));
    // A prefix with nothing under it: an empty last page.
    expect(await lean!.list({ Prefix: 'nothing/' })).toEqual({ Contents: [], CommonPrefixes: [], IsTruncated: false });
  });

  it('lists through the lean path after the first listing, signed as SigV4 says, and reads every object after it without the SDK', async () => {
    const objects = new Map(KEYS.map((k, i) => [`access/${k}`, Buffer.from(`body ${i}`)]));
    const fake = await fakeS3(objects, { AKIDLEAN: 'lean-secret' });
    try {
      const client = new S3Client({ endpoint: fake.url, region: 'eu-west-1', forcePathStyle: true, maxAttempts: 3, credentials: { accessKeyId: 'AKIDLEAN', secretAccessKey: 'lean-secret', sessionToken: 'the-session' } });
      const source = new S3ObjectSource(client, 'logs', 'access/', 1000, 'lean');
      for (let round = 0; round < 3; round++) {
        const refs = [];
        for await (const r of source.list()) refs.push(r);
        expect(refs.map((r) => r.key)).toEqual([...KEYS].sort());
      }
      // A listing that fails with a server error is asked for again, as the SDK's retry strategy says.
      fake.failures.set('', [{ status: 503, code: 'SlowDown' }]);
      const again = [];
      for await (const r of source.list()) again.push(r);
      expect(again).toHaveLength(KEYS.length);
      const got = await Promise.all(KEYS.map(async (k) => (await read(await source.open({ key: k, size: 6, etag: '' }))).toString()));
      expect(got).toEqual(KEYS.map((_, i) => `body ${i}`));
      // Four listings and the reads, all signed right (the verifier refuses any other with 403), the session token on each; one by the SDK.
      expect(fake.seen.filter((s) => s.key === '').map((s) => s.status)).toEqual([200, 200, 200, 503, 200]);
      expect(fake.seen.every((s) => s.token === 'the-session' && (s.status === 200 || s.status === 503))).toBe(true);
      expect(fake.seen.filter((s) => s.sdk)).toHaveLength(1);
    } finally {
      await fake.close();
    }
  });

  it('learns the endpoint from the check of the bucket (one HeadBucket a source, however often it is checked): every listing and read after it is lean', async () => {
    const objects = new Map(KEYS.map((k, i) => [`access/${k}`, Buffer.from(`body ${i}`)]));
    const fake = await fakeS3(objects, { AKID: 'secret' });
    try {
      const source = new S3ObjectSource(new S3Client({ endpoint: fake.url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' } }), 'logs', 'access/', 1000, 'lean');
      await source.check();
      await source.check();
      const refs = [];
      for await (const r of source.list()) refs.push(r);
      expect(refs.map((r) => r.key)).toEqual([...KEYS].sort());
      expect((await read(await source.open(refs[0]!))).toString()).toMatch(/^body \d$/);
      expect(fake.seen.map((s) => [s.key === 'HEAD' ? 'HEAD' : s.key === '' ? 'LIST' : 'GET', s.sdk])).toEqual([['HEAD', true], ['LIST', false], ['GET', false]]);
      // With PINGROLL_S3_GET=sdk, the SDK lists and reads.
      const sdk = new S3ObjectSource(new S3Client({ endpoint: fake.url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' } }), 'logs', 'access/', 1000, 'sdk');
      await sdk.check();
      for await (const r of sdk.list()) void r;
      await read(await sdk.open(refs[0]!));
      expect(fake.seen.slice(3).map((s) => s.sdk)).toEqual([true, true, true]);
    } finally {
      await fake.close();
    }
  });
});
