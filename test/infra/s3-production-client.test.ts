/**
 * The S3 client as production configures it (no endpoint override: infra/aws/s3-client.ts): virtual-
 * hosted addressing on AWS's own host names, HTTPS, and the SDK's default checksums (a CRC on every
 * upload, response checksums asked for and checked), the lean GET included. Every other test sets an
 * endpoint, so path style and checksums "when required" are all they run. Here the client keeps its
 * production endpoint and only its sockets are sent to 127.0.0.1: a TLS proxy with a certificate for
 * *.s3.amazonaws.com (made by openssl for the test, trusted by this client alone) records each
 * request, decodes the SDK's aws-chunked uploads and checks their CRC32 trailers, answers GETs with
 * a CRC32 of the body, and forwards path-style to moto's S3 server.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, request as httpsRequest, Agent } from 'node:https';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:tls';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { S3Client, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3ClientConfig } from '../../infra/aws/s3-client.js';
import { S3ObjectSource } from '../../ingest/object-source/s3-object-source.js';
import { S3ObjectStore } from '../../state/object-store/s3-object-store.js';
import { startMoto, type Moto } from '../support/moto.js';
import { rm, tempDir } from '../support/job-fixture.js';

interface Seen { method: string; host: string; path: string; checksum: string | null; chunked: boolean; verified: boolean | null; mode: string | null }

const crcOf = (b: Buffer): string => { const v = Buffer.alloc(4); v.writeUInt32BE(crc32(b) >>> 0); return v.toString('base64'); };

/** The payload of an aws-chunked body (signed or unsigned chunks), and its trailing headers. */
function unchunk(body: Buffer): { payload: Buffer; trailers: Record<string, string> } {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    const size = parseInt(body.subarray(at, eol).toString('latin1').split(';')[0]!, 16);
    at = eol + 2;
    if (size === 0) break;
    parts.push(body.subarray(at, at + size));
    at += size + 2;
  }
  const trailers: Record<string, string> = {};
  for (const line of body.subarray(at).toString('latin1').split('\r\n')) {
    const m = /^([^:]+):(.*)$/.exec(line);
    if (m) trailers[m[1]!.toLowerCase()] = m[2]!.trim();
  }
  return { payload: Buffer.concat(parts), trailers };
}

