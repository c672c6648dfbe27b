/**
 * Snappy compression of a staged file's pages (ingest/batch/staged-parquet.ts, on S3 only): the raw
 * block format Parquet's SNAPPY codec holds (google/snappy's format_description.txt), compressed as
 * google/snappy's own compressor does it, 64 KB at a time: a hash table of the 4-byte sequences seen,
 * a copy for each match found (extended as far as it goes), a literal for the bytes between, and a
 * step that grows while nothing matches (incompressible bytes pass at speed). Written here because
 * the libraries measured slower: snappyjs and the native `snappy` package (docs/decisions.md).
 */

import { varint } from './staged-columns.as';

const BLOCK: usize = 1 << 16;
const TABLE_BITS: u32 = 14;
const table: usize = memory.data(<i32>(1 << TABLE_BITS) * 2);

/** The most bytes `n` bytes compress to. */
export function snappyBound(n: i32): i32 { return 32 + n + n / 6; }

/** Compresses [src, src + n) to `dst` (room for snappyBound(n)); returns the compressed length. */
export function snappyCompress(src: usize, n: i32, dst: usize): i32 {
  // The uncompressed length, a varint.
  let op = varint(dst, <u32>n);
  for (let at: usize = 0; at < <usize>n; at += BLOCK) {
    const len = min(BLOCK, <usize>n - at);
    op = compressBlock(src + at, len, op);
  }
  return <i32>(op - dst);
}

@inline function hash(p: usize): u32 {
  return (load<u32>(p) * 0x1e35a7bd) >>> (32 - TABLE_BITS);
}

function compressBlock(base: usize, n: usize, op: usize): usize {
  const end = base + n;
  // Fewer than 15 bytes: one literal (the match loop reads ahead).
  if (n < 15) return literal(op, base, n);
  memory.fill(table, 0, <usize>(1 << TABLE_BITS) * 2);
  const limit = end - 15;
  let nextEmit = base;
  let ip = base + 1;
  for (;;) {
    // Find a 4-byte match, stepping further the longer none is found.
    let skip: u32 = 32;
    let candidate: usize = 0;
    let found = false;
    while (ip <= limit) {
      const h = hash(ip);
      const step = skip >>> 5;
      skip++;
      candidate = base + <usize>load<u16>(table + (<usize>h << 1));
      store<u16>(table + (<usize>h << 1), <u16>(ip - base));
      if (load<u32>(candidate) == load<u32>(ip) && candidate < ip) {
        found = true;
        break;
      }
      ip += step;
    }
    if (!found) break;
    op = literal(op, nextEmit, ip - nextEmit);
    // Copies while the bytes at ip match an earlier place.
    do {
      let matched: usize = 4;
      while (ip + matched < end && load<u8>(candidate + matched) == load<u8>(ip + matched)) matched++;
      op = copy(op, ip - candidate, matched);
      ip += matched;
      nextEmit = ip;
      if (ip > limit) break;
      // The byte before is in the table too; the match goes on at once when ip matches again.
      store<u16>(table + (<usize>hash(ip - 1) << 1), <u16>(ip - 1 - base));
      const h = hash(ip);
      candidate = base + <usize>load<u16>(table + (<usize>h << 1));
      store<u16>(table + (<usize>h << 1), <u16>(ip - base));
    } while (load<u32>(candidate) == load<u32>(ip) && candidate < ip);
    if (ip > limit) break;
    ip++;
  }
  if (nextEmit < end) op = literal(op, nextEmit, end - nextEmit);
  return op;
}

/** A literal of n bytes (at most a block's 65,536): its tag and length, then the bytes; nothing for none. */
function literal(op: usize, from: usize, n: usize): usize {
  if (n == 0) return op;
  const m = <u32>(n - 1);
  if (m < 60) store<u8>(op++, <u8>(m << 2));
  else if (m < 0x100) {
    store<u8>(op++, 60 << 2);
    store<u8>(op++, <u8>m);
  } else {
    store<u8>(op++, 61 << 2);
    store<u16>(op, <u16>m);
    op += 2;
  }
  memory.copy(op, from, n);
  return op + n;
}

/** A copy of `n` bytes from `offset` back (offset < 65536): copies of 64 bytes at most, 2-byte offsets; a short near one in 2 bytes. */
function copy(op: usize, offset: usize, n: usize): usize {
  while (n >= 68) {
    op = copy2(op, offset, 64);
    n -= 64;
  }
  if (n > 64) {
    op = copy2(op, offset, 60);
    n -= 60;
  }
  if (n < 12 && offset < 2048) {
    store<u8>(op, <u8>(1 | ((n - 4) << 2) | ((offset >>> 8) << 5)));
    store<u8>(op + 1, <u8>offset);
    return op + 2;
  }
  return copy2(op, offset, n);
}

@inline function copy2(op: usize, offset: usize, n: usize): usize {
  store<u8>(op, <u8>(2 | ((n - 1) << 2)));
  store<u16>(op + 1, <u16>offset);
  return op + 3;
}
