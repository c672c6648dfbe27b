/**
 * Issue #56, item 7: what sorting a day's ping ids costs as 16-byte keys in this process, instead of
 * DuckDB's sort of their text (22 s of the 28-30 s of keeping the busy day's 45M ids), before the
 * merge (bench/window-merge.ts) is built. The keys are random (as UUIDs and 128-bit hashes are),
 * four 32-bit words each, the first the most significant. The sort: a counting scatter by the top 12
 * bits into 4,096 buckets, then each bucket (about 11,000 keys at 45M, in cache) scattered by the next
 * 12 bits into a scratch buffer and finished by insertion (runs of one 24-bit prefix are a few keys
 * long); plain JavaScript on one thread, checked sorted after each pass.
 *
 * Usage: BENCH_PASSES=3 node dist/bench/window-sort.js [keys, default 45000000] (0.7 GB, twice)
 */
import { median } from './cold-run.js';

const BITS = 12;
const BUCKETS = 1 << BITS;

/** `src`'s keys sorted into `out` (both `n` keys of four words). */
function sortKeys(src: Uint32Array, out: Uint32Array, n: number): void {
  const count = new Uint32Array(BUCKETS + 1);
  for (let i = 0; i < n; i++) count[(src[i * 4]! >>> (32 - BITS)) + 1]!++;
  for (let b = 0; b < BUCKETS; b++) count[b + 1]! += count[b]!;
  const pos = count.slice(0, BUCKETS);
  for (let i = 0; i < n; i++) {
    const s = i * 4, p = pos[src[s]! >>> (32 - BITS)]!++ * 4;
    out[p] = src[s]!; out[p + 1] = src[s + 1]!; out[p + 2] = src[s + 2]!; out[p + 3] = src[s + 3]!;
  }
  let largest = 0;
  for (let b = 0; b < BUCKETS; b++) largest = Math.max(largest, count[b + 1]! - count[b]!);
  const scratch = new Uint32Array(largest * 4), inner = new Uint32Array(BUCKETS + 1), at = new Uint32Array(BUCKETS);
  const mask = BUCKETS - 1, shift = 32 - 2 * BITS;
  for (let b = 0; b < BUCKETS; b++) {
    const lo = count[b]!, m = count[b + 1]! - lo;
    inner.fill(0);
    for (let i = 0; i < m; i++) inner[((out[(lo + i) * 4]! >>> shift) & mask) + 1]!++;
    for (let k = 0; k < BUCKETS; k++) inner[k + 1]! += inner[k]!;
    at.set(inner.subarray(0, BUCKETS));
    for (let i = 0; i < m; i++) {
      const s = (lo + i) * 4, p = at[(out[s]! >>> shift) & mask]!++ * 4;
      scratch[p] = out[s]!; scratch[p + 1] = out[s + 1]!; scratch[p + 2] = out[s + 2]!; scratch[p + 3] = out[s + 3]!;
    }
    for (let i = 1; i < m; i++) {
      const a0 = scratch[i * 4]!, a1 = scratch[i * 4 + 1]!, a2 = scratch[i * 4 + 2]!, a3 = scratch[i * 4 + 3]!;
      let j = i;
      for (; j > 0; j--) {
        const q = (j - 1) * 4;
        const b0 = scratch[q]!, b1 = scratch[q + 1]!, b2 = scratch[q + 2]!, b3 = scratch[q + 3]!;
        if (b0 < a0 || (b0 === a0 && (b1 < a1 || (b1 === a1 && (b2 < a2 || (b2 === a2 && b3 <= a3)))))) break;
        scratch[j * 4] = b0; scratch[j * 4 + 1] = b1; scratch[j * 4 + 2] = b2; scratch[j * 4 + 3] = b3;
      }
      scratch[j * 4] = a0; scratch[j * 4 + 1] = a1; scratch[j * 4 + 2] = a2; scratch[j * 4 + 3] = a3;
    }
    out.set(scratch.subarray(0, m * 4), lo * 4);
  }
}

function isSorted(keys: Uint32Array, n: number): boolean {
  for (let i = 1; i < n; i++) {
    for (let w = 0; w < 4; w++) {
      const a = keys[i * 4 + w]!, b = keys[(i - 1) * 4 + w]!;
      if (a > b) break;
      if (a < b) return false;
    }
  }
  return true;
}

function main(): void {
  const n = Number(process.argv[2] ?? 45_000_000);
  const passes = Number(process.env.BENCH_PASSES ?? 3);
  const src = new Uint32Array(n * 4), out = new Uint32Array(n * 4);
  // xorshift32: the same keys every run.
  let x = 123456789;
  for (let i = 0; i < src.length; i++) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    src[i] = x >>> 0;
  }
  const times: number[] = [];
  for (let p = 0; p < passes; p++) {
    const started = performance.now();
    sortKeys(src, out, n);
    times.push((performance.now() - started) / 1000);
    if (!isSorted(out, n)) throw new Error('the keys are not sorted: this is a bug in the bench');
  }
  process.stdout.write(`${n.toLocaleString('en-US')} random 16-byte keys sorted in ${median(times).toFixed(2)} s (median of ${passes}; ${times.map((t) => t.toFixed(2)).join(', ')}), one thread, node ${process.version}\n`);
}

main();
