/**
 * The staged ping: the row every source stages for each ping (contract §4's inputs), and the one
 * definition of its columns, their order, their types and their encoding.
 *
 * Written as a binary row (`stagedRow`, below) by the DynamoDB spool and by the WebAssembly ping rules
 * (`access-log/wasm/ping-rules.as.ts`, which writes these columns straight into the module's memory;
 * the differential tests hold every row it writes to `stagedRow`, byte for byte). The spool's part
 * files hold such rows, which ingest/batch/staged-parquet.ts turns into Parquet columns: no text is
 * made or read between the parser and the staged file. Read back by `pingroll parse` through
 * `parseStagedRow`; the staged files are read by the rollup.
 *
 * A staged file holds the record's columns (`STAGED_COLUMNS`: what a rejects line and every table
 * read of a ping) and, from staged format 4, the ping id's key after them (`STAGED_KEY_COLUMNS`),
 * which only the rollup's ping-id window reads.
 */
import type { PingRecord } from './ping-record.js';

export const STAGED_COLUMNS = [
  { name: 'source', type: 'VARCHAR' },
  { name: 'series', type: 'VARCHAR' },
  { name: 'episode', type: 'VARCHAR' },
  { name: 'session', type: 'VARCHAR' },
  { name: 'user_id', type: 'VARCHAR' },
  { name: 'ping_id', type: 'VARCHAR' },
  /** Event time, epoch ms UTC. */
  { name: 'event_ms', type: 'BIGINT' },
  { name: 'natural_key', type: 'VARCHAR' },
  /** Added in staged format 2 (files named `pings-N.parquet`); files of format 1 (`part-N.parquet`) have no such column: read as NULL. */
  { name: 'platform', type: 'VARCHAR' },
  /** Added with `platform`: the playhead in whole seconds (ping-record.ts's normalizePos), or NULL. */
  { name: 'pos', type: 'BIGINT' },
  /**
   * Staged format 3 (files `staged-N.parquet`), contract §10, from the client IP and user agent as the
   * ping rules read them (ingest/audience, wasm/client-cache.as.ts): the country (`ZZ` unknown), the
   * operating system, device type and browser or player family (`unknown`), and the bot-list rule
   * that names the user agent (NULL: none). Files of formats 1 and 2 have none of these: read as NULL.
   */
  { name: 'country', type: 'VARCHAR' },
  { name: 'os', type: 'VARCHAR' },
  { name: 'device_type', type: 'VARCHAR' },
  { name: 'browser', type: 'VARCHAR' },
  { name: 'agent_rule', type: 'VARCHAR' },
] as const;
export type StagedColumn = (typeof STAGED_COLUMNS)[number]['name'];

/**
 * Staged format 4 (files `keyed-N.parquet`), after the record's columns: the ping id's key
 * (rollup/engines/duckdb/ping-keys.ts), made where the id is parsed, so that the rollup's window
 * check does not parse 47M texts as UUIDs (docs/benchmarks.md). For an id that is a canonical UUID
 * (lowercase hex, its dashes in place: what players send), its high and low 64 bits, the top bit of
 * each flipped, so that signed order is the key's (Redshift has no UUID type, and both engines read
 * BIGINT); NULL for any other id, or none. Files of formats 1 to 3 have none: the rollup makes the
 * key from the id's text (ping-keys.ts uuidKeySql).
 */
export const STAGED_KEY_COLUMNS = [
  { name: 'key_hi', type: 'BIGINT' },
  { name: 'key_lo', type: 'BIGINT' },
] as const;

/** Every column of a staged file of the current format (4), in order: the record's, then the id's key. */
export const STAGED_FILE_COLUMNS = [...STAGED_COLUMNS, ...STAGED_KEY_COLUMNS] as const;

export const STAGED_COLUMN_NAMES: readonly StagedColumn[] = STAGED_COLUMNS.map((c) => c.name);

