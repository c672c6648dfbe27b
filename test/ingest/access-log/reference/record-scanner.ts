/**
 * The reference implementation of the access-log scanner: the same rules as the production scanner
 * (`ingest/access-log/wasm/record-scanner.as.ts`, WebAssembly with SIMD), written for reading rather
 * than speed. The differential fuzz tests hold the two to identical output on every input.
 *
 * It works on bytes, as the production scanner does: every delimiter of the format (space, `"`, `[`,
 * `]`) is ASCII, and in UTF-8 no byte of a multi-byte character is below 0x80. It finds where each
 * field starts and ends; nothing more.
 *
 * The format is ambiguous in three places, all seen in real logs (contract §2):
 * - the requester may contain spaces (`arn:aws:iam::cloudfront:user/CloudFront Origin Access Identity X`);
 * - quotes inside the quoted fields are not escaped (`"GET /" HTTP/1.1"`, `"Safari/604.1""`);
 * - request-URI, referer and user-agent may be a bare `-` instead of a quoted one.
 * Where a line can be read several ways, the scanner takes the reading under which the fields that
 * follow have their documented shape: a three-digit status, an alphabetic error code, four numbers,
 * then a referer and a user agent that open where a field can open. A reading that fails further on
 * is abandoned for the next candidate, at most MAX_READINGS per line, each linear in the line's length.
 */

import { KNOWN_FIELDS, MIN_FIELDS } from '../../../../ingest/access-log/record-layout.js';

/** The requester is the only unquoted field with spaces; a CloudFront OAI takes five tokens. */
const MAX_REQUESTER_TOKENS = 8;
/** Candidate readings tried per line before it is given up as malformed (real lines need one or two). */
const MAX_READINGS = 64;

const E_OK = 0, E_TRUNCATED = 1, E_TIME = 2, E_URI = 3, E_AFTER_URI = 4, E_REFERER = 5, E_AGENT = 6,
  E_QUOTE = 7, E_AMBIGUOUS = 8;

const SP = 0x20, DQ = 0x22, DASH = 0x2d, LB = 0x5b, RB = 0x5d, CR = 0x0d, TAB = 0x09;

/**
 * Where the fields of one record are. Reused from line to line: allocate one per reader.
 * `start[i]`/`end[i]` are byte offsets into the scanned buffer (quotes excluded); `start[i] = -1` when
 * the record has no field i. `timeMs` is the event time (NaN when the time is `-`).
 */
export class RecordSpans {
  readonly start = new Int32Array(KNOWN_FIELDS);
  readonly end = new Int32Array(KNOWN_FIELDS);
  /**
   * Fields present, known or not (a 29-field record says 29; only 27 are kept). Without `trailing`,
   * fields after the user agent are checked but not split, and count says 17.
   */
  count = 0;
  timeMs = NaN;
  /** Readings left to try on this line: bounds the work on adversarial lines to linear. */
  private budget = 0;

  /**
   * @param trailing split the fields after the user agent (version ID onwards) too. Ingest reads
   * none of them, so it leaves them whole; `pingroll parse` prints them.
   */
  constructor(private readonly trailing = true) {}

  private set(i: number, s: number, e: number): void {
    this.start[i] = s;
    this.end[i] = e;
  }

