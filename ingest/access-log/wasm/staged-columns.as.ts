/**
 * The staged rows' columns, for the writer of staged Parquet files (ingest/batch/staged-parquet.ts):
 * rows as the ping rules write them (ingest/staged-ping.ts stagedRow) are found, split by day and
 * read column by column here, with no text made or read between. A string column is each row's span
 * of bytes where the row lies (no byte copied); a 64-bit one is its values and a byte a row saying
 * whether it has one. Then each string column's dictionary for a row group.
 */

const ROW_STRING: u8 = 0, ROW_INT64: u8 = 1, ROW_EVENT_TIME: u8 = 2;
const DAY_MS: i64 = 86_400_000;

let indexEnd: usize = 0, indexMixed = false;
/** Where `indexRows` stopped: the first byte of the first row not wholly in its range. */
export function indexedTo(): usize { return indexEnd; }
/** Whether the rows `indexRows` found are of more than one day. */
export function indexedDaysDiffer(): bool { return indexMixed; }

/**
 * The rows wholly in [rows, end), at most `cap`: each one's start to `starts` and its UTC day (days
 * since 1970) to `days`, both i32. Returns how many.
 */
export function indexRows(rows: usize, end: usize, starts: usize, days: usize, cap: i32): i32 {
  let at = rows, n = 0;
  let first: i32 = 0, mixed = false;
  while (n < cap && at + 12 <= end) {
    const len = <usize>load<u32>(at);
    if (len < 12 || at + len > end) break;
    store<i32>(starts + (<usize>n << 2), <i32>at);
    let t = load<i64>(at, 4);
    // Floor division: a time before 1970 is of the day before its truncation.
    let day = t / DAY_MS;
    if (t % DAY_MS < 0) day--;
    store<i32>(days + (<usize>n << 2), <i32>day);
    if (n == 0) first = <i32>day;
    else if (<i32>day != first) mixed = true;
    at += len;
    n++;
  }
  indexEnd = at;
  indexMixed = mixed;
  return n;
}

/**
 * Reads the `n` rows whose starts are at `order` (i32) column by column: `kinds` gives each of the
 * `columns` columns' kind (ingest/staged-ping.ts STAGED_ROW_KINDS), and column c's output is at
 * out + c * stride. A string column's: each row's start (-1 for NULL) in i32 at +0, its end at
 * +4 * n; a 64-bit column's: its value in i64 at +0 (0 for NULL). Either's: a byte a row at +8 * n,
 * 1 when it has a value.
 */
export function transpose(order: usize, n: i32, kinds: usize, columns: i32, out: usize, stride: usize): void {
  const rowsN = <usize>n;
  for (let r: usize = 0; r < rowsN; r++) {
    const row = <usize>load<i32>(order + (r << 2));
    let at = row + 12;
    for (let c = 0; c < columns; c++) {
      const kind = load<u8>(kinds + <usize>c);
      const col = out + <usize>c * stride;
      if (kind == ROW_STRING) {
        const len = load<i32>(at);
        at += 4;
        if (len < 0) {
          store<i32>(col + (r << 2), -1);
          store<i32>(col + ((rowsN + r) << 2), -1);
          store<u8>(col + (rowsN << 3) + r, 0);
        } else {
          store<i32>(col + (r << 2), <i32>at);
          at += <usize>len;
          store<i32>(col + ((rowsN + r) << 2), <i32>at);
          store<u8>(col + (rowsN << 3) + r, 1);
        }
      } else if (kind == ROW_INT64) {
        const has = load<u8>(at);
        at++;
        if (has != 0) {
          store<i64>(col + (r << 3), load<i64>(at));
          at += 8;
        } else store<i64>(col + (r << 3), 0);
        store<u8>(col + (rowsN << 3) + r, has);
      } else {
        store<i64>(col + (r << 3), load<i64>(row, 4));
        store<u8>(col + (rowsN << 3) + r, 1);
      }
    }
    if (at != row + <usize>load<u32>(row)) unreachable();
  }
}

/**
 * A string column's dictionary over its `n` rows (starts and ends as `transpose` wrote them, at `col`):
 * each value with the same bytes gets one entry, found by a hash of the bytes (four at a time, then
 * the rest and the length) in `table` (mask + 1 slots of i32). Writes each value's entry to `index`
 * (nulls skipped) and each entry's first row to `firstRow`; returns the entries, or -1 when the
 * column is to be written as it is (PLAIN): its first `probe` values are more than three quarters
 * distinct. The values indexed go to `count`.
 */
export function dictionary(col: usize, n: i32, table: usize, mask: i32, firstRow: usize, index: usize, probe: i32, count: usize): i32 {
  memory.fill(table, 0xff, (<usize>mask + 1) << 2);
  const ends = col + (<usize>n << 2);
  let distinct = 0, k = 0;
  for (let r = 0; r < n; r++) {
    const a = load<i32>(col + (<usize>r << 2));
    if (a < 0) continue;
    if (k == probe && distinct * 4 > probe * 3) {
      store<i32>(count, k);
      return -1;
    }
    const b = load<i32>(ends + (<usize>r << 2));
    let h: u32 = 0x811c9dc5;
    let i = a;
    for (; i + 4 <= b; i += 4) h = (h ^ load<u32>(<usize>i)) * 0x01000193;
    for (; i < b; i++) h = (h ^ <u32>load<u8>(<usize>i)) * 0x01000193;
    h = (h ^ (h >>> 15) ^ <u32>(b - a)) * 0x2c1b3c6d;
    let slot = <i32>(h ^ (h >>> 13)) & mask;
    for (;;) {
      const e = load<i32>(table + (<usize>slot << 2));
      if (e == -1) {
        store<i32>(table + (<usize>slot << 2), distinct);
        store<i32>(firstRow + (<usize>distinct << 2), r);
        store<i32>(index + (<usize>k << 2), distinct);
        k++;
        distinct++;
        break;
      }
      const f = load<i32>(firstRow + (<usize>e << 2));
      const fa = load<i32>(col + (<usize>f << 2)), len = load<i32>(ends + (<usize>f << 2)) - fa;
      if (len == b - a && memory.compare(<usize>fa, <usize>a, <usize>len) == 0) {
        store<i32>(index + (<usize>k << 2), e);
        k++;
        break;
      }
      slot = (slot + 1) & mask;
    }
  }
  store<i32>(count, k);
  return distinct;
}

