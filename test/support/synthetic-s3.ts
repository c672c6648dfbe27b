/**
 * A synthetic S3 endpoint for scale benchmarks: enough of the S3 REST API, path-style (as pingroll's
 * client speaks to an endpoint override), for pingroll to run against days of millions of log
 * objects that nobody has to upload. Two buckets:
 *
 * - The log bucket is computed and stores nothing. Day D's object i (of `count`) is named
 *   `<prefix>YYYY-MM-DD-hh-mm-ss-<i in hex, 16 digits>`, delivered at D + floor(i * 24 h / count)
 *   (layout `simple`: SimplePrefix); or, with layout `event` (PartitionedPrefix by EventTime, S3 setting
 *   every name's time to 00), `<prefix><account>/<region>/<bucket>/YYYY/MM/DD/YYYY-MM-DD-00-00-00-<unique>`,
 *   the unique part's 16 hex digits being i modulo 256 in two, then i / 256 in 14, so that the names,
 *   and the objects delivered in any stretch of time, spread evenly over the first two digits as S3's
 *   do (a day's visible objects, the first of it, are then a run of each part's, `objectAt`).
 *   Either way, the key space is sorted by construction:
 *   the names sort in i order and the days by date, so the key space is sorted by construction and
 *   every ListObjectsV2 page is found by binary search on i (a day of 16M objects costs nothing to
 *   hold). Its body, made on request, is an access log of `recordsPerObject` pings, each a distinct
 *   valid ping (its ids come from D, i and its place in the object). Only the first `visible` objects
 *   of a day exist (setVisible), so that a bench can deliver more of them between runs.
 * - The output bucket is real, on disk under `dir` (one file per key; its key index, sorted, in
 *   memory), as pingroll's state and outputs need: conditional writes, ranged reads, copies.
 *
 * Credentials and signatures are accepted and never checked. Every request is counted by bucket and
 * operation (requests, request and response body bytes); `GET /__stats`, `POST /__stats/reset` and
 * `POST /__visible` let a driver in another process measure pingroll processes and add objects.
 *
 * Keys compare as JavaScript strings (UTF-16 code units), which is S3's UTF-8 byte order for every
 * key pingroll writes (ASCII) and for every key with no character past U+FFFF.
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, open, readdir, rename, rm, stat, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { DEFAULTS } from '../../infra/config.js';
import { DAY_MS } from '../../lib/utc-day.js';
import { logTime } from '../../tools/sample/access-log-generator.js';

export interface SyntheticS3Options {
  /** The log bucket's days, each with how many objects it holds (at most 100M). */
  days: Array<{ day: string; count: number }>;
  /** Where the output bucket's objects are kept; objects already there (from an earlier server) are served. */
  dir: string;
  /** Key prefix of the log objects, SimplePrefix style (`logs/`); default none. */
  prefix?: string;
  /** Default `logs`. */
  logBucket?: string;
  /** Default `out`. */
  outputBucket?: string;
  /** Ping records in each log object; default 1. */
  recordsPerObject?: number;
  /** The key the pings GET; default pingroll's default ping key. */
  pingKey?: string;
  /** Default 0: a free port. */
  port?: number;
  /** How the log objects are named: `simple` (SimplePrefix, delivery time; the default) or `event` (PartitionedPrefix by EventTime). */
  layout?: LogLayout;
}

export type LogLayout = 'simple' | 'event';

/** The source bucket's folders of the event layout, below the prefix: `<account>/<region>/<bucket>/`. */
export const EVENT_FOLDERS = '123456789012/us-east-1/site/';

/** The unique part of a day's object i in the event layout (see above). */
export function eventUnique(i: number): string {
  return (hex(i % 256, 2) + hex(Math.floor(i / 256), 14)).toUpperCase();
}

/** What a set of requests cost: body bytes received (request) and sent (response). */
export interface Counter { requests: number; errors: number; bytesIn: number; bytesOut: number }

export interface Stats {
  total: Counter;
  /** By bucket (`-` for requests naming none), then by S3 operation (`ListObjectsV2`, `GetObject`, ...). */
  buckets: Record<string, { total: Counter; ops: Record<string, Counter> }>;
  /**
   * CPU time of this process since the counters were reset, ms: the server's own only when it runs
   * in a process of its own (the CLI), as a driver measuring pingroll runs it.
   */
  cpuMs: { user: number; system: number };
  /** When the counters were reset (ISO). */
  since: string;
}

export interface SyntheticS3 {
  /** `http://127.0.0.1:<port>`: AWS_ENDPOINT_URL_S3 for pingroll. */
  url: string;
  stats(): Stats;
  resetStats(): void;
  /** Only the first `count` objects of `day` exist from now on (0 to the day's count). */
  setVisible(day: string, count: number): void;
  close(): Promise<void>;
}

/** Objects a day can hold: the delivery time of object i is computed as i * 86.4M / count, exact below 2^53. */
const MAX_DAY_OBJECTS = 100_000_000;
/** A record's index in its object goes into 4 hex digits of its request ID. */
const MAX_RECORDS_PER_OBJECT = 0x10000;
const XMLNS = 'http://s3.amazonaws.com/doc/2006-03-01/';
const XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n';
const PAGE_MAX = 1000;

export async function startSyntheticS3(opts: SyntheticS3Options): Promise<SyntheticS3> {
  const logBucket = opts.logBucket ?? 'logs';
  const outputBucket = opts.outputBucket ?? 'out';
  if (logBucket === outputBucket) throw new Error(`the log and output buckets need different names (both are ${logBucket})`);
  const logs = new LogBucket(opts.days, opts.prefix ?? '', opts.recordsPerObject ?? 1, opts.pingKey ?? DEFAULTS.pingKeys.split(',')[0]!, opts.layout ?? 'simple');
  const out = await OutputBucket.open(opts.dir);
  const counters = new Counters();
  const server = createServer((req, res) => {
    serve(req, res, { logBucket, outputBucket, logs, out, counters }).catch((err: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/xml' });
        res.end(errorXml('InternalError', (err as Error).message));
      } else res.destroy();
    });
  });
  // The SDK keeps connections open between requests; Node's 5 s default would close them under it.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stats: () => counters.snapshot(),
    resetStats: () => counters.reset(),
    setVisible: (day, count) => logs.setVisible(day, count),
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

// ---------------------------------------------------------------- key spaces and their listing

/** A bucket's keys in order, by index: what a listing searches. */
interface KeySpace {
  readonly size: number;
  keyAt(n: number): string;
  /**
   * Whether no key under `prefix` holds `delimiter` past it: a listing then takes a page of keys as a
   * range of indexes, without making a key.
   */
  undelimited(prefix: string, delimiter: string): boolean;
  /** Writes the listing's `<Contents>` of key n (`key`, when given, is keyAt(n)), its key written by `enc`. */
  contents(out: ByteWriter, n: number, key: string | undefined, enc: (s: string) => string): void;
}

