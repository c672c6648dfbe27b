/**
 * The S3 access-log record scanner, compiled to WebAssembly with SIMD (AssemblyScript).
 *
 * Same rules, same names, same order as the readable TypeScript reference in
 * `test/ingest/access-log/reference/record-scanner.ts`; the differential fuzz tests hold the two to identical output.
 * It lives here because it is the hot path: a JS loop looks at ~1 byte per ns; here one SIMD pass
 * marks the delimiters of a whole chunk (see indexChunk) and the rules below jump between them.
 *
 * Reading a line (contract §2): the format is ambiguous in three places, all seen in real logs:
 * - the requester may contain spaces (`arn:aws:iam::cloudfront:user/CloudFront Origin Access Identity X`);
 * - quotes inside the quoted fields are not escaped (`"GET /" HTTP/1.1"`, `"Safari/604.1""`);
 * - request-URI, referer and user-agent may be a bare `-` instead of a quoted one.
 * Where a line can be read several ways, the scanner takes the reading under which the fields that
 * follow have their documented shape. Every line gets at most MAX_READINGS attempts, each linear in
 * its length, so no line costs more than linear time.
 *
 * Memory: the caller places input at `inPtr` with 64 readable, zeroed bytes after it (stage 1 reads
 * whole 64-byte blocks), and gives `maps` room for three bitmaps of one bit per input byte (rounded
 * up to 64-bit words) and 16 readable bytes more (a newline mark, and unaligned 8-byte reads).
 * Each record is written as RECORD_BYTES at `outPtr`, laid out as `../wasm-abi.ts` says (the one
 * file both languages compile).
 */
import {
  AT_ERROR, AT_FIELD_COUNT, AT_FIELDS, AT_LINE_END, AT_LINE_NO, AT_LINE_START, AT_TIME_MS, E_AFTER_URI, E_AGENT, E_AMBIGUOUS, E_OK, E_QUOTE,
  E_REFERER, E_TIME, E_TRUNCATED, E_URI, FIELD_COUNT as FIELDS, MIN_FIELDS, RECORD_BYTES,
} from '../wasm-abi';

const MAX_REQUESTER_TOKENS: i32 = 8;
const MAX_READINGS: i32 = 64;

const SP: i32 = 0x20, DQ: i32 = 0x22, DASH: i32 = 0x2d, LB: i32 = 0x5b, RB: i32 = 0x5d, CR: i32 = 0x0d,
  TAB: i32 = 0x09, NL: i32 = 0x0a;

// State of the record being scanned.
let rec: i32 = 0;
let budget: i32 = 0;
let trailingSplit: bool = false;
/** Words and bytes examined, for the linear-time property test. */
let work: i64 = 0;
let consumedTo: i32 = 0;
let lastLine: i32 = 0;

export function scanWork(): f64 { return <f64>work; }
export function consumed(): i32 { return consumedTo; }
export function lineCount(): i32 { return lastLine; }
export function recordBytes(): i32 { return RECORD_BYTES; }

@inline function byte(p: i32): i32 { return <i32>load<u8>(<usize>p); }

/** Field i of the record at r is [s, e). */
@inline function put(r: usize, i: i32, s: i32, e: i32): void {
  store<i32>(r + <usize>(AT_FIELDS + i * 8), s);
  store<i32>(r + <usize>(AT_FIELDS + 4 + i * 8), e);
}

@inline function set(i: i32, s: i32, e: i32): void { put(<usize>rec, i, s, e); }

// Stage 1 (simdjson's idea): one SIMD pass over a chunk marks every space, quote and newline in three
// bitmaps, a bit per input byte. After it, "the next delimiter at or after p" is a ctz on a 64-bit
// word, and no byte is looked at twice however often the readings below search.
let base: i32 = 0;
let spaces: usize = 0, quotes: usize = 0, newlines: usize = 0;

/**
 * Stage 1: marks [inPtr, inPtr + len) into the bitmaps at `maps` (3 x words x 8 bytes, and a word
 * more for the newline mark past the input). Call once per
 * buffer, before any scanChunk over it.
 */