// A page's parts, written at `out` and their length returned (the writer puts headers around them).

let nullCount: i32 = 0;
/** The NULLs `definitionLevels` found. */
export function nulls(): i32 { return nullCount; }

/**
 * The definition levels of `n` rows whose validity bytes are at `valid` (bit width 1), their length
 * first as 4 bytes: one RLE run of 1 when no row is NULL, else bit-packed in groups of 8.
 */
export function definitionLevels(valid: usize, n: i32, out: usize): i32 {
  let nullsSeen = 0;
  for (let r = 0; r < n; r++) nullsSeen += 1 - <i32>load<u8>(valid + <usize>r);
  nullCount = nullsSeen;
  let at = out + 4;
  if (nullsSeen == 0) {
    at = varint(at, <u32>n << 1);
    store<u8>(at++, 1);
  } else {
    const groups = (n + 7) >> 3;
    at = varint(at, (<u32>groups << 1) | 1);
    for (let g = 0; g < groups; g++) {
      let b: u32 = 0;
      for (let j = 0; j < 8; j++) {
        const r = (g << 3) + j;
        if (r < n) b |= <u32>load<u8>(valid + <usize>r) << j;
      }
      store<u8>(at++, <u8>b);
    }
  }
  store<u32>(out, <u32>(at - out - 4));
  return <i32>(at - out);
}

/** `v` as an unsigned varint at `at`; returns where it ends. */
@inline export function varint(at: usize, v: u32): usize {
  while (v >= 0x80) {
    store<u8>(at++, <u8>(v | 0x80));
    v >>>= 7;
  }
  store<u8>(at++, <u8>v);
  return at;
}

/** The values of a string column's `n` rows (as `transpose` wrote them, at `col`) PLAIN: each one's length as 4 bytes, then its bytes; NULLs skipped. */
export function plainStrings(col: usize, n: i32, out: usize): i32 {
  const ends = col + (<usize>n << 2);
  let at = out;
  for (let r = 0; r < n; r++) {
    const a = load<i32>(col + (<usize>r << 2));
    if (a < 0) continue;
    const len = <usize>(load<i32>(ends + (<usize>r << 2)) - a);
    store<u32>(at, <u32>len);
    memory.copy(at + 4, <usize>a, len);
    at += 4 + len;
  }
  return <i32>(at - out);
}

/** A dictionary page's values: entry e's value (the value of row firstRow[e]) PLAIN, for each of `distinct` entries. */
export function dictionaryValues(col: usize, n: i32, firstRow: usize, distinct: i32, out: usize): i32 {
  const ends = col + (<usize>n << 2);
  let at = out;
  for (let e = 0; e < distinct; e++) {
    const f = <usize>load<i32>(firstRow + (<usize>e << 2));
    const a = load<i32>(col + (f << 2));
    const len = <usize>(load<i32>(ends + (f << 2)) - a);
    store<u32>(at, <u32>len);
    memory.copy(at + 4, <usize>a, len);
    at += 4 + len;
  }
  return <i32>(at - out);
}

/**
 * The `k` dictionary indices at `index` (of `distinct` entries), as a data page holds them: a byte of
 * their bit width, then one RLE run when there is one entry, else bit-packed in groups of 8.
 */
export function packedIndices(index: usize, k: i32, distinct: i32, out: usize): i32 {
  const width = distinct <= 1 ? 1 : 32 - <i32>clz(<u32>(distinct - 1));
  store<u8>(out, <u8>width);
  let at = out + 1;
  if (distinct == 1) {
    at = varint(at, <u32>k << 1);
    for (let b = 0; b < (width + 7) >> 3; b++) store<u8>(at++, 0);
    return <i32>(at - out);
  }
  const groups = (k + 7) >> 3;
  at = varint(at, (<u32>groups << 1) | 1);
  let acc: u64 = 0, bits: i32 = 0;
  for (let i = 0; i < groups << 3; i++) {
    acc |= <u64>(i < k ? load<u32>(index + (<usize>i << 2)) : 0) << <u64>bits;
    bits += width;
    while (bits >= 8) {
      store<u8>(at++, <u8>acc);
      acc >>= 8;
      bits -= 8;
    }
  }
  return <i32>(at - out);
}

let least: i64 = 0, greatest: i64 = 0;
/** The least and greatest value `plainInt64s` wrote (when it wrote any). */
export function leastValue(): i64 { return least; }
export function greatestValue(): i64 { return greatest; }

/** The values of a 64-bit column's `n` rows (as `transpose` wrote them, at `col`) PLAIN, NULLs skipped; returns how many bytes. */
export function plainInt64s(col: usize, n: i32, out: usize): i32 {
  const valid = col + (<usize>n << 3);
  let at = out;
  let lo: i64 = i64.MAX_VALUE, hi: i64 = i64.MIN_VALUE;
  for (let r = 0; r < n; r++) {
    if (load<u8>(valid + <usize>r) == 0) continue;
    const v = load<i64>(col + (<usize>r << 3));
    store<i64>(at, v);
    at += 8;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  least = lo;
  greatest = hi;
  return <i32>(at - out);
}
