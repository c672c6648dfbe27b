/**
 * Bench inputs, generated once per machine and kept under `.bench/` (they take a while to make and
 * are the same for the same arguments).
 */
import { spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import { generateSample } from '../tools/sample/access-log-generator.js';

export const BENCH_DIR = '.bench';
/**
 * A bench's WebAssembly kernel, `bench/<name>.as.ts` under `root`, compiled with the project's asc into
 * `<name>.wasm` in `dir` (the benches' `.bench/`) when it is missing or older than its source: its path.
 */
export function benchKernel(root: string, name: string, dir = join(root, BENCH_DIR)): string {
  const source = join(root, 'bench', `${name}.as.ts`), kernel = join(dir, `${name}.wasm`);
  if (existsSync(kernel) && statSync(kernel).mtimeMs >= statSync(source).mtimeMs) return kernel;
  mkdirSync(dir, { recursive: true });
  const r = spawnSync(join(root, 'node_modules', '.bin', 'asc'), [source, '-O3', '--runtime', 'stub', '--noAssert', '-o', kernel], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`asc could not compile ${source}`);
  return kernel;
}

/** The viewer key the benches give `pingroll` (PINGROLL_VIEWER_KEY): a bench's, not a secret. */
export const BENCH_VIEWER_KEY = 'bench-viewer-key-0123456789';

/** The busy day's two kinds (bench/busy-day.ts): real traffic's addresses, or every address made one. */
export type BusyDayKind = 'traffic' | 'one-address';

/**
 * The folder of the busy day's logs of `copies` copies (bench/busy-day.ts makes it, `<it>.ready` when
 * done). Named -spread for the way its ping ids are made (a ping id's first 32 bits the copy's own,
 * 2026-12-06): a day made before that is not taken for one.
 */
export function busyDayDir(copies: number, kind: BusyDayKind): string {
  return join(BENCH_DIR, `busy-day-${copies}-copies-${kind}-spread`);
}

/** The busy day of `kind` made and ready, whatever its copies: null when `make busy-day` has not made it. */
export function readyBusyDay(kind: BusyDayKind): string | null {
  if (!existsSync(BENCH_DIR)) return null;
  const name = readdirSync(BENCH_DIR).find((d) => new RegExp(`^busy-day-\\d+-copies-${kind}-spread$`).test(d) && existsSync(join(BENCH_DIR, `${d}.ready`)));
  return name === undefined ? null : join(BENCH_DIR, name);
}

/**
 * One uncompressed access-log file of at least `minRecords` records of `date`, built from samples of
 * ~100k records each (different seeds, so sessions and request IDs never collide): the generator keeps
 * a whole sample in memory, and GC cost grows with it.
 */
export async function benchLogFile(minRecords: number, date = '2026-11-01'): Promise<{ path: string; records: number }> {
  await mkdir(BENCH_DIR, { recursive: true });
  const path = join(BENCH_DIR, `access-${date}-${minRecords}.log`);
  const countPath = path + '.records';
  if (existsSync(path) && existsSync(countPath)) {
    return { path, records: Number(await readFile(countPath, 'utf8')) };
  }
  const tmp = path + '.tmp';
  const out = createWriteStream(tmp);
  let records = 0;
  for (let shard = 0; records < minRecords; shard++) {
    const sample = generateSample({ date, sessions: 3300, seed: 1000 + shard, gzipShare: 0 });
    for (const o of sample.objects) if (!out.write(o.text)) await once(out, 'drain');
    records += sample.records;
    process.stderr.write(`\rgenerating bench data: ${records} records`);
  }
  out.end();
  await once(out, 'finish');
  await rename(tmp, path);
  await writeFile(countPath, String(records));
  process.stderr.write('\n');
  return { path, records };
}

/**
 * The same records as `baseDir`'s log objects, delivered as `objects` objects of S3-like sizes: sizes
 * spread log-normally (a few KB to a few MB at 3,000 objects for 1M records), SimplePrefix names at
 * times across each delivery day. Records keep their order, and each stays in an object delivered the
 * day its original was (a record without a readable time belongs to its object's day), so the day's
 * expected tables are the same whatever the count.
 */
export async function rechunkedLogDir(baseDir: string, objects: number): Promise<string> {
  const dir = `${baseDir}-as-${objects}-objects`;
  if (existsSync(`${dir}.ready`)) return dir;
  const { readdir, rm } = await import('node:fs/promises');
  const { dayInObjectName } = await import('../ingest/object-source/object-source.js');
  const { nameStamp } = await import('../ingest/listing/listing-window.js');
  const { DAY_MS, dayStartMs } = await import('../lib/utc-day.js');
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const byDay = new Map<string, Buffer[]>();
  for (const shard of (await readdir(baseDir)).sort()) {
    for (const name of (await readdir(join(baseDir, shard))).sort()) {
      const day = dayInObjectName(name)!;
      const body = await readFile(join(baseDir, shard, name));
      const parts = byDay.get(day);
      if (parts) parts.push(body);
      else byDay.set(day, [body]);
    }
  }
  const total = [...byDay.values()].reduce((n, bs) => n + bs.reduce((m, b) => m + b.length, 0), 0);
  let seed = 12345;
  const rand = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  let made = 0;
  for (const [day, parts] of [...byDay].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const text = Buffer.concat(parts);
    const n = Math.max(1, Math.round((objects * text.length) / total));
    // Log-normal weights: most objects small, a few large, as S3's log delivery makes them.
    const weights = Array.from({ length: n }, () => Math.exp(1.1 * Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand())));
    const sum = weights.reduce((a, b) => a + b, 0);
    let start = 0, acc = 0;
    for (let i = 0; i < n && start < text.length; i++) {
      acc += weights[i]!;
      let end = i === n - 1 ? text.length : Math.floor((text.length * acc) / sum);
      end = end >= text.length ? text.length : text.indexOf(0x0a, Math.max(end, start)) + 1 || text.length;
      if (end <= start) continue;
      const at = dayStartMs(day) + Math.floor((i * DAY_MS) / n);
      await writeFile(join(dir, `${nameStamp(at)}-${(made++).toString(16).toUpperCase().padStart(16, '0')}`), text.subarray(start, end));
      start = end;
    }
  }
  await writeFile(`${dir}.ready`, String(made));
  return dir;
}

/** The address a day with every client address made one sends from: a London one (GB). */
export const ONE_ADDRESS = '81.2.69.142';

/** Log text with each record's client address (the fifth field) replaced by `to` of it. */
export function withClientAddresses(text: string, to: (address: string) => string): string {
  return text.replace(/^(\S+ \S+ \[[^\]\n]*\] )(\S+)/gm, (_, head: string, address: string) => head + to(address));
}

/** Log text with every record's client address made ONE_ADDRESS (issue #57's 1.05x target). */
export function withOneAddress(text: string): string {
  return withClientAddresses(text, () => ONE_ADDRESS);
}
