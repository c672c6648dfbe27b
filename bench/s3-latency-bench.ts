/**
 * `make bench` (S3 part): the job bench's day (1M records in 3,000 objects) read over the S3 API with
 * S3's first-byte latency, against the same day from a directory. The objects are in moto's S3 server
 * behind a proxy that answers every request after a set delay (moto spends 2.5-5 ms of CPU per GET, one
 * at a time: too slow to time 3,000 of them directly): the proxy passes each request to moto once and
 * replays its answer from memory after that, the delay before every answer. `make rollup` runs cold,
 * with the default reads in flight, with 128, and with 4 (latency adding up), interleaved passes
 * (BENCH_S3_TARGET_ONLY=1: the directory and 25 ms with the default alone; BENCH_S3_THREADS=1: those
 * and 25 ms parsed in the run's own thread).
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { Agent, createServer, request, type IncomingHttpHeaders } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import PQueue from 'p-queue';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startMoto } from '../test/support/moto.js';
import { median } from './cold-run.js';
import { BENCH_DIR, rechunkedLogDir } from './bench-data.js';
import { benchLogDir } from './job-bench.js';

const DAY = '2026-11-01';
const ROOT = new URL('../../', import.meta.url).pathname;

/**
 * A proxy to `target` that answers after `latencyMs` (settable), replaying GET answers it has seen;
 * `firstGet` is when (process.hrtime, ns) the first GetObject since `setLatency` came.
 */
export async function latencyProxy(target: string): Promise<{ url: string; setLatency(ms: number): void; firstGet(): bigint | null; close(): void }> {
  const cache = new Map<string, { status: number; headers: IncomingHttpHeaders; body: Buffer }>();
  let latency = 0;
  let firstGet: bigint | null = null;
  // To moto one request at a time, each on a connection of its own (it serves one connection at a time).
  const toMoto = new Agent({ keepAlive: false, maxSockets: 1 });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const key = `${req.method} ${req.url}`;
      // A GetObject: a key after the bucket in its path (a listing's path is the bucket's alone).
      if (firstGet === null && req.method === 'GET' && /^\/[^/?]+\/[^?]/.test(req.url ?? '')) firstGet = process.hrtime.bigint();
      const reply = (a: { status: number; headers: IncomingHttpHeaders; body: Buffer }): void => {
        setTimeout(() => {
          res.writeHead(a.status, a.headers);
          res.end(a.body);
        }, latency);
      };
      const hit = req.method === 'GET' ? cache.get(key) : undefined;
      if (hit) return reply(hit);
      const up = request(`${target}${req.url}`, { method: req.method, headers: req.headers, agent: toMoto }, (r) => {
        const body: Buffer[] = [];
        r.on('data', (c: Buffer) => body.push(c));
        r.on('end', () => {
          // The body is replayed whole: framing headers are the proxy's own to set.
          const headers = { ...r.headers };
          for (const h of ['transfer-encoding', 'connection', 'keep-alive', 'content-length']) delete headers[h];
          const answer = { status: r.statusCode ?? 500, headers: { ...headers, 'content-length': String(Buffer.concat(body).length) }, body: Buffer.concat(body) };
          if (req.method === 'GET' && answer.status === 200) cache.set(key, answer);
          reply(answer);
        });
      });
      up.on('error', () => { res.writeHead(502); res.end(); });
      up.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, setLatency: (ms) => { latency = ms; firstGet = null; }, firstGet: () => firstGet,
    close: () => server.close(),
  };
}

/** A run: its wall time, pings, the proxy's CPU meanwhile, and (read over S3) when its first GetObject came, from its start. */
interface Run { seconds: number; pings: number; proxyCpu: number; firstGetMs: number | null }

