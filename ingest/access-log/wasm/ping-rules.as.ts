/**
 * Which scanned records are pings (contract §1a, §3), compiled to WebAssembly beside the scanner, and the
 * staged row of each ping, written in its binary form (ingest/staged-ping.ts stagedRow) straight into
 * the module's memory: ingest hands those bytes to a file without making one JavaScript string or
 * object per record, and the staged file's columns are read from them with no text between.
 *
 * Same rules, same order as the readable TypeScript reference in `test/ingest/access-log/reference/ping-rules.ts`;
 * the differential fuzz tests hold the two to identical verdicts and values:
 * - operation REST.GET.OBJECT or WEBSITE.GET.OBJECT, key one of the ping keys (as logged, or
 *   URL-decoded once or twice as decodeURIComponent does);
 * - status 200, 204, 206 or 304;
 * - query parameters decoded as WHATWG URLSearchParams: `+` is a space, `%XY` a byte, a malformed
 *   `%` stays literal, bytes read as UTF-8 with U+FFFD for each maximal invalid subpart; `x-` names
 *   win over bare aliases even when empty, the first of repeats wins;
 * - series, episode, session present, non-empty, at most 256 code points; a time.
 *
 * Per record it writes, after the scanner's fields, the outcome, its detail and the staged row's
 * span, where `../wasm-abi.ts` (the layout both languages compile) says.
 */

import {
  AT_DETAIL, AT_ERROR, AT_FIELDS, AT_OUTCOME, AT_ROW_END, AT_ROW_START, AT_TIME_MS, DETAIL_PROBLEM_SHIFT, MALFORMED_NO_TIME,
  CLIENT_AGENT, CLIENT_IP, MAX_AGENT_BYTES, MAX_ID_CODE_POINTS, MAX_IP_BYTES, MAX_PLATFORM_CHARS, O_BAD_QUERY, O_HTTP_ERROR, O_MALFORMED, O_NOT_PING, O_PING, PROBLEM_EMPTY, PROBLEM_LONG, PROBLEM_MISSING,
} from '../wasm-abi';
import { clientFields } from './client-cache.as';

const F_REMOTE_IP: i32 = 3, F_USER_AGENT: i32 = 16, F_REQUEST_ID: i32 = 5, F_OPERATION: i32 = 6, F_KEY: i32 = 7, F_REQUEST_URI: i32 = 8, F_STATUS: i32 = 9;

const PCT: u32 = 0x25, PLUS: u32 = 0x2b, AMP: u32 = 0x26, EQ: u32 = 0x3d, QM: u32 = 0x3f, SPACE: u32 = 0x20;

// The ping keys, as JavaScript writes them: u32 length, then the UTF-8 bytes, for each key.
const KEYS_CAP: i32 = 8192;
const keys: usize = memory.data(KEYS_CAP);
let keyCount: i32 = 0;
export function pingKeysAt(): usize { return keys; }
export function pingKeysCapacity(): i32 { return KEYS_CAP; }
export function setPingKeyCount(n: i32): void { keyCount = n; }

// The parameters, in PARAMS order (paramIndex's numbers); raw value spans for `x-` names (slots 0 to
// N_PARAMS - 1) and bare aliases (the next N_PARAMS), -1 when absent; then each value's final bytes.
const N_PARAMS: i32 = 7;
const P_USER: i32 = 3, P_PING_ID: i32 = 4, P_PLATFORM: i32 = 5, P_POS: i32 = 6;
const rawStart: usize = memory.data(N_PARAMS * 8), rawEnd: usize = memory.data(N_PARAMS * 8);
const valStart: usize = memory.data(N_PARAMS * 4), valEnd: usize = memory.data(N_PARAMS * 4);

let scratchTop: usize = 0;
let rows: usize = 0;
let rowsEnd: usize = 0;

@inline function u8at(p: usize): u32 { return <u32>load<u8>(p); }
@inline function field(rec: usize, i: i32, end: bool): i32 { return load<i32>(rec + <usize>(AT_FIELDS + i * 8 + (end ? 4 : 0))); }

function hexValue(c: u32): i32 {
  if (c - 0x30 <= 9) return <i32>(c - 0x30);
  if (c - 0x41 <= 5) return <i32>(c - 0x37);
  if (c - 0x61 <= 5) return <i32>(c - 0x57);
  return -1;
}

