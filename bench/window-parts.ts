/**
 * Issue #56, item 7: what the day's keys would cost the window's check as sorted parts, merged, instead
 * of DuckDB's sort of `day_ids` and its stream into JavaScript (docs/benchmarks.md, *What a staged
 * UUID column would save*). A staged format 4 would have the parser make each id's key; each staged
 * part's keys would be sorted as the part is staged, and the check would merge the parts' runs into
 * its batches.
 *
 * Here: `parts` parts of random keys (as UUIDs are), each entry 32 bytes (the key's four 32-bit words,
 * most significant first; its event time; its row), sorted one part at a time by one pass into 65,536
 * buckets by the top 16 bits and insertion within each (random keys: a few a bucket), and written as a
 * run; then the runs merged by a heap of run numbers in typed arrays, ordered by each head's first
 * word (the other three on a tie), each run read 8,192 entries at a time, into the check's batches of
 * 2M keys and event times. Every run and the merge's output are checked in order.
 *
 * Usage: BENCH_PASSES=3 node dist/bench/window-parts.js [parts, default 254] [keys, default 46704040]
 * With BENCH_FRESH=1 each merge runs in a worker thread of its own (a new isolate, as a check that
 * merged in a fresh worker would): the runs on shared memory, read where they are.
 * (the runs, 32 bytes a key, held in memory: 1.5 GB at the default; each read of a run copies 8,192
 * entries, as a read of a file in the page cache would. The figures are CPU, not a disk's: this
 * machine's kernel reclaims the page cache on its own, and runs read back from files slowed from 4.6 s
 * to 10.7 s over five passes.)
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { median } from './cold-run.js';

const WORDS = 8;
const BUCKETS = 65_536;
const READ = 8_192;
const BATCH = 2_000_000;

/** -1, 0 or 1: the key at word `i` of `a` against the key at word `j` of `b`. */
function compare(a: Uint32Array, i: number, b: Uint32Array, j: number): number {
  for (let k = 0; k < 4; k++) {
    const x = a[i + k]!, y = b[j + k]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** `src`'s `n` entries sorted by key into `out`. */
function sortPart(src: Uint32Array, out: Uint32Array, n: number, count: Uint32Array): void {
  count.fill(0);
  for (let i = 0; i < n; i++) count[(src[i * WORDS]! >>> 16) + 1]!++;
  for (let c = 0; c < BUCKETS; c++) count[c + 1]! += count[c]!;
  const start = count.slice(0, BUCKETS);
  for (let i = 0; i < n; i++) {
    const s = i * WORDS, d = count[src[s]! >>> 16]!++ * WORDS;
    for (let k = 0; k < WORDS; k++) out[d + k] = src[s + k]!;
  }
  const e = new Uint32Array(WORDS);
  for (let c = 0; c < BUCKETS; c++) {
    const lo = start[c]!, hi = count[c]!;
    for (let i = lo + 1; i < hi; i++) {
      // Most keys are already after the one before them (a bucket holds a few, in no order).
      if (compare(out, (i - 1) * WORDS, out, i * WORDS) <= 0) continue;
      for (let k = 0; k < WORDS; k++) e[k] = out[i * WORDS + k]!;
      let j = i - 1;
      for (; j >= lo && compare(out, j * WORDS, e, 0) > 0; j--) for (let k = 0; k < WORDS; k++) out[(j + 1) * WORDS + k] = out[j * WORDS + k]!;
      for (let k = 0; k < WORDS; k++) out[(j + 1) * WORDS + k] = e[k]!;
    }
  }
}

/** Merges the runs into batches; returns the keys merged (checked in order). */
function mergeRuns(runs: readonly Uint32Array[]): number {
  const k = runs.length;
  const words = runs.map(() => new Uint32Array(READ * WORDS));
  const at = new Int32Array(k), len = new Int32Array(k), pos = new Float64Array(k), head = new Uint32Array(k);
  const fill = (r: number): boolean => {
    const run = runs[r]!, from = pos[r]!, to = Math.min(run.length, from + READ * WORDS);
    words[r]!.set(run.subarray(from, to));
    pos[r] = to;
    len[r] = (to - from) / WORDS;
    at[r] = 0;
    if (len[r]! > 0) head[r] = words[r]![0]!;
    return len[r]! > 0;
  };
  const less = (a: number, b: number): boolean => {
    const x = head[a]!, y = head[b]!;
    return x !== y ? x < y : compare(words[a]!, at[a]! * WORDS, words[b]!, at[b]! * WORDS) < 0;
  };
  const heap = new Int32Array(k);
  let size = 0;
  for (let r = 0; r < k; r++) if (fill(r)) heap[size++] = r;
  const down = (from: number): void => {
    const r0 = heap[from]!;
    let i = from;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= size) break;
      const m = l + 1 < size && less(heap[l + 1]!, heap[l]!) ? l + 1 : l;
      if (!less(heap[m]!, r0)) break;
      heap[i] = heap[m]!;
      i = m;
    }
    heap[i] = r0;
  };
  for (let i = (size >> 1) - 1; i >= 0; i--) down(i);
  const keys = new Uint32Array(BATCH * 4), events = new Float64Array(BATCH);
  let n = 0, total = 0, last = 0;
  while (size > 0) {
    const r = heap[0]!, w = words[r]!, o = at[r]! * WORDS;
    // In order by the first word (the heap's own order decides the rest).
    if (w[o]! < last) throw new Error('the merge is out of order: this is a bug in the bench');
    last = w[o]!;
    keys[n * 4] = w[o]!; keys[n * 4 + 1] = w[o + 1]!; keys[n * 4 + 2] = w[o + 2]!; keys[n * 4 + 3] = w[o + 3]!;
    events[n] = w[o + 5]! * 4294967296 + w[o + 4]!;
    total++;
    if (++n === BATCH) n = 0;
    if (++at[r]! === len[r]!) {
      if (!fill(r)) heap[0] = heap[--size]!;
    } else head[r] = w[o + WORDS]!;
    if (size > 0) down(0);
  }
  return total;
}