  /** Scans `b[from, to)` (one line, without its newline). Returns 0 or an index into SCAN_ERRORS. */
  scan(b: Buffer, from: number, to: number): number {
    this.start.fill(-1);
    this.count = 0;
    this.timeMs = NaN;
    this.budget = MAX_READINGS;
    let end = to;
    while (end > from && (b[end - 1] === SP || b[end - 1] === CR || b[end - 1] === TAB)) end--;

    // bucket owner, bucket
    let p = from;
    let e = tokenEnd(b, p, end);
    if (e >= end) return E_TRUNCATED;
    this.set(0, p, e);
    p = e + 1;
    e = tokenEnd(b, p, end);
    if (e >= end) return E_TRUNCATED;
    this.set(1, p, e);
    p = e + 1;

    // [time]: the one bracketed field; its content has a space in it.
    if (b[p] === LB) {
      const rb = indexOfByte(b, RB, p + 1, Math.min(end, p + 40));
      if (rb >= 0 && rb + 1 >= end) return E_TRUNCATED;
      if (rb < 0 || b[rb + 1] !== SP) return E_TIME;
      if (!(rb === p + 2 && b[p + 1] === DASH)) {
        this.timeMs = parseLogTime(b, p + 1, rb);
        if (Number.isNaN(this.timeMs)) return E_TIME;
      }
      this.set(2, p + 1, rb);
      p = rb + 2;
    } else if (p + 1 < end && b[p] === DASH && b[p + 1] === SP) {
      this.set(2, p, p + 1);
      p += 2;
    } else {
      return E_TIME;
    }

    // remote IP
    e = tokenEnd(b, p, end);
    if (e >= end) return E_TRUNCATED;
    this.set(3, p, e);
    p = e + 1;

    // requester (one or more tokens), request ID, operation, key. Try the shortest requester first
    // and take the first reading whose remaining fields all have their documented shape.
    let firstError = 0;
    let reqEnd = p;
    for (let k = 0; k < MAX_REQUESTER_TOKENS; k++) {
      reqEnd = tokenEnd(b, reqEnd, end);
      if (reqEnd >= end) break;
      const idS = reqEnd + 1, idE = tokenEnd(b, idS, end);
      if (idE >= end) break;
      const opS = idE + 1, opE = tokenEnd(b, opS, end);
      if (opE >= end) break;
      const keyS = opE + 1, keyE = tokenEnd(b, keyS, end);
      if (keyE >= end) break;
      if (isWord(b, opS, opE)) {
        const r = this.scanFromRequestUri(b, keyE + 1, end);
        if (r === E_OK) {
          this.set(4, p, reqEnd);
          this.set(5, idS, idE);
          this.set(6, opS, opE);
          this.set(7, keyS, keyE);
          return E_OK;
        }
        if (firstError === 0) firstError = r;
      }
      reqEnd++;
    }
    // Keep only the fields every reading agreed on.
    for (let i = 4; i < KNOWN_FIELDS; i++) this.start[i] = -1;
    this.count = 0;
    return firstError || E_TRUNCATED;
  }

  /** From the request-URI to the end of the record. */
  private scanFromRequestUri(b: Buffer, p: number, end: number): number {
    if (b[p] === DQ) {
      // Unescaped quotes: the URI ends at a quote after which the rest of the record reads.
      // When none does, the first quote that could close it says best what went wrong.
      let failure = E_QUOTE;
      for (let q = p + 1; ; q++) {
        q = indexOfByte(b, DQ, q, end);
        if (q < 0) return failure;
        if (q + 1 === end) return failure === E_QUOTE ? E_TRUNCATED : failure;
        if (b[q + 1] !== SP) continue;
        if (--this.budget < 0) return E_AMBIGUOUS;
        const referer = this.scanStatusBlock(b, q + 2, end);
        let r = referer === 0 ? E_TRUNCATED : E_AFTER_URI;
        if (referer > 0) {
          r = this.scanReferer(b, referer, end);
          if (r === E_OK) {
            this.set(8, p + 1, q);
            return E_OK;
          }
        }
        if (failure === E_QUOTE) failure = r;
        if (r === E_AMBIGUOUS) return r;
      }
    }
    if (b[p] === DASH && b[p + 1] === SP) {
      const referer = this.scanStatusBlock(b, p + 2, end);
      if (referer === 0) return E_TRUNCATED;
      if (referer < 0) return E_AFTER_URI;
      this.set(8, p, p + 1);
      return this.scanReferer(b, referer, end);
    }
    return p >= end ? E_TRUNCATED : E_URI;
  }

  /**
   * Status, error code, bytes sent, object size, total time, turn-around time, each checked for its
   * shape and recorded. Returns where the referer starts, 0 when the record ends before it, or -1.
   */
  private scanStatusBlock(b: Buffer, p: number, end: number): number {
    // Three digits and a space: the usual status, checked without a token search.
    let e = tokenEnd(b, p, end);
    if (e >= end) return e === end && isStatus(b, p, e) ? 0 : -1;
    if (!isStatus(b, p, e)) return -1;
    this.set(9, p, e);
    p = e + 1;
    e = tokenEnd(b, p, end);
    if (e >= end) return isWord(b, p, e) ? 0 : -1;
    if (!isWord(b, p, e)) return -1;
    this.set(10, p, e);
    for (let i = 11; i <= 14; i++) {
      p = e + 1;
      e = tokenEnd(b, p, end);
      if (!isNumberOrDash(b, p, e)) return -1;
      if (e >= end) return 0;
      this.set(i, p, e);
    }
    p = e + 1;
    // The referer must open where a field can open: a quote, or a bare "-".
    return b[p] === DQ || (b[p] === DASH && (p + 1 === end || b[p + 1] === SP)) ? p : -1;
  }

