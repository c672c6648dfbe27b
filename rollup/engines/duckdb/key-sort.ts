/**
 * The day's keys sorted for the window check (window-check.ts), in JavaScript: DuckDB streams them in
 * no order, and they come out in ascending batches of at most `max`. DuckDB's ORDER BY and its stream
 * of the sorted rows took 28.7 s of the busy day's check (45.2M keys, 2026-12-06); the same rows
 * streamed in no order take 6.4 s, and sorting them here 5-6 s more (docs/benchmarks.md, *The day's
 * keys sorted where they are merged*).
 *
 * - **A day of at most `max` keys** is held and sorted in memory: one batch, no file.
 * - **A larger day** is spilled as it streams into 256 files by the keys' top byte (a range of keys
 *   each), 32 bytes an entry. Then the files are read back in order, as many at once as `max` holds,
 *   each sorted where it was read: a batch is a run of consecutive ranges. A file of more than `max`
 *   entries (ids that share their first bits, as time-ordered UUIDs do) is split again, by the byte
 *   where its keys first differ, so that memory stays bounded by `max` whatever the keys.
 *
 * An entry is 8 words: the key's four (most significant first, as ping-keys.ts holds them), the event
 * time's low and high, the row id's low and high.
 */
import { closeSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { DayKeys } from './ping-keys.js';

/** Words an entry takes. */
export const WORDS = 8;
/** Entries held at first (DuckDB's chunks are 2,048 rows): the arrays grow fourfold up to a pass. */
const HELD_FIRST = 8_192;
/** Ranges a spill splits into: a byte of the key. */
const FANOUT = 256;
/** Entries a range's file is written and read in (64 KiB). */
const IO_ENTRIES = 2_048;
/** The most keys a sort spreads one part a key (a count array of 256 KiB; 2 MiB of entries, within the cache). */
const SPREAD_MOST = 65_536;
/** A range this small (but above INSERTION) is sorted by its 16 bits from where its keys first differ (EntrySorter.byDigits). */
const BY_DIGITS = 4_096;
/** A range this small is sorted by insertion. */
const INSERTION = 32;

/** A range of keys spilled to a file, written a block at a time and read back (where its keys first differ found by a read of it, when it must be split). */
class Range {
  readonly fd: number;
  n = 0;
  private readonly buf = new Uint32Array(IO_ENTRIES * WORDS);
  private used = 0;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'w+');
  }

  add(src: Uint32Array, at: number): void {
    const buf = this.buf;
    for (let w = 0, o = at * WORDS, d = this.used * WORDS; w < WORDS; w++) buf[d + w] = src[o + w]!;
    this.n++;
    if (++this.used === IO_ENTRIES) this.flush();
  }

  flush(): void {
    if (this.used === 0) return;
    const bytes = Buffer.from(this.buf.buffer, 0, this.used * WORDS * 4);
    for (let done = 0; done < bytes.length;) done += writeSync(this.fd, bytes, done, bytes.length - done);
    this.used = 0;
  }

  /** Entries `from` to `from + count` into `out` at entry `at`. */
  read(from: number, count: number, out: Uint32Array, at: number): void {
    const bytes = Buffer.from(out.buffer, out.byteOffset + at * WORDS * 4, count * WORDS * 4);
    for (let done = 0; done < bytes.length;) {
      const n = readSync(this.fd, bytes, done, bytes.length - done, from * WORDS * 4 + done);
      if (n === 0) throw new Error(`${this.path} ends early: a spilled range of the day's keys was cut (is the disk full?)`);
      done += n;
    }
  }

  /** The first bit (0: the key's most significant) where its keys differ, 128 when they are all one key: a read of the file. */
  firstDiff(): number {
    const diff = new Uint32Array(4), first = new Uint32Array(4), buf = new Uint32Array(IO_ENTRIES * WORDS);
    for (let from = 0; from < this.n; from += IO_ENTRIES) {
      const count = Math.min(IO_ENTRIES, this.n - from);
      this.read(from, count, buf, 0);
      if (from === 0) first.set(buf.subarray(0, 4));
      for (let i = 0; i < count; i++) for (let w = 0; w < 4; w++) diff[w]! |= buf[i * WORDS + w]! ^ first[w]!;
    }
    return firstBit(diff[0]!, diff[1]!, diff[2]!, diff[3]!);
  }

  drop(): void {
    closeSync(this.fd);
    rmSync(this.path, { force: true });
  }
}

/** The first bit set (0: the most significant) of the four words of a key's differences: 128 when none is (the keys are one). */
function firstBit(d0: number, d1: number, d2: number, d3: number): number {
  return d0 ? Math.clz32(d0) : d1 ? 32 + Math.clz32(d1) : d2 ? 64 + Math.clz32(d2) : d3 ? 96 + Math.clz32(d3) : 128;
}

