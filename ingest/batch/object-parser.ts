/**
 * Parses whole log objects, one at a time and synchronously: a local file read straight into the
 * scanner's memory, or an object's bytes already fetched; gzip or not. Every record gets one outcome:
 * the WebAssembly ping rules write each ping's staged row and count pings, not_ping and http_error
 * records by day; this code sees only the rest (the rejects, and any record of a day more than a month
 * from its object's) and keeps them. Staged rows (ingest/staged-ping.ts stagedRow) go to part files of
 * PART_BYTES, handed over as each fills (the spool makes them Parquet while parsing goes on).
 *
 * The same parser runs in a worker thread (parse-worker.ts: one per core) or in the run's own thread.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readFileSync, readlinkSync, readSync, realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { O_HTTP_ERROR, O_MALFORMED, O_NOT_PING, O_PING, outcomeName, rejectReason } from '../access-log/outcome-codes.js';
import { AccessLogRecordReader, MAX_RECORD_BYTES, READ_BYTES, type ScannedRecord } from '../access-log/record-reader.js';
import { F } from '../access-log/record-layout.js';
import { maskedLine, withheld, type Privacy } from '../privacy.js';
import { clientDescriber } from '../audience/client-describer.js';
import { OUTCOMES, UNDATED } from '../ping-record.js';
import { isGzip } from '../object-source/gzip.js';
import { fetchObject, TooLong, type ObjectRef, type ObjectSource } from '../object-source/object-source.js';
import { dayOf } from '../../lib/utc-day.js';
import type { Reject } from './day-spool.js';
import { RowFile } from './row-file.js';

/**
 * An object read whole (a remote one is fetched whole; a gzip one is inflated whole) may hold at most
 * this many bytes, stored and inflated: what one object can add to a process's memory. S3 writes
 * access-log objects of kilobytes to a few megabytes; a larger one is quarantined with this reason.
 * A plain local file is read in pieces, whatever its size.
 */
export const MAX_OBJECT_BYTES = 256 << 20;
/** A gzip object inflates to at most this many times its size (log text gzips 5-20 times; a bomb, thousands)... */
export const MAX_INFLATION_RATIO = 1000;
/** ...and to at most this many bytes. */
export const MAX_INFLATED_BYTES = MAX_OBJECT_BYTES;

/** The most a gzip object of `stored` bytes may inflate to (a small one always to 1 MiB). */
function inflateCap(stored: number): number {
  return Math.min(MAX_INFLATED_BYTES, Math.max(1 << 20, stored * MAX_INFLATION_RATIO));
}

/** The end of the reason an object that grew after its listing is quarantined with: a retry by its name holds MAX_OBJECT_BYTES for it. */
export const CHANGED_AFTER_LISTING = 'it changed after the listing, and the next run reads it again';

/** Why an object is not read whole. */
export function tooLarge(what: string, bytes: number): string {
  return `${what} of ${bytes} bytes: more than the ${MAX_OBJECT_BYTES} bytes pingroll reads whole (S3 writes access logs of a few MB at most)`;
}

/** Rejects are appended through a buffer this large (an object's rejects are written out when it is done). */
const REJECT_BUFFER = 256 << 10;
/** The smallest part cut near a batch's end (partLimit): each part is a conversion and a staged file. */
const TAIL_PART_BYTES = 2 << 20;

/**
 * One object to parse: a local file, its bytes as stored, or the object to fetch them from. `day` is
 * the day in its name, or null when its name holds none (its records without a time are UNDATED).
 */
export interface ParseTask {
  index: number;
  key: string;
  day: string | null;
  file?: string;
  /** The log directory's real path (ObjectSource.localRoot): `file`, opened, must lie under it (checked when its key names a folder). */
  within?: string;
  /** The file's size as listed: a read that ends short at that size is its end (no read more to see it). */
  size?: number;
  bytes?: Uint8Array;
  fetch?: ObjectRef;
  /**
   * With `fetch`: the most bytes it may bring, what the batch's read budget holds for it
   * (ingest-batch.ts). A listed object may bring its listed size, and no more: one that grew after its
   * listing is unreadable this run, and read again by the next. A key retried from quarantine by its
   * name brings the size it was quarantined at, or MAX_OBJECT_BYTES when it was quarantined for growing.
   * Above MAX_OBJECT_BYTES the object is not fetched; its listed size when absent.
   */
  maxBytes?: number;
  /**
   * Log bytes the batch lists after this object, when the batch is parsed in order by one parser:
   * near its end, parts are cut smaller (ObjectParser.partLimit).
   */
  after?: number;
}