export function indexChunk(inPtr: i32, len: i32, maps: usize): void {
  base = inPtr;
  const words = (len + 63) >> 6;
  spaces = maps;
  quotes = maps + <usize>(words << 3);
  newlines = quotes + <usize>(words << 3);
  const sp = i8x16.splat(<i8>SP), dq = i8x16.splat(<i8>DQ), nl = i8x16.splat(<i8>NL);
  // 16 bits per 16 bytes, stored as they come: little-endian, they make the same 64-bit words.
  let at = <usize>inPtr, s = spaces, q = quotes, n = newlines;
  const stop = at + <usize>(words << 6);
  while (at < stop) {
    const v0 = v128.load(at), v1 = v128.load(at, 16), v2 = v128.load(at, 32), v3 = v128.load(at, 48);
    store<u16>(s, i8x16.bitmask(i8x16.eq(v0, sp)));
    store<u16>(s, i8x16.bitmask(i8x16.eq(v1, sp)), 2);
    store<u16>(s, i8x16.bitmask(i8x16.eq(v2, sp)), 4);
    store<u16>(s, i8x16.bitmask(i8x16.eq(v3, sp)), 6);
    store<u16>(q, i8x16.bitmask(i8x16.eq(v0, dq)));
    store<u16>(q, i8x16.bitmask(i8x16.eq(v1, dq)), 2);
    store<u16>(q, i8x16.bitmask(i8x16.eq(v2, dq)), 4);
    store<u16>(q, i8x16.bitmask(i8x16.eq(v3, dq)), 6);
    store<u16>(n, i8x16.bitmask(i8x16.eq(v0, nl)));
    store<u16>(n, i8x16.bitmask(i8x16.eq(v1, nl)), 2);
    store<u16>(n, i8x16.bitmask(i8x16.eq(v2, nl)), 4);
    store<u16>(n, i8x16.bitmask(i8x16.eq(v3, nl)), 6);
    at += 64;
    s += 8;
    q += 8;
    n += 8;
  }
  // A newline mark just past the input, so that the search for a line's end needs no bound.
  const last = newlines + <usize>((len >> 6) << 3), bit = <u64>1 << <u64>(len & 63);
  store<u64>(last, (len & 63) == 0 ? bit : load<u64>(last) | bit);
}

/** Where the line at p ends: its newline, or the mark past the input (see indexChunk). */
@inline function lineEnd(p: i32): i32 {
  const off = p - base;
  let w = off >> 6;
  const from = w;
  let bits = load<u64>(newlines + <usize>(w << 3)) & (<u64>-1 << <u64>(off & 63));
  while (bits == 0) bits = load<u64>(newlines + <usize>(++w << 3));
  work += <i64>(w - from + 1);
  return base + (w << 6) + <i32>ctz<u64>(bits);
}

/**
 * The first marked position in [p, end) of `map`, or -1. Inlined: nearly every call finds its
 * answer in the word holding p. `work` counts the words looked at (the linear-time property test).
 */
@inline function nextMarked(map: usize, p: i32, end: i32): i32 {
  if (p >= end) return -1;
  const off = p - base;
  const w = off >> 6;
  const bits = load<u64>(map + <usize>(w << 3)) & (<u64>-1 << <u64>(off & 63));
  work += 1;
  if (bits != 0) {
    const r = base + (w << 6) + <i32>ctz<u64>(bits);
    return r < end ? r : -1;
  }
  return nextMarkedAfter(map, w, end);
}

function nextMarkedAfter(map: usize, w: i32, end: i32): i32 {
  const lastWord = (end - 1 - base) >> 6;
  const from = w;
  let bits: u64 = 0;
  while (bits == 0) {
    if (++w > lastWord) {
      work += <i64>(w - 1 - from);
      return -1;
    }
    bits = load<u64>(map + <usize>(w << 3));
  }
  // Counted once, not per word: a global updated in the loop is a store and a load per word.
  work += <i64>(w - from);
  const r = base + (w << 6) + <i32>ctz<u64>(bits);
  return r < end ? r : -1;
}

/** Bits of `map` from position p on: an unaligned load of the little-endian bitmap, at least 57 valid bits. */
@inline function bitsFrom(map: usize, p: i32): u64 {
  const off = p - base;
  return load<u64>(map + <usize>(off >> 3)) >> <u64>(off & 7);
}

/**
 * Where the token at `p` ends: the next space, or `end`. Fields are short: the bits from p, or from
 * p + 56 (a bucket owner ID is 64 long), nearly always answer; the bitmap's words answer the rest.
 * Not counted in `work`: the usual reading counts its lookups itself, tokenEnd counts for the rest.
 */
@inline function nextSpace(p: i32, end: i32): i32 {
  let bits = bitsFrom(spaces, p);
  let at = p;
  if (bits == 0) {
    at = p + 56;
    bits = bitsFrom(spaces, at);
    if (bits == 0) return spaceFar(p, end);
  }
  const r = at + <i32>ctz<u64>(bits);
  return r < end ? r : end;
}

function spaceFar(p: i32, end: i32): i32 {
  const r = nextMarked(spaces, p, end);
  return r < 0 ? end : r;
}

