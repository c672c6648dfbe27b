/**
 * `make bench-scale`: pingroll at internet scale, on this machine. A synthetic S3 endpoint
 * (test/support/synthetic-s3.ts, its own process) computes a day of log objects (200k to 16M) that nobody
 * uploads, and keeps pingroll's output on disk. Real pingroll processes ingest it as N shards, run one
 * after another and counted as if at once, then roll the day up (`rollup --no-ingest`).
 *
 * For each size: a first state (95% of the day, delivered up to ~22:48), then for N = 1, 8 and 64
 * an incremental run as the last 5% arrive, each from a copy of that first state. Figures per shard
 * come from the endpoint's counters (LIST requests on the log bucket, bytes read from and written to
 * the output) and from each process (peak RSS and heap, CPU, wall). Then ten consecutive days, to show
 * that what a run costs does not grow with the history.
 *
 * The first state is made by a real run up to REAL_FIRST_MAX objects. Past that it is synthesized
 * (the objects' keys, the ledger's own commit and compaction, staged pings made by SQL from the same
 * formulas the endpoint uses, the listing state and seals a real run leaves); before it is used, a
 * synthesized state of SYNTH_CHECK objects is checked to equal a real first run's: the same parsed
 * keys, the same staged rows, the same seals and listing state.
 *
 * Each pingroll process runs on a clock that starts at the delivery time being replayed
 * (test/support/fake-clock.mjs): listing windows follow the clock, and a day replayed weeks later would
 * otherwise list every slice in between.
 *
 * Both of the layouts S3 names access logs in (BENCH_SCALE_LAYOUT): SimplePrefix (`simple`, names by
 * delivery time), and PartitionedPrefix by EventTime (`event`, the stack's own: every name of a day at
 * 00-00-00, spread over the day's 256 parts by its unique part, ingest/listing/slices.ts).
 *
 * Environment: BENCH_SCALE_SIZES (default 200000,1000000,4000000,16000000), BENCH_SCALE_SHARDS
 * (1,8,64), BENCH_SCALE_LAYOUT (simple,event), BENCH_SCALE_DAYS (ten-day run: objects a day, default
 * 20000; 0 skips it), BENCH_SCALE_MARGIN (the listing margin in minutes, default pingroll's),
 * BENCH_SCALE_NEW (the new share, 0.05), BENCH_SCALE_WINDOW_PAIRS (pairs of the day republished with the
 * ping-id window off and on, after its rollup; default 0), BENCH_SCALE_LISTINGS (0: no scheduled full
 * listings after the rollup).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { S3Client } from '@aws-sdk/client-s3';
import { openEngine, queryRows, sqlString } from '../lib/duckdb-engine.js';
import { DAY_MS } from '../lib/utc-day.js';
import { LISTING_KEY, SEALS, stagingPrefix } from '../datasets/layout.js';
import { Ledger, type BatchCommit, type InputObject } from '../state/ledger.js';
import { saveListing } from '../ingest/listing/listing-state.js';
import { firstDateFolder } from '../ingest/listing/listing-window.js';
import { S3ObjectStore } from '../state/object-store/s3-object-store.js';
import { Seals, SliceTallies, sliceStart } from '../ingest/listing/seals.js';
import { EVENT_PARTS, PARTITION_LATE_DAYS, partSlice, SLICE_MS } from '../ingest/listing/slices.js';
import { DEFAULTS } from '../infra/config.js';
import { MAX_BATCH_OBJECTS } from '../ingest/batch/ingest-batch.js';
import { BENCH_DIR } from './bench-data.js';
import { median } from './cold-run.js';
import { gitRevision } from '../infra/version.js';
import { availableParallelism } from 'node:os';
import { EVENT_FOLDERS, eventUnique, recordsAMinute, type LogLayout, type Stats } from '../test/support/synthetic-s3.js';
import { LISTER_RULES } from '../ingest/listing/lister.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const DAY = '2026-11-01';
const DAY_START = Date.parse(`${DAY}T00:00:00Z`);
const PREFIX = 'logs/';
/** The share of the day the incremental run finds new (BENCH_SCALE_NEW, default 5%). */
const NEW_SHARE = Number(process.env.BENCH_SCALE_NEW ?? 0.05);
const FIRST_SHARE = 1 - NEW_SHARE;
/** Up to this many objects the first state is a real run's. */
const REAL_FIRST_MAX = 200_000;
/** The size at which a synthesized first state is checked against a real one. */
const SYNTH_CHECK = 3_000;
const WORK = join(BENCH_DIR, 'scale');
const MARGIN_MIN = Number(process.env.BENCH_SCALE_MARGIN ?? DEFAULTS.listMarginMinutes);

const list = (v: string | undefined, dflt: string): number[] => (v ?? dflt).split(',').filter(Boolean).map(Number);

/** The layout being measured (BENCH_SCALE_LAYOUT, each in turn). */
let layout: LogLayout = 'simple';

// ---------------------------------------------------------------- the endpoint, in its own process

interface Endpoint { url: string; proc: ChildProcess }