/** What one object held. `unreadable` says why it could not be read (its records then count for nothing). */
export interface ParsedObject {
  index: number;
  records: number;
  /** Records by day, each day's counts in OUTCOMES order. */
  counts: Array<[string, number[]]>;
  /**
   * Its rejected records, as JSON lines `<day>\t<reject>` in bytes [start, end) of the parser's
   * rejects file (written by then), or null for none: an object can hold millions of rejects, which
   * are never held in memory (DaySpool.takeRejects reads them in pieces).
   */
  rejects: RejectLines | null;
  unreadable?: string;
}

export interface RejectLines { file: string; start: number; end: number }

export interface ObjectParserOptions {
  pingKeys: readonly string[];
  /** Where part files go, and what their names start with. */
  dir: string;
  name: string;
  /** Bytes of staged rows per part. */
  partBytes: number;
  /** The smallest part cut near a batch's end (`ParseTask.after`): TAIL_PART_BYTES unless a test makes it small. */
  tailPartBytes?: number;
  /** A part file is complete: its rows are the staged rows of the pings counted so far and not yet handed over. */
  onPart: (path: string) => void;
  /** What rejects keep of the people behind the records (ingest/privacy.ts); `keep` when not said. */
  privacy?: Privacy;
  /** The IP-to-country database (PINGROLL_GEOIP_DB, contract §10); the shipped one when not given. */
  geoipDb?: string | null;
}


/**
 * A task to fetch, with its bytes from `source` (any other task as it is); or, when the source throws,
 * the object's result as unreadable: only what the source throws means that.
 */
export async function fetched(source: ObjectSource, task: ParseTask): Promise<ParseTask | ParsedObject> {
  if (!task.fetch) return task;
  // The bound decides, not the size: a key retried by its name is held at no more than MAX_OBJECT_BYTES (ingest-batch.ts).
  const maxBytes = task.maxBytes ?? task.fetch.size;
  if (maxBytes > MAX_OBJECT_BYTES) return { index: task.index, records: 0, counts: [], rejects: null, unreadable: tooLarge('an object', task.fetch.size) };
  try {
    return { index: task.index, key: task.key, day: task.day, after: task.after, bytes: await fetchObject(source, task.fetch, maxBytes) };
  } catch (err) {
    if (err instanceof TooLong && err.maxBytes < MAX_OBJECT_BYTES) {
      return { index: task.index, records: 0, counts: [], rejects: null, unreadable: `it holds more than the ${err.maxBytes} bytes it was listed at: ${CHANGED_AFTER_LISTING}` };
    }
    return { index: task.index, records: 0, counts: [], rejects: null, unreadable: firstLine(err) };
  }
}

/** A file that cannot be opened or read, or a gzip that does not inflate: the object is unreadable, nothing else is wrong. */
class Unreadable extends Error {}

/** Where an open file is: Linux names it in /proc (no race with a link made after the open); elsewhere its path, resolved. */
function openedPath(fd: number, path: string): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return realpathSync(path);
  }
}

/** A write of the run's own files failed (`cause`): the run's trouble, not the object's. */
class WriteError extends Error {}

function written(write: () => void): void {
  try {
    write();
  } catch (err) {
    throw new WriteError((err as Error).message, { cause: err });
  }
}

export class ObjectParser {
  private reader: AccessLogRecordReader;
  private current: ParsedTally | null = null;
  private part: RowFile | null = null;
  private parts = 0;
  /** Log bytes parsed, and the staged rows' bytes they made: how many rows the bytes still to come will make. */
  private logBytes = 0;
  private rowBytes = 0;
  /** The rejects of every object this parser read (ParsedObject.rejects names each object's bytes). */
  private rejects: RowFile | null = null;

  constructor(private readonly opts: ObjectParserOptions) {
    this.reader = this.makeReader();
  }