/** The first quote in [p, end), or -1: the bits from p, or the bitmap's words. Not counted, as nextSpace. */
@inline function nextQuote(p: i32, end: i32): i32 {
  const bits = bitsFrom(quotes, p);
  if (bits != 0) {
    const r = p + <i32>ctz<u64>(bits);
    return r < end ? r : -1;
  }
  return nextMarked(quotes, p, end);
}

/** nextSpace, counted in `work`. */
@inline function tokenEnd(p: i32, end: i32): i32 {
  work += 1;
  return nextSpace(p, end);
}

/** The first `b` in [p, end), or -1. Quotes come from the bitmap; `]` is looked for byte by byte. */
function findByte(b: i32, p: i32, end: i32): i32 {
  if (b == DQ) {
    work += 1;
    return nextQuote(p, end);
  }
  for (let i = p; i < end; i++) {
    if (byte(i) == b) {
      work += <i64>(i + 1 - p);
      return i;
    }
  }
  if (end > p) work += <i64>(end - p);
  return -1;
}

/** Character classes by byte: 1 digit, 2 letter, 4 word (letter, digit, `.`, `_`). One load, not a chain of compares. */
const CLASS: usize = memory.data<u8>([
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 0, 0, 0, 0, 0, 0,
  0, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 0, 0, 0, 0, 4,
  0, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
]);
const C_DIGIT: u8 = 1, C_LETTER: u8 = 2, C_WORD: u8 = 4;
@inline function cls(c: i32): u8 { return load<u8>(CLASS + <usize>c); }
@inline function isDigit(c: i32): bool { return (cls(c) & C_DIGIT) != 0; }

function isStatus(s: i32, e: i32): bool {
  if (e - s == 1) return byte(s) == DASH;
  return e - s == 3 && isDigit(byte(s)) && isDigit(byte(s + 1)) && isDigit(byte(s + 2));
}

function isNumberOrDash(s: i32, e: i32): bool {
  if (e <= s) return false;
  if (e - s == 1 && byte(s) == DASH) return true;
  let all: u8 = C_DIGIT;
  for (let i = s; i < e; i++) all &= cls(byte(i));
  return all != 0;
}

/** Whether a referer or user agent can open at u: a quote, or a `-` field. */
@inline function opensField(u: i32, end: i32): bool {
  return byte(u) == DQ || (byte(u) == DASH && (u + 1 == end || byte(u + 1) == SP));
}

/** `-`, or a letter then letters, digits, `.`, `_`: S3 error codes and operations alike. */
function isWord(s: i32, e: i32): bool {
  if (e - s == 1 && byte(s) == DASH) return true;
  if (e <= s || (cls(byte(s)) & C_LETTER) == 0) return false;
  let all: u8 = C_WORD;
  for (let i = s + 1; i < e; i++) all &= cls(byte(i));
  return all != 0;
}

function digits(s: i32, n: i32): i32 {
  let v = 0;
  for (let i = s; i < s + n; i++) {
    const c = byte(i);
    if (!isDigit(c)) return -1;
    v = v * 10 + (c - 0x30);
  }
  return v;
}

function monthOf(s: i32): i32 {
  const code = (byte(s) << 16) | (byte(s + 1) << 8) | byte(s + 2);
  switch (code) {
    case 0x4a616e: return 1; // Jan
    case 0x466562: return 2; // Feb
    case 0x4d6172: return 3; // Mar
    case 0x417072: return 4; // Apr
    case 0x4d6179: return 5; // May
    case 0x4a756e: return 6; // Jun
    case 0x4a756c: return 7; // Jul
    case 0x417567: return 8; // Aug
    case 0x536570: return 9; // Sep
    case 0x4f6374: return 10; // Oct
    case 0x4e6f76: return 11; // Nov
    case 0x446563: return 12; // Dec
  }
  return 0;
}

function daysInMonth(y: i32, m: i32): i32 {
  if (m == 2) return (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) ? 29 : 28;
  return (m == 4 || m == 6 || m == 9 || m == 11) ? 30 : 31;
}

/** Days since 1970-01-01 (Howard Hinnant's days_from_civil), for years 0..9999. */
function daysFromCivil(y0: i32, m: i32, d: i32): i64 {
  const y = y0 - (m <= 2 ? 1 : 0);
  const era = (y >= 0 ? y : y - 399) / 400;
  const yoe = y - era * 400;
  const doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return <i64>era * 146097 + <i64>doe - 719468;
}

// Records of one object share their day: the last `dd/Mon/yyyy` read (11 bytes, as an i64 and an
// i32 load) and its midnight in epoch ms.
let dayKeyLo: i64 = 0, dayKeyHi: i32 = 0, dayMs: f64 = NaN;