@inline function replacement(out: usize): usize {
  store<u8>(out, 0xef);
  store<u8>(out + 1, 0xbf);
  store<u8>(out + 2, 0xbd);
  return out + 3;
}

let decodedHigh = false;

/**
 * Copies [s, e) to `out` as the WHATWG UTF-8 decoder reads it (each maximal invalid subpart becomes
 * U+FFFD) and, with `form`, decodes `+` to a space and `%XY` to its byte (URLSearchParams). Sets
 * decodedHigh when a %-escape gave a byte of 0x80 or more: only then can the result be invalid
 * UTF-8 again. Returns the end of what it wrote (at most 3 bytes per input byte).
 */
function decodeBytes(s: usize, e: usize, out: usize, form: bool): usize {
  let needed: u32 = 0, seen: u32 = 0, lower: u32 = 0x80, upper: u32 = 0xbf;
  let seq: usize = 0;
  let i = s;
  while (i < e) {
    const c = u8at(i);
    if (needed == 0) {
      if (c < 0x80) {
        if (form && c == PLUS) {
          store<u8>(out++, <u8>SPACE);
        } else if (form && c == PCT && i + 2 < e && hexValue(u8at(i + 1)) >= 0 && hexValue(u8at(i + 2)) >= 0) {
          const v = hexValue(u8at(i + 1)) * 16 + hexValue(u8at(i + 2));
          if (v >= 0x80) decodedHigh = true;
          store<u8>(out++, <u8>v);
          i += 3;
          continue;
        } else {
          store<u8>(out++, <u8>c);
        }
        i++;
        continue;
      }
      if (c >= 0xc2 && c <= 0xdf) needed = 1;
      else if (c >= 0xe0 && c <= 0xef) {
        if (c == 0xe0) lower = 0xa0;
        if (c == 0xed) upper = 0x9f;
        needed = 2;
      } else if (c >= 0xf0 && c <= 0xf4) {
        if (c == 0xf0) lower = 0x90;
        if (c == 0xf4) upper = 0x8f;
        needed = 3;
      } else {
        out = replacement(out);
        i++;
        continue;
      }
      seq = i;
      seen = 0;
      i++;
      continue;
    }
    if (c < lower || c > upper) {
      // The sequence so far is one invalid subpart; this byte is read afresh.
      needed = 0;
      lower = 0x80;
      upper = 0xbf;
      out = replacement(out);
      continue;
    }
    lower = 0x80;
    upper = 0xbf;
    i++;
    if (++seen == needed) {
      memory.copy(out, seq, i - seq);
      out += i - seq;
      needed = 0;
    }
  }
  if (needed != 0) out = replacement(out);
  return out;
}

// A decoded name or value: [decStart, decEnd).
let decStart: usize = 0, decEnd: usize = 0;

/** URLSearchParams' reading of the logged bytes [s, e) (which hold `%`, `+` or non-ASCII), into scratch. */
function formDecode(s: usize, e: usize): void {
  decodedHigh = false;
  const a = scratchTop;
  const aEnd = decodeBytes(s, e, a, true);
  if (!decodedHigh) {
    decStart = a;
    decEnd = aEnd;
    scratchTop = aEnd;
    return;
  }
  // Escaped bytes may make invalid UTF-8 (or complete a sequence with their neighbours): read again.
  const bEnd = decodeBytes(a, aEnd, aEnd, false);
  decStart = aEnd;
  decEnd = bEnd;
  scratchTop = bEnd;
}

/** Which parameter (series, episode, session, user, ping, platform, pos) the name [s, e) is, or -1: its bytes compared as words. */
function paramIndex(s: usize, e: usize): i32 {
  const n = e - s;
  if (n == 6) return load<u32>(s) == 0x69726573 /* seri */ && load<u16>(s, 4) == 0x7365 /* es */ ? 0 : -1;
  if (n == 7) {
    const head = load<u32>(s), tail = load<u32>(s, 3);
    if (head == 0x73697065 /* epis */ && tail == 0x65646f73 /* sode */) return 1;
    if (head == 0x73736573 /* sess */ && tail == 0x6e6f6973 /* sion */) return 2;
    return -1;
  }
  if (n == 4) {
    const w = load<u32>(s);
    return w == 0x72657375 /* user */ ? 3 : w == 0x676e6970 /* ping */ ? 4 : -1;
  }
  if (n == 8) return load<u64>(s) == 0x6d726f6674616c70 /* platform */ ? 5 : -1;
  if (n == 3) return load<u16>(s) == 0x6f70 /* po */ && u8at(s + 2) == 0x73 /* s */ ? 6 : -1;
  return -1;
}