/**
 * A response body written in place: a listing of 1000 keys as one string cost more than all else. Its
 * buffer comes from a pool and goes back once the answer is sent (`release`): a fresh 300 KB buffer
 * per page (mapped, faulted in, unmapped) cost as much again as writing it.
 */
class ByteWriter {
  private static readonly pool: Buffer[] = [];
  private static readonly POOLED = 512 << 10;
  buf: Buffer;
  at = 0;

  constructor(size: number) {
    this.buf = size <= ByteWriter.POOLED ? ByteWriter.pool.pop() ?? Buffer.allocUnsafeSlow(ByteWriter.POOLED) : Buffer.allocUnsafe(size);
  }

  /** The buffer is no longer read (its answer was handed to the socket whole). */
  release(): void {
    if (this.buf.length === ByteWriter.POOLED && ByteWriter.pool.length < 16) ByteWriter.pool.push(this.buf);
  }

  /** Room for `n` more bytes at `at`. */
  reserve(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }

  text(s: string): void {
    this.reserve(s.length * 3);
    this.at += this.buf.write(s, this.at, 'utf8');
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.at);
  }
}

interface ObjectMeta {
  size: number;
  /** Quoted, as S3 sends it. */
  etag: string;
  lastModifiedMs: number;
}

function contentsXml(key: string, lastModifiedIso: string, quotedEtag: string, size: number): string {
  return `<Contents><Key>${key}</Key><LastModified>${lastModifiedIso}</LastModified><ETag>&quot;${quotedEtag.slice(1, -1)}&quot;</ETag><Size>${size}</Size><StorageClass>STANDARD</StorageClass></Contents>`;
}

/** A day's `<Contents>` with its key's time and hex left blank, and where to write them. */
interface ContentsTemplate { bytes: Buffer; keyTime: number; keyHex: number; modified: number; etagHex: number }

