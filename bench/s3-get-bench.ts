/**
 * `make bench` (S3 GET part): the CPU one GetObject of a small log object costs pingroll's process,
 * layer by layer. A local HTTP server in a process of its own answers every GET with a 626-byte body
 * (one ping record, the scale bench's objects), so the CPU measured is the client's alone: the SDK's
 * GetObjectCommand with its default settings and with pingroll's, pingroll's lean getter
 * (ingest/object-source/s3-lean-get.ts, what a run uses), the same signed request on a bare
 * keep-alive `http.request`, and an unsigned one (the floor). 16 requests in flight, as a run has;
 * interleaved passes, medians.
 */
import { spawn } from 'node:child_process';
import { createServer, Agent, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SignatureV4 } from '@smithy/signature-v4';
import type { HttpRequest } from '@smithy/types';
import { s3ClientConfig } from '../infra/aws/s3-client.js';
import { S3ObjectSource } from '../ingest/object-source/s3-object-source.js';
import { median } from './cold-run.js';

const BODY = Buffer.alloc(626, 'a');
const IN_FLIGHT = 16;

/** The server: its own process, so its CPU is not the client's. Prints its port. */
function serve(): void {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-length': BODY.length, etag: '"0123456789abcdef0123456789abcdef"', 'content-type': 'application/octet-stream', 'last-modified': new Date(0).toUTCString() });
    res.end(BODY);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
}

async function drain(body: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const c of body) n += c.length;
  return n;
}

/** CPU milliseconds of this process per GET, `count` GETs with IN_FLIGHT at once (after a warm-up). */
async function cpuPerGet(get: (i: number) => Promise<AsyncIterable<Uint8Array>>, count: number): Promise<number> {
  for (let i = 0; i < 300; i++) await drain(await get(i));
  const c0 = process.cpuUsage();
  let next = 0;
  let bytes = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < count) {
      const n = await drain(await get(next++));
      bytes += n;
    }
  }));
  const c = process.cpuUsage(c0);
  if (bytes !== count * BODY.length) throw new Error(`read ${bytes} bytes, expected ${count * BODY.length}`);
  return (c.user + c.system) / 1000 / count;
}

async function main(): Promise<void> {
  const child = spawn(process.execPath, [new URL(import.meta.url).pathname, 'serve'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  const endpoint = `http://127.0.0.1:${port}`;
  const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
  const base = { endpoint, region: 'us-east-1', forcePathStyle: true, credentials };
  // pingroll's settings without the endpoint override's checksum choices, which real S3 does not get.
  const { requestChecksumCalculation: _a, responseChecksumValidation: _b, forcePathStyle: _c, ...ours } = s3ClientConfig({ s3EndpointOverride: true });
  const sdkDefault = new S3Client(base);
  const sdkOurs = new S3Client({ ...ours, ...base });
  const lean = new S3ObjectSource(new S3Client({ ...ours, ...base }), 'logs', 'access/', 1000, 'lean');
  const agent = new Agent({ keepAlive: true, maxSockets: 50 });
  const signer = new SignatureV4({ credentials, region: 'us-east-1', service: 's3', sha256: sdkOurs.config.sha256, uriEscapePath: false, applyChecksum: false });
  const signed = async (i: number): Promise<HttpRequest> => signer.sign({
    method: 'GET', protocol: 'http:', hostname: '127.0.0.1', port, path: `/logs/access/key-${i}`, query: {},
    headers: { host: `127.0.0.1:${port}`, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
  } as unknown as HttpRequest) as Promise<HttpRequest>;
  const raw = (path: string, headers: Record<string, string>): Promise<IncomingMessage> => new Promise((resolve, reject) => {
    const r = request({ agent, hostname: '127.0.0.1', port, path, headers }, resolve);
    r.on('error', reject);
    r.end();
  });
  const layers: Array<{ name: string; get: (i: number) => Promise<AsyncIterable<Uint8Array>> }> = [
    { name: "the SDK's GetObjectCommand, its default settings", get: async (i) => (await sdkDefault.send(new GetObjectCommand({ Bucket: 'logs', Key: `access/key-${i}` }))).Body as AsyncIterable<Uint8Array> },
    { name: "the SDK's GetObjectCommand, pingroll's settings (cached middleware stack)", get: async (i) => (await sdkOurs.send(new GetObjectCommand({ Bucket: 'logs', Key: `access/key-${i}` }))).Body as AsyncIterable<Uint8Array> },
    { name: "pingroll's lean getter (the SDK's signer, credentials, HTTP handler, retry strategy)", get: (i) => lean.open({ key: `key-${i}`, size: BODY.length, etag: '' }) },
    { name: 'the same signed request on a bare keep-alive http.request', get: async (i) => { const r = await signed(i); return raw(r.path, r.headers); } },
    { name: 'an unsigned keep-alive http.request (the floor)', get: (i) => raw(`/logs/access/key-${i}`, {}) },
  ];
  const count = Number(process.env.BENCH_GETS ?? 4000);
  const passes = Number(process.env.BENCH_PASSES ?? 3);
  const ms = layers.map(() => [] as number[]);
  try {
    for (let p = 0; p < passes; p++) {
      for (const i of p % 2 ? [...layers.keys()].reverse() : [...layers.keys()]) ms[i]!.push(await cpuPerGet(layers[i]!.get, count));
      process.stderr.write(`pass ${p + 1}/${passes}\n`);
    }
  } finally {
    child.kill();
    agent.destroy();
  }
  const sdk = median(ms[0]!);
  process.stdout.write([
    `GetObject of a ${BODY.length}-byte object from a local server (its own process): this process's CPU per GET, ${count.toLocaleString('en')} GETs with ${IN_FLIGHT} in flight, ${passes} interleaved passes, medians (node ${process.version})`,
    '',
    '| how | CPU ms per GET | vs the SDK default |',
    '|---|---:|---:|',
    ...layers.map((l, i) => `| ${l.name} | ${median(ms[i]!).toFixed(3)} | ${(median(ms[i]!) / sdk).toFixed(2)}x |`),
    '',
    `target: pingroll's getter <= 0.35 ms: ${median(ms[2]!) <= 0.35 ? 'met' : '**missed**'}`,
  ].join('\n') + '\n');
}

if (process.argv[2] === 'serve') serve();
else if (import.meta.url === `file://${process.argv[1]}`) await main();