async function startEndpoint(dir: string, days: Array<{ day: string; count: number; visible: number }>): Promise<Endpoint> {
  const args = [join(ROOT, 'dist/test/support/synthetic-s3.js'), '--dir', dir, '--prefix', PREFIX,
    '--days', days.map((d) => `${d.day}:${d.count}`).join(','), '--visible', days.map((d) => `${d.day}:${d.visible}`).join(','), '--layout', layout];
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`synthetic-s3 exited ${code}`)));
  });
  return { url: line.trim(), proc };
}

async function stopEndpoint(e: Endpoint): Promise<void> {
  const exited = new Promise((resolve) => e.proc.once('exit', resolve));
  e.proc.kill('SIGTERM');
  await exited;
}

async function control<T>(e: Endpoint, method: string, path: string, body?: unknown): Promise<T> {
  const r = await fetch(`${e.url}${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

// ---------------------------------------------------------------- pingroll processes

interface Proc { seconds: number; cpuSeconds: number; maxRssMiB: number; peakHeapMiB: number; stdout: string; ingestDone: Record<string, unknown> | null }
interface Measured extends Proc { lists: number; gets: number; stateRead: number; stateWritten: number }

let reportN = 0;

/** One pingroll process on the endpoint, its clock at `clockMs`; what it cost, by its own count and the endpoint's. */
async function pingroll(e: Endpoint, out: string, clockMs: number, args: string[], extraEnv: Record<string, string> = {}): Promise<Measured> {
  await control(e, 'POST', '/__stats/reset');
  const report = join(WORK, `report-${process.pid}-${reportN++}.json`);
  const env = {
    ...process.env, PINGROLL_LOGS: `s3://logs/${PREFIX}`, PINGROLL_OUTPUT: `s3://out/${out}/`, PINGROLL_WAREHOUSE: `duckdb:${join(WORK, `${out}.duckdb`)}`,
    AWS_ENDPOINT_URL_S3: e.url, AWS_ACCESS_KEY_ID: 'bench', AWS_SECRET_ACCESS_KEY: 'bench', AWS_REGION: 'us-east-1',
    BENCH_REPORT: report, BENCH_CLOCK_MS: String(clockMs), ...extraEnv,
  };
  const node = [`--import`, join(ROOT, 'bench/report-rss.mjs'), '--import', join(ROOT, 'test/support/fake-clock.mjs'), join(ROOT, 'bin/pingroll.js'), ...args, '--list-margin', String(MARGIN_MIN)];
  let ingestDone: Record<string, unknown> | null = null;
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, node, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let so = '', se = '';
    child.stdout.on('data', (d: Buffer) => { so += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { se = (se + d.toString()).slice(-4000); });
    // What the run listed, from its own event.
    createInterface({ input: child.stderr }).on('line', (line) => { if (line.includes('"event":"ingest.done"')) ingestDone = JSON.parse(line) as Record<string, unknown>; });
    child.on('close', (c) => resolve({ code: c, stdout: so, stderr: se }));
  });
  if (code !== 0) throw new Error(`pingroll ${args.join(' ')} exited ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`);
  const r = JSON.parse(await readFile(report, 'utf8')) as { maxRssKiB: number; seconds: number; cpuSeconds: number; peakHeapMiB: number };
  await rm(report, { force: true });
  const s = await control<Stats>(e, 'GET', '/__stats');
  const op = (bucket: string, name: string) => s.buckets[bucket]?.ops[name];
  const outOps = Object.values(s.buckets.out?.ops ?? {});
  return {
    seconds: r.seconds, cpuSeconds: r.cpuSeconds, maxRssMiB: r.maxRssKiB / 1024, peakHeapMiB: r.peakHeapMiB, stdout, ingestDone,
    lists: op('logs', 'ListObjectsV2')?.requests ?? 0, gets: op('logs', 'GetObject')?.requests ?? 0,
    stateRead: outOps.reduce((n, c) => n + c.bytesOut, 0), stateWritten: outOps.reduce((n, c) => n + c.bytesIn, 0),
  };
}

/** The shards of an ingest, one after another (as if at once: each is measured alone). */
async function shards(e: Endpoint, out: string, clockMs: number, n: number): Promise<Measured[]> {
  const runs: Measured[] = [];
  for (let i = 0; i < n; i++) runs.push(await pingroll(e, out, clockMs, n === 1 ? ['ingest'] : ['ingest', '--shard', `${i}/${n}`]));
  return runs;
}

const parsed = (m: Measured): number => Number(/: (\d+) log objects parsed/.exec(m.stdout)?.[1] ?? NaN);

// ---------------------------------------------------------------- the day's objects, as the endpoint makes them

/**
 * Object i of a day of `count`: its key, delivery time, the time its name says (the delivery time's
 * second; an event-time name's: the day's start) and listed etag (the endpoint's formulas).
 */
