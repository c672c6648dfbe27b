import { mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * Where pingroll reads or writes objects: an S3 prefix or a local directory (`PINGROLL_LOGS`,
 * `PINGROLL_OUTPUT`, `PINGROLL_DDB_EXPORTS`).
 */
export type Location = S3Location | DirectoryLocation;

export interface S3Location {
  kind: 's3';
  bucket: string;
  /** Empty, or ending in `/`. */
  prefix: string;
  url: string;
}

export interface DirectoryLocation {
  kind: 'dir';
  path: string;
  url: string;
}

/** A location that cannot serve: missing, not a directory, a bucket that does not exist. A configuration error. */
export class LocationError extends Error {}

/** How long a location's check may take before it is taken as unable to serve (an odd mount can hang a call). */
export const CHECK_TIMEOUT_MS = 30_000;

/**
 * Runs a location's check, bounded: past `ms` (or on any error that is not already a LocationError)
 * the location cannot serve, for `why`.
 */
export async function bounded(check: () => Promise<void>, why: (reason: string) => string, ms = CHECK_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LocationError(why(`no answer in ${ms / 1000} s`))), ms);
    timer.unref();
  });
  try {
    await Promise.race([check(), late]);
  } catch (err) {
    if (err instanceof LocationError) throw err;
    throw new LocationError(why((err as NodeJS.ErrnoException).code ?? (err as Error).message.split('\n')[0]!));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Makes a directory and any missing parents, one `mkdir` at a time and at most MAX_DEPTH of them:
 * Node's recursive mkdir loops for ever under some paths (below /proc it never stops), where this
 * fails with the first error.
 */
export async function makeDirs(path: string): Promise<void> {
  const missing: string[] = [];
  for (let p = resolve(path); missing.length <= MAX_DEPTH; p = dirname(p)) {
    const st = await stat(p).catch((err: NodeJS.ErrnoException) => err);
    if (!(st instanceof Error)) {
      if (!st.isDirectory()) throw Object.assign(new Error(`${p} is not a directory`), { code: 'ENOTDIR' });
      break;
    }
    if (st.code !== 'ENOENT' || dirname(p) === p) throw st;
    missing.push(p);
  }
  if (missing.length > MAX_DEPTH) throw Object.assign(new Error(`${path}: more than ${MAX_DEPTH} folders to make`), { code: 'ENAMETOOLONG' });
  for (const p of missing.reverse()) {
    await mkdir(p).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  }
}

const MAX_DEPTH = 64;