/** `make rollup`, cold, in a child process (awaited, not synchronously: the proxy answers from this process). */
async function rollup(env: Record<string, string>, args = '', firstGet: () => bigint | null = () => null): Promise<Run> {
  const out = join(BENCH_DIR, 's3-job-out');
  await rm(out, { recursive: true, force: true });
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const child = spawn('make', ['-s', 'rollup', `DATE=${DAY}`, ...(args ? [`ARGS=${args}`] : [])], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env, PINGROLL_OUTPUT: join(out, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(out, 'wh.duckdb')}` },
  });
  let stdout = '', stderr = '';
  child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { stderr = (stderr + c.toString()).slice(-4000); });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  if (code !== 0) throw new Error(`make rollup failed: ${stderr.slice(-2000)}`);
  // This process is the proxy: the CPU it used while the run went on was taken from the run's cores.
  const got = firstGet();
  return { seconds, pings: Number(/: (\d+) pings/.exec(stdout)?.[1]), proxyCpu: (used.user + used.system) / 1e6, firstGetMs: got === null ? null : Number(got - started) / 1e6 };
}


async function main(): Promise<void> {
  // The job bench's day of real traffic (issue #57: an address a session, hundreds of user agents).
  const dir = await rechunkedLogDir((await benchLogDir(1_000_000)).dir, Number(process.env.BENCH_OBJECTS ?? 3000));
  const files = readdirSync(dir).sort();
  const moto = await startMoto(['logs']);
  const proxy = await latencyProxy(moto.endpoint);
  try {
    process.stderr.write(`uploading ${files.length} objects to moto\n`);
    // moto's server does not answer `Expect: 100-continue`, which the SDK sends with bodies over 2 MB.
    const client = new S3Client({ endpoint: moto.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'moto', secretAccessKey: 'moto' },
      requestChecksumCalculation: 'WHEN_REQUIRED', expectContinueHeader: false });
    // One request at a time: moto serves one connection at a time, and a kept-alive one blocks the rest.
    const uploads = new PQueue({ concurrency: 1 });
    for (const f of files) void uploads.add(() => client.send(new PutObjectCommand({ Bucket: 'logs', Key: `access/${f}`, Body: readFileSync(join(dir, f)) })));
    await uploads.onIdle();
    const s3env = { ...moto.env, AWS_ENDPOINT_URL_S3: proxy.url, PINGROLL_LOGS: 's3://logs/access/' };
    // One run through the proxy with no delay fills its replay cache.
    await rollup(s3env);
    const shapes: Array<{ name: string; latency: number; env: Record<string, string>; args: string }> = [
      { name: 'directory (the same files)', latency: 0, env: { PINGROLL_LOGS: dir }, args: '' },
      { name: 'S3 API, 25 ms first-byte latency, default reads in flight (64)', latency: 25, env: s3env, args: '' },
      { name: 'the same through the SDK\'s GetObjectCommand (`PINGROLL_S3_GET=sdk`)', latency: 25, env: { ...s3env, PINGROLL_S3_GET: 'sdk' }, args: '' },
      { name: 'S3 API, 25 ms first-byte latency, 128 reads in flight', latency: 25, env: s3env, args: '--concurrency 128' },
      { name: 'S3 API, 50 ms first-byte latency, default reads in flight (64)', latency: 50, env: s3env, args: '' },
      { name: 'S3 API, 25 ms first-byte latency, 4 reads in flight', latency: 25, env: s3env, args: '--concurrency 4' },
    ];
    // BENCH_S3_TARGET_ONLY=1: the directory and the target's shape (25 ms, default reads in flight) alone, for more passes in the time.
    if (process.env.BENCH_S3_TARGET_ONLY === '1') shapes.splice(2);
    // BENCH_S3_THREADS=1: those two and the target's shape parsed in the run's own thread, against what
    // `auto` gives 2 or 3 cores for a batch of S3 objects (a parsing thread fed by the run's thread).
    if (process.env.BENCH_S3_THREADS === '1') shapes.splice(2, shapes.length, { name: 'the same, parsed in the run\'s own thread (`PINGROLL_PARSE_THREADS=0`)', latency: 25, env: { ...s3env, PINGROLL_PARSE_THREADS: '0' }, args: '' });
    const passes = Number(process.env.BENCH_PASSES ?? 3);
    const runs = shapes.map(() => [] as Run[]);
    for (let p = 0; p < passes; p++) {
      for (const i of p % 2 ? [...shapes.keys()].reverse() : [...shapes.keys()]) {
        proxy.setLatency(shapes[i]!.latency);
        runs[i]!.push(await rollup(shapes[i]!.env, shapes[i]!.args, proxy.firstGet));
      }
      process.stderr.write(`pass ${p + 1}/${passes}\n`);
    }
    const same = runs.every((rs) => rs.every((r) => r.pings === runs[0]![0]!.pings));
    if (!same) process.exitCode = 1;
    process.stdout.write([
      `S3 latency bench: the job bench's day (${files.length.toLocaleString('en')} objects) through \`make rollup\`, cold, ${passes} interleaved passes, medians; the ratio is to the directory run of the same pass`,
      '',
      '| logs | wall s | vs directory | the proxy\'s CPU s (same cores) | first GetObject, ms from the start |',
      '|---|---:|---:|---:|---:|',
      ...shapes.map((s, i) => {
        const firsts = runs[i]!.flatMap((r) => (r.firstGetMs === null ? [] : [r.firstGetMs]));
        return `| ${s.name} | ${median(runs[i]!.map((r) => r.seconds)).toFixed(2)} | ${median(runs[i]!.map((r, p) => r.seconds / runs[0]![p]!.seconds)).toFixed(2)}x | ${median(runs[i]!.map((r) => r.proxyCpu)).toFixed(2)} | ${firsts.length ? Math.round(median(firsts)) : ''} |`;
      }),
      '',
      same ? `every run counted the same ${runs[0]![0]!.pings.toLocaleString('en')} pings` : 'the runs DIFFER in the pings they counted: a bug',
    ].join('\n') + '\n');
  } finally {
    proxy.close();
    await moto.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