/** The first index whose key is after `x` (or at it, when `inclusive`). */
function seek(space: KeySpace, x: string, inclusive: boolean): number {
  let lo = 0, hi = space.size;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const k = space.keyAt(mid);
    if (k < x || (!inclusive && k === x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** After the last key holding a common prefix: no key has U+FFFF right after a prefix. */
const PAST = '\uffff';

interface ListRequest { prefix: string; delimiter: string; after: string; maxKeys: number }
/**
 * A page's keys, as indexes `from` to `to` (exclusive) when they are a range, else one by one with
 * the keys made; its common prefixes; and where the next page starts after (`last`).
 */
interface ListPage { range: { from: number; to: number } | null; keys: Array<{ n: number; key: string }>; prefixes: string[]; truncated: boolean; last: string }

/** One ListObjectsV2 page: the keys after `after` under `prefix`, each group sharing a delimited folder as one common prefix. */
function listPage(space: KeySpace, r: ListRequest): ListPage {
  let n = r.after >= r.prefix ? seek(space, r.after, false) : seek(space, r.prefix, true);
  if (!r.delimiter || space.undelimited(r.prefix, r.delimiter)) {
    const end = seek(space, r.prefix + PAST, false);
    const to = Math.max(n, Math.min(end, n + r.maxKeys));
    return { range: { from: n, to }, keys: [], prefixes: [], truncated: to < end, last: to > n ? space.keyAt(to - 1) : r.after };
  }
  const keys: ListPage['keys'] = [];
  const prefixes: string[] = [];
  let last = r.after;
  while (keys.length + prefixes.length < r.maxKeys && n < space.size) {
    const key = space.keyAt(n);
    if (!key.startsWith(r.prefix)) break;
    const d = r.delimiter ? key.indexOf(r.delimiter, r.prefix.length) : -1;
    if (d >= 0) {
      const folder = key.slice(0, d + r.delimiter.length);
      prefixes.push(folder);
      last = folder + PAST;
      n = seek(space, last, false);
    } else {
      keys.push({ n, key });
      last = key;
      n++;
    }
  }
  const truncated = n < space.size && space.keyAt(n).startsWith(r.prefix);
  return { range: null, keys, prefixes, truncated, last };
}

// ---------------------------------------------------------------- the computed log bucket

interface LogDay {
  day: string;
  /** Days since 1970. */
  number: number;
  startMs: number;
  count: number;
  visible: number;
  /** `<prefix>YYYY-MM-DD-`: what every key of the day starts with. */
  head: string;
  /** Index of its first key among the bucket's visible keys. */
  first: number;
  template?: ContentsTemplate;
  lines?: LineTemplate;
}

const PAD2 = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const HEX_UPPER = Buffer.from('0123456789ABCDEF');
const HEX_LOWER = Buffer.from('0123456789abcdef');
const hex = (n: number, digits: number): string => n.toString(16).padStart(digits, '0');

/** A day's object `i`: delivered at this second of the day. */
function deliverySecond(d: LogDay, i: number): number {
  return Math.floor(Math.floor((i * DAY_MS) / d.count) / 1000);
}

/** The digits of a second of the day into `hh?mm?ss` at `p` (the separators are the template's). */
function writeClock(b: Buffer, p: number, sec: number): void {
  const h = Math.floor(sec / 3600), m = Math.floor(sec / 60) % 60, s = sec % 60;
  b[p] = 48 + Math.floor(h / 10);
  b[p + 1] = 48 + (h % 10);
  b[p + 3] = 48 + Math.floor(m / 10);
  b[p + 4] = 48 + (m % 10);
  b[p + 6] = 48 + Math.floor(s / 10);
  b[p + 7] = 48 + (s % 10);
}

/** `hh-mm-ss` (sep `-`) or `hh:mm:ss` of a second of the day. */
function clock(sec: number, sep: string): string {
  return PAD2[Math.floor(sec / 3600)]! + sep + PAD2[Math.floor(sec / 60) % 60]! + sep + PAD2[sec % 60]!;
}

class LogBucket implements KeySpace {
  private readonly days: LogDay[];
  private readonly byName = new Map<string, LogDay>();
  size = 0;
  /** Every line has the same length (fixed-width fields), so an object's size is known without making it. */
  readonly lineBytes: number;

  constructor(days: SyntheticS3Options['days'], private readonly prefix: string, private readonly records: number, private readonly pingKey: string, private readonly layout: LogLayout = 'simple') {
    if (!(Number.isInteger(records) && records >= 1 && records <= MAX_RECORDS_PER_OBJECT)) {
      throw new Error(`recordsPerObject=${records} must be a whole number from 1 to ${MAX_RECORDS_PER_OBJECT}`);
    }
    this.days = days.map(({ day, count }) => {
      const startMs = Date.parse(`${day}T00:00:00Z`);
      // Years with 13-digit epoch milliseconds and a 4-digit day number keep every line one length.
      if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || !(startMs >= Date.UTC(2001, 8, 9)) || startMs >= Date.UTC(2149, 0, 1)
        || new Date(startMs).toISOString().slice(0, 10) !== day) {
        throw new Error(`day '${day}' must be a date YYYY-MM-DD from 2001-09-09 to 2148-12-31`);
      }
      if (!(Number.isInteger(count) && count >= 0 && count <= MAX_DAY_OBJECTS)) throw new Error(`day ${day}: count=${count} must be a whole number from 0 to ${MAX_DAY_OBJECTS}`);
      if (this.byName.has(day)) throw new Error(`day ${day} is given twice`);
      const head = layout === 'event' ? `${prefix}${EVENT_FOLDERS}${day.replace(/-/g, '/')}/${day}-` : `${prefix}${day}-`;
      const d: LogDay = { day, number: startMs / DAY_MS, startMs, count, visible: count, head, first: 0 };
      this.byName.set(day, d);
      return d;
    }).sort((a, b) => a.startMs - b.startMs);
    this.index();
    // Every field has a fixed width, for every day (see the constructor's range of days).
    const sample = Date.UTC(2026, 10, 1);
    this.lineBytes = this.lineTemplate({ day: '2026-11-01', number: sample / DAY_MS, startMs: sample, count: 1, visible: 1, head: '', first: 0 }).bytes.length;
  }

  setVisible(day: string, count: number): void {
    const d = this.byName.get(day);
    if (!d) throw new Error(`no day ${day} in the log bucket (it has ${[...this.byName.keys()].join(', ') || 'none'})`);
    if (!(Number.isInteger(count) && count >= 0 && count <= d.count)) throw new Error(`setVisible(${day}, ${count}): the count must be a whole number from 0 to ${d.count}`);
    d.visible = count;
    this.index();
  }

  private index(): void {
    let first = 0;
    for (const d of this.days) {
      d.first = first;
      first += d.visible;
    }
    this.size = first;
  }

  /** The day holding visible key n (0 <= n < size): the last whose first key is at n or before. */
  private dayAt(n: number): LogDay {
    let lo = 0, hi = this.days.length - 1;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (this.days[mid]!.first <= n) lo = mid;
      else hi = mid - 1;
    }
    return this.days[lo]!;
  }

  keyAt(n: number): string {
    const d = this.dayAt(n);
    return this.key(d, this.objectAt(d, n - d.first));
  }

  /**
   * The object that is the day's m-th visible key: m itself, but in the event layout, where keys sort
   * by part (i modulo 256) and the visible objects are the first `visible` (V = 256a + b), part p
   * holds a + 1 of them for p < b and a after, as i = p + 256j.
   */
  private objectAt(d: LogDay, m: number): number {
    if (this.layout !== 'event') return m;
    const a = Math.floor(d.visible / 256), b = d.visible % 256;
    if (m < b * (a + 1)) return (m % (a + 1)) * 256 + Math.floor(m / (a + 1));
    const r = m - b * (a + 1);
    return (r % a) * 256 + b + Math.floor(r / a);
  }

  key(d: LogDay, i: number): string {
    if (this.layout === 'event') return `${d.head}00-00-00-${eventUnique(i)}`;
    return `${d.head}${clock(deliverySecond(d, i), '-')}-${hex(i, 16).toUpperCase()}`;
  }

  /** After the prefix (event layout: after the date folder), a key holds only its delivery time and hex: [0-9A-F-]. */
  undelimited(prefix: string, delimiter: string): boolean {
    const folders = this.layout === 'event' ? EVENT_FOLDERS.length + 'YYYY/MM/DD/'.length : 0;
    return prefix.length >= this.prefix.length + folders && /[^0-9A-F-]/.test(delimiter);
  }

  /**
   * The hot path of a listing: the day's template copied, its blanks filled digit by digit (as
   * strings, the <Contents> of a page of 1000 keys cost 1 ms of CPU; this way 0.15 ms).
   */
  contents(out: ByteWriter, n: number, key: string | undefined, enc: (s: string) => string): void {
    const d = this.dayAt(n);
    const i = this.objectAt(d, n - d.first);
    const sec = deliverySecond(d, i);
    if (enc !== esc) return out.text(contentsXml(enc(key ?? this.key(d, i)), `${d.day}T${clock(sec, ':')}.000Z`, this.etag(d, i), this.records * this.lineBytes));
    const t = (d.template ??= this.template(d));
    out.reserve(t.bytes.length);
    const b = out.buf, at = out.at;
    b.set(t.bytes, at);
    // An event-time name's time is 00-00-00 (the template's); its unique part starts with the object's share of 256.
    if (this.layout !== 'event') writeClock(b, at + t.keyTime, sec);
    writeClock(b, at + t.modified, sec);
    // i < 2^32 (MAX_DAY_OBJECTS): the first 8 of the 16 hex digits are the template's zeros. An
    // event-time name's are i modulo 256 in two, then i / 256.
    const named = this.layout === 'event' ? Math.floor(i / 256) : i;
    for (let k = 0, v = i, w = named; k < 8; k++, v >>>= 4, w >>>= 4) {
      b[at + t.keyHex + 15 - k] = HEX_UPPER[w & 15]!;
      b[at + t.etagHex + 15 - k] = HEX_LOWER[v & 15]!;
    }
    if (this.layout === 'event') {
      b[at + t.keyHex] = HEX_UPPER[(i >> 4) & 15]!;
      b[at + t.keyHex + 1] = HEX_UPPER[i & 15]!;
    }
    out.at += t.bytes.length;
  }

  private template(d: LogDay): ContentsTemplate {
    const keyHead = `<Contents><Key>${esc(d.head)}`;
    const modifiedHead = `${keyHead}00-00-00-0000000000000000</Key><LastModified>${d.day}T`;
    const etagHead = `${modifiedHead}00:00:00.000Z</LastModified><ETag>&quot;${hex(d.number, 8)}`;
    const text = `${etagHead}0000000000000000${hex(this.records, 8)}&quot;</ETag><Size>${this.records * this.lineBytes}</Size><StorageClass>STANDARD</StorageClass></Contents>`;
    const at = (s: string): number => Buffer.byteLength(s);
    return { bytes: Buffer.from(text, 'utf8'), keyTime: at(keyHead), keyHex: at(keyHead) + 9, modified: at(modifiedHead), etagHex: at(etagHead) };
  }

  /** Shaped like an MD5, and a function of everything the body is made from. */
  private etag(d: LogDay, i: number): string {
    return `"${hex(d.number, 8)}${hex(i, 16)}${hex(this.records, 8)}"`;
  }

  meta(d: LogDay, i: number): ObjectMeta {
    return { size: this.records * this.lineBytes, etag: this.etag(d, i), lastModifiedMs: d.startMs + deliverySecond(d, i) * 1000 };
  }

  /** The visible object a key names, or null. */
  find(key: string): { d: LogDay; i: number } | null {
    if (!key.startsWith(this.prefix)) return null;
    let name = key.slice(this.prefix.length);
    if (this.layout === 'event') {
      if (!name.startsWith(EVENT_FOLDERS)) return null;
      name = name.slice(EVENT_FOLDERS.length + 'YYYY/MM/DD/'.length);
      const d = this.byName.get(name.slice(0, 10));
      if (!d || name.length !== 36 || !/^[0-9A-F]{16}$/.test(name.slice(20))) return null;
      const i = parseInt(name.slice(22), 16) * 256 + parseInt(name.slice(20, 22), 16);
      return i < d.visible && this.key(d, i) === key ? { d, i } : null;
    }
    const d = this.byName.get(name.slice(0, 10));
    if (!d || name.length !== 36 || !/^[0-9A-F]{16}$/.test(name.slice(20))) return null;
    const i = parseInt(name.slice(20), 16);
    return i < d.visible && this.key(d, i) === key ? { d, i } : null;
  }

  /** Object i's records, each its day's line template with the record's fields filled in. */
  body(d: LogDay, i: number): Buffer {
    const t = (d.lines ??= this.lineTemplate(d));
    const n = t.bytes.length;
    const body = Buffer.allocUnsafe(this.records * n);
    const delivered = d.startMs + Math.floor((i * DAY_MS) / d.count);
    // A session's records are a minute apart, as a player's pings are: `minute` records span a minute
    // of the day, and a session has every minute-th record, 30 of them (half an hour). Consecutive
    // records in one session would send a busy day's sessions dozens of pings a minute, which
    // pingroll leaves out as automated traffic (contract §10's session_rate).
    const minute = recordsAMinute(d.count, this.records);
    for (let j = 0, p = 0; j < this.records; j++, p += n) {
      body.set(t.bytes, p);
      const f = t.at;
      const r = i * this.records + j;
      const s = Math.floor(r / (minute * 30)) * minute + (r % minute);
      const at = Math.max(d.startMs, delivered - (2 + (r % 57)) * 1000 - (r % 1000));
      writeClock(body, p + f.time, Math.floor((at - d.startMs) / 1000));
      decimal(body, p + f.ip1, 100 + (r % 100), 3);
      decimal(body, p + f.ip2, 100 + (Math.floor(r / 100) % 100), 3);
      decimal(body, p + f.ip3, 100 + (s % 100), 3);
      hexits(body, p + f.request, i, 8, HEX_UPPER);
      hexits(body, p + f.request + 8, j, 4, HEX_UPPER);
      decimal(body, p + f.series, 1000 + (s % 40), 4);
      decimal(body, p + f.episode, 10 + (Math.floor(s / 40) % 12), 2);
      hexits(body, p + f.session, s, 12, HEX_LOWER);
      decimal(body, p + f.user, 1_000_000 + (s % 900_000), 7);
      hexits(body, p + f.pingJ, j, 4, HEX_LOWER);
      hexits(body, p + f.pingI, i, 12, HEX_LOWER);
      decimal(body, p + f.ts, at, 13);
      decimal(body, p + f.pos, Math.floor(r / minute) % 30, 2);
      decimal(body, p + f.total, 10 + (r % 90), 2);
      decimal(body, p + f.turn, r % 10, 1);
    }
    return body;
  }

  /**
   * The day's log line, its per-record fields blank: a ping GET a few seconds before its object's
   * delivery (not before the day, so that a day's objects hold exactly its pings), every field of a
   * fixed width, so that every object of a bucket has one size. A record's request ID and ping id
   * are its own; a session's 30 records are a minute apart (see body), and the session fixes the
   * series, episode and user.
   * (Made by filling a template: as template strings a record cost 4 µs of CPU, over 10x what
   * pingroll spends parsing it; this way 1 µs, sending it included.)
   */
  private lineTemplate(d: LogDay): LineTemplate {
    const parts: string[] = [];
    const at: Record<string, number> = {};
    let length = 0;
    const put = (text: string): void => {
      parts.push(text);
      length += Buffer.byteLength(text);
    };
    const blank = (field: LineField, text: string): void => {
      at[field] = length;
      put(text);
    };
    // The date of every record of the day: only its time of day varies.
    put(`${OWNER} media-pings [${logTime(d.startMs).slice(0, 12)}`);
    blank('time', '00:00:00');
    put(' +0000] 10.');
    blank('ip1', '000');
    put('.');
    blank('ip2', '000');
    put('.');
    blank('ip3', '000');
    put(` - ${hex(d.number, 4).toUpperCase()}`);
    blank('request', '0'.repeat(12));
    put(` REST.GET.OBJECT ${this.pingKey} "GET /${this.pingKey}?x-series=s`);
    blank('series', '0000');
    put('&x-episode=e');
    blank('episode', '00');
    put(`&x-session=${hex(d.number, 8)}-5e55-4000-8000-`);
    blank('session', '0'.repeat(12));
    put('&x-user=u');
    blank('user', '0'.repeat(7));
    put(`&x-ping=${hex(d.number, 8)}-`);
    blank('pingJ', '0000');
    put('-4000-8000-');
    blank('pingI', '0'.repeat(12));
    put('&x-ts=');
    blank('ts', '0'.repeat(13));
    put('&x-pos=');
    blank('pos', '00');
    put('00&x-platform=web HTTP/1.1" 200 - 43 43 ');
    blank('total', '00');
    put(' ');
    blank('turn', '0');
    put(` "-" "${AGENT}" - ${HOST_ID} - TLS_AES_128_GCM_SHA256 - media-pings.s3.us-east-1.amazonaws.com TLSv1.3 - - -\n`);
    const bytes = Buffer.from(parts.join(''), 'utf8');
    // Listings give every object the size the constructor's sample line gives.
    if (this.lineBytes !== undefined && bytes.length !== this.lineBytes) throw new Error(`synthetic-s3: day ${d.day}'s lines are ${bytes.length} bytes, not ${this.lineBytes}`);
    return { bytes, at: at as LineTemplate['at'] };
  }
}

type LineField = 'time' | 'ip1' | 'ip2' | 'ip3' | 'request' | 'series' | 'episode' | 'session' | 'user' | 'pingJ' | 'pingI' | 'ts' | 'pos' | 'total' | 'turn';
/** A day's log line with its per-record fields left blank, and where each starts. */
interface LineTemplate { bytes: Buffer; at: Record<LineField, number> }

/** `v` in `width` decimal digits at `p`, zero-padded (v < 10^width). */
function decimal(b: Buffer, p: number, v: number, width: number): void {
  for (let k = width - 1; k >= 0; k--, v = Math.floor(v / 10)) b[p + k] = 48 + (v % 10);
}

/** `v` in `width` hex digits at `p`, zero-padded, from `digits` (its case). */
function hexits(b: Buffer, p: number, v: number, width: number, digits: Buffer): void {
  for (let k = width - 1; k >= 0; k--, v = Math.floor(v / 16)) b[p + k] = digits[v % 16]!;
}

/** How many of a day's records span a minute of it (`count` objects of `records` each): a session's are this many apart. */
export function recordsAMinute(count: number, records: number): number {
  return Math.max(1, Math.ceil((60_000 * count * records) / DAY_MS));
}

const OWNER = '79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be';
// A browser's: isbot's list names `SyntheticPlayer/1.0`, and every ping it sent was left out as
// automated traffic (contract §10), so a day's rollup counted none.
const AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const HOST_ID = 'c3ludGhldGljLXMzIGhvc3QgaWQgZm9yIHBpbmdyb2xsIGJlbmNoZXMgb25seQ==';

// ---------------------------------------------------------------- the output bucket, on disk

interface Stored extends ObjectMeta {
  file: string;
  /** LastModified as a listing writes it. */
  iso: string;
}

/**
 * Objects as files under `dir`: each segment of the key percent-encoded, folders ending `.d` and the
 * object's file `.obj`, so that `a` and `a/b` can both exist and `.`, `..` and empty segments are
 * names like any other. A write goes to `.tmp/` and is renamed into place, so a reader sees the old
 * object or the new one whole.
 */
class OutputBucket implements KeySpace {
  private readonly keys: string[] = [];
  private readonly objects = new Map<string, Stored>();
  /** Keys with a write under way: a conditional write of one of them fails, as it would on S3. */
  private readonly writing = new Map<string, number>();
  private readonly folders = new Set<string>();
  private seq = 0;

  private constructor(private readonly dir: string) {}

  static async open(dir: string): Promise<OutputBucket> {
    const b = new OutputBucket(dir);
    await rm(join(dir, '.tmp'), { recursive: true, force: true });
    await mkdir(join(dir, '.tmp'), { recursive: true });
    await b.load(dir, '');
    b.keys.sort();
    return b;
  }

  /** Objects a server before this one stored. Their ETags come from size and time: their MD5 would need every byte read. */
  private async load(folder: string, keyPrefix: string): Promise<void> {
    for (const e of await readdir(folder, { withFileTypes: true })) {
      let segment: string;
      try {
        segment = decodeURIComponent(e.name.replace(/\.(d|obj)$/, ''));
      } catch {
        continue;
      }
      const path = join(folder, e.name);
      if (e.isDirectory() && e.name.endsWith('.d')) {
        this.folders.add(path);
        await this.load(path, `${keyPrefix}${segment}/`);
      } else if (e.isFile() && e.name.endsWith('.obj')) {
        const st = await stat(path);
        const key = keyPrefix + segment;
        this.keys.push(key);
        const ms = Math.floor(st.mtimeMs);
        this.objects.set(key, { file: path, size: st.size, lastModifiedMs: ms, iso: isoTime(ms), etag: `"${md5(`${st.size}:${st.mtimeMs}`)}"` });
      }
    }
  }

  get size(): number {
    return this.keys.length;
  }

  keyAt(n: number): string {
    return this.keys[n]!;
  }

  undelimited(): boolean {
    return false;
  }

  contents(out: ByteWriter, n: number, key: string | undefined, enc: (s: string) => string): void {
    const k = key ?? this.keys[n]!;
    const o = this.objects.get(k)!;
    out.text(contentsXml(enc(k), o.iso, o.etag, o.size));
  }

  get(key: string): Stored | undefined {
    return this.objects.get(key);
  }

  /** The file of a key; throws BadRequest when the key cannot be one. */
  fileOf(key: string): string {
    if (Buffer.byteLength(key) > 1024) throw new BadRequest('KeyTooLongError', 'Your key is too long (S3 allows 1024 bytes).');
    const segments = key.split('/').map(encodeURIComponent);
    const leaf = `${segments.pop()!}.obj`;
    const path = [...segments.map((s) => `${s}.d`), leaf];
    if (path.some((p) => Buffer.byteLength(p) > 255)) throw new BadRequest('KeyTooLongError', 'a segment of the key, percent-encoded, is longer than a file name can be (255 bytes): the synthetic S3 stores one file per key');
    return join(this.dir, ...path);
  }

  /**
   * Stores an object, whose bytes `fill` writes to a temporary file. With `ifNoneMatch`, only when
   * the key has no object and no write under way (null otherwise).
   */
  async write(key: string, ifNoneMatch: boolean, etag: string, fill: (tmp: string) => Promise<void>): Promise<Stored | null> {
    const file = this.fileOf(key);
    if (ifNoneMatch && (this.objects.has(key) || this.writing.has(key))) return null;
    this.writing.set(key, (this.writing.get(key) ?? 0) + 1);
    const tmp = join(this.dir, '.tmp', String(++this.seq));
    try {
      await fill(tmp);
      const folder = dirname(file);
      if (!this.folders.has(folder)) {
        await mkdir(folder, { recursive: true });
        this.folders.add(folder);
      }
      const st = await stat(tmp);
      await rename(tmp, file);
      const now = Date.now();
      const stored: Stored = { file, size: st.size, etag, lastModifiedMs: now, iso: isoTime(now) };
      if (!this.objects.has(key)) this.keys.splice(seek(this, key, true), 0, key);
      this.objects.set(key, stored);
      return stored;
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    } finally {
      const n = this.writing.get(key)! - 1;
      if (n === 0) this.writing.delete(key);
      else this.writing.set(key, n);
    }
  }

  async delete(key: string): Promise<void> {
    const o = this.objects.get(key);
    if (!o) return;
    this.objects.delete(key);
    this.keys.splice(seek(this, key, true), 1);
    await unlink(o.file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}

class BadRequest extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

function md5(b: Buffer | string): string {
  return createHash('md5').update(b).digest('hex');
}

// ---------------------------------------------------------------- counters

const zero = (): Counter => ({ requests: 0, errors: 0, bytesIn: 0, bytesOut: 0 });

class Counters {
  private total = zero();
  private buckets: Stats['buckets'] = {};
  private cpu = process.cpuUsage();
  private since = new Date();

  count(bucket: string, op: string, status: number, bytesIn: number, bytesOut: number): void {
    const b = (this.buckets[bucket] ??= { total: zero(), ops: {} });
    for (const c of [this.total, b.total, (b.ops[op] ??= zero())]) {
      c.requests++;
      if (status >= 400) c.errors++;
      c.bytesIn += bytesIn;
      c.bytesOut += bytesOut;
    }
  }

  reset(): void {
    this.total = zero();
    this.buckets = {};
    this.cpu = process.cpuUsage();
    this.since = new Date();
  }

  snapshot(): Stats {
    const cpu = process.cpuUsage(this.cpu);
    return { ...structuredClone({ total: this.total, buckets: this.buckets }), cpuMs: { user: cpu.user / 1000, system: cpu.system / 1000 }, since: this.since.toISOString() };
  }
}

// ---------------------------------------------------------------- HTTP

interface Server { logBucket: string; outputBucket: string; logs: LogBucket; out: OutputBucket; counters: Counters }

/** One request's answer, counted when sent. */
class Exchange {
  constructor(readonly req: IncomingMessage, private readonly res: ServerResponse, private readonly counters: Counters,
    readonly bucket: string, readonly op: string, private readonly bytesIn: number) {}

  /** `sent` is called once the body has been handed to the socket whole (not when the client went away first). */
  send(status: number, headers: Record<string, string | number>, body?: Buffer | string, sent?: () => void): void {
    const bytes = body === undefined || this.req.method === 'HEAD' ? 0 : Buffer.byteLength(body);
    this.res.writeHead(status, { 'x-amz-request-id': requestId(), ...headers, ...(headers['content-length'] === undefined ? { 'content-length': bytes } : {}) });
    if (sent) this.res.once('finish', sent);
    this.res.end(this.req.method === 'HEAD' ? undefined : body);
    this.counters.count(this.bucket, this.op, status, this.bytesIn, bytes);
  }

  xml(status: number, xml: string): void {
    this.send(status, { 'content-type': 'application/xml' }, Buffer.from(XML_HEAD + xml, 'utf8'));
  }

  error(status: number, code: string, message: string, extra: Record<string, string> = {}): void {
    // A HEAD answer has no body: the SDK names the error from the status alone.
    if (this.req.method === 'HEAD') return this.send(status, {});
    this.send(status, { 'content-type': 'application/xml' }, errorXml(code, message, extra));
  }

  /** An object's bytes from an open file, `length` of them from `start`. */
  stream(status: number, headers: Record<string, string | number>, file: FileHandle, start: number, length: number): void {
    this.res.writeHead(status, { 'x-amz-request-id': requestId(), ...headers, 'content-length': length });
    if (this.req.method === 'HEAD' || length === 0) {
      void file.close();
      this.res.end();
    } else {
      // A client that goes away mid-body ends the read too (and the file is closed).
      pipeline(file.createReadStream({ start, end: start + length - 1 }), this.res).catch(() => {});
    }
    this.counters.count(this.bucket, this.op, status, this.bytesIn, this.req.method === 'HEAD' ? 0 : length);
  }
}

let requests = 0;
function requestId(): string {
  return hex(++requests, 16).toUpperCase();
}

function errorXml(code: string, message: string, extra: Record<string, string> = {}): string {
  const more = Object.entries(extra).map(([k, v]) => `<${k}>${esc(v)}</${k}>`).join('');
  return `${XML_HEAD}<Error><Code>${code}</Code><Message>${esc(message)}</Message>${more}<RequestId>${requestId()}</RequestId></Error>`;
}

function esc(s: string): string {
  return /[&<>"']/.test(s) ? s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;') : s;
}

const isoTime = (ms: number): string => new Date(ms).toISOString();
const NO_BODY = Buffer.alloc(0);

async function readBody(req: IncomingMessage): Promise<Buffer> {
  if (req.headers['transfer-encoding'] === undefined && (req.headers['content-length'] ?? '0') === '0') {
    req.resume();
    return NO_BODY;
  }
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/**
 * A body sent with `aws-chunked` framing (`<hex size>;chunk-signature=...\r\n<bytes>\r\n`, ending
 * with a chunk of 0 and optional trailers): the SDK's default for a streamed upload, whose checksum
 * goes in a trailer. pingroll's client never sends one (requestChecksumCalculation WHEN_REQUIRED with
 * an endpoint override: plain bodies, UNSIGNED-PAYLOAD for streams); other clients may.
 */
function unchunk(b: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = b.indexOf('\r\n', at);
    const size = eol < 0 ? NaN : parseInt(b.toString('latin1', at, eol).split(';')[0]!, 16);
    if (!(size >= 0)) throw new BadRequest('IncompleteBody', 'the aws-chunked body is not framed as it should be');
    at = eol + 2;
    if (size === 0) return Buffer.concat(parts);
    parts.push(b.subarray(at, at + size));
    at += size + 2;
  }
}

function isChunked(req: IncomingMessage): boolean {
  return /aws-chunked/.test(req.headers['content-encoding'] ?? '') || /^STREAMING-/.test(String(req.headers['x-amz-content-sha256'] ?? ''));
}

/** The operation a request is, by S3's REST API (path-style). */
function operation(method: string, key: string, query: URLSearchParams, req: IncomingMessage): string {
  if (key === '') {
    // ListObjects (version 1) and the bucket's other sub-resources: pingroll sends none of them.
    if (method === 'GET') return query.get('list-type') === '2' ? 'ListObjectsV2' : query.has('location') ? 'GetBucketLocation' : 'GetBucket';
    if (method === 'HEAD') return 'HeadBucket';
    if (method === 'PUT') return [...query.keys()].length ? 'PutBucketSubresource' : 'CreateBucket';
    if (method === 'DELETE') return 'DeleteBucket';
    if (method === 'POST') return query.has('delete') ? 'DeleteObjects' : 'PostBucket';
  } else {
    if (query.has('uploadId') || query.has('uploads')) return 'MultipartUpload';
    if (method === 'GET') return 'GetObject';
    if (method === 'HEAD') return 'HeadObject';
    if (method === 'PUT') return req.headers['x-amz-copy-source'] ? 'CopyObject' : 'PutObject';
    if (method === 'DELETE') return 'DeleteObject';
  }
  return `${method}${key === '' ? 'Bucket' : 'Object'}`;
}

async function serve(req: IncomingMessage, res: ServerResponse, s: Server): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const method = req.method ?? 'GET';
  const body = await readBody(req);
  if (path.startsWith('/__')) return control(res, method, path, body, s);
  const slash = path.indexOf('/', 1);
  let bucket: string, key: string;
  try {
    bucket = decodeURIComponent(slash < 0 ? path.slice(1) : path.slice(1, slash));
    key = slash < 0 ? '' : decodeURIComponent(path.slice(slash + 1));
  } catch {
    return new Exchange(req, res, s.counters, '-', 'Malformed', body.length).error(400, 'InvalidURI', 'Couldn\'t parse the specified URI.');
  }
  const x = new Exchange(req, res, s.counters, bucket || '-', bucket ? operation(method, key, query, req) : 'ListBuckets', body.length);
  try {
    if (bucket === '') return listBuckets(x, s);
    if (bucket === s.logBucket) return logRequest(x, key, query, s.logs);
    if (bucket === s.outputBucket) return await outputRequest(x, key, query, body, s);
    return x.error(404, 'NoSuchBucket', 'The specified bucket does not exist', { BucketName: bucket });
  } catch (err) {
    if (err instanceof BadRequest) return x.error(400, err.code, err.message);
    throw err;
  }
}

function listBuckets(x: Exchange, s: Server): void {
  if (x.req.method !== 'GET') return x.error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
  const buckets = [s.logBucket, s.outputBucket].map((b) => `<Bucket><Name>${esc(b)}</Name><CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket>`).join('');
  x.xml(200, `<ListAllMyBucketsResult xmlns="${XMLNS}"><Owner><ID>${OWNER}</ID></Owner><Buckets>${buckets}</Buckets></ListAllMyBucketsResult>`);
}

/** What both buckets answer alike; true when answered. */
function bucketRequest(x: Exchange, space: KeySpace, query: URLSearchParams): boolean {
  switch (x.op) {
    case 'HeadBucket':
    case 'CreateBucket':
      x.send(200, x.op === 'CreateBucket' ? { location: `/${x.bucket}` } : { 'x-amz-bucket-region': 'us-east-1' });
      return true;
    case 'GetBucketLocation':
      x.xml(200, `<LocationConstraint xmlns="${XMLNS}"/>`);
      return true;
    case 'ListObjectsV2':
      listObjects(x, space, query);
      return true;
    default:
      return false;
  }
}

function notImplemented(x: Exchange): void {
  x.error(501, 'NotImplemented', `the synthetic S3 does not implement ${x.op}: it serves what pingroll sends (ListObjectsV2, GetObject, HeadObject, PutObject, CopyObject, DeleteObject, HeadBucket)`);
}

function listObjects(x: Exchange, space: KeySpace, query: URLSearchParams): void {
  const prefix = query.get('prefix') ?? '';
  const delimiter = query.get('delimiter') ?? '';
  const startAfter = query.get('start-after') ?? '';
  const token = query.get('continuation-token');
  const urlEncoded = query.get('encoding-type') === 'url';
  const maxText = query.get('max-keys');
  const maxKeys = maxText === null ? PAGE_MAX : Number(maxText);
  if (!(Number.isInteger(maxKeys) && maxKeys >= 0)) return x.error(400, 'InvalidArgument', 'Provided max-keys not an integer or within integer range');
  let after = startAfter;
  if (token !== null) {
    after = Buffer.from(token, 'base64url').toString('utf8');
    if (token === '' || Buffer.from(after, 'utf8').toString('base64url') !== token) return x.error(400, 'InvalidArgument', 'The continuation token provided is incorrect');
  }
  const page = listPage(space, { prefix, delimiter, after, maxKeys: Math.min(maxKeys, PAGE_MAX) });
  const enc = urlEncoded ? (s: string): string => encodeURIComponent(s).replace(/%2F/g, '/') : esc;
  let xml = `<ListBucketResult xmlns="${XMLNS}"><Name>${esc(x.bucket)}</Name><Prefix>${enc(prefix)}</Prefix>`
    + (delimiter ? `<Delimiter>${enc(delimiter)}</Delimiter>` : '')
    + `<MaxKeys>${maxKeys}</MaxKeys>`
    + (urlEncoded ? '<EncodingType>url</EncodingType>' : '')
    + (token !== null ? `<ContinuationToken>${esc(token)}</ContinuationToken>` : '')
    + (startAfter ? `<StartAfter>${enc(startAfter)}</StartAfter>` : '')
    + `<KeyCount>${(page.range ? page.range.to - page.range.from : page.keys.length) + page.prefixes.length}</KeyCount><IsTruncated>${page.truncated}</IsTruncated>`
    + (page.truncated ? `<NextContinuationToken>${Buffer.from(page.last, 'utf8').toString('base64url')}</NextContinuationToken>` : '');
  const out = new ByteWriter(4096 + (page.range ? page.range.to - page.range.from : page.keys.length) * 320);
  out.text(XML_HEAD + xml);
  if (page.range) for (let n = page.range.from; n < page.range.to; n++) space.contents(out, n, undefined, enc);
  for (const { n, key } of page.keys) space.contents(out, n, key, enc);
  for (const p of page.prefixes) out.text(`<CommonPrefixes><Prefix>${enc(p)}</Prefix></CommonPrefixes>`);
  out.text('</ListBucketResult>');
  x.send(200, { 'content-type': 'application/xml' }, out.bytes(), () => out.release());
}

function objectHeaders(m: ObjectMeta, contentType: string): Record<string, string> {
  return { etag: m.etag, 'last-modified': new Date(m.lastModifiedMs).toUTCString(), 'content-type': contentType, 'accept-ranges': 'bytes' };
}

/** `Range: bytes=a-b`, `bytes=a-`, `bytes=-n` of an object of `size`; null for the whole object (no range, or one S3 ignores). */
function range(header: string | undefined, size: number): { start: number; length: number } | 'unsatisfiable' | null {
  const m = header === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const n = Number(m[2]);
    return n === 0 || size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - n), length: Math.min(n, size) };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size) return 'unsatisfiable';
  return end < start ? null : { start, length: end - start + 1 };
}