@inline function twoDigits(p: i32): i32 {
  const a = byte(p) - 0x30, b = byte(p + 1) - 0x30;
  return <u32>a <= 9 && <u32>b <= 9 ? a * 10 + b : -1;
}

/** `dd/Mon/yyyy:HH:MM:SS +hhmm` in [s, e) to epoch milliseconds, or NaN. Offsets are honoured. */
@inline function parseLogTime(s: i32, e: i32): f64 {
  if (e - s != 26 || byte(s + 2) != 0x2f || byte(s + 6) != 0x2f || byte(s + 11) != 0x3a
    || byte(s + 14) != 0x3a || byte(s + 17) != 0x3a || byte(s + 20) != SP) return NaN;
  // The same day at +0000, as nearly every record: only the clock is new.
  if (load<i32>(<usize>(s + 21)) == 0x30303030 + (0x2b - 0x30) && byte(s + 25) == 0x30
    && load<i64>(<usize>s) == dayKeyLo && (load<i32>(<usize>(s + 7)) & 0xffffffff) == dayKeyHi && !isNaN(dayMs)) {
    const hh = twoDigits(s + 12), mm = twoDigits(s + 15), ss = twoDigits(s + 18);
    if (hh < 0 || mm < 0 || ss < 0 || hh > 23 || mm > 59 || ss > 60) return NaN;
    return dayMs + <f64>(hh * 3600 + mm * 60 + ss) * 1000;
  }
  return parseLogTimeAndDay(s);
}

/** parseLogTime past its fast path: the whole time, kept as the day of the next ones when at +0000. */
function parseLogTimeAndDay(s: i32): f64 {
  const t = parseLogTimeFully(s);
  if (!isNaN(t) && byte(s + 21) == 0x2b && load<i32>(<usize>(s + 22)) == 0x30303030) {
    dayKeyLo = load<i64>(<usize>s);
    dayKeyHi = load<i32>(<usize>(s + 7));
    dayMs = t - <f64>(twoDigits(s + 12) * 3600 + twoDigits(s + 15) * 60 + twoDigits(s + 18)) * 1000;
  }
  return t;
}

function parseLogTimeFully(s: i32): f64 {
  const month = monthOf(s + 3);
  if (month == 0) return NaN;
  const day = digits(s, 2), year = digits(s + 7, 4), hh = digits(s + 12, 2), mm = digits(s + 15, 2),
    ss = digits(s + 18, 2), oh = digits(s + 22, 2), om = digits(s + 24, 2);
  const signByte = byte(s + 21);
  const sign = signByte == 0x2b ? 1 : signByte == DASH ? -1 : 0;
  if (day < 1 || year < 0 || hh < 0 || mm < 0 || ss < 0 || oh < 0 || om < 0 || sign == 0) return NaN;
  if (day > daysInMonth(year, month) || hh > 23 || mm > 59 || ss > 60 || oh > 23 || om > 59) return NaN;
  const seconds = daysFromCivil(year, month, day) * 86400 + <i64>(hh * 3600 + mm * 60 + ss)
    - <i64>(sign * (oh * 3600 + om * 60));
  return <f64>seconds * 1000;
}

/** -1 when a field in [p, end) holds a stray quote, 0 when there is no quote, 1 when some field is quoted whole. */
function cleanTrailing(p: i32, end: i32): i32 {
  if (findByte(DQ, p, end) < 0) return 0;
  let open = false, quoted = 0;
  while (p < end) {
    const e = tokenEnd(p, end);
    let quotes = 0;
    for (let i = p; i < e; i++) if (byte(i) == DQ) quotes++;
    if (quotes > 0) {
      quoted = 1;
      const first = byte(p) == DQ, last = e - p > 1 && byte(e - 1) == DQ;
      if (open) {
        if (!(quotes == 1 && last)) return -1;
        open = false;
      } else if (first && quotes == 2 && last) {
        // a whole quoted field
      } else if (first && quotes == 1) {
        open = true;
      } else {
        return -1;
      }
    }
    p = e + 1;
  }
  return open ? -1 : quoted;
}

function tokenIs(s: i32, e: i32, word: string, caseless: bool): bool {
  if (e - s != word.length) return false;
  for (let i = 0; i < word.length; i++) {
    let c = byte(s + i);
    let w = <i32>word.charCodeAt(i);
    if (caseless) {
      if (c >= 0x61 && c <= 0x7a) c -= 32;
      if (w >= 0x61 && w <= 0x7a) w -= 32;
    }
    if (c != w) return false;
  }
  return true;
}

