/**
 * Parses whole log objects, one at a time and synchronously: a local file read straight into the
 * scanner's memory, or an object's bytes already fetched; gzip or not. Every record gets one outcome:
 * the WebAssembly ping rules write each ping's staged row and count pings, not_ping and http_error
 * records by day; this code sees only the rest (the rejects, and any record of a day more than a month
 * from its object's) and keeps them. Staged rows go to CSV part files of PART_BYTES, handed over as
 * each fills (DuckDB makes them Parquet while parsing goes on).
 *
 * The same parser runs in a worker thread (parse-worker.ts: one per core) or in the run's own thread.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { O_HTTP_ERROR, O_NOT_PING, O_PING, outcomeName, rejectReason } from '../access-log/outcome-codes.js';
import { AccessLogRecordReader, READ_BYTES } from '../access-log/record-reader.js';
import { OUTCOMES } from '../ping-record.js';
import { isGzip } from '../object-source/gzip.js';
import { fetchObject, type ObjectRef, type ObjectSource } from '../object-source/object-source.js';
import { dayOf } from '../../lib/utc-day.js';
import type { Reject } from './day-spool.js';
import { RowFile } from './row-file.js';

/** One object to parse: a local file, its bytes as stored, or the object to fetch them from. `day` is the day in its name (or the run's). */
export interface ParseTask {
  index: number;
  key: string;
  day: string;
  file?: string;
  /** The file's size as listed: a read that ends short at that size is its end (no read more to see it). */
  size?: number;
  bytes?: Uint8Array;
  fetch?: ObjectRef;
}

/** What one object held. `unreadable` says why it could not be read (its records then count for nothing). */
export interface ParsedObject {
  index: number;
  records: number;
  /** Records by day, each day's counts in OUTCOMES order. */
  counts: Array<[string, number[]]>;
  rejects: Array<{ day: string; reject: Reject }>;
  unreadable?: string;
}

export interface ObjectParserOptions {
  pingKeys: readonly string[];
  /** Where part files go, and what their names start with. */
  dir: string;
  name: string;
  /** CSV bytes per part. */
  partBytes: number;
  /**
   * A part file is complete: its rows are the staged rows of the pings counted so far and not yet
   * handed over, of `days` (a day may have none left: an unreadable object's rows are taken back).
   */
  onPart: (path: string, days: string[]) => void;
}


/**
 * A task to fetch, with its bytes from `source` (any other task as it is); or, when the source throws,
 * the object's result as unreadable: only what the source throws means that.
 */
export async function fetched(source: ObjectSource, task: ParseTask): Promise<ParseTask | ParsedObject> {
  if (!task.fetch) return task;
  try {
    return { index: task.index, key: task.key, day: task.day, bytes: await fetchObject(source, task.fetch) };
  } catch (err) {
    return { index: task.index, records: 0, counts: [], rejects: [], unreadable: firstLine(err) };
  }
}

/** A file that cannot be opened or read, or a gzip that does not inflate: the object is unreadable, nothing else is wrong. */
class Unreadable extends Error {}

export class ObjectParser {
  private readonly reader: AccessLogRecordReader;
  private current: ParsedTally | null = null;
  private part: RowFile | null = null;
  private parts = 0;

  constructor(private readonly opts: ObjectParserOptions) {
    this.reader = new AccessLogRecordReader((r) => {
      const c = this.current!;
      // A record without a readable time belongs to the day in its object's name (contract §5); so
      // does a malformed one, none of whose fields is trusted.
      const day = r.error !== 0 || Number.isNaN(r.timeMs) ? c.day : dayOf(r.timeMs);
      const outcome = r.outcome;
      c.count(day, outcome, 1);
      if (outcome !== O_PING && outcome !== O_NOT_PING && outcome !== O_HTTP_ERROR) {
        c.rejects.push({ day, reject: { source: 's3', outcome: outcomeName(r), reason: rejectReason(r), input: c.key, at: r.lineNo, ...rejectedLine(r.b, r.lineStart, r.lineEnd) } });
      }
    }, { pingKeys: opts.pingKeys, onRows: (rows) => this.append(rows) });
  }

  parse(task: ParseTask): ParsedObject {
    const tally = new ParsedTally(task.key, task.day);
    this.current = tally;
    const reader = this.reader;
    reader.reset();
    reader.startTally(task.day);
    const rowsBefore = this.part?.size ?? 0;
    try {
      if (task.file !== undefined) this.readFile(task.file, task.size);
      else this.readBytes(task.bytes!);
      reader.finish();
    } catch (err) {
      reader.endTally();
      // Rows of a half-read object must not stay staged: they go, and the object counts for nothing.
      this.part?.truncate(rowsBefore);
      if (err instanceof Unreadable) return { index: task.index, records: 0, counts: [], rejects: [], unreadable: err.message };
      throw err;
    }
    for (const { day, counts } of reader.endTally()) counts.forEach((n, outcome) => { if (n > 0) tally.count(day, outcome, n); });
    this.current = null;
    for (const [day, counts] of tally.byDay) if (counts[O_PING]! > 0) this.part?.days.add(day);
    if ((this.part?.size ?? 0) >= this.opts.partBytes) this.endPart();
    let records = 0;
    for (const counts of tally.byDay.values()) for (const n of counts) records += n;
    return { index: task.index, records, counts: [...tally.byDay], rejects: tally.rejects };
  }

  /** Hands over the part being written, if any: call after the last object. */
  flush(): void {
    if (this.part?.size) this.endPart();
    else this.part?.close();
    this.part = null;
  }

  private readFile(path: string, listedSize?: number): void {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (err) {
      throw new Unreadable(firstLine(err));
    }
    try {
      let total = 0;
      for (let first = true; ; first = false) {
        const into = this.reader.inputSpace(READ_BYTES);
        const n = readOr(fd, into, null);
        if (n === 0) break;
        // Gzip or not, told by the first read's first two bytes (read on their own if it held fewer).
        if (first && isGzip(n >= 2 ? into.subarray(0, 2) : magicAt(fd))) {
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
      try {
        plain = gunzipSync(bytes);
      } catch (err) {
        throw new Unreadable(firstLine(err));
      }
    }
    for (let at = 0; at < plain.length; at += READ_BYTES) this.reader.push(plain.subarray(at, Math.min(plain.length, at + READ_BYTES)));
  }

  private append(rows: Uint8Array): void {
    this.part ??= new RowFile(join(this.opts.dir, `${this.opts.name}-${this.parts++}.csv`));
    this.part.append(rows);
  }

  private endPart(): void {
    const part = this.part!;
    part.close();
    this.part = null;
    this.opts.onPart(part.path, [...part.days]);
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
export function rejectedLine(b: Buffer, start: number, end: number): { record: string; recordBase64?: string } {
  const record = b.toString('utf8', start, end);
  return Buffer.byteLength(record, 'utf8') === end - start && !record.includes('\uFFFD')
    ? { record }
    : { record, recordBase64: b.toString('base64', start, end) };
}

/** One object's records counted by day and outcome. */
class ParsedTally {
  readonly byDay = new Map<string, number[]>();
  readonly rejects: Array<{ day: string; reject: Reject }> = [];
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