// What a query's bytes hold, found in one pass: DECODE for `%`, `+` or a byte of 0x80 or more (the
// text changes when read).
const DECODE: i32 = 1;
const flags: usize = memory.data(N_PARAMS * 8);

/** One `name=value` of the query: the name is [a, eq), the value [eq + 1, z) when eq < z. */
function takeParam(a: usize, eq: usize, z: usize, nameFlags: i32, valueFlags: i32): void {
  let ns = a, ne = eq;
  const top = scratchTop;
  if (nameFlags & DECODE) {
    // An encoded name (`x%2Dseries`) means the same as the plain one.
    formDecode(a, eq);
    ns = decStart;
    ne = decEnd;
  }
  let slot = N_PARAMS;
  if (ne - ns > 2 && load<u16>(ns) == 0x2d78 /* x- */) {
    slot = 0;
    ns += 2;
  }
  const p = paramIndex(ns, ne);
  scratchTop = top;
  if (p < 0) return;
  const at = <usize>((slot + p) << 2);
  if (load<i32>(rawStart + at) >= 0) return;
  store<i32>(rawStart + at, eq < z ? <i32>eq + 1 : <i32>z);
  store<i32>(rawEnd + at, <i32>z);
  store<i32>(flags + at, valueFlags);
}

/** A bit for each of the 64 bytes at p that is `&`, `=`, `%`, `+` or 0x80 and above. */
@inline function specials(p: usize): u64 {
  const amp = i8x16.splat(<i8>AMP), eq = i8x16.splat(<i8>EQ), pct = i8x16.splat(<i8>PCT), plus = i8x16.splat(<i8>PLUS),
    zero = i8x16.splat(0);
  let m: u64 = 0;
  for (let k = 0; k < 4; k++) {
    const v = v128.load(p + <usize>(k << 4));
    const hit = v128.or(v128.or(v128.or(i8x16.eq(v, amp), i8x16.eq(v, eq)), v128.or(i8x16.eq(v, pct), i8x16.eq(v, plus))), i8x16.lt_s(v, zero));
    m |= <u64>i8x16.bitmask(hit) << <u64>(k << 4);
  }
  return m;
}

/**
 * Reads the query [qs, qe) into the N_PARAMS values (valStart -1 when absent), in one pass: a SIMD mask
 * of the bytes that matter per 64, then one step per such byte.
 */
function readQuery(qs: usize, qe: usize): void {
  for (let i = 0; i < 2 * N_PARAMS; i++) store<i32>(rawStart + <usize>(i << 2), -1);
  // The current `name=value` starts at a; eq 0 while it has no `=` (no input lies at address 0).
  let a = qs, eq: usize = 0, nameFlags = 0, valueFlags = 0;
  for (let block = qs; block < qe; block += 64) {
    let m = specials(block);
    if (qe - block < 64) m &= (<u64>1 << <u64>(qe - block)) - 1;
    while (m != 0) {
      const p = block + <usize>ctz(m);
      m &= m - 1;
      const c = u8at(p);
      if (c == AMP) {
        if (p > a) takeParam(a, eq == 0 ? p : eq, p, nameFlags, valueFlags);
        a = p + 1;
        eq = 0;
        nameFlags = valueFlags = 0;
      } else if (eq == 0) {
        if (c == EQ) eq = p;
        else nameFlags |= DECODE;
      } else if (c != EQ) valueFlags |= DECODE;
    }
  }
  if (qe > a) takeParam(a, eq == 0 ? qe : eq, qe, nameFlags, valueFlags);
  for (let p = 0; p < N_PARAMS; p++) {
    let at = <usize>(p << 2);
    if (load<i32>(rawStart + at) < 0) at += <usize>(N_PARAMS << 2);
    const s = load<i32>(rawStart + at), e = load<i32>(rawEnd + at);
    if (s < 0) {
      store<i32>(valStart + <usize>(p << 2), -1);
      continue;
    }
    const f = load<i32>(flags + at);
    if (f & DECODE) {
      formDecode(<usize>s, <usize>e);
      store<i32>(valStart + <usize>(p << 2), <i32>decStart);
      store<i32>(valEnd + <usize>(p << 2), <i32>decEnd);
    } else {
      store<i32>(valStart + <usize>(p << 2), s);
      store<i32>(valEnd + <usize>(p << 2), e);
    }
  }
}

