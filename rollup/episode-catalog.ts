/**
 * The episode catalog (PINGROLL_EPISODE_CATALOG): each episode's duration, for completion
 * (`daily_episode_completion`). A CSV file, local or on S3, whose header names `series_id`,
 * `episode_id` and `duration_seconds` (in any order; other columns are ignored): the ids as they
 * appear in the tables (decoded, as daily_episode_stats has them), the duration a whole number of
 * seconds from 1 to 999,999,999.
 *
 * Read once a run, before anything else is done, and refused whole on any bad row (EpisodeCatalogError,
 * exit 2, naming the row; ids with a blank at either end, lines before the header, a column named
 * twice and a catalog with no episode are refused too): completion figures from a half-read catalog would be silently wrong. What
 * is kept is a Parquet file of its three columns, one row per episode, that both rollups join.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows, sqlString } from '../lib/duckdb-engine.js';
import { PARQUET_CODEC } from '../lib/parquet-codec.js';
import { LocationError } from '../lib/location.js';
// Ids are at most this many characters, as pings' are.
import { MAX_ID_LENGTH } from '../ingest/ping-record.js';

/** The largest catalog read: about a million episodes. */
export const MAX_CATALOG_BYTES = 64 << 20;
/** The longest duration, in seconds: the longest playhead staged (9 digits). */
export const MAX_DURATION_SECONDS = 999_999_999;
/** RE2: a blank at either end of an id: ASCII white space, any Unicode space (no-break spaces among them) or a vertical tab. */
const EDGE_BLANK = String.raw`^[\s\pZ\x0B]|[\s\pZ\x0B]$`;
/** The catalog's columns, as its Parquet has them and Redshift's temporary table. */
export const CATALOG_COLUMNS = ['series_id', 'episode_id', 'duration_seconds'] as const;

/** A catalog that cannot be used: a configuration error (exit 2, as a location that cannot serve), its message naming what to fix. */
export class EpisodeCatalogError extends LocationError {}

/** Where the catalog is read from: a local file, or an S3 object; fetched to a local file. */
export interface EpisodeCatalogSource {
  url: string;
  /** Copies the catalog to `dest`; throws EpisodeCatalogError when it is missing, unreadable or larger than MAX_CATALOG_BYTES. */
  fetch(dest: string): Promise<void>;
}

export interface EpisodeCatalog {
  url: string;
  /** The validated catalog as Parquet (CATALOG_COLUMNS), local. */
  file: string;
  episodes: number;
  /** SHA-256 of the CSV as read, hex: which catalog a day was rolled up with (its manifest says). */
  sha256: string;
}

/**
 * Fetches and validates the catalog into `dir` (as it was read, `episode-catalog.csv`, and as checked,
 * `episode-catalog.parquet`). Throws EpisodeCatalogError naming the first bad row (or the missing column).
 */