/** One merge in a worker thread of its own: its time in seconds. */
function mergeInWorker(runs: readonly Uint32Array[]): Promise<{ seconds: number; merged: number }> {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL(import.meta.url), { workerData: runs });
    w.once('message', (m: { seconds: number; merged: number }) => { resolve(m); void w.terminate(); });
    w.once('error', reject);
  });
}

async function main(): Promise<void> {
  const parts = Number(process.argv[2] ?? 254);
  const total = Number(process.argv[3] ?? 46_704_040);
  const passes = Number(process.env.BENCH_PASSES ?? 3);
  const per = Math.ceil(total / parts);
  {
    const src = new Uint32Array(per * WORDS), out = new Uint32Array(per * WORDS), count = new Uint32Array(BUCKETS + 1);
    // xorshift32: the same keys every run.
    let x = 123456789;
    let sortMs = 0;
    const runs: Uint32Array[] = [];
    for (let p = 0; p < parts; p++) {
      const n = Math.min(per, total - p * per);
      for (let i = 0; i < n * WORDS; i++) {
        x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
        src[i] = x >>> 0;
      }
      const started = performance.now();
      sortPart(src, out, n, count);
      sortMs += performance.now() - started;
      for (let i = 1; i < n; i++) if (compare(out, (i - 1) * WORDS, out, i * WORDS) > 0) throw new Error('a part is not sorted: this is a bug in the bench');
      // On shared memory, so that a worker reads the runs where they are.
      const run = new Uint32Array(new SharedArrayBuffer(n * WORDS * 4));
      run.set(out.subarray(0, n * WORDS));
      runs.push(run);
    }
    const fresh = process.env.BENCH_FRESH === '1';
    const times: number[] = [];
    for (let p = 0; p < passes; p++) {
      let merged: number;
      if (fresh) {
        const m = await mergeInWorker(runs);
        merged = m.merged;
        times.push(m.seconds);
      } else {
        const started = performance.now();
        merged = mergeRuns(runs);
        times.push((performance.now() - started) / 1000);
      }
      if (merged !== total) throw new Error(`merged ${merged} keys of ${total}: this is a bug in the bench`);
    }
    process.stdout.write(`${total.toLocaleString('en-US')} random keys in ${parts} parts: the parts sorted in ${(sortMs / 1000).toFixed(2)} s; `
      + `merged into ${Math.ceil(total / BATCH)} batches in ${median(times).toFixed(2)} s (median of ${passes}; ${times.map((t) => t.toFixed(2)).join(', ')}), one thread${fresh ? ', each merge in a worker of its own' : ''}, node ${process.version}\n`);
  }
}

if (isMainThread) await main();
else {
  const started = performance.now();
  const merged = mergeRuns(workerData as Uint32Array[]);
  parentPort!.postMessage({ seconds: (performance.now() - started) / 1000, merged });
}
