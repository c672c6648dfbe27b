import { constants, createReadStream, lstatSync, readdirSync, realpathSync, type Dirent, type Stats } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { bounded, LocationError } from '../../lib/location.js';
import type { ListPlan, ObjectRef, ObjectSource } from './object-source.js';

/** A folder's path ending in `/`: a name joined to it by hand is a path in it, not normalized as path.join would (see `base`). */
function asFolder(dir: string): string {
  return dir.endsWith('/') ? dir : `${dir}/`;
}

/** Entries passed over that a run names one by one; past this it counts them. */
const MAX_SKIPPED_NAMED = 100;

/**
 * Log objects as files below a directory (what `aws s3 sync` of a log prefix leaves): every regular
 * file, dot-files included (an S3 listing returns keys that start with a dot too). Symbolic links are
 * not followed, to files or to folders: the logs are what is under the directory, a link can lead out
 * of it or into a loop, and a link to a log would count that log twice. Links and entries that are not
 * regular files (FIFOs, sockets, devices) are passed over, each named in `passedOver` with why.
 */
export class DirectoryObjectSource implements ObjectSource {
  /** Listed whole at every run: whatever a file's name, or when it appeared, it is found. */
  readonly listing = 'whole';
  /** Files, read in place. */
  readonly local = true;
  /** Entries the listings passed over, with the reason (the first MAX_SKIPPED_NAMED; `skippedCount` counts them all). */
  private readonly skipped: Array<{ key: string; reason: string }> = [];
  private skippedCount = 0;

  /**
   * The directory, ending in `/`: a key's path is this and the key, joined by hand as `walk` joins
   * them (path.join normalizes each of a day's thousands of paths: 2,001 files stat'ed in 25-28 ms
   * joined so, 11-16 ms joined by hand, a cold process). A listed key is already normal: the names of
   * folders and files read from the directory, joined with `/`.
   */
  private readonly base: string;

  /** @param setting the configuration that names the directory, for messages. */
  constructor(private readonly root: string, private readonly setting = 'PINGROLL_LOGS') {
    this.base = asFolder(root);
  }

  /** Within one bounded wait: a mount that hangs hangs its first `stat`, not only the access check. */
  async check(): Promise<void> {
    await bounded(async () => {
      const st = await stat(this.root).catch((err: NodeJS.ErrnoException) => err);
      if (st instanceof Error) {
        throw new LocationError(st.code === 'ENOENT' || st.code === 'ENOTDIR'
          ? `the directory ${this.root} does not exist; set ${this.setting} to where the access logs are (a directory or s3://bucket/prefix/)`
          : `cannot read ${this.root} (${st.code}); check ${this.setting} and its permissions`);
      }
      if (!st.isDirectory()) throw new LocationError(`${this.root} is not a directory; set ${this.setting} to the directory that holds the access logs`);
      await access(this.root, constants.R_OK | constants.X_OK);
    }, (reason) => `cannot read the directory ${this.root} (${reason}); check ${this.setting} and its permissions`);
  }

  /** The directory, ending in `/`: keys join to it as they do to an S3 prefix. */
  get url(): string {
    return this.base;
  }

  /**
   * Every file, in key order. A directory is listed whole at every run (whatever a file's name, or
   * when it appeared, it is found): a local listing costs microseconds a file (docs/benchmarks.md,
   * *A directory listed whole*).
   */
  async *list(): AsyncIterable<ObjectRef> {
    yield* this.walk(this.root, '');
  }

  /**
   * Every file, as `list`, but named alone (size 0, etag ''): the folder's entries say which are files
   * (their types, from reading the folder), and `describe` stats the ones a run reads. A run that finds
   * nothing new stats no file: a stat a file was a third of that run's own time (2,000 files, Node 20,
   * which makes four dates of every stat). The plan says which days' objects are wanted, not what to list.
   */
  async *listPlanned(_plan: ListPlan): AsyncIterable<ObjectRef> {
    yield* this.walkNames(this.root, '');
  }

