/**
 * Where log objects are parsed: in worker threads, one per core (each an ObjectParser with its own
 * WebAssembly instance and part files), or in the run's own thread. The run's thread keeps the rest:
 * listing, fetching, the counts, staging with DuckDB (on its own threads) and the commit.
 */
import { Worker } from 'node:worker_threads';
import { projectFile } from '../../lib/project-file.js';
import { ObjectParser, type ObjectParserOptions, type ParsedObject, type ParseTask } from './object-parser.js';

export interface Parsers {
  /** Parses one object; rejects only when parsing itself failed (a bug, or out of memory), not for an unreadable object. */
  parse(task: ParseTask): Promise<ParsedObject>;
  /** Tasks that may wait at each parser so that none idles: how many to keep in hand. */
  readonly slots: number;
  /** Hands over every part still being written. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

type PoolOptions = Omit<ObjectParserOptions, 'name'>;

/** `threads` parsing threads, or the run's own thread with 0. */
export function parsers(threads: number, opts: PoolOptions): Parsers {
  return threads > 0 ? new WorkerParsers(threads, opts) : new InlineParsers(opts);
}

class InlineParsers implements Parsers {
  private readonly parser: ObjectParser;
  readonly slots = 1;

  constructor(opts: PoolOptions) {
    this.parser = new ObjectParser({ ...opts, name: 'rows' });
  }

  async parse(task: ParseTask): Promise<ParsedObject> {
    return this.parser.parse(task);
  }

  async flush(): Promise<void> {
    this.parser.flush();
  }

  async close(): Promise<void> {}
}

const WORKER = 'dist/ingest/batch/parse-worker.js';

interface Waiting { resolve: (value: unknown) => void; reject: (err: Error) => void }

class WorkerParsers implements Parsers {
  private readonly threads: Array<{ worker: Worker; waiting: Waiting[] }> = [];
  private broken: Error | null = null;
  readonly slots: number;

  constructor(count: number, opts: PoolOptions) {
    this.slots = count * 2;
    for (let i = 0; i < count; i++) {
      const worker = new Worker(projectFile(WORKER), { workerData: { pingKeys: [...opts.pingKeys], dir: opts.dir, name: `rows-${i}`, partBytes: opts.partBytes } });
      const thread = { worker, waiting: [] as Waiting[] };
      worker.on('message', (msg: { part?: string; result?: ParsedObject; failed?: string; flushed?: true }) => {
        if (msg.part !== undefined) opts.onPart(msg.part);
        else if (msg.failed !== undefined) thread.waiting.shift()?.reject(new Error(msg.failed));
        else thread.waiting.shift()?.resolve(msg.result);
      });
      const fail = (err: Error): void => {
        this.broken ??= err;
        for (const w of thread.waiting.splice(0)) w.reject(err);
      };
      worker.on('error', fail);
      worker.on('exit', (code) => fail(new Error(`a parsing thread stopped (exit code ${code})`)));
      this.threads.push(thread);
    }
  }

  /** To the thread with the fewest tasks waiting; an object's bytes move to it without a copy. */
  parse(task: ParseTask): Promise<ParsedObject> {
    const thread = this.threads.reduce((a, b) => (b.waiting.length < a.waiting.length ? b : a));
    return this.send(thread, { task }, task.bytes ? [task.bytes.buffer as ArrayBuffer] : []) as Promise<ParsedObject>;
  }

  async flush(): Promise<void> {
    await Promise.all(this.threads.map((t) => this.send(t, { flush: true }, [])));
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }

  private send(thread: { worker: Worker; waiting: Waiting[] }, msg: unknown, transfer: ArrayBuffer[]): Promise<unknown> {
    if (this.broken) return Promise.reject(this.broken);
    return new Promise((resolve, reject) => {
      thread.waiting.push({ resolve, reject });
      thread.worker.postMessage(msg, transfer);
    });
  }
}