/** The first bit where the keys of entries `lo` to `hi` of `a` differ: 128 when they are one. */
function firstDiff(a: Uint32Array, lo: number, hi: number): number {
  let d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  const f = lo * WORDS, f0 = a[f]!, f1 = a[f + 1]!, f2 = a[f + 2]!, f3 = a[f + 3]!;
  for (let o = (lo + 1) * WORDS; o < hi * WORDS; o += WORDS) {
    d0 |= a[o]! ^ f0; d1 |= a[o + 1]! ^ f1; d2 |= a[o + 2]! ^ f2; d3 |= a[o + 3]! ^ f3;
  }
  return firstBit(d0, d1, d2, d3);
}

/** The `width` bits of entry `i`'s key from bit `bit` on (width at most 32, within the key). */
function digit(a: Uint32Array, i: number, bit: number, width: number): number {
  const o = i * WORDS + (bit >>> 5), s = bit & 31;
  const top = s === 0 ? a[o]! : s + width <= 32 ? a[o]! << s : (a[o]! << s) | (a[o + 1]! >>> (32 - s));
  return top >>> (32 - width);
}

/** -1, 0 or 1: the key of entry i against entry j of `a`. */
function compare(a: Uint32Array, i: number, j: number): number {
  for (let w = 0; w < 4; w++) {
    const x = a[i * WORDS + w]!, y = a[j * WORDS + w]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * Sorts entries `lo` to `hi` of `a` by key (most significant distribution first): by the bits from
 * where they first differ, into `t` and back, then each part the same way; a few by insertion. Many
 * keys are spread 256 ways, fewer about one part a key (up to 16 bits). Random keys: two
 * distributions and a few keys a part; keys that share their first bits skip them.
 */
class EntrySorter {
  private t = new Uint32Array(0);
  private readonly counts: Uint32Array[] = [];
  private readonly e = new Uint32Array(WORDS);
  /** byDigits' 16 bits an entry and places, and their copies; its two digits' counts. */
  private digits = new Uint32Array(0);
  private places = new Uint32Array(0);
  private digitsT = new Uint32Array(0);
  private placesT = new Uint32Array(0);
  private readonly c0 = new Uint32Array(256);
  private readonly c1 = new Uint32Array(256);

  sort(a: Uint32Array, lo: number, hi: number): void {
    if (this.t.length < (hi - lo) * WORDS) this.t = new Uint32Array((hi - lo) * WORDS);
    this.part(a, lo, hi, 0);
  }

  /**
   * Sorts entries `lo` to `hi` of `a` (a few hundred, whose keys first differ at `bit`) by their 16
   * bits from `bit`: those bits and the entry's place, sorted a byte at a time, least significant
   * first (one read of the keys for both counts), then the entries moved once, in that order (within
   * the cache). Then each run of entries whose 16 bits are one (random keys: a few pairs) is sorted by
   * the bits after them. A distribution moving the 8-word entries at each level took 126 ns an entry
   * of the busy day's 45M.
   */
  private byDigits(a: Uint32Array, lo: number, hi: number, bit: number): void {
    const n = hi - lo, width = Math.min(16, 128 - bit);
    if (this.digits.length < n) {
      this.digits = new Uint32Array(n); this.places = new Uint32Array(n);
      this.digitsT = new Uint32Array(n); this.placesT = new Uint32Array(n);
    }
    const d = this.digits, p = this.places, dt = this.digitsT, pt = this.placesT;
    const c0 = this.c0, c1 = this.c1;
    c0.fill(0); c1.fill(0);
    for (let i = 0; i < n; i++) {
      const v = digit(a, lo + i, bit, width);
      d[i] = v; p[i] = i;
      c0[v & 255]!++; c1[v >>> 8]!++;
    }
    for (let c = 0, s0 = 0, s1 = 0; c < 256; c++) {
      const x0 = c0[c]!, x1 = c1[c]!;
      c0[c] = s0; c1[c] = s1;
      s0 += x0; s1 += x1;
    }
    for (let i = 0; i < n; i++) {
      const v = d[i]!, o = c0[v & 255]!++;
      dt[o] = v; pt[o] = p[i]!;
    }
    for (let i = 0; i < n; i++) {
      const v = dt[i]!, o = c1[v >>> 8]!++;
      d[o] = v; p[o] = pt[i]!;
    }
    // The entries in their order, through t.
    const t = this.t;
    for (let k = 0; k < n; k++) {
      const s = (lo + p[k]!) * WORDS, o = k * WORDS;
      t[o] = a[s]!; t[o + 1] = a[s + 1]!; t[o + 2] = a[s + 2]!; t[o + 3] = a[s + 3]!;
      t[o + 4] = a[s + 4]!; t[o + 5] = a[s + 5]!; t[o + 6] = a[s + 6]!; t[o + 7] = a[s + 7]!;
    }
    a.set(t.subarray(0, n * WORDS), lo * WORDS);
    if (bit + width >= 128) return;
    // Runs of one 16 bits: by what follows (t is free again: part uses it from its start). A run may
    // come back here: it writes `d` below its length, e - k, and this loop reads it from e on.
    for (let k = 0; k < n;) {
      let e = k + 1;
      while (e < n && d[e] === d[k]) e++;
      if (e - k > 1) this.part(a, lo + k, lo + e, 0);
      k = e;
    }
  }

  private part(a: Uint32Array, lo: number, hi: number, depth: number): void {
    if (hi - lo <= INSERTION) return this.insertion(a, lo, hi);
    const bit = firstDiff(a, lo, hi);
    if (bit === 128) return;
    if (hi - lo <= BY_DIGITS) return this.byDigits(a, lo, hi, bit);
    // Many keys: 256 parts (each written where the one before it was, in the cache: one part a key
    // scattered over a range of 740,000 keys' 23 MB cost 1.7x the time); fewer: about as many parts
    // as keys (a few keys a part: insertion's cost grows with its square).
    const width = Math.min(hi - lo > SPREAD_MOST ? 8 : Math.max(8, 32 - Math.clz32(hi - lo - 1)), 128 - bit);
    const buckets = 1 << width;
    if ((this.counts[depth]?.length ?? 0) <= buckets) this.counts[depth] = new Uint32Array(buckets + 1);
    const count = this.counts[depth]!;
    count.fill(0, 0, buckets + 1);
    for (let i = lo; i < hi; i++) count[digit(a, i, bit, width) + 1]!++;
    for (let c = 0; c < buckets; c++) count[c + 1]! += count[c]!;
    // Into t from its start, and back.
    const t = this.t;
    for (let i = lo; i < hi; i++) {
      const s = i * WORDS, o = count[digit(a, i, bit, width)]!++ * WORDS;
      for (let w = 0; w < WORDS; w++) t[o + w] = a[s + w]!;
    }
    a.set(t.subarray(0, (hi - lo) * WORDS), lo * WORDS);
    // count[c] is now where part c ends.
    let from = lo;
    for (let c = 0; c < buckets; c++) {
      const to = lo + count[c]!;
      if (to - from > 1) this.part(a, from, to, depth + 1);
      from = to;
    }
  }

  private insertion(a: Uint32Array, lo: number, hi: number): void {
    const e = this.e;
    for (let i = lo + 1; i < hi; i++) {
      if (compare(a, i - 1, i) <= 0) continue;
      for (let w = 0; w < WORDS; w++) e[w] = a[i * WORDS + w]!;
      let j = i - 1;
      for (; j >= lo; j--) {
        let c = 0;
        for (let w = 0; w < 4 && c === 0; w++) c = a[j * WORDS + w]! < e[w]! ? -1 : a[j * WORDS + w]! > e[w]! ? 1 : 0;
        if (c <= 0) break;
        for (let w = 0; w < WORDS; w++) a[(j + 1) * WORDS + w] = a[j * WORDS + w]!;
      }
      for (let w = 0; w < WORDS; w++) a[(j + 1) * WORDS + w] = e[w]!;
    }
  }
}

/**
 * Takes the day's entries in any order (`add`, then `batches`) and gives them back in ascending
 * batches of at most `max` keys (more only if one key were held by more than `max` entries).
 */
export class KeySort {
  /** Entries held: all of them while they fit, then a batch's. */
  private held = new Uint32Array(0);
  private n = 0;
  /** The spilled ranges by the keys' top byte (null until the day outgrows `max`). */
  private ranges: Range[] | null = null;
  /** Every spilled file not yet removed. */
  private readonly live = new Set<Range>();
  private files = 0;
  private readonly sorter = new EntrySorter();
  /** The batch handed out (keys and event times on shared memory: a merge thread reads them where they are). */
  private out: DayKeys = { keys: new Uint32Array(0), events: new BigInt64Array(0), rowids: new BigInt64Array(0), n: 0 };

  constructor(private readonly dir: string, private readonly max: number) {}

  /** Room for `n` entries in `held`, its first `keep` kept: it grows fourfold up to `max` (a small day's check held 2M keys' arrays for its few). */
  private room(n: number, keep: number): void {
    if (this.held.length >= n * WORDS) return;
    const grown = new Uint32Array(Math.max(n, Math.min(this.max, Math.max(HELD_FIRST, this.held.length / WORDS * 4))) * WORDS);
    grown.set(this.held.subarray(0, keep * WORDS));
    this.held = grown;
  }

  /** `count` entries of `src` (8 words each) from entry `from`. */
  add(src: Uint32Array, from: number, count: number): void {
    if (this.ranges === null && this.n + count <= this.max) {
      this.room(this.n + count, this.n);
      this.held.set(src.subarray(from * WORDS, (from + count) * WORDS), this.n * WORDS);
      this.n += count;
      return;
    }
    if (this.ranges === null) {
      // The day outgrew one batch: what is held goes to the ranges, and so does all that follows.
      this.ranges = Array.from({ length: FANOUT }, () => this.newRange());
      this.spill(this.held, 0, this.n);
      this.n = 0;
    }
    this.spill(src, from, count);
  }

  private newRange(): Range {
    const r = new Range(join(this.dir, `day-keys-${this.files++}.spill`));
    this.live.add(r);
    return r;
  }

  private drop(r: Range): void {
    this.live.delete(r);
    r.drop();
  }

  /** Entries `from` to `from + count` of `src` to `ranges` by the byte of their keys from `bit` (0: the top byte). */
  private spill(src: Uint32Array, from: number, count: number, ranges: Range[] = this.ranges!, bit = 0): void {
    for (let i = from; i < from + count; i++) ranges[digit(src, i, bit, 8)]!.add(src, i);
  }

  /** The entries in ascending batches; the arrays of one are reused for the next. Spilled files are removed as they are read, and all by `close`. */
  async *batches(): AsyncGenerator<DayKeys> {
    if (this.ranges === null) {
      if (this.n === 0) return;
      this.sorter.sort(this.held, 0, this.n);
      yield this.emit(this.n);
      return;
    }
    // Ranges still to read, the next last (a split range's parts take its place, in order).
    const todo: Range[] = [];
    for (const r of this.ranges.reverse()) {
      r.flush();
      if (r.n > 0) todo.push(r);
      else this.drop(r);
    }
    while (todo.length > 0) {
      const next = todo[todo.length - 1]!;
      const bit = next.n > this.max ? next.firstDiff() : 128;
      if (bit < 128) {
        todo.pop();
        todo.push(...this.split(next, Math.min(bit, 120)).reverse());
        continue;
      }
      // As many whole ranges as a batch holds (at least one), each sorted where it is read.
      let n = 0;
      while (todo.length > 0 && (n === 0 || n + todo[todo.length - 1]!.n <= this.max)) {
        const r = todo.pop()!;
        this.room(n + r.n, n);
        r.read(0, r.n, this.held, n);
        this.sorter.sort(this.held, n, n + r.n);
        n += r.n;
        this.drop(r);
      }
      yield this.emit(n);
    }
  }

  /** A range too large for a batch, split by the byte from `bit` (where its keys first differ, or before). */
  private split(r: Range, bit: number): Range[] {
    const parts = Array.from({ length: FANOUT }, () => this.newRange());
    const buf = new Uint32Array(IO_ENTRIES * WORDS);
    for (let from = 0; from < r.n; from += IO_ENTRIES) {
      const count = Math.min(IO_ENTRIES, r.n - from);
      r.read(from, count, buf, 0);
      this.spill(buf, 0, count, parts, bit);
    }
    this.drop(r);
    const kept: Range[] = [];
    for (const p of parts) {
      p.flush();
      if (p.n > 0) kept.push(p);
      else this.drop(p);
    }
    return kept;
  }

  /** The first `n` held entries (sorted) as the batch's arrays. */
  private emit(n: number): DayKeys {
    let out = this.out;
    if (out.events.length < n) {
      const cap = Math.max(n, Math.min(this.max, out.events.length * 4));
      out = this.out = { keys: new Uint32Array(new SharedArrayBuffer(cap * 16)), events: new BigInt64Array(new SharedArrayBuffer(cap * 8)), rowids: new BigInt64Array(cap), n: 0 };
    }
    const a = this.held, k = out.keys;
    const ev = new Uint32Array(out.events.buffer, out.events.byteOffset, out.events.length * 2);
    const rid = new Uint32Array(out.rowids.buffer, out.rowids.byteOffset, out.rowids.length * 2);
    for (let i = 0; i < n; i++) {
      const s = i * WORDS;
      k[i * 4] = a[s]!; k[i * 4 + 1] = a[s + 1]!; k[i * 4 + 2] = a[s + 2]!; k[i * 4 + 3] = a[s + 3]!;
      ev[i * 2] = a[s + 4]!; ev[i * 2 + 1] = a[s + 5]!;
      rid[i * 2] = a[s + 6]!; rid[i * 2 + 1] = a[s + 7]!;
    }
    out.n = n;
    return out;
  }

  /** Removes every spilled file left (a check that ended early, or failed). */
  close(): void {
    for (const r of [...this.live]) this.drop(r);
    this.ranges = null;
  }
}
