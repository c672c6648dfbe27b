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