/**
 * The staged formats before the current one, each with its files' columns in order: format 1's stop
 * before `platform`, format 2's before `country`, format 3's are the record's (before the id's key).
 * A file of one has none of the columns after its own: read as NULL.
 */
export const EARLIER_STAGED_FORMATS = [
  { format: 1, columns: STAGED_COLUMNS.slice(0, 8) },
  { format: 2, columns: STAGED_COLUMNS.slice(0, 10) },
  { format: 3, columns: STAGED_COLUMNS },
] as const;

/**
 * A staged file's format, by its name (ingest/batch/day-spool.ts): format 4 files are
 * `keyed-N.parquet`, format 3's `staged-N.parquet`, format 2's `pings-N.parquet`, format 1's `part-N.parquet`.
 */
export function stagedFormatOf(key: string): 1 | 2 | 3 | 4 {
  return /\/keyed-\d+\.parquet$/.test(key) ? 4 : /\/staged-\d+\.parquet$/.test(key) ? 3 : /\/pings-\d+\.parquet$/.test(key) ? 2 : 1;
}

/** The audience of a ping with no client IP or user agent (a DynamoDB item). */
export const NO_CLIENT = { country: 'ZZ', os: 'unknown', deviceType: 'unknown', browser: 'unknown', agentRule: null } as const;

/** A SELECT list giving each column its SQL expression, in the staged order (for SQL that makes staged rows). */
export function stagedSelectList(exprs: Record<StagedColumn, string>): string {
  return STAGED_COLUMNS.map((c) => `${exprs[c.name]}::${c.type} AS ${c.name}`).join(', ');
}

/** A staged file's columns with no rows. */
export const NO_STAGED_ROWS = `SELECT ${STAGED_FILE_COLUMNS.map((c) => `NULL::${c.type} AS ${c.name}`).join(', ')} LIMIT 0`;

/**
 * A ping's staged row, as the ping rules write it and the spool's part files hold it, little-endian:
 * - a u32: the row's length in bytes, this word included;
 * - an i64: `event_ms` (every ping has one), first so that a row's day is read without walking it;
 * - then every other column of STAGED_FILE_COLUMNS, in order: a VARCHAR as an i32 byte length (-1:
 *   NULL) and its UTF-8 bytes; a BIGINT as a byte, 0 (NULL) or 1, and when 1 its 8 bytes.
 * An empty string is NULL, as it was in the CSV rows of before (an empty field).
 */
export function stagedRow(p: PingRecord): Buffer {
  const key = stagedIdKey(p.pingId);
  const values: Record<StagedFileColumn, string | bigint | number | null> = {
    source: p.source, series: p.series, episode: p.episode, session: p.session, user_id: p.user, ping_id: p.pingId,
    event_ms: p.eventTimeMs, natural_key: p.naturalKey, platform: p.platform, pos: p.pos, country: p.country, os: p.os,
    device_type: p.deviceType, browser: p.browser, agent_rule: p.agentRule, key_hi: key?.hi ?? null, key_lo: key?.lo ?? null,
  };
  for (const c of ROW_BODY) if (values[c.name] === '') values[c.name] = null;
  let size = ROW_HEAD_BYTES;
  for (const c of ROW_BODY) {
    const v = values[c.name];
    size += c.type === 'BIGINT' ? (v === null ? 1 : 9) : 4 + (v === null ? 0 : Buffer.byteLength(v as string));
  }
  const b = Buffer.allocUnsafe(size);
  b.writeUInt32LE(size, 0);
  b.writeBigInt64LE(BigInt(p.eventTimeMs), 4);
  let at = ROW_HEAD_BYTES;
  for (const c of ROW_BODY) {
    const v = values[c.name];
    if (c.type === 'BIGINT') {
      b[at++] = v === null ? 0 : 1;
      if (v !== null) at = b.writeBigInt64LE(BigInt(v), at);
    } else if (v === null) at = b.writeInt32LE(-1, at);
    else {
      const n = b.write(v as string, at + 4);
      b.writeInt32LE(n, at);
      at += 4 + n;
    }
  }
  return b;
}

