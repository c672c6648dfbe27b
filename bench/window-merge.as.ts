// bench/window-merge.ts's merge in WebAssembly: equal 16-byte keys of two sorted runs, each key four
// 32-bit words, the first two its order. Resumable: the positions and the count live in `state`
// (three i32: i, j, found), so the caller refills a run that is used up and calls again.
@inline function order(p: usize): u64 {
  return (u64(load<u32>(p)) << 32) | u64(load<u32>(p, 4));
}

export function merge(a: usize, an: i32, b: usize, bn: i32, state: usize): void {
  let i = load<i32>(state), j = load<i32>(state, 4), found = load<i32>(state, 8);
  while (i < an && j < bn) {
    const pa = a + (<usize>i << 4), pb = b + (<usize>j << 4);
    const ka = order(pa), kb = order(pb);
    if (ka < kb) { i++; continue; }
    if (ka > kb) { j++; continue; }
    if (load<u64>(pa, 8) == load<u64>(pb, 8)) found++;
    i++;
    j++;
  }
  store<i32>(state, i);
  store<i32>(state, j, 4);
  store<i32>(state, found, 8);
}
