/**
 * The contract between the WebAssembly module (`wasm/*.as.ts`) and the TypeScript that reads its
 * output: where each value sits in a scanned record, and what the codes mean. Both languages compile
 * this one file (integer constants only, valid AssemblyScript and TypeScript), so no number here is
 * written twice.
 *
 * A scanned record, RECORD_BYTES long, little-endian:
 *   +0 line start, +4 line end (without newline), +8 scan error (E_*), +12 field count,
 *   +16 time (f64 epoch ms, NaN when `-`), +24 FIELD_COUNT x (start, end) i32 (start -1 when absent),
 *   +240 1-based line number;
 *   with the ping rules: +256 outcome (O_*), +260 its detail, +264 and +268 the staged row's start
 *   and end (pings only).
 * Detail: the HTTP status (-1 for `-`) of an http_error; (problem << DETAIL_PROBLEM_SHIFT) | parameter
 * of a bad_query, the parameter an index into the required ones (series, episode, session); 0 for a
 * scan error, MALFORMED_NO_TIME for a ping without a time, of a malformed record.
 */

export const RECORD_BYTES = 272;
export const AT_LINE_START = 0;
export const AT_LINE_END = 4;
export const AT_ERROR = 8;
export const AT_FIELD_COUNT = 12;
export const AT_TIME_MS = 16;
export const AT_FIELDS = 24;
export const AT_LINE_NO = 240;
export const AT_OUTCOME = 256;
export const AT_DETAIL = 260;
export const AT_ROW_START = 264;
export const AT_ROW_END = 268;

/** Fields a record can have (AWS's documented ones), and the fewest a record has. */
export const FIELD_COUNT = 27;
export const MIN_FIELDS = 17;

/** Outcomes: indexes into OUTCOMES (ingest/ping-record.ts). bad_item (5) is DynamoDB's alone. */
export const O_PING = 0;
export const O_NOT_PING = 1;
export const O_HTTP_ERROR = 2;
export const O_BAD_QUERY = 3;
export const O_MALFORMED = 4;

/** Scan errors: indexes into SCAN_ERRORS (record-layout.ts). */
export const E_OK = 0;
export const E_TRUNCATED = 1;
export const E_TIME = 2;
export const E_URI = 3;
export const E_AFTER_URI = 4;
export const E_REFERER = 5;
export const E_AGENT = 6;
export const E_QUOTE = 7;
export const E_AMBIGUOUS = 8;

/** A bad_query's detail: (problem << DETAIL_PROBLEM_SHIFT) | parameter. */
export const DETAIL_PROBLEM_SHIFT = 4;
export const DETAIL_PARAMETER_MASK = 15;
export const PROBLEM_MISSING = 0;
export const PROBLEM_EMPTY = 1;
export const PROBLEM_LONG = 2;
/** A malformed record's detail when it would have been a ping but has no time. */
export const MALFORMED_NO_TIME = 1;

/** Series, episode and session ids longer than this many code points are rejected (VARCHAR(256)). */
export const MAX_ID_CODE_POINTS = 256;
/** The longest client IP and user agent looked up (ingest/audience); longer ones are unknown. */
export const MAX_IP_BYTES = 64;
export const MAX_AGENT_BYTES = 1024;
/** What a client value is (wasm/client-cache.as.ts): an IP (its country) or a user agent (its device and bot rule). */
export const CLIENT_IP = 0;
export const CLIENT_AGENT = 1;
/** The most bytes a client value's fields take in a staged row (at most 255: their length is kept in a byte). */
export const MAX_CLIENT_FIELDS_BYTES = 160;
/** The longest normalised platform kept (ingest/ping-record.ts's normalizePlatform); a longer one is none. */
export const MAX_PLATFORM_CHARS = 32;
/**
 * Bytes of a staged row beyond what its record's own bytes make (3 per input byte): its head, the
 * lengths and flags of its columns, `r:`, the client values' fields (MAX_CLIENT_FIELDS_BYTES each),
 * the id's key, and the 15 bytes a 16-byte copy may write past its end.
 */
export const ROW_BYTES_PER_RECORD = 512;