  /** The objects a run is to read, with their sizes and etags (a stat each); an entry no longer a regular file is passed over, with why. */
  describe(refs: ObjectRef[]): ObjectRef[] {
    const out: ObjectRef[] = [];
    for (const ref of refs) {
      const st = this.lstat(this.base + ref.key);
      const described = this.refOf(ref.key, st);
      if (described) out.push(described);
      else if (!(st instanceof Error) && st.isDirectory()) this.skip(ref.key, 'a folder where a file was listed: it is listed as a folder at the next run');
    }
    return out;
  }

  passedOver(): { named: Array<{ key: string; reason: string }>; count: number } {
    return { named: [...this.skipped], count: this.skippedCount };
  }

  /**
   * Synchronously: a local stat takes microseconds, and going through the thread pool cost ten times
   * what it saved (3,000 files listed in 15 ms against 120 ms, 64 stats at a time).
   */
  private *walk(dir: string, prefix: string): Iterable<ObjectRef> {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`the log directory ${dir} does not exist; set PINGROLL_LOGS to where the access logs are`);
      throw err;
    }
    names.sort();
    // Joined by hand: path.join normalizes each of a day's thousands of paths (2,000 files: ~2 ms, cold).
    const base = asFolder(dir);
    for (const name of names) {
      const path = base + name;
      const key = prefix + name;
      const st = this.lstat(path);
      if (!(st instanceof Error) && st.isDirectory()) yield* this.walk(path, `${key}/`);
      else {
        const ref = this.refOf(key, st);
        if (ref) yield ref;
      }
    }
  }

  /**
   * As `walk`, each file named alone (size 0, etag ''): the entries' types come with the folder's
   * names (Node stats an entry whose type the file system does not give). What is not a folder or a
   * regular file is passed over here as `walk` passes it over.
   */
  private *walkNames(dir: string, prefix: string): Iterable<ObjectRef> {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`the log directory ${dir} does not exist; set PINGROLL_LOGS to where the access logs are`);
      throw err;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const base = asFolder(dir);
    for (const entry of entries) {
      const key = prefix + entry.name;
      if (entry.isFile()) yield { key, size: 0, etag: '' };
      else if (entry.isDirectory()) yield* this.walkNames(base + entry.name, `${key}/`);
      else {
        // A link or a special file: passed over with why, as `walk` does (its stat says which).
        const ref = this.refOf(key, this.lstat(base + entry.name));
        if (ref) yield ref;
      }
    }
  }

  private lstat(path: string): Stats | NodeJS.ErrnoException {
    try {
      return lstatSync(path);
    } catch (err) {
      return err as NodeJS.ErrnoException;
    }
  }

  /**
   * A file's ref, or null for an entry passed over (named, with why). An entry that cannot be
   * examined is listed all the same: reading it fails, and the run quarantines it (with the reason)
   * instead of stopping or passing over it silently.
   */
  private refOf(key: string, st: Stats | NodeJS.ErrnoException): ObjectRef | null {
    if (st instanceof Error) return { key, size: 0, etag: `unreadable-${st.code ?? 'error'}` };
    if (st.isFile()) return { key, size: st.size, etag: `${st.size}-${Math.floor(st.mtimeMs)}` };
    if (st.isSymbolicLink()) this.skip(key, 'a symbolic link: pingroll reads only regular files under the log directory, and follows no link');
    else if (!st.isDirectory()) this.skip(key, `not a regular file (${st.isFIFO() ? 'a FIFO' : st.isSocket() ? 'a socket' : 'a device'}): pingroll reads only regular files`);
    return null;
  }

  private skip(key: string, reason: string): void {
    if (this.skipped.length < MAX_SKIPPED_NAMED) this.skipped.push({ key, reason });
    this.skippedCount++;
  }

  async open(ref: ObjectRef): Promise<AsyncIterable<Uint8Array>> {
    return createReadStream(this.base + ref.key, { highWaterMark: 1 << 20 });
  }

  localFile(ref: ObjectRef): string {
    return this.base + ref.key;
  }

  private realRoot: string | null = null;

  localRoot(): string {
    return (this.realRoot ??= realpathSync(this.root));
  }
}
