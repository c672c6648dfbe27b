import { createReadStream } from 'node:fs';
import { opendir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { LocationError } from '../../lib/location.js';
import type { ObjectRef, ObjectSource } from './object-source.js';
import { beforeWindow, firstDateFolder, nameStamp, type ListWindow } from './listing-window.js';

/** Entries examined at once while listing. */
const STATS_AT_ONCE = 64;
const ACCOUNT_TREE = /^\d{12}\//;
const DATE_FOLDER = /^\d{12}\/[^/]+\/[^/]+\/(\d{4}(?:\/\d{2}(?:\/\d{2})?)?)$/;

/** Whether `key` is a PartitionedPrefix date folder (`YYYY`, `YYYY/MM` or `YYYY/MM/DD`) wholly before `first` (`YYYY/MM/DD`). */
function dateFolderBefore(key: string, first: string): boolean {
  const m = DATE_FOLDER.exec(key);
  return m !== null && m[1]! < first.slice(0, m[1]!.length);
}

/** Log objects as files below a directory (what `aws s3 sync` of a log prefix leaves). */
export class DirectoryObjectSource implements ObjectSource {
  /** @param setting the configuration that names the directory, for messages. */
  constructor(private readonly root: string, private readonly setting = 'PINGROLL_LOGS') {}

  async check(): Promise<void> {
    const st = await stat(this.root).catch((err: NodeJS.ErrnoException) => err);
    if (st instanceof Error) {
      throw new LocationError(st.code === 'ENOENT' || st.code === 'ENOTDIR'
        ? `the directory ${this.root} does not exist; set ${this.setting} to where the access logs are (a directory or s3://bucket/prefix/)`
        : `cannot read ${this.root} (${st.code}); check ${this.setting} and its permissions`);
    }
    if (!st.isDirectory()) throw new LocationError(`${this.root} is not a directory; set ${this.setting} to the directory that holds the access logs`);
  }

  /** The directory, ending in `/`: keys join to it as they do to an S3 prefix. */
  get url(): string {
    return this.root.endsWith('/') ? this.root : `${this.root}/`;
  }

  /**
   * Every file, in key order; with a window, SimplePrefix names older than it are passed over
   * unexamined (their names are still read: a directory has no StartAfter) and PartitionedPrefix date
   * folders before its first are not entered.
   */
  async *list(window?: ListWindow): AsyncIterable<ObjectRef> {
    yield* this.walk(this.root, window ? { folders: window.folders, stamp: nameStamp(window.sinceMs), firstFolder: firstDateFolder(window) } : null);
  }

  private async *walk(dir: string, skip: { folders: string[]; stamp: string; firstFolder: string } | null): AsyncIterable<ObjectRef> {
    let entries: string[] = [];
    const handle = await opendir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') throw new Error(`the log directory ${dir} does not exist; set PINGROLL_LOGS to where the access logs are`);
      throw err;
    });
    for await (const e of handle) if (!e.name.startsWith('.')) entries.push(e.name);
    entries = entries.sort();
    const keep: Array<{ name: string; path: string; key: string }> = [];
    for (const name of entries) {
      const path = join(dir, name);
      const key = relative(this.root, path).split(sep).join('/');
      // Inside an account folder (PartitionedPrefix), date folders before the window's first are passed
      // over; in a folder known to hold SimplePrefix names, names before its stamp. A folder new to the
      // listing is listed whole, as over S3.
      if (skip && (ACCOUNT_TREE.test(key) ? dateFolderBefore(key, skip.firstFolder)
        : skip.folders.includes(key.slice(0, key.length - name.length)) && beforeWindow(name, skip.stamp))) continue;
      keep.push({ name, path, key });
    }
    // Examined STATS_AT_ONCE at a time: one by one, each stat waits its turn on the thread pool.
    for (let i = 0; i < keep.length; i += STATS_AT_ONCE) {
      const chunk = keep.slice(i, i + STATS_AT_ONCE);
      const stats = await Promise.all(chunk.map(({ path }) => stat(path).catch((err: NodeJS.ErrnoException) => err)));
      for (const [j, { path, key }] of chunk.entries()) {
        const st = stats[j]!;
        // A dangling link or an entry that cannot be examined is listed all the same: reading it fails,
        // and the run quarantines it (with the reason) instead of stopping or passing over it silently.
        if (st instanceof Error) yield { key, size: 0, etag: `unreadable-${st.code ?? 'error'}` };
        else if (st.isDirectory()) yield* this.walk(path, skip);
        else if (st.isFile()) yield { key, size: st.size, etag: `${st.size}-${Math.floor(st.mtimeMs)}` };
      }
    }
  }

  async open(ref: ObjectRef): Promise<AsyncIterable<Uint8Array>> {
    return createReadStream(join(this.root, ref.key), { highWaterMark: 1 << 20 });
  }

  localFile(ref: ObjectRef): string {
    return join(this.root, ref.key);
  }
}