/** Known trailing fields with a closed vocabulary: how many read as documented. */
function trailingShapeScore(p: i32, end: i32): i32 {
  let score = 0;
  for (let i = MIN_FIELDS; i <= 25 && p < end; i++) {
    const e = tokenEnd(p, end);
    if (i == 19 && (tokenIs(p, e, 'SigV2', false) || tokenIs(p, e, 'SigV4', false) || tokenIs(p, e, 'SigV4a', false))) score++;
    if (i == 21 && (tokenIs(p, e, 'AuthHeader', false) || tokenIs(p, e, 'QueryString', false))) score++;
    if (i == 23 && (tokenIs(p, e, 'TLSv1', true) || (e - p == 7 && tokenIs(p, p + 6, 'TLSv1.', true) && isDigit(byte(p + 6))))) score++;
    if (i == 25 && tokenIs(p, e, 'Yes', false)) score++;
    p = e + 1;
  }
  return score;
}

/** Version ID onwards: plain tokens; fields AWS adds in future are counted and ignored. */
function scanTrailing(p: i32, end: i32): void {
  if (!trailingSplit) {
    store<i32>(<usize>(rec + AT_FIELD_COUNT), MIN_FIELDS);
    return;
  }
  let i = MIN_FIELDS;
  while (true) {
    const e = tokenEnd(p, end);
    if (i < FIELDS) set(i, p, e);
    i++;
    if (e >= end) break;
    p = e + 1;
  }
  store<i32>(<usize>(rec + AT_FIELD_COUNT), i);
}

/** The user agent ends at a quote after which the record reads on cleanly (see the reference). */
function scanUserAgent(p: i32, end: i32): i32 {
  if (byte(p) == DQ) {
    let best = -1, bestScore = -1;
    for (let q = p + 1; ; q++) {
      q = findByte(DQ, q, end);
      if (q < 0) break;
      if (q + 1 == end) {
        if (best < 0) best = q;
        break;
      }
      if (byte(q + 1) != SP) continue;
      if (--budget < 0) return E_AMBIGUOUS;
      const v = q + 2;
      // No quote in the rest of the line, as nearly always: the checks below would take this quote.
      if (best < 0 && findByte(DQ, v, end) < 0) {
        best = q;
        break;
      }
      if (findByte(DQ, v, tokenEnd(v, end)) >= 0) continue;
      const clean = cleanTrailing(v, end);
      if (clean < 0) continue;
      if (clean == 0 && best < 0) {
        best = q;
        break;
      }
      const score = trailingShapeScore(v, end);
      if (score > bestScore) {
        best = q;
        bestScore = score;
      }
      if (clean == 0) break;
    }
    if (best < 0) return E_QUOTE;
    set(16, p + 1, best);
    if (best + 1 == end) store<i32>(<usize>(rec + AT_FIELD_COUNT), MIN_FIELDS);
    else scanTrailing(best + 2, end);
    return E_OK;
  }
  if (byte(p) == DASH && (p + 1 == end || byte(p + 1) == SP)) {
    set(16, p, p + 1);
    if (p + 1 == end) store<i32>(<usize>(rec + AT_FIELD_COUNT), MIN_FIELDS);
    else scanTrailing(p + 2, end);
    return E_OK;
  }
  return E_AGENT;
}

/** The shortest referer after which a user agent reads. */
function scanReferer(p: i32, end: i32): i32 {
  if (byte(p) == DQ) {
    let failure = E_QUOTE;
    for (let q = p + 1; ; q++) {
      q = findByte(DQ, q, end);
      if (q < 0) return failure;
      if (q + 1 == end) return failure == E_QUOTE ? E_TRUNCATED : failure;
      if (byte(q + 1) != SP) continue;
      const u = q + 2;
      if (!opensField(u, end)) continue;
      if (--budget < 0) return E_AMBIGUOUS;
      const r = scanUserAgent(u, end);
      if (r == E_OK) {
        set(15, p + 1, q);
        return E_OK;
      }
      if (r == E_AMBIGUOUS) return r;
      failure = r;
    }
  }
  if (byte(p) == DASH && p + 1 < end && byte(p + 1) == SP) {
    set(15, p, p + 1);
    return scanUserAgent(p + 2, end);
  }
  return p + 1 >= end ? E_TRUNCATED : E_REFERER;
}

/**
 * Status, error code, bytes sent, object size, total time, turn-around time, each checked for its
 * shape and recorded. Returns where the referer starts, 0 when the record ends before it, or -1.
 */
