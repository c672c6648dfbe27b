/**
 * The staged rows' columns, for the writer of staged Parquet files (ingest/batch/staged-parquet.ts):
 * rows as the ping rules write them (ingest/staged-ping.ts stagedRow) are found, split by day and
 * read column by column here, with no text made or read between. A string column is each row's span
 * of bytes where the row lies (no byte copied); a 64-bit one is its values and a byte a row saying
 * whether it has one. Then each string column's dictionary for a row group.
 */

const ROW_STRING: u8 = 0, ROW_INT64: u8 = 1, ROW_EVENT_TIME: u8 = 2;
const DAY_MS: i64 = 86_400_000;

let indexEnd: usize = 0;
/** Where `indexRows` stopped: the first byte of the first row not wholly in its range. */
export function indexedTo(): usize { return indexEnd; }

/**
 * The rows wholly in [rows, end), at most `cap`: each one's start to `starts` and its UTC day (days
 * since 1970) to `days`, both i32. Returns how many.
 */
export function indexRows(rows: usize, end: usize, starts: usize, days: usize, cap: i32): i32 {
  let at = rows, n = 0;
  while (n < cap && at + 12 <= end) {
    const len = <usize>load<u32>(at);
    if (len < 12 || at + len > end) break;
    store<i32>(starts + (<usize>n << 2), <i32>at);
    let t = load<i64>(at, 4);
    // Floor division: a time before 1970 is of the day before its truncation.
    let day = t / DAY_MS;
    if (t % DAY_MS < 0) day--;
    store<i32>(days + (<usize>n << 2), <i32>day);
    at += len;
    n++;
  }
  indexEnd = at;
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