describe('the S3 client as production configures it', () => {
  let moto: Moto;
  let dir: string;
  let proxy: ReturnType<typeof createServer>;
  let port = 0;
  let ca = '';
  const seen: Seen[] = [];
  /** A GET's answer whose checksum is wrong (to see the SDK check it). */
  let corrupt = false;

  beforeAll(async () => {
    moto = await startMoto(['logs', 'rollups']);
    dir = tempDir();
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=s3.amazonaws.com',
      '-addext', 'subjectAltName=DNS:s3.amazonaws.com,DNS:*.s3.amazonaws.com,DNS:*.s3.us-east-1.amazonaws.com', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    ca = readFileSync(join(dir, 'cert.pem'), 'utf8');
    const target = new URL(moto.env.AWS_ENDPOINT_URL_S3!);
    proxy = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: ca }, (req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const host = String(req.headers.host ?? '').replace(/:\d+$/, '');
        const bucket = /^([^.]+)\.s3(?:\.[a-z0-9-]+)?\.amazonaws\.com$/.exec(host)?.[1] ?? null;
        let body: Buffer = Buffer.concat(chunks);
        const chunked = String(req.headers['content-encoding'] ?? '').includes('aws-chunked');
        let checksum = (req.headers['x-amz-checksum-crc32'] as string | undefined) ?? null;
        if (chunked) {
          const { payload, trailers } = unchunk(body);
          body = payload;
          checksum = trailers['x-amz-checksum-crc32'] ?? checksum;
        }
        seen.push({ method: req.method!, host, path: req.url!, checksum, chunked, verified: checksum === null ? null : checksum === crcOf(body), mode: (req.headers['x-amz-checksum-mode'] as string | undefined) ?? null });
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && !/^(host|content-length|content-encoding|x-amz-decoded-content-length|x-amz-trailer|transfer-encoding|x-amz-content-sha256|x-amz-checksum-|x-amz-sdk-checksum)/.test(k)) headers[k] = v;
        headers['content-length'] = String(body.length);
        const out = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: bucket ? `/${bucket}${req.url}` : req.url, headers }, (up) => {
          const back: Buffer[] = [];
          up.on('data', (c: Buffer) => back.push(c));
          up.on('end', () => {
            const got = Buffer.concat(back);
            const h: Record<string, string> = {};
            for (const [k, v] of Object.entries(up.headers)) if (typeof v === 'string' && !/^(content-length|transfer-encoding|x-amz-checksum-)/.test(k)) h[k] = v;
            // A whole object's GET answered with its CRC32, as S3 does when asked (x-amz-checksum-mode).
            if (req.method === 'GET' && up.statusCode === 200 && !String(req.headers.range ?? '') && !req.url!.includes('list-type')) h['x-amz-checksum-crc32'] = corrupt ? crcOf(Buffer.from('not these bytes')) : crcOf(got);
            h['content-length'] = String(got.length);
            res.writeHead(up.statusCode!, h);
            res.end(got);
          });
        });
        out.end(body);
      });
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    port = (proxy.address() as { port: number }).port;
  }, 60_000);
  afterAll(async () => {
    await new Promise((r) => proxy?.close(r));
    await moto?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The production client's settings, its sockets sent to the proxy (the host names, TLS and SNI unchanged). */
  function productionClient(): S3Client {
    const agent = new Agent({ ca, keepAlive: true });
    // Each connection to 127.0.0.1, whatever host it was for; TLS still checks the name it asked for (SNI, the certificate).
    (agent as unknown as { createConnection: (opts: { servername?: string; host?: string }) => unknown }).createConnection = (opts) =>
      connect({ host: '127.0.0.1', port, ca, servername: opts.servername ?? opts.host });
    const settings = s3ClientConfig({ s3EndpointOverride: false });
    return new S3Client({ ...settings, region: 'us-east-1', credentials: { accessKeyId: 'moto', secretAccessKey: 'moto' }, requestHandler: new NodeHttpHandler({ httpsAgent: agent }) });
  }
  void httpsRequest;

  it('addresses buckets by virtual host over HTTPS, sends a CRC32 with every upload and checks the one S3 answers with, through the store, the listing and the lean GET', async () => {
    const client = productionClient();
    const store = new S3ObjectStore(client, 'rollups', 'pingroll/');
    await store.put('a/one.json', Buffer.from('{"n":1}'));
    await store.put('a/two.gz', Buffer.from('tagged'), { 'pingroll-kind': 'rejects' });
    await store.move('a/two.gz', 'b/two.gz');
    expect((await store.get('a/one.json'))!.toString()).toBe('{"n":1}');
    expect(await store.list('')).toEqual(['pingroll/a/one.json', 'pingroll/b/two.gz'].map((k) => k.slice('pingroll/'.length)));
    await store.delete('a/one.json');
    // Log objects: the first listing by the SDK (which shows the lean path the endpoint), every read by the lean GET.
    for (const k of ['x-1', 'x-2', 'x-3']) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: `logs/2026-11-01-00-00-0${k.at(-1)}-${k}`, Body: `line of ${k}\n` }));
    // A client of its own, as a run's source has (S3ObjectSource.from).
    const source = new S3ObjectSource(productionClient(), 'logs', 'logs/');
    const refs = [];
    for await (const r of source.list()) refs.push(r);
    expect(refs).toHaveLength(3);
    for (const r of refs) {
      const parts: Buffer[] = [];
      for await (const c of await source.open(r)) parts.push(Buffer.from(c));
      expect(Buffer.concat(parts).toString()).toBe(`line of ${r.key.split('-').slice(-2).join('-')}\n`);
    }
    // Every request by virtual host (the bucket in the host name, AWS's own), over TLS.
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.every((s) => /^(rollups|logs)\.s3\.us-east-1\.amazonaws\.com$/.test(s.host))).toBe(true);
    // Every upload with a CRC32 of its bytes (the SDK's default), which the proxy found right.
    const puts = seen.filter((s) => s.method === 'PUT' && !s.path.includes('x-id=CopyObject') && !/tagging/.test(s.path));
    expect(puts.length).toBeGreaterThanOrEqual(5);
    expect(puts.every((s) => s.checksum !== null && s.verified === true)).toBe(true);
    // The SDK's GETs ask for the checksum (the store's); the lean GET's do not (s3-lean-get.ts: the bytes come over TLS, and its size is checked).
    const gets = seen.filter((s) => s.method === 'GET' && !s.path.includes('list-type'));
    expect(gets.filter((s) => s.mode === 'ENABLED').length).toBeGreaterThanOrEqual(1);
    expect(gets.filter((s) => s.host.startsWith('logs.')).map((s) => s.mode), JSON.stringify(gets)).toEqual([null, null, null]);
    // And the SDK checks it: a wrong one fails the GET.
    corrupt = true;
    try {
      await expect((async () => {
        const r = await client.send(new GetObjectCommand({ Bucket: 'logs', Key: refs[0]!.key.startsWith('logs/') ? refs[0]!.key : `logs/${refs[0]!.key}` }));
        await r.Body!.transformToString();
      })()).rejects.toThrow(/checksum/i);
    } finally {
      corrupt = false;
    }
  }, 60_000);
});