function scanStatusBlock(p: i32, end: i32): i32 {
  let e = p + 3 < end && byte(p + 3) == SP && isDigit(byte(p)) && isDigit(byte(p + 1)) && isDigit(byte(p + 2))
    ? p + 3 : tokenEnd(p, end);
  if (e >= end) return e == end && isStatus(p, e) ? 0 : -1;
  if (!isStatus(p, e)) return -1;
  set(9, p, e);
  p = e + 1;
  e = tokenEnd(p, end);
  if (e >= end) return isWord(p, e) ? 0 : -1;
  if (!isWord(p, e)) return -1;
  set(10, p, e);
  for (let i = 11; i <= 14; i++) {
    p = e + 1;
    e = tokenEnd(p, end);
    if (!isNumberOrDash(p, e)) return -1;
    if (e >= end) return 0;
    set(i, p, e);
  }
  p = e + 1;
  return opensField(p, end) ? p : -1;
}

function scanFromRequestUri(p: i32, end: i32): i32 {
  if (byte(p) == DQ) {
    let failure = E_QUOTE;
    for (let q = p + 1; ; q++) {
      q = findByte(DQ, q, end);
      if (q < 0) return failure;
      if (q + 1 == end) return failure == E_QUOTE ? E_TRUNCATED : failure;
      if (byte(q + 1) != SP) continue;
      if (--budget < 0) return E_AMBIGUOUS;
      const referer = scanStatusBlock(q + 2, end);
      let r = referer == 0 ? E_TRUNCATED : E_AFTER_URI;
      if (referer > 0) {
        r = scanReferer(referer, end);
        if (r == E_OK) {
          set(8, p + 1, q);
          return E_OK;
        }
      }
      if (failure == E_QUOTE) failure = r;
      if (r == E_AMBIGUOUS) return r;
    }
  }
  if (p < end && byte(p) == DASH && byte(p + 1) == SP) {
    const referer = scanStatusBlock(p + 2, end);
    if (referer == 0) return E_TRUNCATED;
    if (referer < 0) return E_AFTER_URI;
    set(8, p, p + 1);
    return scanReferer(referer, end);
  }
  return p >= end ? E_TRUNCATED : E_URI;
}

/** Fields `from` to 26 absent: start and end -1, 16 bytes (two fields) a store. */
@inline function clearFields(from: i32): void {
  const none = i32x4.splat(-1);
  let at = <usize>(rec + AT_FIELDS + from * 8);
  const last = <usize>(rec + AT_FIELDS + (FIELDS - 2) * 8);
  for (; at <= last; at += 16) v128.store(at, none);
  if (at < last + 16) store<i64>(at, -1);
}

/** clearFields(0), unrolled: it runs once per line. */
@inline function clearAllFields(): void {
  const none = i32x4.splat(-1), at = <usize>(rec + AT_FIELDS);
  v128.store(at, none, 0); v128.store(at, none, 16); v128.store(at, none, 32); v128.store(at, none, 48);
  v128.store(at, none, 64); v128.store(at, none, 80); v128.store(at, none, 96); v128.store(at, none, 112);
  v128.store(at, none, 128); v128.store(at, none, 144); v128.store(at, none, 160); v128.store(at, none, 176);
  v128.store(at, none, 192); store<i64>(at, -1, 208);
}

/**
 * The line [from, end) read the usual way, into the record: true, or false with the record half
 * written. Nearly every record has the usual time, and in each quoted field a first closing quote
 * that is the right one: scanUsual reads exactly the candidates the general reading (scanLine's)
 * tries first, in the same order, in one pass with its state in locals, and gives up at the first
 * thing out of the ordinary; scanLine then reads the line the general way from scratch. Where it
 * succeeds, the general reading would have succeeded on the same candidates, so the two agree (the
 * differential tests hold both to the reference).
 */
