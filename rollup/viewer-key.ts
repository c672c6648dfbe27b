/**
 * Viewer keys (#28's uniques): what the viewer datasets hold instead of a viewer's id, so that no
 * warehouse or Parquet file holds a raw user id. A viewer (contract §5: `user`, or `session:<id>`
 * where the user is absent) is keyed as the key's id and the first 96 bits of SHA-256(secret ||
 * viewer), in hex: the same viewer gets the same key on every day, in DuckDB and in Redshift alike,
 * so distinct keys over any range of days are distinct viewers; without the secret a key cannot be
 * recomputed from a guessed id. The key's id (8 hex of a hash of the secret) starts every key: keys
 * made with two secrets never match, and `pingroll uniques` refuses a range that mixes them.
 *
 * 96 bits: two of a billion viewers share a key with a probability of about 6 in 10^12.
 */
import { createHash } from 'node:crypto';
import { sqlString } from '../lib/duckdb-engine.js';

export interface ViewerKey {
  secret: string;
  /** 8 hex characters: which secret made a key. */
  id: string;
}

/** Characters a secret may hold: they read the same in every SQL dialect's string literal (no backslash, no quote). */
export const VIEWER_SECRET = /^[A-Za-z0-9_+/=.:-]{16,256}$/;

export function viewerKey(secret: string): ViewerKey {
  return { secret, id: createHash('sha256').update(`pingroll viewer key id\n${secret}`).digest('hex').slice(0, 8) };
}

/** Characters of a viewer key: the id, and 24 hex of the hash. */
export const VIEWER_KEY_CHARS = 32;

/** A dialect's SHA-256 of a string expression, as lowercase hex. */
export type Sha256Hex = (expr: string) => string;
export const SHA256_HEX = {
  duckdb: (e: string) => `sha256(${e})`,
  redshift: (e: string) => `SHA2(${e}, 256)`,
  postgres: (e: string) => `encode(sha256(convert_to(${e}, 'UTF8')), 'hex')`,
} satisfies Record<string, Sha256Hex>;

/**
 * SQL: the viewer key of the viewer expression `viewer`, with the key's id and `secret`, an SQL
 * expression of the secret: a literal in DuckDB (this process), a column of a table loaded from S3 in
 * Redshift, so that the secret is in no statement Redshift logs.
 */
export function viewerKeySql(keyId: string, secret: string, viewer: string, sha256Hex: Sha256Hex): string {
  return `${sqlString(keyId)} || SUBSTRING(${sha256Hex(`${secret} || ${viewer}`)}, 1, ${VIEWER_KEY_CHARS - 8})`;
}

/** The same key computed here (tests and the oracle hold the SQL to it). */
export function viewerKeyOf(key: ViewerKey, viewer: string): string {
  return key.id + createHash('sha256').update(key.secret + viewer, 'utf8').digest('hex').slice(0, VIEWER_KEY_CHARS - 8);
}