/** The query string's [start, end) inside the request-URI `GET /p.gif?x-series=1 HTTP/1.1`, or start == end. */
let queryStart: usize = 0, queryEnd: usize = 0;
function findQuery(rec: usize): void {
  queryStart = queryEnd = 0;
  const s = field(rec, F_REQUEST_URI, false), e = field(rec, F_REQUEST_URI, true);
  if (s < 0) return;
  let q = <usize>s;
  while (q < <usize>e && u8at(q) != QM) q++;
  if (q >= <usize>e) return;
  let end = <usize>e;
  let sp = end - 1;
  while (sp > q && u8at(sp) != SPACE) sp--;
  // Drop the protocol: the last space-separated token when it is HTTP/x.
  if (sp > q && u8at(sp + 1) == 0x48 && u8at(sp + 2) == 0x54 && u8at(sp + 3) == 0x54 && u8at(sp + 4) == 0x50) end = sp;
  queryStart = q + 1;
  queryEnd = end;
}

function isPingOperation(rec: usize): bool {
  const s = <usize>field(rec, F_OPERATION, false), n = <usize>field(rec, F_OPERATION, true) - s;
  // REST.GET.OBJECT or WEBSITE.GET.OBJECT, compared as words.
  if (n == 15) return load<u64>(s) == 0x5445472e54534552 && load<u64>(s, 7) == 0x5443454a424f2e54;
  return n == 18 && load<u64>(s) == 0x2e45544953424557 && load<u64>(s, 8) == 0x454a424f2e544547 && load<u16>(s, 16) == 0x5443;
}

function isKey(s: usize, e: usize): bool {
  let k = keys;
  for (let i = 0; i < keyCount; i++) {
    const n = <usize>load<u32>(k);
    k += 4;
    if (e - s == n && memory.compare(s, k, n) == 0) return true;
    k += n;
  }
  return false;
}

let uriOk = false;

/** ECMAScript decodeURIComponent over the UTF-8 bytes [s, e) into `out`; uriOk false where it throws. */
function uriDecode(s: usize, e: usize, out: usize): usize {
  uriOk = false;
  let i = s;
  while (i < e) {
    const c = u8at(i);
    if (c != PCT) {
      store<u8>(out++, <u8>c);
      i++;
      continue;
    }
    if (i + 2 >= e) return out;
    const h = hexValue(u8at(i + 1)), l = hexValue(u8at(i + 2));
    if (h < 0 || l < 0) return out;
    const b0 = <u32>(h * 16 + l);
    i += 3;
    if (b0 < 0x80) {
      store<u8>(out++, <u8>b0);
      continue;
    }
    const n: u32 = (b0 & 0xe0) == 0xc0 ? 2 : (b0 & 0xf0) == 0xe0 ? 3 : (b0 & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0) return out;
    store<u8>(out, <u8>b0);
    for (let j: u32 = 1; j < n; j++) {
      if (i + 2 >= e || u8at(i) != PCT) return out;
      const hh = hexValue(u8at(i + 1)), ll = hexValue(u8at(i + 2));
      if (hh < 0 || ll < 0) return out;
      store<u8>(out + <usize>j, <u8>(hh * 16 + ll));
      i += 3;
    }
    if (!validSequence(out, n)) return out;
    out += <usize>n;
  }
  uriOk = true;
  return out;
}

/** Whether the n bytes at p are one well-formed UTF-8 code point (no overlong form, surrogate or beyond U+10FFFF). */
function validSequence(p: usize, n: u32): bool {
  const b0 = u8at(p), b1 = u8at(p + 1);
  for (let j: u32 = 1; j < n; j++) if ((u8at(p + <usize>j) & 0xc0) != 0x80) return false;
  if (n == 2) return b0 >= 0xc2;
  if (n == 3) return !(b0 == 0xe0 && b1 < 0xa0) && !(b0 == 0xed && b1 > 0x9f);
  return b0 <= 0xf4 && !(b0 == 0xf0 && b1 < 0x90) && !(b0 == 0xf4 && b1 > 0x8f);
}