/** A staged row's fixed head: its length and its event time. */
export const ROW_HEAD_BYTES = 12;
type StagedFileColumn = (typeof STAGED_FILE_COLUMNS)[number]['name'];
/** The columns a staged row holds after its head, in order: every one but `event_ms`. */
const ROW_BODY = STAGED_FILE_COLUMNS.filter((c) => c.name !== 'event_ms');

/**
 * How each staged column lies in a staged row, in STAGED_FILE_COLUMNS order, as the WebAssembly
 * writer of staged files reads it (ingest/access-log/wasm/staged-columns.as.ts): ROW_EVENT_TIME in
 * the head, else ROW_STRING or ROW_INT64 in the body.
 */
export const ROW_STRING = 0, ROW_INT64 = 1, ROW_EVENT_TIME = 2;
export const STAGED_ROW_KINDS: readonly number[] = STAGED_FILE_COLUMNS.map((c) => (c.name === 'event_ms' ? ROW_EVENT_TIME : c.type === 'BIGINT' ? ROW_INT64 : ROW_STRING));

/** Each staged row of `b` (rows one after another, as a part file holds them): its start and end. */
export function* stagedRowSpans(b: Uint8Array): Generator<[number, number]> {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  for (let s = 0; s < b.length;) {
    const e = s + view.getUint32(s, true);
    yield [s, e];
    s = e;
  }
}

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TOP_BIT = 1n << 63n;

/**
 * A ping id's key columns (STAGED_KEY_COLUMNS): a canonical UUID's high and low 64 bits, each top bit
 * flipped, as signed numbers (an unsigned half less 2^63 is that); null for any other id or none.
 */
export function stagedIdKey(id: string | null): { hi: bigint; lo: bigint } | null {
  if (id === null || !CANONICAL_UUID.test(id)) return null;
  return { hi: BigInt(`0x${id.slice(0, 8)}${id.slice(9, 13)}${id.slice(14, 18)}`) - TOP_BIT, lo: BigInt(`0x${id.slice(19, 23)}${id.slice(24)}`) - TOP_BIT };
}

/** A ping's values read back from its staged row `b[s, e)` (the id's key, after them, is not a value of the ping). */
export function parseStagedRow(b: Buffer, s: number, e: number): PingRecord {
  const f: Partial<Record<StagedFileColumn, string | number | null>> = { event_ms: Number(b.readBigInt64LE(s + 4)) };
  let at = s + ROW_HEAD_BYTES;
  for (const c of ROW_BODY) {
    if (c.type === 'BIGINT') {
      f[c.name] = b[at++] === 0 ? null : Number(b.readBigInt64LE(at));
      if (f[c.name] !== null) at += 8;
    } else {
      const n = b.readInt32LE(at);
      f[c.name] = n < 0 ? null : b.toString('utf8', at + 4, at + 4 + n);
      at += 4 + Math.max(0, n);
    }
  }
  if (at !== e || b.readUInt32LE(s) !== e - s) throw new Error(`a staged row of ${e - s} bytes read as ${at - s}: this is a bug in pingroll`);
  const str = (k: StagedFileColumn): string => f[k] as string;
  const maybe = (k: StagedFileColumn): string | null => f[k] as string | null;
  return {
    source: str('source') as PingRecord['source'], series: str('series'), episode: str('episode'), session: str('session'), user: maybe('user_id'), pingId: maybe('ping_id'),
    eventTimeMs: f.event_ms as number, naturalKey: str('natural_key'), platform: maybe('platform'), pos: f.pos as number | null,
    country: str('country'), os: str('os'), deviceType: str('device_type'), browser: str('browser'), agentRule: maybe('agent_rule'),
  };
}