export async function loadEpisodeCatalog(engine: DuckDBConnection, source: EpisodeCatalogSource, dir: string): Promise<EpisodeCatalog> {
  const csv = join(dir, 'episode-catalog.csv');
  const parquet = join(dir, 'episode-catalog.parquet');
  await source.fetch(csv);
  const bad = (what: string): EpisodeCatalogError => new EpisodeCatalogError(`PINGROLL_EPISODE_CATALOG=${source.url}: ${what}; fix the file (a CSV with the header series_id,episode_id,duration_seconds, one row per episode), or unset PINGROLL_EPISODE_CATALOG`);
  // Every field as text, the header's names kept: the checks below say what is wrong, in its words.
  const read = `read_csv(${sqlString(csv)}, header = true, all_varchar = true, delim = ',', quote = '"', escape = '"', strict_mode = true, sample_size = -1, normalize_names = false, skip = 0)`;
  // DuckDB's own failures (memory, disk) are this machine's, not the file's: exit 1.
  const unreadable = (err: unknown): Error => (/^(Out of Memory|IO) Error/.test((err as Error).message) ? (err as Error) : bad(`not a readable CSV (${firstLine(err)})`));
  let names: string[];
  let header: string[];
  try {
    names = (await queryRows<{ column_name: string }>(engine, `DESCRIBE SELECT * FROM ${read}`)).map((c) => c.column_name);
    // The header line as written (DuckDB renames a repeated name in `names`).
    const [headerRow] = await queryRows<Record<string, string | null>>(engine, `SELECT * FROM ${read.replace('header = true', 'header = false')} LIMIT 1`);
    header = Object.values(headerRow ?? {}).map((v) => (v ?? '').trim().toLowerCase());
  } catch (err) {
    throw unreadable(err);
  }
  const column = (name: string): string => {
    const found = names.filter((n) => n.trim().toLowerCase() === name);
    if (found.length === 0) throw bad(`its header has no column ${name} (it has ${names.slice(0, 8).map((n) => `'${n.slice(0, 40)}'`).join(', ')})`);
    const times = header.filter((h) => h === name).length;
    if (times > 1) throw bad(`its header names ${name} ${times} times`);
    return `"${found[0]!.replace(/"/g, '""')}"`;
  };
  const [s, e, d] = CATALOG_COLUMNS.map(column) as [string, string, string];
  try {
    await engine.run(`CREATE OR REPLACE TEMP TABLE episode_catalog_raw AS SELECT ${s} AS s, ${e} AS e, trim(${d}) AS d FROM ${read}`);
  } catch (err) {
    throw unreadable(err);
  }
  const first = async <T>(sql: string): Promise<T | undefined> => (await queryRows<T>(engine, `${sql} LIMIT 1`))[0];
  const row = (r: { s: string | null; e: string | null }): string => `the row of series_id '${(r.s ?? '').slice(0, 60)}', episode_id '${(r.e ?? '').slice(0, 60)}'`;
  const noId = await first<{ s: string | null; e: string | null }>(`SELECT s, e FROM episode_catalog_raw WHERE s IS NULL OR e IS NULL OR length(s) > ${MAX_ID_LENGTH} OR length(e) > ${MAX_ID_LENGTH}`);
  if (noId) throw bad(`${row(noId)} has an empty id or one over ${MAX_ID_LENGTH} characters`);
  // A blank at either end of an id is refused: it is almost always a space after a comma, and would
  // silently match no ping.
  const blank = await first<{ s: string; e: string }>(`SELECT s, e FROM episode_catalog_raw WHERE regexp_matches(s, '${EDGE_BLANK}') OR regexp_matches(e, '${EDGE_BLANK}')`);
  if (blank) throw bad(`${row(blank)} has an id beginning or ending in a blank (a space after a comma?); ids must be as the tables have them`);
  const noDuration = await first<{ s: string; e: string; d: string | null }>(`SELECT s, e, d FROM episode_catalog_raw
    WHERE d IS NULL OR NOT regexp_full_match(d, '[0-9]{1,9}') OR TRY_CAST(d AS BIGINT) = 0`);
  if (noDuration) throw bad(`${row(noDuration)} has duration_seconds '${(noDuration.d ?? '').slice(0, 20)}', not a whole number of seconds from 1 to ${MAX_DURATION_SECONDS}`);
  const twice = await first<{ s: string; e: string; a: bigint; b: bigint }>(`SELECT s, e, min(d::BIGINT) AS a, max(d::BIGINT) AS b FROM episode_catalog_raw
    GROUP BY s, e HAVING min(d::BIGINT) <> max(d::BIGINT) ORDER BY s, e`);
  if (twice) throw bad(`${row(twice)} is given twice, with ${twice.a} and ${twice.b} seconds`);
  await engine.run(`COPY (SELECT DISTINCT s AS series_id, e AS episode_id, d::BIGINT AS duration_seconds FROM episode_catalog_raw ORDER BY ALL)
    TO ${sqlString(parquet)} (FORMAT parquet, COMPRESSION ${PARQUET_CODEC})`);
  const [{ n }] = (await queryRows<{ n: bigint }>(engine, `SELECT count(*) AS n FROM read_parquet(${sqlString(parquet)})`)) as [{ n: bigint }];
  await engine.run('DROP TABLE episode_catalog_raw');
  if (n === 0n) throw bad('it lists no episode');
  return { url: source.url, file: parquet, episodes: Number(n), sha256: await sha256Of(csv) };
}

function firstLine(err: unknown): string {
  return (err as Error).message.split('\n')[0]!.slice(0, 300);
}

/** The SHA-256 of a file's bytes, hex. */
export async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