/** The key field is URL-encoded (twice for most REST operations); `/` stays literal. */
function isPingKey(rec: usize): bool {
  const s = field(rec, F_KEY, false), e = field(rec, F_KEY, true);
  if (s < 0) return false;
  let encoded = false;
  for (let i = s; i < e; i++) {
    if (u8at(<usize>i) == PCT) {
      encoded = true;
      break;
    }
  }
  if (!encoded) return isKey(<usize>s, <usize>e);
  const top = scratchTop;
  // As logged (read as UTF-8), then decoded once, then twice; a decoding that fails leaves the text as it was.
  const text = scratchTop, textEnd = decodeBytes(<usize>s, <usize>e, text, false);
  const once = textEnd, onceEnd0 = uriDecode(text, textEnd, once);
  let os = once, oe = onceEnd0;
  if (!uriOk) {
    os = text;
    oe = textEnd;
  }
  let found = isKey(os, oe);
  if (!found) {
    const twice = max(oe, onceEnd0), twiceEnd = uriDecode(os, oe, twice);
    found = uriOk ? isKey(twice, twiceEnd) : isKey(os, oe);
  }
  scratchTop = top;
  return found;
}

function codePointsOver(s: usize, e: usize, limit: i32): bool {
  if (<i32>(e - s) <= limit) return false;
  let n = 0;
  for (let i = s; i < e; i++) if ((u8at(i) & 0xc0) != 0x80) n++;
  return n > limit;
}

/** contract §1a's required parameters: (problem << DETAIL_PROBLEM_SHIFT) | parameter of the first one wanting, or -1. */
function requiredProblem(): i32 {
  for (let p = 0; p < P_USER; p++) {
    const s = load<i32>(valStart + <usize>(p << 2)), e = load<i32>(valEnd + <usize>(p << 2));
    if (s < 0) return (PROBLEM_MISSING << DETAIL_PROBLEM_SHIFT) | p;
    if (s == e) return (PROBLEM_EMPTY << DETAIL_PROBLEM_SHIFT) | p;
    if (codePointsOver(<usize>s, <usize>e, MAX_ID_CODE_POINTS)) return (PROBLEM_LONG << DETAIL_PROBLEM_SHIFT) | p;
  }
  return -1;
}

/** Copies n bytes in 16-byte blocks: may read and write up to 15 bytes past them (rows are written in order, inputs are padded). */
@inline function copyBytes(dst: usize, src: usize, n: usize): void {
  for (let i: usize = 0; i < n; i += 16) v128.store(dst + i, v128.load(src + i));
}

/** A VARCHAR of the staged row: its byte length, then `prefix`'s two bytes when not 0, then the bytes [s, e). */
function stringField(s: usize, e: usize, prefix: u32): void {
  let out = rows + 4;
  if (prefix != 0) {
    store<u16>(out, <u16>prefix);
    out += 2;
  }
  copyBytes(out, s, e - s);
  out += e - s;
  store<i32>(rows, <i32>(out - rows - 4));
  rows = out;
}

/** A NULL VARCHAR. */
@inline function nullString(): void {
  store<i32>(rows, -1);
  rows += 4;
}

/** A BIGINT of the staged row: a 1, then its 8 bytes. */
@inline function int64Field(v: i64): void {
  store<u8>(rows, 1);
  store<i64>(rows + 1, v);
  rows += 9;
}

/** A NULL BIGINT. */
@inline function nullInt64(): void {
  store<u8>(rows++, 0);
}

/** The request ID read as Latin-1 (each byte one character), as UTF-8: `r:` + it is the natural key. */
function naturalKeyField(s: usize, e: usize): void {
  let plain = true;
  for (let i = s; i < e; i++) {
    if (u8at(i) >= 0x80) {
      plain = false;
      break;
    }
  }
  if (plain) {
    stringField(s, e, 0x3a72); // "r:" as a little-endian u16
    return;
  }
  const top = scratchTop;
  let out = top;
  for (let i = s; i < e; i++) {
    const c = u8at(i);
    if (c < 0x80) store<u8>(out++, <u8>c);
    else {
      store<u8>(out++, <u8>(0xc0 | (c >> 6)));
      store<u8>(out++, <u8>(0x80 | (c & 0x3f)));
    }
  }
  stringField(top, out, 0x3a72);
  scratchTop = top;
}