function objectOf(count: number, i: number): { key: string; deliveredMs: number; nameMs: number; etag: string } {
  const deliveredMs = DAY_START + Math.floor((i * DAY_MS) / count);
  const sec = Math.floor(Math.floor((i * DAY_MS) / count) / 1000);
  const p2 = (n: number): string => String(n).padStart(2, '0');
  const hex = (n: number, d: number): string => n.toString(16).padStart(d, '0');
  const etag = `${hex(DAY_START / DAY_MS, 8)}${hex(i, 16)}${hex(1, 8)}`;
  if (layout === 'event') return { key: `${EVENT_FOLDERS}${DAY.replace(/-/g, '/')}/${DAY}-00-00-00-${eventUnique(i)}`, deliveredMs, nameMs: DAY_START, etag };
  const key = `${DAY}-${p2(Math.floor(sec / 3600))}-${p2(Math.floor(sec / 60) % 60)}-${p2(sec % 60)}-${hex(i, 16).toUpperCase()}`;
  return { key, deliveredMs, nameMs: DAY_START + sec * 1000, etag };
}

/** Bytes of one object's body: one record of fixed width (measured from the endpoint once). */
let objectBytes = 0;

// ---------------------------------------------------------------- a synthesized first state

/**
 * What a real `pingroll ingest` of the first `visible` objects leaves, made directly: batches of
 * MAX_BATCH_OBJECTS committed and compacted by the ledger itself, each with its staged pings (SQL from
 * the endpoint's formulas for the records), then the listing state and the seals.
 */