  /** The referer, then the user agent: the shortest referer after which a user agent reads. */
  private scanReferer(b: Buffer, p: number, end: number): number {
    if (b[p] === DQ) {
      let failure = E_QUOTE;
      for (let q = p + 1; ; q++) {
        q = indexOfByte(b, DQ, q, end);
        if (q < 0) return failure;
        if (q + 1 === end) return failure === E_QUOTE ? E_TRUNCATED : failure;
        if (b[q + 1] !== SP) continue;
        const u = q + 2;
        // The user agent must open where a field can open.
        if (!(b[u] === DQ || (b[u] === DASH && (u + 1 === end || b[u + 1] === SP)))) continue;
        if (--this.budget < 0) return E_AMBIGUOUS;
        const r = this.scanUserAgent(b, u, end);
        if (r === E_OK) {
          this.set(15, p + 1, q);
          return E_OK;
        }
        if (r === E_AMBIGUOUS) return r;
        failure = r;
      }
    }
    if (b[p] === DASH && p + 1 < end && b[p + 1] === SP) {
      this.set(15, p, p + 1);
      return this.scanUserAgent(b, p + 2, end);
    }
    return p + 1 >= end ? E_TRUNCATED : E_REFERER;
  }

  /**
   * The user agent ends at a quote after which the record reads on cleanly: a version ID with no
   * quote in it, and no stray quote in any later field (a later field may be quoted whole, as unknown
   * future fields might be). Of several such readings, the one whose known trailing fields have their
   * documented shape wins; on a tie, the shortest user agent.
   */
  private scanUserAgent(b: Buffer, p: number, end: number): number {
    if (b[p] === DQ) {
      let best = -1, bestScore = -1;
      for (let q = p + 1; ; q++) {
        q = indexOfByte(b, DQ, q, end);
        if (q < 0) break;
        if (q + 1 === end) {
          if (best < 0) best = q;
          break;
        }
        if (b[q + 1] !== SP) continue;
        if (--this.budget < 0) return E_AMBIGUOUS;
        const v = q + 2;
        if (indexOfByte(b, DQ, v, tokenEnd(b, v, end)) >= 0) continue;
        const clean = cleanTrailing(b, v, end);
        if (clean < 0) continue;
        // No quote after this one: no later reading exists, and the common case ends here.
        if (clean === 0 && best < 0) {
          best = q;
          break;
        }
        const score = trailingShapeScore(b, v, end);
        if (score > bestScore) {
          best = q;
          bestScore = score;
        }
        if (clean === 0) break;
      }
      if (best < 0) return E_QUOTE;
      this.set(16, p + 1, best);
      if (best + 1 === end) this.count = MIN_FIELDS;
      else this.scanTrailing(b, best + 2, end);
      return E_OK;
    }
    if (b[p] === DASH && (p + 1 === end || b[p + 1] === SP)) {
      this.set(16, p, p + 1);
      if (p + 1 === end) this.count = MIN_FIELDS;
      else this.scanTrailing(b, p + 2, end);
      return E_OK;
    }
    return E_AGENT;
  }

  /** Version ID onwards: plain tokens. Fields AWS adds in future are counted and ignored. */
  private scanTrailing(b: Buffer, p: number, end: number): void {
    if (!this.trailing) {
      this.count = MIN_FIELDS;
      return;
    }
    let i = MIN_FIELDS;
    for (;;) {
      const e = tokenEnd(b, p, end);
      if (i < KNOWN_FIELDS) this.set(i, p, e);
      i++;
      if (e >= end) break;
      p = e + 1;
    }
    this.count = i;
  }
}

/**
 * Whether the fields in `b[p, end)` are free of stray quotes: -1 when one holds a stray quote, 0 when
 * there is no quote at all, 1 when some field is quoted whole (`"x"`, or `"x y"` over several tokens),
 * as unknown future fields might be.
 */
function cleanTrailing(b: Buffer, p: number, end: number): number {
  if (indexOfByte(b, DQ, p, end) < 0) return 0;
  let open = false, quoted = 0;
  while (p < end) {
    const e = tokenEnd(b, p, end);
    let quotes = 0;
    for (let i = p; i < e; i++) if (b[i] === DQ) quotes++;
    if (quotes > 0) {
      quoted = 1;
      const first = b[p] === DQ, last = e - p > 1 && b[e - 1] === DQ;
      if (open) {
        if (!(quotes === 1 && last)) return -1;
        open = false;
      } else if (first && quotes === 2 && last) {
        // a whole quoted field
      } else if (first && quotes === 1) {
        open = true;
      } else {
        return -1;
      }
    }
    p = e + 1;
  }
  return open ? -1 : quoted;
}

