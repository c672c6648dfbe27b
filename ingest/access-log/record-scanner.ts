/**
 * A hand-written scanner for one S3 server access-log record.
 *
 * It works on bytes, not strings: every delimiter of the format (space, `"`, `[`, `]`) is ASCII, and
 * in UTF-8 no byte of a multi-byte character is below 0x80, so scanning bytes is safe and spares a
 * string per line. The scanner only finds where each field starts and ends; turning a field into a
 * string or number is left to whoever needs it (see `record-fields.ts`), so the hot path of ingest
 * allocates nothing for the twenty fields it never reads.
 *
 * The format is ambiguous in three places, all seen in real logs (SPEC §2):
 * - the requester may contain spaces (`arn:aws:iam::cloudfront:user/CloudFront Origin Access Identity X`);
 * - quotes inside the quoted fields are not escaped (`"GET /" HTTP/1.1"`, `"Safari/604.1""`);
 * - request-URI, referer and user-agent may be a bare `-` instead of a quoted one.
 * Where a line can be read several ways, the scanner takes the reading under which the fields that
 * follow have their documented shape: a three-digit status, an alphabetic error code, four numbers,
 * then a referer and a user agent that open where a field can open. Every choice looks at a bounded
 * number of following bytes and is never revisited, so a line costs time linear in its length.
 */

export const FIELD_NAMES = [
  'bucket_owner', 'bucket', 'time', 'remote_ip', 'requester', 'request_id', 'operation', 'key',
  'request_uri', 'http_status', 'error_code', 'bytes_sent', 'object_size', 'total_time',
  'turn_around_time', 'referer', 'user_agent', 'version_id', 'host_id', 'signature_version',
  'cipher_suite', 'authentication_type', 'host_header', 'tls_version', 'access_point_arn',
  'acl_required', 'source_region',
] as const;
export type FieldName = (typeof FIELD_NAMES)[number];

/** Field positions in AWS's documented order. */
export const F = {
  bucketOwner: 0, bucket: 1, time: 2, remoteIp: 3, requester: 4, requestId: 5, operation: 6, key: 7,
  requestUri: 8, httpStatus: 9, errorCode: 10, bytesSent: 11, objectSize: 12, totalTime: 13,
  turnAroundTime: 14, referer: 15, userAgent: 16, versionId: 17,
} as const;

/** Fields every record has: up to and including the user agent (the oldest logs stop there or one later). */
export const MIN_FIELDS = 17;
export const KNOWN_FIELDS = FIELD_NAMES.length;

/** The requester is the only unquoted field with spaces; a CloudFront OAI takes five tokens. */
const MAX_REQUESTER_TOKENS = 8;
/** Candidate readings tried per line before it is given up as malformed (real lines need one or two). */
const MAX_READINGS = 64;