/** GetObject or HeadObject's answer, whole or ranged: `send` sends the status, the headers and `length` bytes from `start`. */
function answerObject(x: Exchange, m: ObjectMeta, contentType: string, send: (status: number, headers: Record<string, string | number>, start: number, length: number) => void): void {
  const r = range(x.req.headers.range, m.size);
  const headers = objectHeaders(m, contentType);
  if (r === 'unsatisfiable') return x.send(416, { 'content-type': 'application/xml', 'content-range': `bytes */${m.size}` }, x.req.method === 'HEAD' ? undefined : errorXml('InvalidRange', 'The requested range is not satisfiable', { RangeRequested: x.req.headers.range ?? '', ActualObjectSize: String(m.size) }));
  if (r === null) return send(200, headers, 0, m.size);
  send(206, { ...headers, 'content-range': `bytes ${r.start}-${r.start + r.length - 1}/${m.size}` }, r.start, r.length);
}

function logRequest(x: Exchange, key: string, query: URLSearchParams, logs: LogBucket): void {
  if (bucketRequest(x, logs, query)) return;
  if (x.op === 'PutObject' || x.op === 'CopyObject' || x.op === 'DeleteObject') return x.error(403, 'AccessDenied', 'the synthetic log bucket is read-only: its objects are computed');
  if (x.op !== 'GetObject' && x.op !== 'HeadObject') return notImplemented(x);
  const found = logs.find(key);
  if (!found) return x.error(404, 'NoSuchKey', 'The specified key does not exist.', { Key: key });
  const m = logs.meta(found.d, found.i);
  answerObject(x, m, 'text/plain', (status, headers, start, length) => {
    if (x.req.method === 'HEAD') return x.send(status, { ...headers, 'content-length': length });
    const body = logs.body(found.d, found.i);
    x.send(status, headers, start === 0 && length === body.length ? body : body.subarray(start, start + length));
  });
}