/**
 * The staged row (ingest/staged-ping.ts stagedRow): its length and event time, then source, series,
 * episode, session, user_id, ping_id, natural_key, platform, pos, then the country of the client IP
 * and the os, device type, browser and bot rule of the user agent (contract §10; client-cache.as.ts),
 * neither of which is staged, then the ping id's key (keyFields).
 */
function writeRow(rec: usize): void {
  const start = rows;
  store<i64>(rows + 4, <i64>load<f64>(rec + <usize>AT_TIME_MS));
  rows += 12;
  store<i32>(rows, 2);
  store<u16>(rows + 4, 0x3373); // "s3"
  rows += 6;
  for (let p = 0; p < P_PLATFORM; p++) {
    const s = load<i32>(valStart + <usize>(p << 2));
    // A user or ping id that is absent or empty is NULL.
    if (s >= 0) stringField(<usize>s, <usize>load<i32>(valEnd + <usize>(p << 2)), 0);
    else nullString();
  }
  naturalKeyField(<usize>field(rec, F_REQUEST_ID, false), <usize>field(rec, F_REQUEST_ID, true));
  platformField();
  posField();
  rows += clientFields(CLIENT_IP, <usize>field(rec, F_REMOTE_IP, false), clientLength(rec, F_REMOTE_IP, MAX_IP_BYTES), rows);
  rows += clientFields(CLIENT_AGENT, <usize>field(rec, F_USER_AGENT, false), clientLength(rec, F_USER_AGENT, MAX_AGENT_BYTES), rows);
  keyFields();
  store<u32>(start, <u32>(rows - start));
}

const TOP_BIT: u64 = 0x8000000000000000;

/**
 * The ping id's key (staged format 4, ingest/staged-ping.ts STAGED_KEY_COLUMNS): for a canonical
 * UUID (36 bytes, lowercase hex, dashes at 8, 13, 18 and 23), its high and low 64 bits, each top bit
 * flipped; two NULLs for any other id, or none. The 32 digits are read 16 at a time (SIMD): a loop a
 * character was a fifth of the parse (the small-object day's 445,657 ids: 100 of 480 ms).
 */
function keyFields(): void {
  const b = load<i32>(valStart + <usize>(P_PING_ID << 2));
  if (b < 0 || load<i32>(valEnd + <usize>(P_PING_ID << 2)) - b != 36) {
    noKey();
    return;
  }
  const s = <usize>b;
  if (u8at(s + 8) != 0x2d || u8at(s + 13) != 0x2d || u8at(s + 18) != 0x2d || u8at(s + 23) != 0x2d) {
    noKey();
    return;
  }
  // Bytes 0-15, 16-31 and 20-35 of the id; the high key's digits are at 0-7, 9-12 and 14-17, the low
  // key's at 19-22 and 24-35.
  const a = v128.load(s), m = v128.load(s + 16), z = v128.load(s + 20);
  const hiDigits = v128.shuffle<u8>(a, m, 0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 16, 17);
  const loDigits = v128.shuffle<u8>(m, z, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 28, 29, 30, 31);
  const hi = hexPairs(hiDigits), lo = hexPairs(loDigits);
  // A lane of 0x100 or more is a character that is no lowercase hex digit.
  if (!v128.all_true<u16>(i16x8.lt_u(v128.or(hi, lo), i16x8.splat(0x100)))) {
    noKey();
    return;
  }
  // The bytes in the digits' order, high key's first: each key's 8 bytes, big-endian.
  const bytes = i8x16.narrow_i16x8_u(hi, lo);
  int64Field(<i64>(bswap<u64>(i64x2.extract_lane(bytes, 0)) ^ TOP_BIT));
  int64Field(<i64>(bswap<u64>(i64x2.extract_lane(bytes, 1)) ^ TOP_BIT));
}

/**
 * 16 characters, each a lowercase hex digit, as 8 bytes (two digits a byte, the first the high half),
 * each in a 16-bit lane; a lane of 0x100 or more where either character is not a digit.
 */