async function synthesize(e: Endpoint, out: string, count: number, visible: number): Promise<void> {
  const client = new S3Client({ endpoint: e.url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
  const store = new S3ObjectStore(client, 'out', `${out}/`);
  const ledger = await Ledger.load(store, LISTER_RULES, { migrate: true });
  const dir = join(WORK, 'synth');
  await mkdir(dir, { recursive: true });
  const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: 2048 });
  // A seal's digest is of its slice's keys in the order a listing gives them, key order: the simple
  // layout's objects are made in it. The event layout's 00:00 parts interleave here (object i is in
  // part i % 256), but a first state, whose watermark is the day's start, seals none of them.
  const tallies = new SliceTallies();
  try {
    for (let from = 0, n = 0; from < visible; from += MAX_BATCH_OBJECTS, n++) {
      const to = Math.min(visible, from + MAX_BATCH_OBJECTS);
      const batch = `20261101T${String(n).padStart(6, '0')}Z-synth${String(n).padStart(3, '0')}`;
      const objects: InputObject[] = [];
      for (let i = from; i < to; i++) {
        const o = objectOf(count, i);
        objects.push({ key: `${o.key}`, size: objectBytes, etag: o.etag, records: 1 });
        tallies.add(o.key, o.etag);
      }
      const file = join(dir, `${batch}.parquet`);
      await engine.run(`COPY (${stagedRowsSql(count, from, to)}) TO ${sqlString(file)} (FORMAT parquet, COMPRESSION snappy)`);
      const stagedKey = `${stagingPrefix(batch)}dt=${DAY}/part-0.parquet`;
      await store.put(stagedKey, { file, move: true });
      const commit: BatchCommit = {
        batch, committedAt: new Date().toISOString(), objects,
        days: { [DAY]: { pings: [stagedKey], pingCount: objects.length, rejects: null, outcomes: { s3: { ping: objects.length } }, inputs: objects.map((_, k) => k) } },
      };
      await ledger.commit(commit);
      await ledger.compact();
    }
    // The listing state a real run leaves: the latest name it saw (an event-time name's: the day's
    // start); its window's slices sealed.
    const watermark = objectOf(count, visible - 1).nameMs;
    // A first ingest (of yesterday, by its clock) follows delivery days from the day before DAY, and lists them whole from there.
    const clock = clockAfter(count, visible);
    const yesterday = new Date(clock - DAY_MS).toISOString().slice(0, 10);
    await saveListing(store, { watermark: new Date(watermark).toISOString(), from: yesterday, final: [], listed: { [yesterday]: new Date(clock).toISOString() } });
    const seals = new Seals(store);
    const nextSince = sliceStart(watermark - MARGIN_MIN * 60_000);
    for (const t of tallies.values()) if ((t.number + 1) * SLICE_MS <= nextSince) await seals.seal(t);
  } finally {
    engine.closeSync();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The staged rows of objects [from, to) of the day, one record each, as parsing the endpoint's bodies stages them. */
function stagedRowsSql(count: number, from: number, to: number): string {
  const dnum = DAY_START / DAY_MS;
  const hex = (x: string, d: number): string => `lower(lpad(to_hex(${x}), ${d}, '0'))`;
  const delivered = `(${DAY_START} + (i * ${DAY_MS}) // ${count})`;
  const at = `greatest(${DAY_START}, ${delivered} - (2 + i % 57) * 1000 - i % 1000)`;
  // A session: every minute-th record, 30 of them, as the endpoint makes them (synthetic-s3.ts, body).
  const minute = recordsAMinute(count, 1);
  const s = `((i // ${minute * 30}) * ${minute} + i % ${minute})`;
  return `SELECT 's3' AS source, 's' || (1000 + ${s} % 40) AS series, 'e' || (10 + (${s} // 40) % 12) AS episode,
      ${hex(String(dnum), 8)} || '-5e55-4000-8000-' || ${hex(s, 12)} AS session, 'u' || (1000000 + ${s} % 900000) AS user_id,
      ${hex(String(dnum), 8)} || '-0000-4000-8000-' || ${hex('i', 12)} AS ping_id, ((${at}) // 1000) * 1000 AS event_ms,
      'r:' || upper(${hex(String(dnum), 4)} || ${hex('i', 8)} || '0000') AS natural_key
    FROM range(${from}, ${to}) AS t(i)`;
}

/** When the run that saw the first `visible` objects ran: five minutes after the last was delivered. */
function clockAfter(count: number, visible: number): number {
  return visible >= count ? DAY_START + DAY_MS + 5 * 60_000 : objectOf(count, visible - 1).deliveredMs + 5 * 60_000;
}

/** What a first state holds, to compare a synthesized one with a real one. */
async function stateOf(e: Endpoint, out: string): Promise<unknown> {
  const client = new S3Client({ endpoint: e.url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });
  const store = new S3ObjectStore(client, 'out', `${out}/`);
  const ledger = await Ledger.load(store, LISTER_RULES);
  const keys = createHash('sha256');
  let parsedKeys = 0;
  const slices = [...Array.from({ length: 144 }, (_, k) => `${String(Math.floor(k / 6)).padStart(2, '0')}-${k % 6}0`), ...Array.from({ length: EVENT_PARTS }, (_, p) => partSlice(p))];
  for (const slice of slices) for (const k of [...(await ledger.parsedIn(DAY, slice))].sort()) {
    keys.update(`${k}\n`);
    parsedKeys++;
  }
  const dir = join(WORK, 'compare');
  await mkdir(dir, { recursive: true });
  const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: 1024 });
  try {
    const files: string[] = [];
    for (const input of await ledger.inputsFor(DAY)) for (const [n, key] of (input.staged.pings ?? []).entries()) {
      const file = join(dir, `${input.id}-${n}.parquet`);
      await store.download(key, file);
      files.push(file);
    }
    const rows = await queryRows<{ n: bigint; digest: string }>(engine, `SELECT count(*) AS n, md5(string_agg(concat_ws('|', source, series, episode, session, user_id, ping_id, event_ms, natural_key), ',' ORDER BY natural_key)) AS digest
      FROM read_parquet([${files.map(sqlString).join(', ')}], hive_partitioning = false)`);
    const listing = JSON.parse((await store.get(LISTING_KEY))!.toString()) as { watermark: string };
    return { parsedKeys, keys: keys.digest('hex'), stagedRows: Number(rows[0]!.n), stagedDigest: rows[0]!.digest, seals: (await store.list(SEALS)).sort(), watermark: listing.watermark };
  } finally {
    engine.closeSync();
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- the runs

const fmt = (n: number, d = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const mib = (b: number): string => fmt(b / 2 ** 20, 1);

interface Row { layout: LogLayout; size: number; n: number; runs: Measured[]; rollup: Measured; newObjects: number; slicesListed: number; exact: boolean; first: string; passes: Pass[]; window: WindowPairs | null }

/** The day republished (`backfill --force --no-ingest`) with the ping-id window off and on (W = 30), alternating: what the window costs the rollup. */
interface WindowPairs { off: Measured[]; on: Measured[] }

/** BENCH_SCALE_LISTINGS=0 leaves out the day's three scheduled full listings (which no rollup setting touches). */
const LISTINGS = process.env.BENCH_SCALE_LISTINGS !== '0';

/** BENCH_SCALE_WINDOW_PAIRS (default 0): pairs of republications, window off then on, after the day's rollup. */
const WINDOW_PAIRS = Number(process.env.BENCH_SCALE_WINDOW_PAIRS ?? 0);

/** One scheduled full listing of the day (and of any other delivery day due then), by N shards. */
interface Pass { after: string; runs: Measured[]; days: string[]; found: number; parsedSlicesRead: number; sealedUnchanged: number; windowSlices: number; dayParts: number }

/** Delivery days a run listed in full (its ingest.done event). */
const daysListed = (m: Measured): string[] => (m.ingestDone?.deliveryDaysListedInFull as string[] | undefined) ?? [];

/** Slices its window listed (from its start to the run's clock; a shard's own among them): what its ingest.done event says. */
const windowSlices = (m: Measured, clockMs: number, n: number): number => {
  const from = m.ingestDone?.windowFrom;
  if (typeof from !== 'string') return 0;
  const since = Date.parse(from);
  // An event-time folder's parts: a shard lists its share of them, in each folder the window lists.
  return Math.ceil((Math.floor(clockMs / SLICE_MS) - Math.floor(since / SLICE_MS) + 1 + (layout === 'event' ? EVENT_PARTS * eventFolders(since, clockMs) : 0)) / n);
};

/** The days a pass listed in full whose date folders its window does not list (s3-object-source.ts: those it lists are not listed again). */
function foldersListed(pass: Measured[]): number {
  const from = pass[0]?.ingestDone?.windowFrom;
  const first = typeof from === 'string' ? firstDateFolder(Date.parse(from)) : null;
  return new Set(pass.flatMap(daysListed).filter((d) => first === null || d < first)).size;
}

/** The date folders a window from `sinceMs` to `clockMs` lists by their parts: those it lists whole before its first midnight (ingest/listing/listing-window.ts), and each midnight's. */
function eventFolders(sinceMs: number, clockMs: number): number {
  return Math.ceil(sinceMs / DAY_MS) - (Math.floor(sinceMs / DAY_MS) - PARTITION_LATE_DAYS) + Math.floor(clockMs / DAY_MS) - Math.ceil(sinceMs / DAY_MS) + 1;
}

/** The requests an event-time day of `size` names takes past one a part: a part is listed whole, 1,000 names a request. */
function dayPages(size: number): number {
  return EVENT_PARTS * (Math.ceil(size / EVENT_PARTS / 1000) - 1);
}

/** A first state of `count` objects (95% visible) under `firstDir`, by a real run or synthesized. */
async function firstState(count: number, firstDir: string): Promise<string> {
  const visible = Math.floor(count * FIRST_SHARE);
  await rm(firstDir, { recursive: true, force: true });
  const e = await startEndpoint(firstDir, [{ day: DAY, count, visible }]);
  try {
    if (count <= REAL_FIRST_MAX) {
      const [run] = await shards(e, 'o', clockAfter(count, visible), 1);
      if (parsed(run!) !== visible) throw new Error(`the first run parsed ${parsed(run!)} objects of ${visible}`);
      return `real run (${fmt(run!.seconds, 0)} s)`;
    }
    const started = Date.now();
    await synthesize(e, 'o', count, visible);
    return `synthesized (${fmt((Date.now() - started) / 1000, 0)} s)`;
  } finally {
    await stopEndpoint(e);
  }
}

async function incremental(size: number, n: number, firstDir: string, first: string): Promise<Row> {
  const dir = join(WORK, `run-${size}-${n}`);
  await rm(dir, { recursive: true, force: true });
  await cp(firstDir, dir, { recursive: true });
  await rm(join(WORK, 'o.duckdb'), { force: true });
  const visible = Math.floor(size * FIRST_SHARE);
  const e = await startEndpoint(dir, [{ day: DAY, count: size, visible: size }]);
  try {
    const clock = clockAfter(size, size);
    const runs = await shards(e, 'o', clock, n);
    const rollup = await pingroll(e, 'o', clock, ['rollup', '--date', DAY, '--no-ingest']);
    const pings = Number(/: (\d+) pings/.exec(rollup.stdout)?.[1] ?? NaN);
    const newObjects = size - visible;
    const got = runs.reduce((k, r) => k + parsed(r), 0);
    // The window: from the first state's watermark less the margin, on a slice's edge, to the clock.
    const since = sliceStart(objectOf(size, visible - 1).nameMs - MARGIN_MIN * 60_000);
    // And a slice for each slice of a delivery day it listed in full (144 a day): a shard lists its own by
    // prefix. An event-time day's 00:00 slice is listed as its 256 parts: for each midnight the window
    // holds and each date folder it lists whole before its first (ingest/listing/listing-window.ts), and each
    // day listed in full; and the event-time day's names, which say nothing of when they were
    // delivered, once whole (a request per 1,000 names of a part, a part's first counted already).
    const full = [...new Set(runs.flatMap(daysListed))];
    // A day's folder the window lists is not listed again (s3-object-source.ts).
    const fullFolders = full.filter((d) => d < firstDateFolder(since)).length;
    const slicesListed = Math.floor(clock / SLICE_MS) - Math.floor(since / SLICE_MS) + 1 + 144 * full.length + (layout === 'event' ? EVENT_PARTS * (eventFolders(since, clock) + fullFolders) + dayPages(size) : 0);
    // The day's scheduled full listings: 2 hours, 1 day and 3 days after it ends, each five minutes after it is due.
    const passes: Pass[] = [];
    for (const [after, ms] of LISTINGS ? [['2 h', 2 * 3_600_000], ['1 day', DAY_MS], ['3 days', 3 * DAY_MS]] as const : []) {
      const at = DAY_START + DAY_MS + ms + 5 * 60_000;
      const pass = await shards(e, 'o', at, n);
      const field = (f: string): number => pass.reduce((k, m) => k + Number(m.ingestDone?.[f] ?? 0), 0);
      passes.push({ after, runs: pass, days: [...new Set(pass.flatMap(daysListed))].sort(), found: pass.reduce((k, m) => k + parsed(m), 0), parsedSlicesRead: field('parsedSlicesRead'), sealedUnchanged: field('sealedSlicesUnchanged'),
        windowSlices: pass.reduce((k, m) => k + windowSlices(m, at, n), 0), dayParts: layout === 'event' ? EVENT_PARTS * foldersListed(pass) : 0 });
    }
    const finalDay = !LISTINGS || passes.at(-1)!.days.includes(DAY);
    // The window's cost to the rollup: the same day republished with it off and on, in pairs; each exact.
    let window: WindowPairs | null = null;
    let windowExact = true;
    if (WINDOW_PAIRS > 0) {
      window = { off: [], on: [] };
      const at = DAY_START + 4 * DAY_MS;
      for (let k = 0; k < WINDOW_PAIRS; k++) {
        for (const [side, days] of [['off', '0'], ['on', '30']] as const) {
          const m = await pingroll(e, 'o', at, ['backfill', '--from', DAY, '--to', DAY, '--force', '--no-ingest'], { PINGROLL_DEDUPE_DAYS: days });
          // (backfill's line: `...; 16000000 pings; ...`.)
          windowExact &&= /[:;] (\d+) pings/.exec(m.stdout)?.[1] === String(size);
          window[side].push(m);
        }
      }
    }
    return { layout, size, n, runs, rollup, newObjects, slicesListed, exact: got === newObjects && pings === size && finalDay && passes.every((p) => p.found === 0) && windowExact, first, passes, window };
  } finally {
    await stopEndpoint(e);
    await rm(dir, { recursive: true, force: true });
  }
}

function table(rows: Row[]): string {
  const head = '| layout | objects a day | N | first state | LIST requests (all shards) | target | objects parsed per shard, max / mean | state read / written per shard, max | peak RSS per shard, max | peak heap | CPU per shard, max / total | rollup: wall, CPU, peak RSS (JS heap) | exact |';
  const lines = rows.map((r) => {
    const lists = r.runs.reduce((k, m) => k + m.lists, 0);
    const target = 1.2 * (r.newObjects / 1000) + r.slicesListed + 10 * r.n;
    const max = (f: (m: Measured) => number): number => Math.max(...r.runs.map(f));
    const sum = (f: (m: Measured) => number): number => r.runs.reduce((k, m) => k + f(m), 0);
    const mean = r.newObjects / r.n;
    const most = max(parsed);
    return `| ${r.layout} | ${fmt(r.size)} | ${r.n} | ${r.first} | ${fmt(lists)} | ${fmt(target)} ${lists <= target ? 'met' : '**missed**'} | ${fmt(most)} / ${fmt(mean)} (${fmt(most / mean, 2)}x) | ${mib(max((m) => m.stateRead))} / ${mib(max((m) => m.stateWritten))} MiB | ${fmt(max((m) => m.maxRssMiB))} MiB | ${fmt(max((m) => m.peakHeapMiB))} MiB | ${fmt(max((m) => m.cpuSeconds), 1)} / ${fmt(sum((m) => m.cpuSeconds), 1)} s | ${fmt(r.rollup.seconds, 1)} s, ${fmt(r.rollup.cpuSeconds, 1)} s, ${fmt(r.rollup.maxRssMiB)} MiB (heap ${fmt(r.rollup.peakHeapMiB)} MiB) | ${r.exact ? 'yes' : '**no**'} |`;
  });
  return [head, `|${'---|'.repeat(13)}`, ...lines].join('\n');
}

/**
 * The day's three scheduled full listings (docs/how-it-works.md, *Delivery days*), after its last
 * incremental run: LIST requests against three full listings of the day (a request a 1,000 keys and
 * one a slice, 144 a day, for each delivery day listed, plus 10 a shard), what they found (nothing new:
 * the day was whole), and the parsed keys they read (none: every slice as its seal says).
 */
function passTable(rows: Row[]): string {
  const head = '| layout | objects a day | N | listing | delivery days listed in full | LIST requests (all shards) | wall per shard, max | CPU per shard, max / total | peak RSS per shard, max | state read per shard, max | slices unchanged / parsed slices read | new objects |';
  const lines: string[] = [];
  for (const r of rows) {
    let total = 0;
    for (const p of r.passes) {
      const lists = p.runs.reduce((k, m) => k + m.lists, 0);
      total += lists;
      const max = (f: (m: Measured) => number): number => Math.max(...p.runs.map(f));
      const sum = (f: (m: Measured) => number): number => p.runs.reduce((k, m) => k + f(m), 0);
      lines.push(`| ${r.layout} | ${fmt(r.size)} | ${r.n} | ${p.after} after | ${p.days.join(', ') || 'none'} | ${fmt(lists)} | ${fmt(max((m) => m.seconds), 1)} s | ${fmt(max((m) => m.cpuSeconds), 1)} / ${fmt(sum((m) => m.cpuSeconds), 1)} s | ${fmt(max((m) => m.maxRssMiB))} MiB | ${mib(max((m) => m.stateRead))} MiB | ${fmt(p.sealedUnchanged)} / ${fmt(p.parsedSlicesRead)} | ${fmt(p.found)} |`);
    }
    const dayLists = r.passes.reduce((k, p) => k + p.days.length, 0);
    // An event-time day's names: a request per 1,000 of a part, each part's first a slice's request.
    const target = 3 * Math.ceil(r.size / 1000) + (r.layout === 'event' ? 3 * (dayPages(r.size) + EVENT_PARTS - Math.ceil(r.size / 1000)) : 0) + 144 * dayLists + r.passes.reduce((k, p) => k + p.dayParts, 0) + r.passes.reduce((k, p) => k + p.windowSlices, 0) + 10 * r.n * r.passes.length;
    lines.push(`| ${r.layout} | ${fmt(r.size)} | ${r.n} | **all three** | | **${fmt(total)}** (target ${fmt(target)}: ${total <= target ? 'met' : '**missed**'}) | | | | | | |`);
  }
  return [head, `|${'---|'.repeat(12)}`, ...lines].join('\n');
}

async function tenDays(perDay: number, n: number): Promise<string> {
  const days = Array.from({ length: 10 }, (_, k) => new Date(DAY_START + k * DAY_MS).toISOString().slice(0, 10));
  const dir = join(WORK, 'ten-days');
  await rm(dir, { recursive: true, force: true });
  await rm(join(WORK, 'o.duckdb'), { force: true });
  const e = await startEndpoint(dir, days.map((day) => ({ day, count: perDay, visible: 0 })));
  const lines: string[] = [];
  try {
    for (const [k, day] of days.entries()) {
      await control(e, 'POST', '/__visible', { day, count: perDay });
      const clock = Date.parse(`${day}T00:00:00Z`) + DAY_MS + 5 * 60_000;
      const runs = await shards(e, 'o', clock, n);
      const rollup = await pingroll(e, 'o', clock, ['rollup', '--date', day, '--no-ingest']);
      const got = runs.reduce((s, r) => s + parsed(r), 0);
      const max = (f: (m: Measured) => number): number => Math.max(...runs.map(f));
      lines.push(`| ${k + 1} | ${day} | ${fmt(got)} | ${fmt(runs.reduce((s, m) => s + m.lists, 0))} | ${mib(max((m) => m.stateRead))} MiB | ${fmt(max((m) => m.maxRssMiB))} MiB | ${fmt(max((m) => m.cpuSeconds), 2)} s | ${mib(rollup.stateRead)} MiB | ${fmt(rollup.seconds, 1)} s |`);
      process.stderr.write(`  day ${k + 1}: ${got} objects\n`);
    }
  } finally {
    await stopEndpoint(e);
    await rm(dir, { recursive: true, force: true });
  }
  return [`Ten consecutive days of ${fmt(perDay)} objects, ${n} shards each day after the day ends, then the day's rollup:`, '',
    '| day | date | objects parsed | LIST requests | state read per shard, max | peak RSS per shard, max | CPU per shard, max | rollup: state read | rollup wall |',
    '|---|---|---|---|---|---|---|---|---|', ...lines].join('\n');
}

async function checkSynthesis(): Promise<string> {
  const visible = Math.floor(SYNTH_CHECK * FIRST_SHARE);
  const real = join(WORK, 'check-real'), synth = join(WORK, 'check-synth');
  await rm(real, { recursive: true, force: true });
  await rm(synth, { recursive: true, force: true });
  const a = await startEndpoint(real, [{ day: DAY, count: SYNTH_CHECK, visible }]);
  let want: unknown, got: unknown;
  try {
    await shards(a, 'o', clockAfter(SYNTH_CHECK, visible), 1);
    want = await stateOf(a, 'o');
  } finally {
    await stopEndpoint(a);
  }
  const b = await startEndpoint(synth, [{ day: DAY, count: SYNTH_CHECK, visible }]);
  try {
    await synthesize(b, 'o', SYNTH_CHECK, visible);
    got = await stateOf(b, 'o');
  } finally {
    await stopEndpoint(b);
  }
  await rm(real, { recursive: true, force: true });
  await rm(synth, { recursive: true, force: true });
  if (JSON.stringify(want) !== JSON.stringify(got)) throw new Error(`a synthesized first state differs from a real run's:\nreal  ${JSON.stringify(want)}\nsynth ${JSON.stringify(got)}`);
  const w = want as { parsedKeys: number; stagedRows: number; seals: string[] };
  return `A synthesized first state of ${fmt(visible)} objects equals a real run's: the same ${fmt(w.parsedKeys)} parsed keys, ${fmt(w.stagedRows)} staged rows (digest of every column), ${w.seals.length} seals (counts and digests) and listing state.`;
}

async function main(): Promise<void> {
  const sizes = list(process.env.BENCH_SCALE_SIZES, '200000,1000000,4000000,16000000');
  const counts = list(process.env.BENCH_SCALE_SHARDS, '1,8,64');
  const perDay = Number(process.env.BENCH_SCALE_DAYS ?? 20_000);
  const layouts = (process.env.BENCH_SCALE_LAYOUT ?? 'simple,event').split(',').filter(Boolean).map((l) => {
    if (l !== 'simple' && l !== 'event') throw new Error(`BENCH_SCALE_LAYOUT: ${l} is none of simple, event`);
    return l as LogLayout;
  });
  await mkdir(WORK, { recursive: true });
  // One object's size, from the endpoint.
  {
    const e = await startEndpoint(join(WORK, 'probe'), [{ day: DAY, count: 1, visible: 1 }]);
    const r = await fetch(`${e.url}/logs/${PREFIX}${objectOf(1, 0).key}`);
    objectBytes = (await r.arrayBuffer()).byteLength;
    await stopEndpoint(e);
    await rm(join(WORK, 'probe'), { recursive: true, force: true });
  }
  const env = ['BENCH_SCALE_SIZES', 'BENCH_SCALE_SHARDS', 'BENCH_SCALE_LAYOUT', 'BENCH_SCALE_DAYS', 'BENCH_SCALE_NEW', 'BENCH_SCALE_MARGIN', 'BENCH_SCALE_WINDOW_PAIRS', 'BENCH_SCALE_LISTINGS'].filter((k) => process.env[k] !== undefined).map((k) => `${k}=${process.env[k]}`);
  const out: string[] = [
    `Measured ${new Date().toISOString().slice(0, 10)} at ${gitRevision() ?? 'an unknown revision'} on ${availableParallelism()} cores, node ${process.version}: \`${[...env, 'make bench-scale'].join(' ')}\` (sizes ${sizes.map((n) => fmt(n)).join(', ')}; shards ${counts.join(', ')}).`, '',
  ];
  const rows: Row[] = [];
  for (const l of layouts) {
    layout = l;
    if (sizes.some((s) => s > REAL_FIRST_MAX)) {
      process.stderr.write(`${layout}: checking a synthesized first state against a real run\n`);
      out.push(`${layout}: ${await checkSynthesis()}`, '');
    }
    for (const size of sizes) {
      const firstDir = join(WORK, `first-${size}`);
      process.stderr.write(`${layout}, ${fmt(size)} objects: first state\n`);
      const first = await firstState(size, firstDir);
      for (const n of counts) {
        process.stderr.write(`${layout}, ${fmt(size)} objects: the last ${fmt(NEW_SHARE * 100)}% by ${n} shard(s)\n`);
        rows.push(await incremental(size, n, firstDir, first));
      }
      await rm(firstDir, { recursive: true, force: true });
    }
  }
  layout = 'simple';
  out.push(`The last ${fmt(NEW_SHARE * 100)}% of a day arrives (the first ${fmt(FIRST_SHARE * 100)}% already ingested): N shards ingest it one after another, each measured alone, then \`rollup --no-ingest\` rolls up the whole day. Listing margin ${MARGIN_MIN} min. LIST target: 1.2 x new objects / 1000 + slices listed (the window's, and 144 for each delivery day listed in full) + 10 per shard; for the event-time layout also a request for each of the 256 parts of each date folder listed, and the event-time day's names whole (a request per 1,000 a part), which say nothing of when they were delivered, so that no window passes over them.`, '', table(rows));
  if (LISTINGS) out.push('', `Then the day's scheduled full listings (\`PINGROLL_RECONCILE_AFTER\`, 2h,1d,3d), each by the same N shards five minutes after it is due, the whole day visible. Target for the three: three full listings of the day (a request per 1,000 keys), plus a request a slice for each delivery day listed (144) and for each slice of the window, and 10 a shard a listing; for the event-time layout, a request per 1,000 names of each part, and one for each part of each date folder listed.`, '', passTable(rows));
  const paired = rows.filter((r) => r.window);
  if (paired.length) {
    out.push('', `The ping-id window's cost to the rollup: the whole day republished (\`backfill --force --no-ingest\`) with \`PINGROLL_DEDUPE_DAYS=0\` and 30 alternately, ${WINDOW_PAIRS} pair(s), medians (no earlier day has ids here: the window keeps the day's ids and checks them against none):`, '',
      '| layout | objects a day | window off: wall, CPU, peak RSS | window on: wall, CPU, peak RSS | on / off, wall | on / off, CPU | state written, on / off |', '|---|---:|---|---|---:|---:|---|');
    const med = (ms: Measured[], f: (m: Measured) => number): number => median(ms.map(f));
    for (const r of paired) {
      const { off, on } = r.window!;
      const side = (ms: Measured[]): string => `${fmt(med(ms, (m) => m.seconds), 1)} s, ${fmt(med(ms, (m) => m.cpuSeconds), 1)} s, ${fmt(med(ms, (m) => m.maxRssMiB))} MiB`;
      out.push(`| ${r.layout} | ${fmt(r.size)} | ${side(off)} | ${side(on)} | ${fmt(med(on, (m) => m.seconds) / med(off, (m) => m.seconds), 2)}x | ${fmt(med(on, (m) => m.cpuSeconds) / med(off, (m) => m.cpuSeconds), 2)}x | ${mib(med(on, (m) => m.stateWritten))} / ${mib(med(off, (m) => m.stateWritten))} MiB |`);
    }
  }
  if (perDay > 0) out.push('', await tenDays(perDay, 8));
  process.stdout.write(`${out.join('\n')}\n`);
  if (rows.some((r) => !r.exact)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`scale bench: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
