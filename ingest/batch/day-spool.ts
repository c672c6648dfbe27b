/**
 * Collects one batch's records on local disk: pings as staged rows (ingest/staged-ping.ts stagedRow),
 * whatever their day; rejects as JSON lines and outcome counts in memory, by UTC day. Every
 * PART_BYTES of rows, the part is written as Parquet files by day (staged-parquet.ts) while parsing
 * goes on in the parsers' threads; `stage` writes the last part, checks every day's rows against its
 * count and puts the files in the output store. Memory stays flat whatever the batch's size: rows go
 * to disk as they come, in 4 MB writes, and are read back in pieces.
 */
import { appendFileSync, closeSync, createReadStream, createWriteStream, openSync, readSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import { createGzip } from 'node:zlib';
import { allEnded, STORE_CALLS_AT_ONCE } from '../../lib/all-ended.js';
import type { Outcome, PingRecord, Source } from '../ping-record.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { syncFile } from '../../lib/durable-file.js';
import { PARQUET_CODEC } from '../../lib/parquet-codec.js';
import { stagingPrefix } from '../../datasets/layout.js';
import type { StagedDay } from '../../state/ledger.js';
import { stagedRow } from '../staged-ping.js';
import { RowFile } from './row-file.js';
import { StagedWriterThread } from './staged-parquet.js';
import { dayName } from '../../lib/utc-day.js';

export { STAGED_ROW_GROUP_ROWS } from './staged-parquet.js';

/** A rejected record, as kept in the rejects file (contract §3). */
export interface Reject {
  source: Source;
  outcome: Outcome;
  reason: string;
  /** Log object key, or table name. */
  input: string;
  /** 1-based line in the object, or the item's key. */
  at: number | string;
  /** The record as read (a log line, or an item as JSON), cut at 16 KiB. */
  record: string;
  /** The record's bytes in base64, when they are not valid UTF-8. */
  recordBase64?: string;
  /** For a record cut short: its whole length in bytes, and their SHA-256 (hex). */
  recordBytes?: number;
  recordSha256?: string;
  /** PINGROLL_PRIVACY=mask: the record's client IP truncated and requester dropped, or its text withheld (ingest/privacy.ts). */
  masked?: true;
}

const RECORD_LIMIT = 16 * 1024;
/** Bytes of rejects read from a parser's file at a time. */
const REJECT_READ_BYTES = 1 << 20;
/** Rejects held for the day files before they are appended to them. */
const REJECT_HOLD_BYTES = 1 << 20;
/** Bytes of staged rows per part at most (about 200,000 pings); a small batch's are smaller (ingest-batch.ts partBytesFor). */
export const PART_BYTES = 32 << 20;


interface Day {
  pings: number;
  /** Rejects appended to the day's rejects file (`rejectsFile`), and those held to append. */
  rejects: number;
  held: string[];
  outcomes: Partial<Record<Source, Partial<Record<Outcome, number>>>>;
  inputs: Set<number>;
}

/** One part's Parquet file of one day. */
interface DayPart { file: string; rows: number }

export class DaySpool {
  private readonly days = new Map<string, Day>();
  /** The part being written, if any. */
  private part: RowFile | null = null;
  private partCount = 0;
  /** Parts' conversions to Parquet, one after another; and what they wrote, by day. */
  private converting: Promise<void> = Promise.resolve();
  private readonly parts = new Map<string, DayPart[]>();
  /** Complete part files not yet converted. */
  private waiting: string[] = [];
  /** Converted files being flushed to disk (see toParquetByDay). */
  private syncing: Array<Promise<void>> = [];

  private readonly partBytes: number;
  private readonly codec: string;
  private writer: StagedWriterThread | null = null;

  /** `codec`: the staged Parquet's (lib/parquet-codec.ts stagedCodec); `partBytes`: rows per part, PART_BYTES unless a test makes it small. */
  constructor(private readonly dir: string, opts: { codec?: string; partBytes?: number | undefined } = {}) {
    this.partBytes = opts.partBytes ?? PART_BYTES;
    this.codec = opts.codec ?? PARQUET_CODEC;
  }

  private day(d: string): Day {
    let day = this.days.get(d);
    if (!day) {
      day = { pings: 0, rejects: 0, held: [], outcomes: {}, inputs: new Set() };
      this.days.set(d, day);
    }
    return day;
  }

  /** Counts `n` records of `day` from input number `input`. */
  count(day: string, source: Source, outcome: Outcome, input: number, n = 1): void {
    const d = this.day(day);
    const counts = (d.outcomes[source] ??= {});
    counts[outcome] = (counts[outcome] ?? 0) + n;
    d.inputs.add(input);
    if (outcome === 'ping') d.pings += n;
  }

  /** A ping's staged row (ingest/staged-ping.ts stagedRow). */
  private appendPingRow(row: Uint8Array): void {
    this.part ??= new RowFile(join(this.dir, `pings-${this.partCount++}.rows`));
    this.part.append(row);
    if (this.part.size >= this.partBytes) this.convertPart();
  }

  /** Closes the current part and queues its conversion (awaited by stage or discard). */
  private convertPart(): void {
    const part = this.part!;
    this.part = null;
    part.close();
    this.addPart(part.path);
  }

  /** A complete part file of staged rows written elsewhere (a parser), each row counted as a ping of its day: queued for conversion. */
  addPart(rowsPath: string): void {
    this.waiting.push(rowsPath);
    // Parts that arrive while a conversion runs are converted by the next one, in turn.
    if (this.waiting.length > 1) return;
    const previous = this.converting;
    this.converting = previous.then(() => this.toParquetByDay(this.waiting.splice(0)));
    // A failure surfaces where the chain is awaited; this keeps it from being an unhandled rejection meanwhile.
    this.converting.catch(() => {});
  }

  /** Renumbers the inputs counted so far (`to` maps each old number to its new one; a number it lacks is dropped). */
  renumberInputs(to: Map<number, number>): void {
    for (const d of this.days.values()) d.inputs = new Set([...d.inputs].flatMap((i) => (to.has(i) ? [to.get(i)!] : [])));
  }

  /**
   * Parts' rows as Parquet files by UTC day (staged-parquet.ts): the rows of one day (most parts: a log
   * object's pings are of its own day but near midnight) of the parts that waited together go to one
   * file, and `stage` checks every day's rows against its count. In the spool's codec: Snappy on S3, uncompressed in a local
   * directory (lib/parquet-codec.ts stagedCodec).
   */
  private async toParquetByDay(parts: string[]): Promise<void> {
    this.writer ??= new StagedWriterThread(this.codec);
    for (const { day, file, rows } of await this.writer.write(parts, parts[0]!.replace(/\.rows$/, ''))) {
      // Flushed to disk now, while parsing goes on, rather than by the put's own sync at the commit,
      // which waited for the disk to write them all (45 ms on the job bench's day). A failure here is
      // the put's to report: its sync tries again.
      this.syncing.push(syncFile(file).catch(() => {}));
      const name = dayName(day);
      const list = this.parts.get(name) ?? [];
      list.push({ file, rows });
      this.parts.set(name, list);
    }
    for (const part of parts) await rm(part, { force: true });
  }

  addPing(day: string, ping: PingRecord, input: number): void {
    this.count(day, ping.source, 'ping', input);
    this.appendPingRow(stagedRow(ping));
  }

  addReject(day: string, reject: Reject, input: number): void {
    this.count(day, reject.source, reject.outcome, input);
    this.keepReject(day, reject);
  }

  /** Keeps a rejected record of `day` for its rejects file (counted apart, with `count`). */
  keepReject(day: string, reject: Reject): void {
    const record = reject.record.length > RECORD_LIMIT ? reject.record.slice(0, RECORD_LIMIT) : reject.record;
    this.hold(day, JSON.stringify({ ...reject, record }));
  }

  /**
   * Keeps the rejects a parser wrote for one object (`<day>\t<reject>` lines, ObjectParser), read in
   * pieces: an object's rejects are never all in memory.
   */
  takeRejects(lines: { file: string; start: number; end: number }): void {
    const fd = openSync(lines.file, 'r');
    try {
      // One buffer for every object's rejects: a MiB made for each object (most have a few lines) was
      // memory outside the heap that made V8 collect its old space every 30 ms while parsing.
      const buf = (this.rejectsRead ??= Buffer.allocUnsafe(REJECT_READ_BYTES));
      // A character split between two reads is decoded whole (rejects hold U+FFFD and any UTF-8).
      const decoder = new StringDecoder('utf8');
      let carry = '';
      for (let at = lines.start; at < lines.end;) {
        const n = readSync(fd, buf, 0, Math.min(buf.length, lines.end - at), at);
        if (n === 0) throw new Error(`${lines.file} ends at ${at}, before ${lines.end}: this is a bug in pingroll`);
        at += n;
        const text = carry + decoder.write(buf.subarray(0, n));
        const last = text.lastIndexOf('\n');
        carry = text.slice(last + 1);
        for (const line of text.slice(0, last).split('\n')) {
          const tab = line.indexOf('\t');
          this.hold(line.slice(0, tab), line.slice(tab + 1));
        }
      }
    } finally {
      closeSync(fd);
    }
  }

  private heldBytes = 0;
  /** Where takeRejects reads, made once. */
  private rejectsRead: Buffer | null = null;

  /** A reject of `day` (JSON), held until REJECT_HOLD_BYTES are, then appended to the days' files. */
  private hold(day: string, json: string): void {
    const d = this.day(day);
    d.held.push(json);
    d.rejects++;
    this.heldBytes += json.length + 1;
    if (this.heldBytes >= REJECT_HOLD_BYTES) this.writeHeld();
  }

  private writeHeld(): void {
    for (const [day, d] of this.days) {
      if (d.held.length === 0) continue;
      appendFileSync(this.rejectsFile(day), d.held.join('\n') + '\n');
      d.held = [];
    }
    this.heldBytes = 0;
  }

  private rejectsFile(day: string): string {
    return join(this.dir, `rejects-${day}.jsonl`);
  }

  daysSeen(): string[] {
    return [...this.days.keys()].sort();
  }

  /**
   * Writes each day's pings as Parquet and its rejects as gzip JSON lines under the batch's staging
   * (`stagingPrefix`, then `dt=<day>/`), once `ready` is done, and returns what the batch commit records of them.
   */
  async stage(store: ObjectStore, batch: string, ready: Promise<void> = Promise.resolve()): Promise<Record<string, StagedDay>> {
    const prefix = stagingPrefix(batch);
    this.writeHeld();
    if (this.part) this.convertPart();
    try {
      await this.converting;
    } finally {
      await this.closeWriter();
    }
    await Promise.all(this.syncing);
    // Nothing is put before `ready` (the batch's intent) is.
    await ready;
    const out: Record<string, StagedDay> = {};
    // The files go up several at a time: on S3 each PUT waits its round trip, on a disk each its fsync
    // (the job bench's day: four files, 55 ms one by one).
    const puts: Array<() => Promise<void>> = [];
    for (const day of this.daysSeen()) {
      const d = this.days.get(day)!;
      const parts = this.parts.get(day) ?? [];
      const rows = parts.reduce((n, p) => n + p.rows, 0);
      if (rows !== d.pings) throw new Error(`staging ${day}: ${rows} pings read back from the batch's rows, ${d.pings} counted; this is a bug in pingroll, please report it with the log objects of this run`);
      const pings: string[] = [];
      for (const [k, part] of parts.entries()) {
        // `keyed-N`: staged format 4 (with the ping id's key); format 3's were `staged-N`, 2's `pings-N`, 1's `part-N` (ingest/staged-ping.ts).
        const key = `${prefix}dt=${day}/keyed-${k}.parquet`;
        puts.push(() => store.put(key, { file: part.file, move: true }));
        pings.push(key);
      }
      let rejects: string | null = null;
      if (d.rejects > 0) {
        const key = `${prefix}dt=${day}/rejects.jsonl.gz`;
        const plain = this.rejectsFile(day), gz = `${plain}.gz`;
        puts.push(async () => {
          await pipeline(createReadStream(plain), createGzip(), createWriteStream(gz));
          await store.put(key, { file: gz, move: true });
        });
        rejects = key;
      }
      out[day] = { pings: pings.length ? pings : null, pingCount: d.pings, rejects, outcomes: d.outcomes, inputs: [...d.inputs].sort((a, b) => a - b) };
    }
    // Every put has ended before this returns (none is left writing), and the first failure fails the batch.
    await allEnded(puts, STORE_CALLS_AT_ONCE);
    return out;
  }

  /** Removes the local files (after staging, or after a failure). */
  async discard(): Promise<void> {
    if (this.part) {
      this.part.close();
      this.part = null;
    }
    await this.converting.catch(() => {});
    await this.closeWriter();
    this.days.clear();
    this.parts.clear();
  }

  /** Stops the writer's thread, when one was started (every conversion has ended). */
  private async closeWriter(): Promise<void> {
    const writer = this.writer;
    this.writer = null;
    await writer?.close();
  }
}