@inline function hexPairs(c: v128): v128 {
  const digit = i8x16.sub(c, i8x16.splat(0x30));
  const letter = i8x16.sub(c, i8x16.splat(0x61));
  const isDigit = i8x16.le_u(digit, i8x16.splat(9));
  const isLetter = i8x16.le_u(letter, i8x16.splat(5));
  // A digit's value, a letter's value, or 0x80 (past a nibble: the pair's lane goes past 0xff) for anything else.
  const value = v128.bitselect(digit, v128.bitselect(i8x16.add(letter, i8x16.splat(10)), i8x16.splat(<i8>0x80), isLetter), isDigit);
  // Lane k holds character 2k's value in its low byte and 2k + 1's in its high byte.
  const high = i16x8.shl(v128.and(value, i16x8.splat(0xff)), 4);
  const low = i16x8.shr_u(value, 8);
  // The high digit's value (up to 0x80 << 4) and the low one's (up to 0x80): past 0xff when either is 0x80.
  return v128.or(high, v128.add<i16>(low, v128.and(low, i16x8.splat(0x80))));
}

@inline function noKey(): void {
  nullInt64();
  nullInt64();
}

/**
 * The length of the client IP or user agent as logged, or -1 for none: absent, `-`, or longer than
 * `max` bytes (one holding a byte outside printable ASCII is none too: clientFields checks it).
 */
function clientLength(rec: usize, f: i32, max: i32): i32 {
  const s = field(rec, f, false);
  if (s < 0) return -1;
  const e = field(rec, f, true);
  if (e - s > max || (e - s == 1 && u8at(<usize>s) == 0x2d)) return -1;
  return e - s;
}

/**
 * The playhead as ingest/ping-record.ts's normalizePos leaves it: 1 to 9 digits, then optionally a
 * point and digits, as its whole seconds; NULL for anything else.
 */
function posField(): void {
  const s = load<i32>(valStart + <usize>(P_POS << 2));
  if (s < 0) {
    nullInt64();
    return;
  }
  const e = <usize>load<i32>(valEnd + <usize>(P_POS << 2));
  let i = <usize>s;
  let v: u32 = 0;
  while (i < e && u8at(i) - 0x30 <= 9) {
    v = v * 10 + (u8at(i) - 0x30);
    i++;
  }
  const digits = i - <usize>s;
  let whole = digits != 0 && digits <= 9;
  if (whole && i < e) {
    if (u8at(i) != 0x2e) whole = false;
    else for (let j = i + 1; j < e; j++) if (u8at(j) - 0x30 > 9) whole = false;
  }
  if (whole) int64Field(<i64>v);
  else nullInt64();
}

/**
 * The platform as ingest/ping-record.ts's normalizePlatform leaves it: ASCII letters lowercased and
 * digits, nothing else; NULL when that is nothing or more than MAX_PLATFORM_CHARS.
 */
function platformField(): void {
  const s = load<i32>(valStart + <usize>(P_PLATFORM << 2));
  if (s < 0) {
    nullString();
    return;
  }
  const e = load<i32>(valEnd + <usize>(P_PLATFORM << 2));
  const length = rows;
  rows += 4;
  const from = rows;
  for (let i = <usize>s; i < <usize>e; i++) {
    const c = u8at(i);
    if (c - 0x61 <= 25 || c - 0x30 <= 9) put(c);
    else if (c - 0x41 <= 25) put(c + 32);
    else continue;
    if (rows - from > <usize>MAX_PLATFORM_CHARS) break;
  }
  const n = rows - from;
  if (n == 0 || n > <usize>MAX_PLATFORM_CHARS) {
    rows = length;
    nullString();
  } else store<i32>(length, <i32>n);
}

@inline function put(c: u32): void { store<u8>(rows++, <u8>c); }

function classify(rec: usize): i32 {
  if (load<i32>(rec + <usize>AT_ERROR) != 0) return O_MALFORMED;
  if (!isPingOperation(rec) || !isPingKey(rec)) return O_NOT_PING;
  const ss = field(rec, F_STATUS, false), se = field(rec, F_STATUS, true);
  let status = -1;
  if (ss >= 0 && !(se - ss == 1 && u8at(<usize>ss) == 0x2d)) {
    status = 0;
    for (let i = ss; i < se; i++) status = status * 10 + <i32>u8at(<usize>i) - 0x30;
  }
  if (status != 200 && status != 204 && status != 206 && status != 304) {
    store<i32>(rec + <usize>AT_DETAIL, status);
    return O_HTTP_ERROR;
  }
  findQuery(rec);
  readQuery(queryStart, queryEnd);
  const problem = requiredProblem();
  if (problem >= 0) {
    store<i32>(rec + <usize>AT_DETAIL, problem);
    return O_BAD_QUERY;
  }
  if (isNaN(load<f64>(rec + <usize>AT_TIME_MS))) {
    store<i32>(rec + <usize>AT_DETAIL, MALFORMED_NO_TIME);
    return O_MALFORMED;
  }
  // An empty user or ping id is null.
  for (let p = P_USER; p < P_PLATFORM; p++) {
    if (load<i32>(valStart + <usize>(p << 2)) == load<i32>(valEnd + <usize>(p << 2))) store<i32>(valStart + <usize>(p << 2), -1);
  }
  store<i32>(rec + <usize>AT_ROW_START, <i32>rows);
  writeRow(rec);
  store<i32>(rec + <usize>AT_ROW_END, <i32>rows);
  return O_PING;
}