/** Why a line is not a record. Index 0 is success. */
export const SCAN_ERRORS = [
  'ok',
  'truncated: fewer than 17 fields',
  'time is not [dd/Mon/yyyy:HH:MM:SS +hhmm]',
  'request-URI is neither quoted nor -',
  'no field shape after the request-URI fits (status, error code, four numbers)',
  'referer is neither quoted nor -',
  'user agent is neither quoted nor -',
  'unterminated quoted field',
  'too ambiguous: no reading of its quotes fits within the attempt limit',
] as const;
export type ScanError = (typeof SCAN_ERRORS)[number];

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
  /** Fields present, known or not (a 29-field record says 29; only 27 are kept). */
  count = 0;
  timeMs = NaN;
  /** Readings left to try on this line: bounds the work on adversarial lines to linear. */
  private budget = 0;

  private set(i: number, s: number, e: number): void {
    this.start[i] = s;
    this.end[i] = e;
  }

  /** Scans `b[from, to)` (one line, without its newline). Returns 0 or an index into SCAN_ERRORS. */
  scan(b: Uint8Array, from: number, to: number): number {
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
    } else if (b[p] === DASH && b[p + 1] === SP) {
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
      if (isOperation(b, opS, opE)) {
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
  private scanFromRequestUri(b: Uint8Array, p: number, end: number): number {
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
  private scanStatusBlock(b: Uint8Array, p: number, end: number): number {
    let e = tokenEnd(b, p, end);
    if (e >= end) return e === end && isStatus(b, p, e) ? 0 : -1;
    if (!isStatus(b, p, e)) return -1;
    this.set(9, p, e);
    p = e + 1;
    e = tokenEnd(b, p, end);
    if (e >= end) return isErrorCode(b, p, e) ? 0 : -1;
    if (!isErrorCode(b, p, e)) return -1;
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
  private scanReferer(b: Uint8Array, p: number, end: number): number {
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
  private scanUserAgent(b: Uint8Array, p: number, end: number): number {
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
  private scanTrailing(b: Uint8Array, p: number, end: number): void {
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
function cleanTrailing(b: Uint8Array, p: number, end: number): number {
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

function trailingShapeScore(b: Uint8Array, p: number, end: number): number {
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

/** Bytes the scanner has examined, for the linear-time property test. */
export const scanWork = { bytes: 0 };

function tokenEnd(b: Uint8Array, p: number, end: number): number {
  const from = p;
  while (p < end && b[p] !== SP) p++;
  scanWork.bytes += p - from + 1;
  return p;
}

function indexOfByte(b: Uint8Array, byte: number, from: number, to: number): number {
  for (let i = from; i < to; i++) {
    if (b[i] === byte) {
      scanWork.bytes += i - from + 1;
      return i;
    }
  }
  scanWork.bytes += to - from + 1;
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

/** `-` or an S3 error code (`NoSuchKey`, `AccessDenied`): a letter, then letters, digits, `.`, `_`. */
function isErrorCode(b: Uint8Array, s: number, e: number): boolean {
  if (e - s === 1 && b[s] === DASH) return true;
  if (e <= s || !isLetter(b[s])) return false;
  for (let i = s + 1; i < e; i++) {
    const c = b[i]!;
    if (!(isLetter(c) || isDigit(c) || c === 0x2e || c === 0x5f)) return false;
  }
  return true;
}

/** `-` or an operation (`REST.GET.OBJECT`, `BATCH.DELETE.OBJECT`; other producers: `GetBucketLocation`). */
function isOperation(b: Uint8Array, s: number, e: number): boolean {
  if (e - s === 1 && b[s] === DASH) return true;
  if (e <= s || !isLetter(b[s])) return false;
  for (let i = s + 1; i < e; i++) {
    const c = b[i]!;
    if (!(isLetter(c) || isDigit(c) || c === 0x2e || c === 0x5f)) return false;
  }
  return true;
}

const MONTHS: Record<string, number> = {
  Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11,
};

function digits(b: Uint8Array, s: number, n: number): number {
  let v = 0;
  for (let i = s; i < s + n; i++) {
    const c = b[i];
    if (!isDigit(c)) return NaN;
    v = v * 10 + (c! - 0x30);
  }
  return v;
}

/**
 * `dd/Mon/yyyy:HH:MM:SS +hhmm` to epoch milliseconds. AWS writes +0000; other producers and test
 * suites write offsets, which are honoured so the instant is right.
 */
export function parseLogTime(b: Uint8Array, s: number, e: number): number {
  if (e - s !== 26 || b[s + 2] !== 0x2f || b[s + 6] !== 0x2f || b[s + 11] !== 0x3a || b[s + 14] !== 0x3a
    || b[s + 17] !== 0x3a || b[s + 20] !== SP) return NaN;
  const month = MONTHS[String.fromCharCode(b[s + 3]!, b[s + 4]!, b[s + 5]!)];
  if (month === undefined) return NaN;
  const day = digits(b, s, 2), year = digits(b, s + 7, 4), hh = digits(b, s + 12, 2),
    mm = digits(b, s + 15, 2), ss = digits(b, s + 18, 2), oh = digits(b, s + 22, 2), om = digits(b, s + 24, 2);
  const sign = b[s + 21] === 0x2b ? 1 : b[s + 21] === DASH ? -1 : 0;
  if (!(day >= 1 && day <= 31 && hh <= 23 && mm <= 59 && ss <= 60 && om <= 59) || sign === 0) return NaN;
  const ms = Date.UTC(year, month, day, hh, mm, ss) - sign * (oh * 60 + om) * 60_000;
  // Date.UTC rolls 31/Feb over into March; a real log never says that.
  return new Date(Date.UTC(year, month, day)).getUTCDate() === day ? ms : NaN;
}