  private makeReader(): AccessLogRecordReader {
    const opts = this.opts;
    return new AccessLogRecordReader((r) => {
      const c = this.current!;
      // A record without a readable time belongs to the day in its object's name (contract §5); so
      // does a malformed one, none of whose fields is trusted. An object whose name holds no date gives
      // them UNDATED: no day.
      const day = r.error !== 0 || Number.isNaN(r.timeMs) ? c.day : dayOf(r.timeMs);
      const outcome = r.outcome;
      c.count(day, outcome, 1);
      if (outcome !== O_PING && outcome !== O_NOT_PING && outcome !== O_HTTP_ERROR) {
        this.reject(day, { source: 's3', outcome: outcomeName(r), reason: rejectReason(r), input: c.key, at: r.lineNo, ...this.kept(r) });
      }
    }, {
      pingKeys: opts.pingKeys, onRows: (rows) => this.append(rows), describeClient: clientDescriber(opts.geoipDb ?? null),
      // A run of bytes too long to be a record (a binary object, an object with no newline): one malformed record.
      onOverlong: (o) => {
        const c = this.current!;
        c.count(c.day, O_MALFORMED, 1);
        const kept = opts.privacy === 'mask' ? { record: '', recordBytes: o.bytes, recordSha256: o.sha256, masked: true as const } : cutRecord(o.head, o.bytes, o.sha256);
        this.reject(c.day, { source: 's3', outcome: 'malformed', reason: `record longer than ${MAX_RECORD_BYTES} bytes`, input: c.key, at: o.lineNo, ...kept });
      },
    });
  }

  /** What a rejected record keeps: its line as read, or with PINGROLL_PRIVACY=mask its IP cut and requester dropped (its text withheld when its fields cannot be trusted). */
  private kept(r: ScannedRecord): RejectedRecord & { masked?: true } {
    if (this.opts.privacy !== 'mask') return rejectedLine(r.b, r.lineStart, r.lineEnd);
    if (r.error !== 0 || r.count <= F.requester || r.start(F.remoteIp) < 0 || r.start(F.requester) < 0) return withheld(r.b, r.lineStart, r.lineEnd);
    const line = maskedLine(r.b, r.lineStart, r.lineEnd, [r.start(F.remoteIp), r.end(F.remoteIp)], [r.start(F.requester), r.end(F.requester)]);
    return { ...rejectedLine(line, 0, line.length), masked: true };
  }

  /** Appends a reject to the parser's rejects file. */
  private reject(day: string, reject: Reject): void {
    written(() => {
      this.rejects ??= new RowFile(join(this.opts.dir, `${this.opts.name}-rejects.jsonl`), REJECT_BUFFER);
      this.rejects.append(Buffer.from(`${day}\t${JSON.stringify(reject)}\n`));
    });
  }

  parse(task: ParseTask): ParsedObject {
    const tally = new ParsedTally(task.key, task.day ?? UNDATED);
    this.current = tally;
    const reader = this.reader;
    reader.reset();
    // An object with no date in its name: the module's table around today (any day would do: it only
    // decides which records the module counts itself), and none of its records counted there by default.
    reader.startTally(task.day, task.day ?? dayOf(Date.now()));
    const rowsBefore = this.part?.size ?? 0;
    const rejectsBefore = this.rejects?.size ?? 0;
    try {
      // A key with no folder in it has no folder on the way to turn into a link: O_NOFOLLOW guards its
      // one name, and its path is not looked up again (2,001 files: about 20 ms of the run's thread).
      if (task.file !== undefined) this.readFile(task.file, task.size, task.key.includes('/') ? task.within : undefined);
      else this.readBytes(task.bytes!);
      reader.finish();
    } catch (err) {
      // A failure to write the run's own files (a full disk) is the run's: it stops the batch.
      if (err instanceof WriteError) throw err.cause;
      reader.endTally();
      // Rows of a half-read object must not stay staged: they go, and the object counts for nothing.
      this.part?.truncate(rowsBefore);
      this.rejects?.truncate(rejectsBefore);
      if (err instanceof Unreadable) return { index: task.index, records: 0, counts: [], rejects: null, unreadable: err.message };
      // Anything else went wrong on this object's bytes: a bug its bytes found. The object is
      // quarantined (every run tries it again, and says so) rather than stopping every run; the reader,
      // whose state is now unknown, is made anew.
      this.reader = this.makeReader();
      return { index: task.index, records: 0, counts: [], rejects: null, unreadable: `could not be parsed (${firstLine(err)}): a bug in pingroll; please report it with this object` };
    }
    for (const { day, counts } of reader.endTally()) counts.forEach((n, outcome) => { if (n > 0) tally.count(day, outcome, n); });
    this.current = null;
    this.logBytes += task.size ?? task.bytes?.length ?? 0;
    this.rowBytes += (this.part?.size ?? 0) - rowsBefore;
    if ((this.part?.size ?? 0) >= this.partLimit(task.after)) this.endPart();
    let records = 0;
    for (const counts of tally.byDay.values()) for (const n of counts) records += n;
    let rejects: RejectLines | null = null;
    if ((this.rejects?.size ?? 0) > rejectsBefore) {
      this.rejects!.flush();
      rejects = { file: this.rejects!.path, start: rejectsBefore, end: this.rejects!.size };
    }
    return { index: task.index, records, counts: [...tally.byDay], rejects };
  }