function scanUsual(from: i32, end: i32): bool {
  const r = <usize>rec;
  // `work`: the 16 lookups of the straight path, and one per loop turn below.
  work += 16;
  let budgetLeft = MAX_READINGS;
  let p = from;
  let e = nextSpace(p, end);
  if (e >= end) return false;
  put(r, 0, p, e);
  p = e + 1;
  e = nextSpace(p, end);
  if (e >= end) return false;
  put(r, 1, p, e);
  p = e + 1;
  if (!(p + 28 < end && byte(p) == LB && byte(p + 27) == RB && byte(p + 28) == SP)) return false;
  const t = parseLogTime(p + 1, p + 27);
  if (isNaN(t)) return false;
  store<f64>(r + AT_TIME_MS, t);
  put(r, 2, p + 1, p + 27);
  p += 29;
  e = nextSpace(p, end);
  if (e >= end) return false;
  put(r, 3, p, e);
  p = e + 1;

  // requester (the fewest tokens after which an operation and a request-URI's opening follow),
  // request ID, operation, key. The general reading tries the same requesters in the same order,
  // and fails at once, touching nothing, on each one skipped here.
  let reqE = p, idS = 0, idE = 0, opS = 0, opE = 0, keyS = 0, keyE = 0;
  for (let k = 0; ; k++) {
    if (k == MAX_REQUESTER_TOKENS) return false;
    reqE = nextSpace(reqE, end);
    if (reqE >= end) return false;
    idS = reqE + 1;
    idE = nextSpace(idS, end);
    if (idE >= end) return false;
    opS = idE + 1;
    opE = nextSpace(opS, end);
    if (opE >= end) return false;
    keyS = opE + 1;
    keyE = nextSpace(keyS, end);
    if (keyE >= end) return false;
    const u = keyE + 1;
    if (isWord(opS, opE) && (byte(u) == DQ || (u + 1 < end && byte(u) == DASH && byte(u + 1) == SP))) break;
    work += 4;
    reqE++;
  }
  put(r, 4, p, reqE);
  put(r, 5, idS, idE);
  put(r, 6, opS, opE);
  put(r, 7, keyS, keyE);
  p = keyE + 1;

  // request-URI: its first quote followed by a space
  if (byte(p) == DQ) {
    let q = nextQuote(p + 1, end);
    while (q >= 0 && q + 1 < end && byte(q + 1) != SP) {
      work += 1;
      q = nextQuote(q + 1, end);
    }
    if (q < 0 || q + 1 >= end) return false;
    budgetLeft--;
    put(r, 8, p + 1, q);
    p = q + 2;
  } else {
    // `- `, as the requester loop saw
    put(r, 8, p, p + 1);
    p += 2;
  }

  // status, error code, bytes sent, object size, total time, turn-around time
  e = p + 3 < end && byte(p + 3) == SP && isDigit(byte(p)) && isDigit(byte(p + 1)) && isDigit(byte(p + 2))
    ? p + 3 : nextSpace(p, end);
  if (e >= end || !isStatus(p, e)) return false;
  put(r, 9, p, e);
  p = e + 1;
  e = nextSpace(p, end);
  if (e >= end || !isWord(p, e)) return false;
  put(r, 10, p, e);
  for (let i = 11; i <= 14; i++) {
    p = e + 1;
    e = nextSpace(p, end);
    if (e >= end || !isNumberOrDash(p, e)) return false;
    put(r, i, p, e);
  }
  p = e + 1;

  // referer: its first quote followed by a space and a field's opening
  if (byte(p) == DQ) {
    let q = nextQuote(p + 1, end);
    while (true) {
      if (q < 0 || q + 1 >= end) return false;
      if (byte(q + 1) == SP && opensField(q + 2, end)) break;
      work += 1;
      q = nextQuote(q + 1, end);
    }
    if (--budgetLeft < 0) return false;
    put(r, 15, p + 1, q);
    p = q + 2;
  } else if (byte(p) == DASH && p + 1 < end && byte(p + 1) == SP) {
    put(r, 15, p, p + 1);
    p += 2;
  } else {
    return false;
  }

  // user agent: its first quote with nothing quoted after it
  if (byte(p) == DQ) {
    let q = nextQuote(p + 1, end);
    while (true) {
      if (q < 0) return false;
      if (q + 1 == end) {
        put(r, 16, p + 1, q);
        store<i32>(r + AT_FIELD_COUNT, MIN_FIELDS);
        break;
      }
      work += 1;
      if (byte(q + 1) == SP) {
        if (--budgetLeft < 0) return false;
        const v = q + 2, next = nextQuote(v, end);
        if (next < 0) {
          put(r, 16, p + 1, q);
          scanTrailing(v, end);
          break;
        }
        // A quote inside the token after this one rules it out, as the general reading finds;
        // a quote further on is for it to weigh.
        if (next >= nextSpace(v, end)) return false;
        q = next;
      } else {
        q = nextQuote(q + 1, end);
      }
    }
  } else if (byte(p) == DASH && (p + 1 == end || byte(p + 1) == SP)) {
    put(r, 16, p, p + 1);
    if (p + 1 == end) store<i32>(r + AT_FIELD_COUNT, MIN_FIELDS);
    else scanTrailing(p + 2, end);
  } else {
    return false;
  }
  return true;
}

