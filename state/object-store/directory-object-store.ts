import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync, type Dirent } from 'node:fs';
import { copyFile, link, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { syncDirOf, syncFile } from '../../lib/durable-file.js';
import { bounded, LocationError, makeDirs } from '../../lib/location.js';
import { processAlive } from '../../lib/process.js';
import type { LocalFile, ObjectStore } from './object-store.js';

/**
 * Objects read at once, without the thread pool: the run's state is small files (a listing's cursor,
 * a day's state, a seal folder), and a read through the thread pool costs more than the read (a run
 * with nothing to do waited 3-8 ms for one seal folder's listing behind the pool: issue #42). Larger
 * objects are read through the pool, so that reads at once overlap.
 */
const READ_AT_ONCE_BYTES = 256 << 10;

/** Where writes under way are: `<root>/.tmp/<pid>-<random>`, hidden from listings. */
const TEMPORARIES = '.tmp';
const TEMPORARY = /^(\d+)-[0-9a-f]{12}$/;

/**
 * An object store in a local directory. A write goes to a temporary file in the root's `.tmp/`
 * folder, synced, then renamed over the name (and the directory synced): a reader sees the old bytes
 * or the new ones, and what a rename published survives a power cut. A write killed midway leaves its
 * temporary there, named by its process, to be removed once that process is gone: in one folder, not
 * beside the files, so that finding them never walks the output.
 */
export class DirectoryObjectStore implements ObjectStore {
  /** Files, read in place (`localFile`). */
  readonly local = true;

  constructor(private readonly root: string) {}

  /** The directory may not exist yet (it is made as needed), but nothing else may stand there. */
  async check(): Promise<void> {
    const st = await stat(this.root).catch((err: NodeJS.ErrnoException) => err);
    if (st instanceof Error) {
      if (st.code === 'ENOENT') return;
      throw new LocationError(st.code === 'ENOTDIR' ? `${this.root} cannot be a directory (a file stands on its path); check PINGROLL_OUTPUT`
        : `cannot use ${this.root} (${st.code}); check PINGROLL_OUTPUT and its permissions`);
    }
    if (!st.isDirectory()) throw new LocationError(`PINGROLL_OUTPUT=${this.root} is a file, not a directory; set it to a directory (or s3://bucket/prefix/)`);
  }

  /** Whether the directory can be written: made if missing, a file created and removed in it, within a bounded wait. */
  async checkWritable(): Promise<void> {
    const probe = join(this.root, `.pingroll-probe-${process.pid}`);
    await bounded(async () => {
      await makeDirs(this.root);
      await writeFile(probe, '');
      await rm(probe, { force: true });
    }, (reason) => `cannot write to ${this.root} (${reason}); set PINGROLL_OUTPUT to a directory this user can write (or s3://bucket/prefix/)`);
  }

  /** The directory, ending in `/`: keys join to it as they do to an S3 prefix. */
  get url(): string {
    return this.root.endsWith('/') ? this.root : `${this.root}/`;
  }

  private path(key: string): string {
    return join(this.root, ...key.split('/'));
  }

  async get(key: string): Promise<Buffer | null> {
    const path = this.path(key);
    try {
      if (statSync(path).size <= READ_AT_ONCE_BYTES) return readFileSync(path);
      return await readFile(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async getRange(key: string, start: number, end: number): Promise<Buffer | null> {
    let handle;
    try {
      handle = await open(this.path(key), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    try {
      const out = Buffer.alloc(Math.max(0, end - start));
      let at = 0;
      while (at < out.length) {
        const { bytesRead } = await handle.read(out, at, out.length - at, start + at);
        if (bytesRead === 0) break;
        at += bytesRead;
      }
      return at === out.length ? out : out.subarray(0, at);
    } finally {
      await handle.close();
    }
  }

  async put(key: string, body: Buffer | LocalFile): Promise<void> {
    const path = this.path(key);
    const tmp = await this.written(path, body);
    try {
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    await syncDirOf(path);
  }

  /** As `put`, the file neither synced nor its folder (ObjectStore.putUnsynced): still whole or not at all, by the rename. */
  async putUnsynced(key: string, body: Buffer): Promise<void> {
    const path = this.path(key);
    const tmp = await this.written(path, body, false);
    try {
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  /**
   * An empty file made at its name (nothing to tear: its name is all it holds), not synced: see
   * ObjectStore.putMarker. Its folder is made only when missing: a day's 144 seals share one.
   */
  async putMarker(key: string): Promise<void> {
    const path = this.path(key);
    await writeFile(path, '').catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, '');
    });
  }

  /** Whole or not at all: the bytes are written and synced under a temporary name, then linked to `key`, which fails if it exists. */
  async putIfAbsent(key: string, body: Buffer): Promise<boolean> {
    const path = this.path(key);
    const tmp = await this.written(path, body);
    try {
      await link(tmp, path);
      await syncDirOf(path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** `body` in a temporary file (the same filesystem as `path`, to be renamed there), synced unless `sync` is false. */
  private async written(path: string, body: Buffer | LocalFile, sync = true): Promise<string> {
    await mkdir(dirname(path), { recursive: true });
    await mkdir(join(this.root, TEMPORARIES), { recursive: true });
    const tmp = join(this.root, TEMPORARIES, `${process.pid}-${randomBytes(6).toString('hex')}`);
    try {
      if (Buffer.isBuffer(body)) await writeFile(tmp, body);
      else if (!body.move || !(await renamedWithin(body.file, tmp))) await copyFile(body.file, tmp);
      if (sync) await syncFile(tmp);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    return tmp;
  }

  async list(prefix: string): Promise<string[]> {
    // The prefix's directory part is walked; the rest filters names.
    const slash = prefix.lastIndexOf('/');
    const dir = slash < 0 ? '' : prefix.slice(0, slash);
    const out: string[] = [];
    // Listed at once, without the thread pool, as the objects read at once (READ_AT_ONCE_BYTES).
    const walk = (rel: string): void => {
      let entries: Dirent[];
      try {
        entries = readdirSync(this.path(rel), { withFileTypes: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      for (const e of entries) {
        if (e.name.startsWith('.')) continue;
        const key = rel === '' ? e.name : `${rel}/${e.name}`;
        if (e.isDirectory()) {
          if (key.startsWith(prefix) || prefix.startsWith(key + '/')) walk(key);
        } else if (key.startsWith(prefix)) out.push(key);
      }
    };
    walk(dir);
    return out.sort();
  }

  /** Temporaries of processes that are gone (a live one, this run's lease renewal or a waiting run, may be writing). */
  async removeTemporaries(): Promise<number> {
    let removed = 0;
    for (const name of await readdir(join(this.root, TEMPORARIES)).catch(() => [])) {
      const m = TEMPORARY.exec(name);
      if (!m || processAlive(Number(m[1]))) continue;
      await rm(join(this.root, TEMPORARIES, name), { force: true });
      removed++;
    }
    return removed;
  }

  async move(from: string, to: string): Promise<void> {
    const path = this.path(to);
    await mkdir(dirname(path), { recursive: true });
    await rename(this.path(from), path);
    await syncDirOf(path);
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }

  /**
   * Removes the empty folders under `prefix` (and its own, when empty). A folder is what a key's
   * slashes make, and files moved or deleted leave theirs behind: a run's publication leaves a dozen,
   * and a listing of the publish folder (PUBLISH_PREFIX) walked every one of them at every run (90 ms after a few dozen
   * runs of one day, growing with the history). Only for prefixes no other process writes under.
   */
  async prune(prefix: string): Promise<void> {
    const walk = async (dir: string): Promise<boolean> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => null);
      if (entries === null) return false;
      let empty = true;
      for (const e of entries) if (!(e.isDirectory() && (await walk(join(dir, e.name))))) empty = false;
      return empty && (await rmdir(dir).then(() => true, () => false));
    };
    await walk(this.path(prefix.replace(/\/+$/, '')));
  }

  async download(key: string, file: string): Promise<void> {
    await copyFile(this.path(key), file);
  }

  localFile(key: string): string {
    return this.path(key);
  }

  async size(key: string): Promise<number | null> {
    return stat(this.path(key)).then((s) => s.size, () => null);
  }
}

/**
 * Renames `from` to `to` if they are on one filesystem (a file given up to the store: a day's staged
 * Parquet, 40 MB not copied on the job bench's day); false when they are not, for the caller to copy.
 */
async function renamedWithin(from: string, to: string): Promise<boolean> {
  try {
    await rename(from, to);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EXDEV') return false;
    throw err;
  }
}