  /**
   * The size at which the part is handed over: `partBytes`, and near the batch's end (`after`, the
   * log bytes still to come) about the rows still to come, down to TAIL_PART_BYTES. The part open
   * when parsing ends is made Parquet after it, on the job's critical path, and so is the rest of
   * the one handed over just before; halving the parts as the end nears leaves both small (the
   * small-object day's parts, as a run cut them: 17, 17 and 16.6 MB, then 8.4, 4.1, 2.1 and 2.1).
   */
  private partLimit(after: number | undefined): number {
    if (after === undefined || this.logBytes === 0) return this.opts.partBytes;
    const rowsToCome = after * (this.rowBytes / this.logBytes);
    return Math.min(this.opts.partBytes, Math.max(this.opts.tailPartBytes ?? TAIL_PART_BYTES, rowsToCome));
  }

  /** Hands over the part being written, if any: call after the last object. */
  flush(): void {
    if (this.part?.size) this.endPart();
    else this.part?.close();
    this.part = null;
  }

  /** Closes the rejects file (the spool has read every object's lines by then). */
  close(): void {
    this.rejects?.close();
    this.rejects = null;
  }

  private readFile(path: string, listedSize?: number, within?: string): void {
    let fd: number;
    try {
      // Not through a link: one made since the listing must not lead the read out of the log directory.
      fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      // A name that is not UTF-8 is listed with U+FFFD in place of its bytes, and no file has that name.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && path.includes('\uFFFD')) throw new Unreadable('its name is not valid UTF-8 (pingroll names objects by UTF-8 keys, as S3 does): rename the file, then accept this key as lost (pingroll quarantine accept KEY)');
      throw new Unreadable(firstLine(err));
    }
    try {
      // O_NOFOLLOW guards the name's last part only: a folder on the way made a link since the listing
      // (or since a quarantined key, retried by its name, was listed) would lead out. The file opened
      // through a folder (`within` given) is checked where it is (about 10 µs an object).
      if (within !== undefined) {
        const at = openedPath(fd, path);
        if (!at.startsWith(within.endsWith(sep) ? within : within + sep)) throw new Unreadable(`its path leads out of the log directory through a link, to ${at}: pingroll reads only regular files under it, and follows no link`);
      }
      let total = 0;
      for (let first = true; ; first = false) {
        const into = this.reader.inputSpace(READ_BYTES);
        const n = readOr(fd, into, null);
        if (n === 0) break;
        // Gzip or not, told by the first read's first two bytes (read on their own if it held fewer).
        if (first && isGzip(n >= 2 ? into.subarray(0, 2) : magicAt(fd))) {
          // Its size now, not as listed: a quarantined key retried by its name has no listed size.
          const size = fstatSync(fd).size;
          if (size > MAX_OBJECT_BYTES) throw new Unreadable(tooLarge('a gzip object', size));
          let bytes: Buffer;
          try {
            bytes = Buffer.concat([into.subarray(0, n), readFileSync(fd)]);
          } catch (err) {
            throw new Unreadable(firstLine(err));
          }
          this.readBytes(bytes);
          return;
        }
        total += n;
        this.reader.scanRead(n);
        // A short read that reaches the listed size is the end of a file that has not grown: the read
        // that would return nothing is saved (one syscall per object, 30,000 on a day of small objects).
        if (n < into.length && total === listedSize) break;
      }
    } finally {
      closeSync(fd);
    }
  }

