/**
 * Where pingroll keeps what it writes: the Parquet datasets, manifests, rejects, and its own state
 * (the ingest ledger, staged pings, the run lock). A directory or an S3 prefix (contract §7
 * `PINGROLL_OUTPUT`); a cron host keeps nothing of its own.
 *
 * Keys are relative to the store's root and use `/`. A `put` replaces an object whole and atomically:
 * a reader sees the old bytes or the new ones (rename on a filesystem, PutObject on S3).
 */
export interface ObjectStore {
  readonly url: string;
  /** Throws LocationError when the location cannot serve at all (checked before a run changes anything). */
  check(): Promise<void>;
  /** After `check` (which a run calls first): that it can be written, an object put and deleted, within a bounded wait (a run's preflight). */
  checkWritable(): Promise<void>;
  /** The object's bytes, or null when there is none. */
  get(key: string): Promise<Buffer | null>;
  /** Bytes `start` to `end` (exclusive) of the object, fewer at its end; null when there is none. */
  getRange(key: string, start: number, end: number): Promise<Buffer | null>;
  /**
   * Writes `body` (bytes, or a local file's path) under `key`, replacing any object there. With
   * `move`, the file is the store's from then on (a local store may rename it instead of copying it).
   */
  /** `tags`: S3 object tags (what a lifecycle rule can select by); a directory has none. */
  put(key: string, body: Buffer | LocalFile, tags?: Record<string, string>): Promise<void>;
  /**
   * An empty object whose loss costs nothing but time (a seal, ingest/listing/seals.ts), made where it goes
   * without waiting for the disk: a directory creates the file and syncs nothing; S3 puts it as any object.
   */
  putMarker(key: string): Promise<void>;
  /**
   * Replaces the object whole, as `put` does, without waiting for the disk: for an object whose loss
   * to a power cut costs nothing but a fact said again later (a day's last check, state/checks.ts; a
   * lock's release, state/run-lock.ts). A directory writes and renames it and syncs nothing; S3 puts
   * it as any object.
   */
  putUnsynced(key: string, body: Buffer): Promise<void>;
  /** Writes `body` only if nothing is under `key`; false when something was. */
  putIfAbsent(key: string, body: Buffer): Promise<boolean>;
  /** Keys under `prefix`, in order. */
  list(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
  /** Removes the empty folders under `prefix`, where a store has folders (a directory; S3 has none); for prefixes only this run writes under. */
  prune(prefix: string): Promise<void>;
  /** Puts the object at `from` under `to` (replacing it whole, as `put` does) and removes it from `from`. */
  move(from: string, to: string): Promise<void>;
  /** Copies an object to a local file (DuckDB reads local files only: no httpfs here). */
  download(key: string, file: string): Promise<void>;
  /** Whether the objects are files on this machine (`localFile` gives their paths): a directory. */
  readonly local: boolean;
  /** Where a store that is a local directory keeps the object, to be read in place instead of downloaded; null for S3. */
  localFile(key: string): string | null;
  /**
   * Removes what writes killed midway left (a directory's temporary files; S3 writes are whole or
   * nothing, so it has none). Returns how many.
   */
  removeTemporaries(): Promise<number>;
  /** Size in bytes of an object, or null. */
  size(key: string): Promise<number | null>;
}

/** A local file to put: its path, and whether the caller gives it up (see ObjectStore.put). */
/** Deletes every object under `prefix`, then its folders where the store has folders; how many went. */
export async function removeUnder(store: Pick<ObjectStore, 'list' | 'delete' | 'prune'>, prefix: string): Promise<number> {
  const keys = await store.list(prefix);
  for (const key of keys) await store.delete(key);
  await store.prune(prefix);
  return keys.length;
}

export interface LocalFile {
  file: string;
  move?: boolean;
}
