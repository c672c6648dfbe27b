// bench/own-parquet-writer.ts's dictionary of a string column's group, in WebAssembly: the same hash
// of each value's bytes (four at a time, then the rest and the length), the same table, the same
// give-up on a column whose first `probe` values nearly all differ. The column's bytes, offsets
// (i32, rows + 1) and validity (a bit a row) lie in the module's memory, as a parser of columns
// would hold them. Writes each value's entry to `index` and each entry's first row to `firstRow`;
// returns the entries, or -1 when the column is to be written PLAIN. The values indexed go to `count`.
export function dictionary(bytes: usize, offsets: usize, valid: usize, from: i32, rows: i32, table: usize, mask: i32, firstRow: usize, index: usize, probe: i32, count: usize): i32 {
  memory.fill(table, 0xff, (<usize>mask + 1) << 2);
  let distinct = 0, n = 0;
  for (let r = from; r < from + rows; r++) {
    if ((load<u8>(valid + (<usize>r >> 3)) & (1 << (r & 7))) == 0) continue;
    if (n == probe && distinct * 4 > probe * 3) {
      store<i32>(count, n);
      return -1;
    }
    const a = load<i32>(offsets + (<usize>r << 2)), b = load<i32>(offsets + (<usize>(r + 1) << 2));
    let h: u32 = 0x811c9dc5;
    let i = a;
    for (; i + 4 <= b; i += 4) h = (h ^ load<u32>(bytes + <usize>i)) * 0x01000193;
    for (; i < b; i++) h = (h ^ <u32>load<u8>(bytes + <usize>i)) * 0x01000193;
    h = (h ^ (h >>> 15) ^ <u32>(b - a)) * 0x2c1b3c6d;
    let slot = <i32>(h ^ (h >>> 13)) & mask;
    for (;;) {
      const e = load<i32>(table + (<usize>slot << 2));
      if (e == -1) {
        store<i32>(table + (<usize>slot << 2), distinct);
        store<i32>(firstRow + (<usize>distinct << 2), r);
        store<i32>(index + (<usize>n << 2), distinct);
        n++;
        distinct++;
        break;
      }
      const f = load<i32>(firstRow + (<usize>e << 2));
      const fa = load<i32>(offsets + (<usize>f << 2)), len = load<i32>(offsets + (<usize>(f + 1) << 2)) - fa;
      if (len == b - a && memory.compare(bytes + <usize>fa, bytes + <usize>a, <usize>len) == 0) {
        store<i32>(index + (<usize>n << 2), e);
        n++;
        break;
      }
      slot = (slot + 1) & mask;
    }
  }
  store<i32>(count, n);
  return distinct;
}
