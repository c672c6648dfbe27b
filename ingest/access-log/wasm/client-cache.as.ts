/**
 * What a ping's client IP and user agent say (contract §10), remembered in the module: the country of
 * each distinct address, and the operating system, device type, browser and bot rule of each distinct
 * user agent, as the CSV fields the staged row takes (ingest/audience/client-describer.ts writes them).
 * A value not seen yet is asked of JavaScript once (`describeClient`); every later ping with it copies
 * the fields from here, so no JavaScript runs for it. Keys are compared whole (a hash only finds them).
 *
 * The region is the caller's (`setClientCache`, once): for each kind, an open-addressed table of
 * TABLE_SLOTS slots and an arena of keys and values (addresses get an eighth of the arena, user
 * agents the rest: theirs are long). When a kind's table is three-quarters full or its arena cannot
 * take another key and value, that kind's values are all forgotten and asked again (a day has few
 * user agents; a busy day's addresses come and go).
 */
import { CLIENT_AGENT, CLIENT_IP, MAX_CLIENT_FIELDS_BYTES } from '../wasm-abi';

@external("env", "describeClient")
declare function describeClient(kind: i32, keyPtr: usize, keyLen: i32, outPtr: usize, outCap: i32): i32;

const TABLE_SLOTS: u32 = 16384;
/** A slot: the key's hash, its offset in the region (0: empty), its length, the value's offset. */
const SLOT_BYTES: usize = 16;
const TABLE_BYTES: usize = <usize>TABLE_SLOTS * SLOT_BYTES;

let region: usize = 0;
// Per kind (IP, user agent): its arena's start, end and next free byte, and the slots taken in its table.
let ipArena: usize = 0, ipArenaEnd: usize = 0, ipAt: usize = 0, ipUsed: u32 = 0;
let agentArena: usize = 0, agentArenaEnd: usize = 0, agentAt: usize = 0, agentUsed: u32 = 0;

/** Where the caches live: `bytes` at `ptr`, the caller's to keep (at least clientCacheMinBytes). */
export function setClientCache(ptr: usize, bytes: i32): void {
  region = ptr;
  const arenas = ptr + 2 * TABLE_BYTES, end = ptr + <usize>bytes;
  ipArena = arenas;
  ipArenaEnd = arenas + (end - arenas) / 8;
  agentArena = ipArenaEnd;
  agentArenaEnd = end;
  forget(CLIENT_IP);
  forget(CLIENT_AGENT);
}

/** The size setClientCache needs at least: both tables and room for keys and values. */
export function clientCacheMinBytes(): i32 { return 2 * <i32>TABLE_SLOTS * <i32>SLOT_BYTES + (1 << 20); }

function forget(kind: i32): void {
  memory.fill(region + <usize>kind * TABLE_BYTES, 0, TABLE_BYTES);
  if (kind == CLIENT_IP) {
    ipAt = ipArena;
    ipUsed = 0;
  } else {
    agentAt = agentArena;
    agentUsed = 0;
  }
}

/** A hash of [s, s + n), eight bytes a step (user agents are ~100 bytes; a byte a step cost 0.05 s on the small-object day). */
@inline function hashOf(s: usize, n: usize): u32 {
  let h: u64 = 0x9e3779b97f4a7c15 ^ <u64>n;
  let i: usize = 0;
  for (; i + 8 <= n; i += 8) h = rotl<u64>(h ^ load<u64>(s + i), 29) * 0xff51afd7ed558ccd;
  let tail: u64 = 0;
  for (let k: u64 = 0; i < n; i++, k += 8) tail |= <u64>load<u8>(s + i) << k;
  h = rotl<u64>(h ^ tail, 29) * 0xc4ceb9fe1a85ec53;
  return <u32>(h ^ (h >> 32));
}

function sameBytes(a: usize, b: usize, n: usize): bool {
  let i: usize = 0;
  for (; i + 8 <= n; i += 8) if (load<u64>(a + i) != load<u64>(b + i)) return false;
  for (; i < n; i++) if (load<u8>(a + i) != load<u8>(b + i)) return false;
  return true;
}

/** Whether every byte of [s, s + n) is printable ASCII (0x20 to 0x7e), eight at a time. */
function printable(s: usize, n: usize): bool {
  let i: usize = 0;
  for (; i + 8 <= n; i += 8) {
    const w = load<u64>(s + i);
    // A byte below 0x20 borrows from its high bit; a byte of 0x7f or more sets it once 0x01 is added.
    if (((w - 0x2020202020202020) | (w + 0x0101010101010101) | w) & 0x8080808080808080) return false;
  }
  for (; i < n; i++) if (<u32>load<u8>(s + i) - 0x20 > 0x5e) return false;
  return true;
}

/**
 * Writes at `out` the fields of the client value [s, s + n) of `kind` (CLIENT_IP, CLIENT_AGENT), and
 * returns their length; n < 0 for none (absent, `-`, or not kept: the fields of no value). A value
 * holding a byte outside printable ASCII is not kept either (no real address or user agent does): it
 * is checked only when not found, since every key remembered was checked before it was kept.
 */
export function clientFields(kind: i32, s: usize, n: i32, out: usize): usize {
  if (n < 0) n = 0;
  const len = <usize>n;
  const h = hashOf(s, len);
  const table = region + <usize>kind * TABLE_BYTES;
  let i = h & (TABLE_SLOTS - 1);
  for (;;) {
    const slot = table + <usize>i * SLOT_BYTES;
    const keyAt = load<u32>(slot, 4);
    if (keyAt == 0) break;
    if (load<u32>(slot) == h && load<u32>(slot, 8) == <u32>len && sameBytes(region + <usize>keyAt, s, len)) {
      const valAt = region + <usize>load<u32>(slot, 12);
      const valLen = <usize>load<u8>(valAt);
      memory.copy(out, valAt + 1, valLen);
      return valLen;
    }
    i = (i + 1) & (TABLE_SLOTS - 1);
  }
  // Not seen: unless not kept, asked of JavaScript, kept, and copied out.
  if (!printable(s, len)) return clientFields(kind, s, -1, out);
  const ip = kind == CLIENT_IP;
  const at = ip ? ipAt : agentAt;
  if ((ip ? ipUsed : agentUsed) * 4 >= TABLE_SLOTS * 3 || at + len + 1 + <usize>MAX_CLIENT_FIELDS_BYTES > (ip ? ipArenaEnd : agentArenaEnd)) {
    forget(kind);
    return clientFields(kind, s, n, out);
  }
  const keyAt = at;
  memory.copy(keyAt, s, len);
  const valAt = keyAt + len;
  const valLen = <usize>describeClient(kind, keyAt, <i32>len, valAt + 1, MAX_CLIENT_FIELDS_BYTES);
  store<u8>(valAt, <u8>valLen);
  if (ip) {
    ipAt = valAt + 1 + valLen;
    ipUsed++;
  } else {
    agentAt = valAt + 1 + valLen;
    agentUsed++;
  }
  const slot = table + <usize>i * SLOT_BYTES;
  store<u32>(slot, h);
  store<u32>(slot, <u32>(keyAt - region), 4);
  store<u32>(slot, <u32>len, 8);
  store<u32>(slot, <u32>(valAt - region), 12);
  memory.copy(out, valAt + 1, valLen);
  return valLen;
}
