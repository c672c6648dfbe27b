import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ObjectStore } from './object-store.js';

/** An output store in a local directory. Writes go to a hidden temporary file, then rename over. */
export class DirectoryObjectStore implements ObjectStore {
  constructor(private readonly root: string) {}

  get url(): string {
    return this.root;
  }

  private path(key: string): string {
    return join(this.root, ...key.split('/'));
  }

  async get(key: string): Promise<Buffer | null> {
    return readFile(this.path(key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
  }

  async put(key: string, body: Buffer | { file: string }): Promise<void> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    // The temporary name starts with a dot: globs like dt=*/*.parquet never match it.
    const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
    if (Buffer.isBuffer(body)) await writeFile(tmp, body);
    else await copyFile(body.file, tmp);
    await rename(tmp, path);
  }

  async putIfAbsent(key: string, body: Buffer): Promise<boolean> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(body);
      await handle.close();
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
  }

  async list(prefix: string): Promise<string[]> {
    // The prefix's directory part is walked; the rest filters names.
    const slash = prefix.lastIndexOf('/');
    const dir = slash < 0 ? '' : prefix.slice(0, slash);
    const out: string[] = [];
    const walk = async (rel: string): Promise<void> => {
      const entries = await readdir(this.path(rel), { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return [];
        throw err;
      });
      for (const e of entries) {
        if (e.name.startsWith('.')) continue;
        const key = rel === '' ? e.name : `${rel}/${e.name}`;
        if (e.isDirectory()) {
          if (key.startsWith(prefix) || prefix.startsWith(key + '/')) await walk(key);
        } else if (key.startsWith(prefix)) out.push(key);
      }
    };
    await walk(dir);
    return out.sort();
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
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