// Outcome counts by UTC day, kept here so that no JavaScript runs for a record that is only counted:
// pings, not_ping and http_error records of the TALLY_DAYS days from tallyFirstDay, in a day-major
// table of TALLY_OUTCOMES counts. A record without a time counts on tallyOwnDay (its log object's).
// Every other record (bad_query, malformed, a day outside the table) is listed for the caller.
const TALLY_DAYS: i32 = 64, TALLY_OUTCOMES: i32 = 3;
const tally: usize = memory.data(TALLY_DAYS * TALLY_OUTCOMES * 4);
let tallyFirstDay: i32 = 0, tallyOwnDay: i32 = 0, tallying: bool = false;
export function tallyAt(): usize { return tally; }
export function tallyDays(): i32 { return TALLY_DAYS; }
export function tallyOutcomes(): i32 { return TALLY_OUTCOMES; }
/** Zeroes the table and starts counting for days from `firstDay` (days since 1970); `ownDay` is the object's. */
export function startTally(firstDay: i32, ownDay: i32): void {
  memory.fill(tally, 0, <usize>(TALLY_DAYS * TALLY_OUTCOMES * 4));
  tallyFirstDay = firstDay;
  tallyOwnDay = ownDay;
  tallying = true;
}
export function stopTally(): void { tallying = false; }

/** Counts the record in the table when it can; false when the caller must see it. */
@inline function counted(rec: usize, outcome: i32): bool {
  if (!tallying || outcome > O_HTTP_ERROR) return false;
  const t = load<f64>(rec + <usize>AT_TIME_MS);
  const day = load<i32>(rec + <usize>AT_ERROR) != 0 || isNaN(t) ? tallyOwnDay : <i32>Math.floor(t / 86_400_000);
  const d = day - tallyFirstDay;
  if (<u32>d >= <u32>TALLY_DAYS) return false;
  const at = tally + <usize>((d * TALLY_OUTCOMES + outcome) << 2);
  store<i32>(at, load<i32>(at) + 1);
  return true;
}

/**
 * Classifies the `n` records at `outPtr` (scanChunk's output) and writes each ping's row at
 * `rowsPtr`. The caller gives `rowsCap` of at least 3 bytes per input byte plus ROW_BYTES_PER_RECORD
 * per record, and `scratchPtr` of at least 6 bytes per byte of the longest line. Returns the rows'
 * total length.
 * While tallying, the indexes of the records not counted go to `listPtr` (room for `n`); `listed()`
 * says how many.
 */
let listedCount: i32 = 0;
export function listed(): i32 { return listedCount; }
export function classifyRecords(outPtr: usize, n: i32, recordBytes: i32, rowsPtr: usize, rowsCap: i32, scratchPtr: usize,
  listPtr: usize): i32 {
  rows = rowsPtr;
  rowsEnd = rowsPtr + <usize>rowsCap;
  let m = 0;
  for (let k = 0; k < n; k++) {
    const rec = outPtr + <usize>(k * recordBytes);
    scratchTop = scratchPtr;
    store<i32>(rec + <usize>AT_DETAIL, 0);
    store<i32>(rec + <usize>AT_ROW_START, 0);
    store<i32>(rec + <usize>AT_ROW_END, 0);
    const outcome = classify(rec);
    store<i32>(rec + <usize>AT_OUTCOME, outcome);
    if (rows > rowsEnd) unreachable();
    if (!counted(rec, outcome)) store<i32>(listPtr + <usize>(m++ << 2), k);
  }
  listedCount = m;
  return <i32>(rows - rowsPtr);
}