  /** Bytes as stored: inflated first when they start with gzip's magic bytes (whatever the name). */
  private readBytes(bytes: Uint8Array): void {
    let plain = bytes;
    if (isGzip(bytes)) {
      const cap = inflateCap(bytes.length);
      try {
        plain = gunzipSync(bytes, { maxOutputLength: cap });
      } catch (err) {
        if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
          throw new Unreadable(`gzip inflates past ${cap} bytes (${bytes.length} stored; at most ${MAX_INFLATION_RATIO} times that, and ${MAX_INFLATED_BYTES} bytes, are read): a gzip bomb, or not an access log`);
        }
        throw new Unreadable(firstLine(err));
      }
    }
    for (let at = 0; at < plain.length; at += READ_BYTES) this.reader.push(plain.subarray(at, Math.min(plain.length, at + READ_BYTES)));
  }

  private append(rows: Uint8Array): void {
    written(() => {
      this.part ??= new RowFile(join(this.opts.dir, `${this.opts.name}-${this.parts++}.rows`));
      this.part.append(rows);
    });
  }

  private endPart(): void {
    const part = this.part!;
    part.close();
    this.part = null;
    this.opts.onPart(part.path);
  }
}

/** A file's first two bytes (fewer when it is shorter). */
function magicAt(fd: number): Uint8Array {
  const magic = Buffer.alloc(2);
  return magic.subarray(0, readOr(fd, magic, 0));
}

function readOr(fd: number, into: Uint8Array, position: number | null): number {
  try {
    return readSync(fd, into, 0, into.length, position);
  } catch (err) {
    throw new Unreadable(firstLine(err));
  }
}

function firstLine(err: unknown): string {
  return (err as Error).message.split('\n')[0]!;
}

/**
 * A rejected line as the rejects file keeps it: the text, and when the bytes are not valid UTF-8
 * (the text then holds U+FFFD for them), the original bytes too, in base64.
 */
export function rejectedLine(b: Buffer, start: number, end: number): RejectedRecord {
  if (end - start > REJECT_KEEP_BYTES) {
    return cutRecord(b.subarray(start, start + REJECT_KEEP_BYTES), end - start, createHash('sha256').update(b.subarray(start, end)).digest('hex'));
  }
  const record = b.toString('utf8', start, end);
  return Buffer.byteLength(record, 'utf8') === end - start && !record.includes('\uFFFD')
    ? { record }
    : { record, recordBase64: b.toString('base64', start, end) };
}

/** A rejected record as kept: its text (and bytes in base64 when they are not UTF-8); for one cut short, its length and SHA-256 too. */
export type RejectedRecord = Pick<Reject, 'record' | 'recordBase64' | 'recordBytes' | 'recordSha256'>;

/**
 * Bytes of a rejected record the rejects file keeps: a longer record keeps its first bytes, its
 * length and its SHA-256 (the object itself holds the rest, at the record's line).
 */
export const REJECT_KEEP_BYTES = 16 * 1024;

/** A record kept by its first bytes (`head`), with its whole length and SHA-256. */
function cutRecord(head: Buffer, bytes: number, sha256: string): RejectedRecord {
  return { ...rejectedLine(head, 0, head.length), recordBytes: bytes, recordSha256: sha256 };
}

/** One object's records counted by day and outcome. */
class ParsedTally {
  readonly byDay = new Map<string, number[]>();
  private lastDay = '';
  private last: number[] = [];

  constructor(readonly key: string, readonly day: string) {}

  count(day: string, outcome: number, n: number): void {
    if (day !== this.lastDay) {
      let counts = this.byDay.get(day);
      if (!counts) this.byDay.set(day, counts = OUTCOMES.map(() => 0));
      this.lastDay = day;
      this.last = counts;
    }
    this.last[outcome]! += n;
  }
}
