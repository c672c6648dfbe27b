/**
 * The staged ping: the row every source stages for each ping (contract §4's inputs), and the one
 * definition of its columns, their order, their types and their encoding.
 *
 * Written as CSV by the DynamoDB spool (`stagedRow`) and by the WebAssembly ping rules
 * (`access-log/wasm/ping-rules.as.ts`, which writes these columns in this order straight into the
 * module's memory; the differential tests hold every row it writes to `stagedRow`, byte for byte).
 * Read by DuckDB through `STAGED_CSV_COLUMNS` (staging), by the rollup, and by `pingroll parse`
 * through `parseStagedRow`.
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

/** A staged file's columns as DuckDB's `read_csv(..., columns = ...)` takes them. */
export const STAGED_CSV_COLUMNS = `{${STAGED_FILE_COLUMNS.map((c) => `'${c.name}': '${c.type}'`).join(', ')}}`;

/** The audience of a ping with no client IP or user agent (a DynamoDB item). */
export const NO_CLIENT = { country: 'ZZ', os: 'unknown', deviceType: 'unknown', browser: 'unknown', agentRule: null } as const;

/** A SELECT list giving each column its SQL expression, in the staged order (for SQL that makes staged rows). */
export function stagedSelectList(exprs: Record<StagedColumn, string>): string {
  return STAGED_COLUMNS.map((c) => `${exprs[c.name]}::${c.type} AS ${c.name}`).join(', ');
}

/** A staged file's columns with no rows. */
export const NO_STAGED_ROWS = `SELECT ${STAGED_FILE_COLUMNS.map((c) => `NULL::${c.type} AS ${c.name}`).join(', ')} LIMIT 0`;

/**
 * A ping's staged row: CSV, each field quoted only when it holds a quote, comma or line break (quotes
 * doubled), an empty field for a null, a newline at the end.
 */
export function stagedRow(p: PingRecord): string {
  return `${p.source},${csv(p.series)},${csv(p.episode)},${csv(p.session)},${p.user === null ? '' : csv(p.user)},${p.pingId === null ? '' : csv(p.pingId)},${p.eventTimeMs},${csv(p.naturalKey)},${p.platform ?? ''},${p.pos ?? ''},${csv(p.country)},${csv(p.os)},${csv(p.deviceType)},${csv(p.browser)},${p.agentRule === null ? '' : csv(p.agentRule)},${keyFields(p.pingId)}\n`;
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

/** The key columns' fields of a ping id: `hi,lo`, or `,` for none. */
function keyFields(id: string | null): string {
  const k = stagedIdKey(id);
  return k ? `${k.hi},${k.lo}` : ',';
}

function csv(v: string): string {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 0x22 || c === 0x2c || c === 0x0a || c === 0x0d) return `"${v.replace(/"/g, '""')}"`;
  }
  return v;
}

/** A ping's values read back from its staged row `b[s, e)` (the id's key, after them, is not a value of the ping). */
export function parseStagedRow(b: Buffer, s: number, e: number): PingRecord {
  const f = csvFields(b, s, e);
  return {
    source: f[0] as PingRecord['source'], series: f[1]!, episode: f[2]!, session: f[3]!, user: f[4] || null, pingId: f[5] || null,
    eventTimeMs: Number(f[6]), naturalKey: f[7]!, platform: f[8] || null, pos: f[9] ? Number(f[9]) : null,
    country: f[10]!, os: f[11]!, deviceType: f[12]!, browser: f[13]!, agentRule: f[14] || null,
  };
}

/** The fields of one CSV row `b[s, e)` (ending in a newline; quotes doubled inside quoted fields). */
function csvFields(b: Buffer, s: number, e: number): string[] {
  const out: string[] = [];
  let i = s;
  const end = b[e - 1] === 0x0a ? e - 1 : e;
  for (;;) {
    if (b[i] === 0x22) {
      const parts: string[] = [];
      const from0 = i + 1;
      let from = from0;
      for (let j = from0; ; j++) {
        if (b[j] !== 0x22) continue;
        parts.push(b.toString('utf8', from, j));
        if (b[j + 1] === 0x22) {
          parts.push('"');
          from = j + 2;
          j++;
          continue;
        }
        i = j + 1;
        break;
      }
      out.push(parts.join(''));
    } else {
      let j = i;
      while (j < end && b[j] !== 0x2c) j++;
      out.push(b.toString('utf8', i, j));
      i = j;
    }
    if (i >= end) return out;
    i++; // the comma
  }
}
