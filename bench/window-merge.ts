/**
 * Issue #56, item 7: what the ping-id window's check would cost as a merge of sorted 16-byte keys,
 * the redesign docs/benchmarks.md (*The ping-id window's cost*) names, before it is built.
 *
 * Today's check is a hash join of text ids in DuckDB: 1.36B history ids at 11.8M a second on two
 * cores, 114.6 s of the busy day's run. Here each day's ids are a file of sorted 16-byte keys (as a
 * 128-bit hash of each id would be), written raw, and the day's own keys (2% of them taken from the
 * history days, as the busy day's resends are) are checked against each history day by a merge, in
 * JavaScript and in WebAssembly (bench/window-merge.as.ts, compiled with the project's asc into
 * .bench/ on first use), on 1 thread and on 2 (each thread half of the key space). The keys are drawn
 * sorted (an exponential gap between neighbours), so making them costs no sort.
 *
 * Usage: node dist/bench/window-merge.js [history days, default 3] [keys a day, default 45000000]
 * (3 days of 45M keys: 2.9 GB in a new folder under TMPDIR, removed at the end). The files are read
 * through the page cache as they were just written: the figures are the merge's CPU, not a disk's.
 */
import { closeSync, fstatSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { benchKernel } from './bench-data.js';
import { ROOT } from './cold-run.js';

/** A key: four 32-bit words, the first two its order (a 64-bit prefix), the last two the rest. */
const WORDS = 4;
const KEY_BYTES = WORDS * 4;
/** Keys a read. */
const CHUNK = 1 << 20;


type Way = 'JavaScript' | 'WebAssembly';
interface Job { day: string; history: string[]; from: number; to: number; way: Way }

async function main(): Promise<void> {
  const days = Number(process.argv[2] ?? 3);
  const perDay = Number(process.argv[3] ?? 45_000_000);
  const dir = mkdtempSync(join(tmpdir(), 'pingroll-window-merge-'));
  try {
    const history = Array.from({ length: days }, (_, d) => join(dir, `history-${d}.keys`));
    history.forEach((path, d) => writeKeys(path, sortedKeys(perDay, 1000 + d)));
    // The day: its own keys, and 2% of its count taken evenly from the history days.
    const every = Math.round(days / 0.02);
    const dayPath = join(dir, 'day.keys');
    const taken = { n: 0 };
    const dayKeys = writeKeys(dayPath, mergeSorted([sortedKeys(perDay, 77), ...history.map((_, d) => everyNth(sortedKeys(perDay, 1000 + d), every, taken))]));
    const want = taken.n;

    // Compiled here, before the workers that read it.
    benchKernel(ROOT, 'window-merge');
    const ways = [1, 2].flatMap((threads) => (['JavaScript', 'WebAssembly'] as const).map((way) => ({ way, threads })));
    const seconds = new Map<string, number[]>();
    for (let pass = 0; pass < PASSES; pass++) {
      for (const { way, threads } of ways) {
        const started = performance.now();
        const found = await check(dayPath, history, threads, way);
        if (found !== want) throw new Error(`the ${way} merge found ${found} keys of the history, not ${want}`);
        const key = `${way}|${threads}`;
        seconds.set(key, [...seconds.get(key) ?? [], (performance.now() - started) / 1000]);
      }
    }
    console.log(`window merge: the day's ${dayKeys.toLocaleString('en-US')} keys against ${days} history days of ${perDay.toLocaleString('en-US')} (16-byte keys, sorted), ${want.toLocaleString('en-US')} found by each way, as expected; ${PASSES} interleaved passes, medians\n`);
    console.log('| merge | threads | check | history keys a second | 30 days at that rate |');
    console.log('|---|---:|---:|---:|---:|');
    for (const { way, threads } of ways) {
      const s = median(seconds.get(`${way}|${threads}`)!);
      console.log(`| ${way} | ${threads} | ${s.toFixed(2)} s | ${(days * perDay / s / 1e6).toFixed(1)}M | ${(s * 30 / days).toFixed(1)} s |`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const PASSES = Number(process.env.BENCH_PASSES ?? 3);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** The keys of `history` found in the day, on `threads` threads, each its share of the key space. */
async function check(day: string, history: string[], threads: number, way: Way): Promise<number> {
  const count = way === 'JavaScript' ? mergeCount : wasmMergeCount();
  if (threads === 1) return history.reduce((n, h) => n + count(day, h, 0, 2 ** 32), 0);
  const bounds = Array.from({ length: threads + 1 }, (_, t) => Math.floor((t * 2 ** 32) / threads));
  const counts = await Promise.all(bounds.slice(0, -1).map((from, t) => new Promise<number>((resolve, reject) => {
    const w = new Worker(new URL(import.meta.url), { workerData: { day, history, from, to: bounds[t + 1]!, way } satisfies Job });
    w.once('message', resolve);
    w.once('error', reject);
  })));
  return counts.reduce((a, b) => a + b, 0);
}

/** Equal keys of two sorted files, among those whose first word lies in [from, to). */
function mergeCount(aPath: string, bPath: string, from: number, to: number): number {
  const a = new KeyReader(aPath, from, to), b = new KeyReader(bPath, from, to);
  let an = a.next(), bn = b.next(), i = 0, j = 0, found = 0;
  const A = a.words, B = b.words;
  while (an > 0 && bn > 0) {
    const x = i * WORDS, y = j * WORDS;
    const order = A[x]! - B[y]! || A[x + 1]! - B[y + 1]!;
    if (order <= 0) {
      if (order === 0 && A[x + 2] === B[y + 2] && A[x + 3] === B[y + 3]) found++;
      if (++i === an) { an = a.next(); i = 0; }
    }
    if (order >= 0 && an > 0) {
      if (++j === bn) { bn = b.next(); j = 0; }
    }
  }
  a.close();
  b.close();
  return found;
}

/** `mergeCount` with the loop in WebAssembly: the runs are read straight into the module's memory. */
function wasmMergeCount(): typeof mergeCount {
  const instance = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(benchKernel(ROOT, 'window-merge'))), { env: { abort: () => {} } });
  const memory = instance.exports.memory as WebAssembly.Memory;
  memory.grow(Math.ceil((2 * CHUNK * KEY_BYTES + 2 * 65536) / 65536));
  const merge = instance.exports.merge as (a: number, an: number, b: number, bn: number, state: number) => void;
  // Past the module's first page (its stack and data): the state, then the two runs.
  const STATE = 65536, A = 2 * 65536, B = A + CHUNK * KEY_BYTES;
  return (aPath, bPath, from, to) => {
    const state = new Int32Array(memory.buffer, STATE, 3).fill(0);
    const a = new KeyReader(aPath, from, to, new Uint32Array(memory.buffer, A, CHUNK * WORDS));
    const b = new KeyReader(bPath, from, to, new Uint32Array(memory.buffer, B, CHUNK * WORDS));
    let an = a.next(), bn = b.next();
    while (an > 0 && bn > 0) {
      merge(A, an, B, bn, STATE);
      if (state[0] === an) { an = a.next(); state[0] = 0; }
      if (state[1] === bn) { bn = b.next(); state[1] = 0; }
    }
    a.close();
    b.close();
    return state[2]!;
  };
}

/** Reads a sorted key file from its first key whose first word is at least `from`, up to `to`. */
class KeyReader {
  private readonly bytes: Uint8Array;
  private readonly fd: number;
  private pos: number;
  private readonly end: number;

  constructor(path: string, from: number, to: number, readonly words = new Uint32Array(CHUNK * WORDS)) {
    this.bytes = new Uint8Array(words.buffer, words.byteOffset, words.byteLength);
    this.fd = openSync(path, 'r');
    const keys = fstatSync(this.fd).size / KEY_BYTES;
    this.pos = this.firstAtLeast(from, keys) * KEY_BYTES;
    this.end = to >= 2 ** 32 ? keys * KEY_BYTES : this.firstAtLeast(to, keys) * KEY_BYTES;
  }

  /** Keys read into `words`: 0 at the end. */
  next(): number {
    const want = Math.min(this.bytes.length, this.end - this.pos);
    if (want <= 0) return 0;
    const n = readSync(this.fd, this.bytes, 0, want, this.pos);
    this.pos += n;
    return n / KEY_BYTES;
  }

  close(): void {
    closeSync(this.fd);
  }

  private firstAtLeast(word: number, keys: number): number {
    const one = new Uint32Array(1);
    let lo = 0, hi = keys;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      readSync(this.fd, new Uint8Array(one.buffer), 0, 4, mid * KEY_BYTES);
      if (one[0]! < word) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** `count` keys drawn uniformly over the 64-bit prefix space, in order: a seeded xorshift. */
function* sortedKeys(count: number, seed: number): Generator<number[]> {
  let s = seed >>> 0 || 1;
  const next = (): number => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
  const meanGap = 2 ** 64 / count;
  let hi = 0, lo = 0;
  for (let k = 0; k < count; k++) {
    const gap = -Math.log(1 - next() / 2 ** 32) * meanGap;
    const gapHi = Math.floor(gap / 2 ** 32);
    lo += Math.floor(gap - gapHi * 2 ** 32);
    hi += gapHi;
    if (lo >= 2 ** 32) { lo -= 2 ** 32; hi++; }
    if (hi >= 2 ** 32) return;
    yield [hi, lo, next(), next()];
  }
}

/** Every `n`th key, counted in `taken`. */
function* everyNth(keys: Iterable<number[]>, n: number, taken: { n: number }): Generator<number[]> {
  let k = 0;
  for (const key of keys) {
    if (k++ % n !== 0) continue;
    taken.n++;
    yield key;
  }
}

/** Sorted sequences merged into one. */
function* mergeSorted(sources: Array<Iterator<number[]>>): Generator<number[]> {
  const heads = sources.map((s) => s.next());
  for (;;) {
    let best = -1;
    for (let t = 0; t < heads.length; t++) {
      const h = heads[t]!;
      if (h.done) continue;
      const k = h.value as number[];
      const b = best < 0 ? undefined : heads[best]!.value as number[];
      if (!b || k[0]! < b[0]! || (k[0] === b[0] && k[1]! < b[1]!)) best = t;
    }
    if (best < 0) return;
    yield heads[best]!.value as number[];
    heads[best] = sources[best]!.next();
  }
}

/** Writes keys as raw words; returns how many. */
function writeKeys(path: string, keys: Iterable<number[]>): number {
  const fd = openSync(path, 'w');
  const buf = new Uint32Array(CHUNK * WORDS);
  let n = 0, total = 0;
  for (const key of keys) {
    buf.set(key, n * WORDS);
    if (++n === CHUNK) { writeSync(fd, buf); total += n; n = 0; }
  }
  writeSync(fd, buf.subarray(0, n * WORDS));
  closeSync(fd);
  return total + n;
}

if (!isMainThread) {
  const { day, history, from, to, way } = workerData as Job;
  const count = way === 'JavaScript' ? mergeCount : wasmMergeCount();
  parentPort!.postMessage(history.reduce((n, h) => n + count(day, h, from, to), 0));
} else if (import.meta.url === `file://${process.argv[1]}`) {
  await main();
}
