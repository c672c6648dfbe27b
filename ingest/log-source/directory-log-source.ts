import { createReadStream } from 'node:fs';
import { opendir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { LogObjectRef, LogSource } from './log-source.js';

/** Log objects as files below a directory (what `aws s3 sync` of a log prefix leaves). */
export class DirectoryLogSource implements LogSource {
  constructor(private readonly root: string) {}

  get url(): string {
    return this.root;
  }

  async *list(): AsyncIterable<LogObjectRef> {
    yield* this.walk(this.root);
  }

  private async *walk(dir: string): AsyncIterable<LogObjectRef> {
    let entries: string[] = [];
    const handle = await opendir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') throw new Error(`the log directory ${dir} does not exist; set PINGROLL_LOGS to where the access logs are`);
      throw err;
    });
    for await (const e of handle) if (!e.name.startsWith('.')) entries.push(e.name);
    entries = entries.sort();
    for (const name of entries) {
      const path = join(dir, name);
      const st = await stat(path);
      if (st.isDirectory()) yield* this.walk(path);
      else if (st.isFile()) {
        yield { key: relative(this.root, path).split(sep).join('/'), size: st.size, etag: `${st.size}-${Math.floor(st.mtimeMs)}` };
      }
    }
  }

  async open(ref: LogObjectRef): Promise<AsyncIterable<Uint8Array>> {
    return createReadStream(join(this.root, ref.key), { highWaterMark: 1 << 20 });
  }
}