/** One line [from, to): returns 0 or an error code. */
function scanLine(from: i32, to: i32): i32 {
  clearAllFields();
  store<i32>(<usize>(rec + AT_FIELD_COUNT), 0);
  store<f64>(<usize>(rec + AT_TIME_MS), NaN);
  budget = MAX_READINGS;
  let end = to;
  while (end > from) {
    const c = byte(end - 1);
    if (c != SP && c != CR && c != TAB) break;
    end--;
  }

  if (scanUsual(from, end)) return E_OK;
  clearAllFields();
  store<i32>(<usize>(rec + AT_FIELD_COUNT), 0);
  store<f64>(<usize>(rec + AT_TIME_MS), NaN);

  let p = from;
  let e = tokenEnd(p, end);
  if (e >= end) return E_TRUNCATED;
  set(0, p, e);
  p = e + 1;
  e = tokenEnd(p, end);
  if (e >= end) return E_TRUNCATED;
  set(1, p, e);
  p = e + 1;

  // [time]: the one bracketed field; its content has a space in it.
  if (p + 28 < end && byte(p) == LB && byte(p + 27) == RB && byte(p + 28) == SP) {
    const t = parseLogTime(p + 1, p + 27);
    if (isNaN(t)) return E_TIME;
    store<f64>(<usize>(rec + AT_TIME_MS), t);
    set(2, p + 1, p + 27);
    p += 29;
  } else if (p < end && byte(p) == LB) {
    const rb = findByte(RB, p + 1, min(end, p + 40));
    if (rb >= 0 && rb + 1 >= end) return E_TRUNCATED;
    if (rb < 0 || byte(rb + 1) != SP) return E_TIME;
    if (!(rb == p + 2 && byte(p + 1) == DASH)) {
      const t = parseLogTime(p + 1, rb);
      if (isNaN(t)) return E_TIME;
      store<f64>(<usize>(rec + AT_TIME_MS), t);
    }
    set(2, p + 1, rb);
    p = rb + 2;
  } else if (p + 1 < end && byte(p) == DASH && byte(p + 1) == SP) {
    set(2, p, p + 1);
    p += 2;
  } else {
    return E_TIME;
  }

  e = tokenEnd(p, end);
  if (e >= end) return E_TRUNCATED;
  set(3, p, e);
  p = e + 1;

  // requester (one or more tokens), request ID, operation, key: the shortest requester first.
  let firstError = 0;
  let reqEnd = p;
  for (let k = 0; k < MAX_REQUESTER_TOKENS; k++) {
    reqEnd = tokenEnd(reqEnd, end);
    if (reqEnd >= end) break;
    const idS = reqEnd + 1, idE = tokenEnd(idS, end);
    if (idE >= end) break;
    const opS = idE + 1, opE = tokenEnd(opS, end);
    if (opE >= end) break;
    const keyS = opE + 1, keyE = tokenEnd(keyS, end);
    if (keyE >= end) break;
    if (isWord(opS, opE)) {
      const r = scanFromRequestUri(keyE + 1, end);
      if (r == E_OK) {
        set(4, p, reqEnd);
        set(5, idS, idE);
        set(6, opS, opE);
        set(7, keyS, keyE);
        return E_OK;
      }
      if (firstError == 0) firstError = r;
    }
    reqEnd++;
  }
  clearFields(4);
  store<i32>(<usize>(rec + AT_FIELD_COUNT), 0);
  return firstError != 0 ? firstError : E_TRUNCATED;
}

function isBlank(s: i32, e: i32): bool {
  for (let i = s; i < e; i++) {
    const c = byte(i);
    if (c != SP && c != TAB && c != CR) return false;
  }
  return true;
}

/**
 * Stage 2: scans the lines of [inPtr, inPtr + len), which indexChunk has marked, into records at
 * `outPtr`, at most `maxRecords`. Without
 * `final`, a last line with no newline is left for the next call. `consumed()` says where scanning
 * stopped and `lineCount()` the number of the last line read (blank lines count, but make no record).
 */
export function scanChunk(inPtr: i32, len: i32, final: bool, outPtr: i32, maxRecords: i32, trailing: bool,
  firstLineNo: i32): i32 {
  trailingSplit = trailing;
  const end = inPtr + len;
  let p = inPtr, n = 0, lineNo = firstLineNo;
  while (n < maxRecords && p < end) {
    let nl = lineEnd(p);
    if (nl >= end) {
      if (!final) break;
      nl = end;
    }
    lineNo++;
    if (!isBlank(p, nl)) {
      rec = outPtr + n * RECORD_BYTES;
      store<i32>(<usize>(rec + AT_LINE_START), p);
      store<i32>(<usize>(rec + AT_LINE_END), nl);
      store<i32>(<usize>(rec + AT_LINE_NO), lineNo);
      store<i32>(<usize>(rec + AT_ERROR), scanLine(p, nl));
      n++;
    }
    p = nl + 1;
  }
  consumedTo = min(p, end);
  lastLine = lineNo;
  return n;
}