async function outputRequest(x: Exchange, key: string, query: URLSearchParams, body: Buffer, s: Server): Promise<void> {
  const out = s.out;
  if (bucketRequest(x, out, query)) return;
  const ifNoneMatch = x.req.headers['if-none-match'] === '*';
  switch (x.op) {
    case 'GetObject':
    case 'HeadObject': {
      const m = out.get(key);
      if (!m) return x.error(404, 'NoSuchKey', 'The specified key does not exist.', { Key: key });
      let file;
      try {
        file = await open(m.file, 'r');
      } catch (err) {
        // Deleted since it was looked up.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return x.error(404, 'NoSuchKey', 'The specified key does not exist.', { Key: key });
        throw err;
      }
      const fh = file;
      let streamed = false;
      try {
        const size = (await fh.stat()).size;
        answerObject(x, { ...m, size }, 'application/octet-stream', (status, headers, start, length) => {
          streamed = true;
          x.stream(status, headers, fh, start, length);
        });
      } finally {
        // x.stream closes the file; an answer without the object's bytes (a range past its end) leaves it open.
        if (!streamed) await fh.close();
      }
      return;
    }
    case 'PutObject': {
      const bytes = isChunked(x.req) ? unchunk(body) : body;
      const decoded = x.req.headers['x-amz-decoded-content-length'];
      if (decoded !== undefined && Number(decoded) !== bytes.length) return x.error(400, 'IncompleteBody', `the body holds ${bytes.length} bytes, not the ${String(decoded)} of x-amz-decoded-content-length`);
      const stored = await out.write(key, ifNoneMatch, `"${md5(bytes)}"`, (tmp) => writeFile(tmp, bytes));
      if (!stored) return x.error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', { Condition: 'If-None-Match' });
      return x.send(200, { etag: stored.etag });
    }
    case 'CopyObject': {
      const source = copySource(String(x.req.headers['x-amz-copy-source']));
      if (!source) return x.error(400, 'InvalidArgument', 'Copy Source must mention the source bucket and key: sourcebucket/sourcekey', { ArgumentName: 'x-amz-copy-source' });
      let etag: string, fill: (tmp: string) => Promise<void>;
      if (source.bucket === s.outputBucket && out.get(source.key)) {
        const from = out.get(source.key)!;
        etag = from.etag;
        fill = (tmp) => copyFile(from.file, tmp);
      } else if (source.bucket === s.logBucket && s.logs.find(source.key)) {
        const { d, i } = s.logs.find(source.key)!;
        const bytes = s.logs.body(d, i);
        etag = s.logs.meta(d, i).etag;
        fill = (tmp) => writeFile(tmp, bytes);
      } else if (source.bucket !== s.outputBucket && source.bucket !== s.logBucket) {
        return x.error(404, 'NoSuchBucket', 'The specified bucket does not exist', { BucketName: source.bucket });
      } else {
        return x.error(404, 'NoSuchKey', 'The specified key does not exist.', { Key: source.key });
      }
      let stored: Stored | null;
      try {
        stored = await out.write(key, ifNoneMatch, etag, fill);
      } catch (err) {
        // The source was deleted while it was copied.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return x.error(404, 'NoSuchKey', 'The specified key does not exist.', { Key: source.key });
        throw err;
      }
      if (!stored) return x.error(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', { Condition: 'If-None-Match' });
      return x.xml(200, `<CopyObjectResult xmlns="${XMLNS}"><LastModified>${stored.iso}</LastModified><ETag>${stored.etag.replace(/"/g, '&quot;')}</ETag></CopyObjectResult>`);
    }
    case 'DeleteObject':
      await out.delete(key);
      return x.send(204, {});
    default:
      return notImplemented(x);
  }
}

/** `x-amz-copy-source`: URL-encoded `bucket/key` (a leading `/` and a `?versionId=` allowed). */
function copySource(header: string): { bucket: string; key: string } | null {
  let s: string;
  try {
    s = decodeURIComponent(header.split('?')[0]!).replace(/^\//, '');
  } catch {
    return null;
  }
  const slash = s.indexOf('/');
  return slash > 0 && slash < s.length - 1 ? { bucket: s.slice(0, slash), key: s.slice(slash + 1) } : null;
}

/** The driver's endpoints: counters and visible objects, for pingroll runs in other processes. */
function control(res: ServerResponse, method: string, path: string, body: Buffer, s: Server): void {
  const json = (status: number, value: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  };
  try {
    if (method === 'GET' && path === '/__stats') return json(200, s.counters.snapshot());
    if (method === 'POST' && path === '/__stats/reset') {
      s.counters.reset();
      return json(200, { reset: true });
    }
    if (method === 'POST' && path === '/__visible') {
      const { day, count } = JSON.parse(body.toString('utf8')) as { day: string; count: number };
      s.logs.setVisible(day, count);
      return json(200, { day, count });
    }
    json(404, { error: `no ${method} ${path}: the endpoints are GET /__stats, POST /__stats/reset, POST /__visible {"day","count"}` });
  } catch (err) {
    json(400, { error: (err as Error).message });
  }
}

// ---------------------------------------------------------------- CLI

const USAGE = `usage: node dist/test/support/synthetic-s3.js --days YYYY-MM-DD:COUNT[,...] --dir DIR [--prefix logs/]
  [--records-per-object 1] [--log-bucket logs] [--output-bucket out] [--port 0] [--visible YYYY-MM-DD:COUNT[,...]]
  [--layout simple|event]
Prints its URL (for AWS_ENDPOINT_URL_S3) on stdout; runs until SIGINT or SIGTERM.`;

/** `YYYY-MM-DD:COUNT[,...]`, the flag repeatable. */
function dayCounts(values: string[], flag: string): Array<{ day: string; count: number }> {
  return values.flatMap((v) => v.split(',')).filter((v) => v !== '').map((v) => {
    const m = /^(\d{4}-\d{2}-\d{2}):(\d+)$/.exec(v.trim());
    if (!m) throw new Error(`--${flag} ${v}: each must be YYYY-MM-DD:COUNT`);
    return { day: m[1]!, count: Number(m[2]) };
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      days: { type: 'string', multiple: true }, dir: { type: 'string' }, prefix: { type: 'string' },
      'records-per-object': { type: 'string' }, 'log-bucket': { type: 'string' }, 'output-bucket': { type: 'string' },
      port: { type: 'string' }, visible: { type: 'string', multiple: true }, layout: { type: 'string' }, help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (!values.days || !values.dir) throw new Error(`--days and --dir are needed\n${USAGE}`);
  const s3 = await startSyntheticS3({
    days: dayCounts(values.days, 'days'), dir: values.dir, prefix: values.prefix,
    recordsPerObject: values['records-per-object'] === undefined ? undefined : Number(values['records-per-object']),
    logBucket: values['log-bucket'], outputBucket: values['output-bucket'], port: values.port === undefined ? undefined : Number(values.port),
    layout: values.layout === undefined ? undefined : values.layout === 'event' || values.layout === 'simple' ? values.layout : (() => { throw new Error(`--layout ${values.layout}: simple or event`); })(),
  });
  for (const { day, count } of dayCounts(values.visible ?? [], 'visible')) s3.setVisible(day, count);
  process.stdout.write(`${s3.url}\n`);
  const stop = (): void => void s3.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    process.stderr.write(`synthetic-s3: ${(err as Error).message}\n`);
    process.exit(2);
  });
}
