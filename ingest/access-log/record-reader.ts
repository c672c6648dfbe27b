/**
 * Reads access-log records from a byte stream with the WebAssembly module (`wasm/access-log.as.ts`):
 * chunks are copied (or read straight) into the module's memory behind any partial line left from
 * the previous chunk, every complete line is scanned in one call, optionally classified by the ping
 * rules in another (which write each ping's staged row into the module's memory), and each
 * record is handed to the caller as a `ScannedRecord` view over the module's output (valid during
 * the call); while tallying, only the records the module did not count are.
 */
import { clientDescriber, type ClientDescriber } from '../audience/client-describer.js';
import { createHash, type Hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { projectFile } from '../../lib/project-file.js';
import { dayName, dayNumber } from '../../lib/utc-day.js';
import {
  AT_DETAIL, AT_ERROR, AT_FIELD_COUNT, AT_FIELDS, AT_LINE_END, AT_LINE_NO, AT_LINE_START, AT_OUTCOME, AT_ROW_END, AT_ROW_START,
  AT_TIME_MS, RECORD_BYTES, ROW_BYTES_PER_RECORD,
} from './wasm-abi.js';

/** One scanned record. Offsets index `b`; a field's start is -1 when the record has no such field. */
export interface ScannedRecord {
  readonly b: Buffer;
  /** 0, or an index into SCAN_ERRORS. */
  readonly error: number;
  /** Event time, epoch ms; NaN when the time is `-` or the record is malformed. */
  readonly timeMs: number;
  /** Fields present (17 without trailing fields split). */
  readonly count: number;
  readonly lineNo: number;
  readonly lineStart: number;
  readonly lineEnd: number;
  /** With ping rules: the outcome's index in OUTCOMES, a detail for its reason (outcome-codes.ts, `rejectReason`). */
  readonly outcome: number;
  readonly detail: number;
  /** With ping rules, for a ping: its staged row (ingest/staged-ping.ts stagedRow) is `b[rowStart, rowEnd)`. */
  readonly rowStart: number;
  readonly rowEnd: number;
  start(i: number): number;
  end(i: number): number;
}

interface ScannerExports {
  memory: WebAssembly.Memory;
  indexChunk(inPtr: number, len: number, maps: number): void;
  scanChunk(inPtr: number, len: number, final: number, outPtr: number, maxRecords: number, trailing: number, firstLineNo: number): number;
  consumed(): number;
  lineCount(): number;
  recordBytes(): number;
  scanWork(): number;
  pingKeysAt(): number;
  pingKeysCapacity(): number;
  setPingKeyCount(n: number): void;
  classifyRecords(outPtr: number, n: number, recordBytes: number, rowsPtr: number, rowsCap: number, scratchPtr: number, listPtr: number): number;
  listed(): number;
  tallyAt(): number;
  tallyDays(): number;
  /** Outcomes counted per day: the first of OUTCOMES (ping, not_ping, http_error). */
  tallyOutcomes(): number;
  startTally(firstDay: number, ownDay: number): void;
  stopTally(): void;
  setClientCache(ptr: number, bytes: number): void;
  clientCacheMinBytes(): number;
}


/**
 * The longest record read as one, in bytes (newline excluded). S3 writes a request's URI, referer and
 * user agent whole, so a line can pass 8 KB (the corpus's longest is ~2 KB; S3 refuses request lines
 * past ~8 KB, and the referer and user agent are capped by clients at about as much): 64 KiB leaves
 * room for all three at their largest. A longer run of bytes (a binary object, an object with no
 * newline) is one record, rejected as too long with its first bytes, its length and its SHA-256
 * (`Overlong`), and reading goes on at the next newline without holding or rescanning it.
 */
export const MAX_RECORD_BYTES = 64 * 1024;

/** Windows a too-long line is looked for by: half the longest record, so that a longer one covers a whole window. */
const OVERLONG_WINDOW = MAX_RECORD_BYTES / 2;

/** How much of a too-long record is kept. */
export const OVERLONG_KEEP_BYTES = 1024;

/** A record longer than MAX_RECORD_BYTES: its line, first bytes, length and SHA-256 (of every byte but the newline). */
export interface Overlong { lineNo: number; head: Buffer; bytes: number; sha256: string }

export interface ReaderOptions {
  /** Called for each record longer than MAX_RECORD_BYTES (the record handler never sees it). */
  onOverlong?: (o: Overlong) => void;
  /** Split the fields after the user agent too (for `pingroll parse`); ingest reads none of them and leaves them whole. */
  trailing?: boolean;
  /** Classify every record with the ping rules, these being the ping keys. */
  pingKeys?: readonly string[];
  /** With ping rules: the staged rows (ingest/staged-ping.ts stagedRow) of the pings of each call's records, after those records (a view, valid during the call). */
  onRows?: (rows: Uint8Array) => void;
  /**
   * With ping rules: the staged fields of a client IP or user agent the module has not seen
   * (contract §10; ingest/audience/client-describer.ts). The shipped IP-to-country database's when not given.
   */
  describeClient?: ClientDescriber;
}

/** One day's counts from a tally: `counts[k]` records of outcome k (OUTCOMES order). */
export interface DayTally { day: string; counts: number[] }

const WASM_FILE = 'dist/wasm/access-log.wasm';
let compiled: WebAssembly.Module | null = null;
/** The module (wasm/access-log.as.ts), compiled once a process. */
function accessLogModule(): WebAssembly.Module {
  compiled ??= new WebAssembly.Module(readFileSync(projectFile(WASM_FILE)));
  return compiled;
}

/** An instance of the module that reads no log (no client value is looked up there): the staged writer's. */
export function moduleInstance(): WebAssembly.Instance {
  return new WebAssembly.Instance(accessLogModule(), { env: { abort: scannerAbort, describeClient: () => { throw new Error('a client value looked up outside the record reader: a bug in pingroll'); } } });
}

/**
 * Where the module remembers client values (wasm/client-cache.as.ts): after its own data, 8 MiB (its
 * tables and ~7 MiB of keys and values: thousands of user agents, tens of thousands of addresses).
 */
const CLIENT_CACHE_AT = 1 << 16;
const CLIENT_CACHE_BYTES = 8 << 20;
/** Where input starts in the module's memory: its own data and the client cache live below. */
const INPUT_AT = CLIENT_CACHE_AT + CLIENT_CACHE_BYTES;
/** Stage 1 reads whole 64-byte blocks past the input; they must be there and hold no delimiter. */
const PADDING = 128;
/**
 * Bytes to read from a plain file at a time, straight into the scanner's memory. 256 KiB: a read, its
 * delimiter bitmaps and its records stay in the core's L2 cache between the scanner's two stages
 * (1 MiB reads made the scanner ~5% slower end to end; the job itself is no slower, 0.97-0.99).
 */
export const READ_BYTES = 1 << 18;

/** Records scanned per call. */
const RECORDS_PER_CALL = 4096;

export type RecordHandler = (record: ScannedRecord) => void;

export class AccessLogRecordReader implements ScannedRecord {
  private readonly x: ScannerExports;
  private u8!: Uint8Array;
  private i32!: Int32Array;
  private f64!: Float64Array;
  b!: Buffer;
  private inputCap = 0;
  private outAt = 0;
  /** Where the delimiter bitmaps go: 3 bits per input byte. */
  private mapsAt = 0;
  /** Where the ping rules list the records they did not count (an i32 each). */
  private listAt = 0;
  /** While tallying: the first day (days since 1970) of the module's table. */
  private tallyFirstDay = 0;
  /** Where the ping rules write rows (3 bytes per input byte, ROW_BYTES_PER_RECORD per record) and decode (9 bytes per input byte). */
  private rowsAt = 0;
  private rowsCap = 0;
  private scratchAt = 0;
  private readonly recordInts: number;
  private readonly trailing: boolean;
  private readonly classify: boolean;
  private readonly onRows: ((rows: Uint8Array) => void) | undefined;
  /** Bytes of an incomplete line kept at INPUT_AT from the previous chunk. */
  private carry = 0;
  /** A record past MAX_RECORD_BYTES being skipped to its newline, what is kept of it; `cr`: its last byte read was a CR, not yet known to be a CRLF's. */
  private overlong: { lineNo: number; head: Buffer; bytes: number; hash: Hash; cr: boolean } | null = null;
  private readonly onOverlong: ((o: Overlong) => void) | undefined;
  private linesSeen = 0;
  /** Int32 index of the current record. */
  private base = 0;

  constructor(private readonly onRecord: RecordHandler, options: ReaderOptions = {}) {
    // A client value the module has not seen is described here, its fields written where it says.
    const describe = options.describeClient ?? clientDescriber(null);
    const describeClient = (kind: number, keyPtr: number, keyLen: number, outPtr: number, outCap: number): number => {
      // As the staged row's VARCHARs (ingest/staged-ping.ts stagedRow): each field's length (-1: NULL,
      // as an empty one is) and its characters a byte each (they are ASCII: client-describer.ts).
      const fields = describe(kind, this.u8, keyPtr, keyLen);
      const bytes = fields.reduce((n, f) => n + 4 + (f?.length ?? 0), 0);
      if (bytes > outCap) throw new Error(`a client value's fields are ${bytes} bytes, more than ${outCap}: a bug in pingroll`);
      const view = new DataView(this.u8.buffer);
      let at = outPtr;
      for (const f of fields) {
        view.setInt32(at, f ? f.length : -1, true);
        at += 4;
        for (let i = 0; f && i < f.length; i++) this.u8[at++] = f.charCodeAt(i);
      }
      return bytes;
    };
    const instance = new WebAssembly.Instance(accessLogModule(), { env: { abort: scannerAbort, describeClient } });
    this.x = instance.exports as unknown as ScannerExports;
    if (this.x.recordBytes() !== RECORD_BYTES) throw new Error(`${WASM_FILE} is out of date (records of ${this.x.recordBytes()} bytes, not ${RECORD_BYTES}); run make build`);
    this.recordInts = RECORD_BYTES >> 2;
    this.trailing = options.trailing ?? false;
    this.classify = options.pingKeys !== undefined;
    this.onRows = options.onRows;
    this.onOverlong = options.onOverlong;
    this.ensure(1 << 20);
    if (CLIENT_CACHE_BYTES < this.x.clientCacheMinBytes()) throw new Error('the client cache is smaller than the module needs: a bug in pingroll');
    this.x.setClientCache(CLIENT_CACHE_AT, CLIENT_CACHE_BYTES);
    if (options.pingKeys) this.setPingKeys(options.pingKeys);
  }

  /** Each key as a u32 length and its UTF-8 bytes, leading slashes dropped (keys are logged without). */
  private setPingKeys(pingKeys: readonly string[]): void {
    const keys = [...new Set(pingKeys.map((k) => k.replace(/^\/+/, '')))].map((k) => Buffer.from(k, 'utf8'));
    const at = this.x.pingKeysAt();
    if (keys.reduce((n, k) => n + 4 + k.length, 0) > this.x.pingKeysCapacity()) {
      throw new Error(`PINGROLL_PING_KEYS is too long: at most ${this.x.pingKeysCapacity()} bytes of keys`);
    }
    const view = new DataView(this.x.memory.buffer);
    let p = at;
    for (const k of keys) {
      view.setUint32(p, k.length, true);
      this.u8.set(k, p + 4);
      p += 4 + k.length;
    }
    this.x.setPingKeyCount(keys.length);
  }

  /**
   * From now until `endTally`, with ping rules: records of outcome ping, not_ping or http_error are
   * counted by UTC day inside the module, and only the others (bad_query, malformed, or a day more
   * than a month from `around`) are handed to the record handler. `ownDay` (YYYY-MM-DD, the log
   * object's) is the day of a record without a time (contract §5); null for an object whose name holds
   * no date, whose records without a time belong to no day: they are handed to the handler too.
   * `around`: the day the module's table is centred on (`ownDay` unless it is null).
   */
  startTally(ownDay: string, around?: string): void;
  startTally(ownDay: null, around: string): void;
  startTally(ownDay: string | null, around: string): void;
  startTally(ownDay: string | null, around?: string): void {
    this.tallyFirstDay = dayNumber((around ?? ownDay)!) - (this.x.tallyDays() >> 1);
    // A day before the table's first: a record of it is never counted in the module.
    this.x.startTally(this.tallyFirstDay, ownDay === null ? this.tallyFirstDay - 1 : dayNumber(ownDay));
  }

  /** The counts since `startTally`, by day (days with none left out); tallying stops. */
  endTally(): DayTally[] {
    const days = this.x.tallyDays(), outcomes = this.x.tallyOutcomes(), first = this.tallyFirstDay;
    const at = this.x.tallyAt() >> 2;
    const out: DayTally[] = [];
    const i32 = this.i32;
    // Most of the table's days are empty (an object holds one or two): look before making anything.
    for (let d = 0, p = at; d < days; d++, p += outcomes) {
      let any = false;
      for (let k = 0; k < outcomes && !any; k++) any = i32[p + k]! > 0;
      if (any) out.push({ day: dayName(first + d), counts: Array.from(i32.subarray(p, p + outcomes)) });
    }
    this.x.stopTally();
    return out;
  }

  /** Bytes the scanner has examined so far (for the linear-time property test). */
  work(): number {
    return this.x.scanWork();
  }

  /** Forgets any partial line and restarts line numbers at 1: ready for another stream. */
  reset(): void {
    this.carry = 0;
    this.linesSeen = 0;
    this.overlong = null;
  }

  /** Scans every complete line of `chunk` (and of what was left from the last one). */
  push(chunk: Uint8Array): void {
    if (this.overlong) {
      const skipped = this.skipOverlong(chunk);
      if (skipped === chunk.length) return;
      chunk = chunk.subarray(skipped);
    }
    this.ensure(this.carry + chunk.length);
    this.u8.set(chunk, INPUT_AT + this.carry);
    this.scan(this.carry + chunk.length, false);
  }

  /**
   * Room for up to `bytes` of input in the module's memory, right after any partial line carried
   * from before: read into it (a file read lands there with no copy and no buffer per chunk), then
   * call `scanRead` with the number of bytes read, before anything else uses this reader.
   */
  inputSpace(bytes: number): Uint8Array {
    this.ensure(this.carry + bytes);
    return this.u8.subarray(INPUT_AT + this.carry, INPUT_AT + this.carry + bytes);
  }

  /** Scans every complete line after `n` bytes were read into `inputSpace`. */
  scanRead(n: number): void {
    if (n === 0) return;
    if (this.overlong) {
      // Read in place behind no carry (a too-long record keeps none): what ends it is skipped, the rest scanned.
      const read = this.u8.subarray(INPUT_AT, INPUT_AT + n);
      const skipped = this.skipOverlong(read);
      if (skipped === n) return;
      this.u8.copyWithin(INPUT_AT, INPUT_AT + skipped, INPUT_AT + n);
      n -= skipped;
    }
    this.scan(this.carry + n, false);
  }

  /** Scans a last line that had no newline. Call once, after the last chunk. */
  finish(): void {
    if (this.overlong) this.endOverlong();
    else if (this.carry > 0) this.scan(this.carry, true);
    this.carry = 0;
  }

  /**
   * Bytes of a too-long record up to its newline, hashed and counted, not kept: how many of `b` it
   * took (all of them when no newline came). At its newline the record is handed to `onOverlong`.
   */
  private skipOverlong(b: Uint8Array): number {
    const o = this.overlong!;
    if (b.length === 0) return 0;
    // Ends as every other line does: at a LF, a CRLF (one ending, not two: the line numbers after it
    // are those of a whole read) or a lone CR, whichever read its bytes came in.
    if (o.cr) {
      this.endOverlong();
      return b[0] === 0x0a ? 1 : 0;
    }
    const bytes = bufferOf(b, 0, b.length);
    const lf = bytes.indexOf(0x0a), cr = bytes.indexOf(0x0d);
    const nl = cr >= 0 && (lf < 0 || cr < lf) ? cr : lf;
    const part = nl < 0 ? b : b.subarray(0, nl);
    o.hash.update(part);
    o.bytes += part.length;
    if (nl < 0) return b.length;
    if (nl !== cr) {
      this.endOverlong();
      return nl + 1;
    }
    if (nl + 1 === b.length) {
      o.cr = true;
      return b.length;
    }
    this.endOverlong();
    return b[nl + 1] === 0x0a ? nl + 2 : nl + 1;
  }

  private endOverlong(): void {
    const o = this.overlong!;
    this.overlong = null;
    this.onOverlong?.({ lineNo: o.lineNo, head: o.head, bytes: o.bytes, sha256: o.hash.digest('hex') });
  }

  /**
   * Scans `len` bytes at INPUT_AT: every complete line, and with `final` the last one too. A complete
   * line longer than MAX_RECORD_BYTES is not scanned: the lines before it are, it goes to
   * `onOverlong`, and scanning goes on after it.
   */
  private scan(len: number, final: boolean): void {
    const stop = INPUT_AT + len;
    let from = INPUT_AT;
    endLoneCRs(this.u8, from, stop, final);
    for (let long = this.firstOverlong(from, stop); long; long = this.firstOverlong(from, stop)) {
      if (long.start > from) this.scanLines(from, long.start, true);
      // A CRLF's CR is no part of the record (lone CRs are LFs by now).
      const line = this.u8.subarray(long.start, this.u8[long.end - 1] === 0x0d ? long.end - 1 : long.end);
      this.onOverlong?.({ lineNo: ++this.linesSeen, head: Buffer.from(line.subarray(0, OVERLONG_KEEP_BYTES)), bytes: line.length, sha256: createHash('sha256').update(line).digest('hex') });
      from = long.end + 1;
    }
    this.scanLines(from, stop, final);
  }

  /**
   * The first complete line of `[from, stop)` longer than MAX_RECORD_BYTES, found without looking at
   * every line: such a line covers a whole window of OVERLONG_WINDOW bytes with no newline, and
   * finding a window's first newline costs about one line.
   */
  private firstOverlong(from: number, stop: number): { start: number; end: number } | null {
    if (stop - from <= MAX_RECORD_BYTES) return null;
    const u8 = this.u8;
    const bytes = bufferOf(u8, from, stop);
    for (let w = from; w + OVERLONG_WINDOW <= stop;) {
      const at = bytes.indexOf(0x0a, w - from);
      const nl = at < 0 ? -1 : at + from - w;
      if (nl >= 0 && nl < OVERLONG_WINDOW) {
        w += OVERLONG_WINDOW;
        continue;
      }
      // A window with no newline: the line that covers it.
      if (nl < 0) return null; // no newline after it: an incomplete line (the carry's to handle)
      const start = u8.subarray(from, w).lastIndexOf(0x0a) + 1 + from;
      const end = w + nl;
      if ((u8[end - 1] === 0x0d ? end - 1 : end) - start > MAX_RECORD_BYTES) return { start, end };
      w = end + 1;
    }
    return null;
  }

  private scanLines(from: number, stop: number, final: boolean): void {
    const len = stop - from;
    // Zero the padding so SIMD reads past the end see no delimiters (the bytes after a range that ends
    // before the input's end are kept and put back after).
    const after = stop < INPUT_AT + this.inputCap - PADDING ? Buffer.from(this.u8.subarray(stop, stop + PADDING)) : null;
    this.u8.fill(0, stop, stop + PADDING);
    this.x.indexChunk(from, len, this.mapsAt);
    for (;;) {
      const n = this.x.scanChunk(from, stop - from, final ? 1 : 0, this.outAt, RECORDS_PER_CALL, this.trailing ? 1 : 0, this.linesSeen);
      this.linesSeen = this.x.lineCount();
      if (this.classify) {
        const rowBytes = this.x.classifyRecords(this.outAt, n, this.recordInts << 2, this.rowsAt, this.rowsCap, this.scratchAt, this.listAt);
        // The records the rules did not count (all of them unless tallying).
        const listed = this.x.listed(), list = this.listAt >> 2;
        for (let j = 0; j < listed; j++) {
          this.base = (this.outAt >> 2) + this.i32[list + j]! * this.recordInts;
          this.onRecord(this);
        }
        if (rowBytes > 0) this.onRows?.(this.u8.subarray(this.rowsAt, this.rowsAt + rowBytes));
      } else {
        for (let k = 0; k < n; k++) {
          this.base = (this.outAt >> 2) + k * this.recordInts;
          this.onRecord(this);
        }
      }
      from = this.x.consumed();
      if (n < RECORDS_PER_CALL || from >= stop) break;
    }
    if (after) this.u8.set(after, stop);
    // Move the incomplete line to the front for the next chunk; past MAX_RECORD_BYTES it is a
    // too-long record, skipped to its newline from now on (never held, never scanned again).
    this.carry = stop - from;
    // A CR last (left by endLoneCRs until the next byte says whether it is a CRLF's) is no part of the
    // record: a line of MAX_RECORD_BYTES and its CR is not too long, whatever the reads.
    const cr = this.u8[stop - 1] === 0x0d;
    const end = cr ? stop - 1 : stop;
    if (end - from > MAX_RECORD_BYTES && !final) {
      const head = Buffer.from(this.u8.subarray(from, from + OVERLONG_KEEP_BYTES));
      this.overlong = { lineNo: ++this.linesSeen, head, bytes: end - from, hash: createHash('sha256').update(this.u8.subarray(from, end)), cr };
      this.carry = 0;
      return;
    }
    if (this.carry > 0 && from !== INPUT_AT) this.u8.copyWithin(INPUT_AT, from, stop);
  }

  /** Grows the module's memory to hold `inputBytes` of input and a full batch of records. */
  private ensure(inputBytes: number): void {
    if (inputBytes + PADDING <= this.inputCap && this.u8) return;
    // A multiple of 64 keeps the record area aligned for its f64 times.
    const inputCap = Math.ceil(Math.max(inputBytes + PADDING, this.inputCap * 2, 1 << 20) / 64) * 64;
    const outAt = INPUT_AT + inputCap;
    const listAt = outAt + RECORDS_PER_CALL * RECORD_BYTES;
    const mapsAt = listAt + RECORDS_PER_CALL * 4;
    const rowsAt = mapsAt + 3 * (inputCap / 8 + 64);
    const rowsCap = this.classify ? 3 * inputCap + ROW_BYTES_PER_RECORD * RECORDS_PER_CALL : 0;
    const scratchAt = rowsAt + rowsCap;
    const need = scratchAt + (this.classify ? 9 * inputCap + 1024 : 0);
    const have = this.x.memory.buffer.byteLength;
    if (need > have) this.x.memory.grow(Math.ceil((need - have) / 65536));
    // Growing detaches the old views. The carried bytes stay where they were (at INPUT_AT).
    const buf = this.x.memory.buffer;
    this.u8 = new Uint8Array(buf);
    this.i32 = new Int32Array(buf);
    this.f64 = new Float64Array(buf);
    this.b = Buffer.from(buf);
    this.inputCap = inputCap;
    this.outAt = outAt;
    this.listAt = listAt;
    this.mapsAt = mapsAt;
    this.rowsAt = rowsAt;
    this.rowsCap = rowsCap;
    this.scratchAt = scratchAt;
  }

  get error(): number { return this.i32[this.base + I_ERROR]!; }
  get count(): number { return this.i32[this.base + I_FIELD_COUNT]!; }
  get timeMs(): number { return this.f64[(this.base >> 1) + F_TIME_MS]!; }
  get lineNo(): number { return this.i32[this.base + I_LINE_NO]!; }
  get lineStart(): number { return this.i32[this.base + I_LINE_START]!; }
  get lineEnd(): number { return this.i32[this.base + I_LINE_END]!; }
  get outcome(): number { return this.classify ? this.i32[this.base + I_OUTCOME]! : -1; }
  get detail(): number { return this.i32[this.base + I_DETAIL]!; }
  get rowStart(): number { return this.i32[this.base + I_ROW_START]!; }
  get rowEnd(): number { return this.i32[this.base + I_ROW_END]!; }
  start(i: number): number { return this.i32[this.base + I_FIELDS + 2 * i]!; }
  end(i: number): number { return this.i32[this.base + I_FIELDS + 1 + 2 * i]!; }
}

// The record's values as indexes into the module's memory viewed as i32 (and f64), from the layout
// the module itself is compiled with.
const I_ERROR = AT_ERROR >> 2, I_FIELD_COUNT = AT_FIELD_COUNT >> 2, F_TIME_MS = AT_TIME_MS >> 3, I_LINE_NO = AT_LINE_NO >> 2,
  I_LINE_START = AT_LINE_START >> 2, I_LINE_END = AT_LINE_END >> 2, I_OUTCOME = AT_OUTCOME >> 2, I_DETAIL = AT_DETAIL >> 2,
  I_ROW_START = AT_ROW_START >> 2, I_ROW_END = AT_ROW_END >> 2, I_FIELDS = AT_FIELDS >> 2;

/**
 * A lone CR (one not followed by LF) ends a record, as LF and CRLF do (contract §2): it becomes an LF
 * in place, before the scanner, which ends records at LF only. A CR that ends the input is left for
 * the next read to decide, unless the input is `final`. S3 writes LF; a raw CR cannot be in a request
 * line or header, so a lone CR is a line end an editor or a conversion made.
 */
function endLoneCRs(u8: Uint8Array, from: number, stop: number, final: boolean): void {
  const bytes = bufferOf(u8, from, stop);
  for (let p = bytes.indexOf(0x0d); p >= 0; p = bytes.indexOf(0x0d, p + 1)) {
    const at = from + p;
    if (at + 1 < stop ? u8[at + 1] !== 0x0a : final) u8[at] = 0x0a;
  }
}

/**
 * `u8[from, to)` as a Buffer over the same memory, made once per search, not once per byte found: its
 * indexOf is memchr, where the typed array's own looks at one byte at a time (endLoneCRs's search for
 * CRs over every byte read took 0.13 s of the small-object day's 2 s that way; 19x less by memchr).
 */
function bufferOf(u8: Uint8Array, from: number, to: number): Buffer {
  return Buffer.from(u8.buffer, u8.byteOffset + from, Math.max(0, to - from));
}

function scannerAbort(): never {
  throw new Error('record scanner aborted');
}