/** Known trailing fields with a closed vocabulary, by position: how many read as documented. */
const TRAILING_SHAPES: Array<[number, RegExp]> = [
  [19, /^SigV(2|4|4a)$/], [21, /^(AuthHeader|QueryString)$/], [23, /^TLSv1(\.\d)?$/i], [25, /^Yes$/],
];

function trailingShapeScore(b: Buffer, p: number, end: number): number {
  let score = 0;
  for (let i = MIN_FIELDS; i <= 25 && p < end; i++) {
    const e = tokenEnd(b, p, end);
    for (const [at, shape] of TRAILING_SHAPES) {
      if (at === i && shape.test(String.fromCharCode(...b.subarray(p, Math.min(e, p + 16))))) score++;
    }
    p = e + 1;
  }
  return score;
}

/** Where the token at `p` ends: the next space, or `end`. */
function tokenEnd(b: Uint8Array, p: number, end: number): number {
  while (p < end && b[p] !== SP) p++;
  return p;
}

/** The first `byte` in `b[from, to)`, or -1. */
function indexOfByte(b: Uint8Array, byte: number, from: number, to: number): number {
  for (let i = from; i < to; i++) if (b[i] === byte) return i;
  return -1;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

function isStatus(b: Uint8Array, s: number, e: number): boolean {
  if (e - s === 1) return b[s] === DASH;
  return e - s === 3 && isDigit(b[s]) && isDigit(b[s + 1]) && isDigit(b[s + 2]);
}

function isNumberOrDash(b: Uint8Array, s: number, e: number): boolean {
  if (e <= s) return false;
  if (e - s === 1 && b[s] === DASH) return true;
  for (let i = s; i < e; i++) if (!isDigit(b[i])) return false;
  return true;
}

function isLetter(c: number | undefined): boolean {
  return c !== undefined && ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a));
}

/** `-`, or a letter then letters, digits, `.`, `_`: S3 error codes (`NoSuchKey`) and operations
 * (`REST.GET.OBJECT`; other producers: `GetBucketLocation`) alike. */
function isWord(b: Uint8Array, s: number, e: number): boolean {
  if (e - s === 1 && b[s] === DASH) return true;
  if (e <= s || !isLetter(b[s])) return false;
  for (let i = s + 1; i < e; i++) {
    const c = b[i]!;
    if (!(isLetter(c) || isDigit(c) || c === 0x2e || c === 0x5f)) return false;
  }
  return true;
}

/** Month by its three letters packed into one number: no string per record. */
const MONTH_BY_CODE = new Map(
  ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
    .map((m, i) => [(m.charCodeAt(0) << 16) | (m.charCodeAt(1) << 8) | m.charCodeAt(2), i + 1]),
);
const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function digits(b: Uint8Array, s: number, n: number): number {
  let v = 0;
  for (let i = s; i < s + n; i++) {
    const c = b[i];
    if (!isDigit(c)) return NaN;
    v = v * 10 + (c! - 0x30);
  }
  return v;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/**
 * `dd/Mon/yyyy:HH:MM:SS +hhmm` to epoch milliseconds, or NaN. AWS writes +0000; other producers and
 * test suites write offsets, which are honoured so the instant is right.
 */
export function parseLogTime(b: Uint8Array, s: number, e: number): number {
  if (e - s !== 26 || b[s + 2] !== 0x2f || b[s + 6] !== 0x2f || b[s + 11] !== 0x3a || b[s + 14] !== 0x3a
    || b[s + 17] !== 0x3a || b[s + 20] !== SP) return NaN;
  return parseLogTimeFully(b, s);
}

function parseLogTimeFully(b: Uint8Array, s: number): number {
  const month = MONTH_BY_CODE.get((b[s + 3]! << 16) | (b[s + 4]! << 8) | b[s + 5]!);
  if (month === undefined) return NaN;
  const day = digits(b, s, 2), year = digits(b, s + 7, 4), hh = digits(b, s + 12, 2),
    mm = digits(b, s + 15, 2), ss = digits(b, s + 18, 2), oh = digits(b, s + 22, 2), om = digits(b, s + 24, 2);
  const sign = b[s + 21] === 0x2b ? 1 : b[s + 21] === DASH ? -1 : 0;
  const leap = month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 1 : 0;
  if (!(day >= 1 && day <= DAYS_IN_MONTH[month]! + leap && hh <= 23 && mm <= 59 && ss <= 60 && oh <= 23 && om <= 59)
    || sign === 0) return NaN;
  const seconds = daysFromCivil(year, month, day) * 86400 + hh * 3600 + mm * 60 + ss - sign * (oh * 3600 + om * 60);
  return seconds * 1000;
}
