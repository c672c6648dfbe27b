/**
 * Where log objects are parsed: in worker threads, one per core (each an ObjectParser with its own
 * WebAssembly instance and part files), or in the run's own thread. The run's thread keeps the rest:
 * listing, fetching, the counts, staging (the staged writer's own thread: staged-writer-worker.ts) and the commit.
 */
import { Worker } from 'node:worker_threads';
import { projectFile } from '../../lib/project-file.js';
import type { ObjectSource } from '../object-source/object-source.js';
import type { S3SourceSpec } from '../object-source/s3-object-source.js';
import { fetched, ObjectParser, type ObjectParserOptions, type ParsedObject, type ParseTask } from './object-parser.js';

export interface Parsers {
  /**
   * Parses one object, fetching it from the source first when the task says `fetch`; rejects only
   * when parsing itself failed (a bug, or out of memory), not for an unreadable object.
   */
  parse(task: ParseTask): Promise<ParsedObject>;
  /** Tasks to keep in hand so that no parser idles. */
  readonly slots: number;
  /** Hands over every part still being written. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

type PoolOptions = Omit<ObjectParserOptions, 'name'> & {
  /** Where objects to fetch come from. A source a thread can make again (S3, `spec`) is fetched by the threads themselves, unless `fetchHere`. */
  source: ObjectSource;
  /** The run's own thread fetches every object and hands its bytes to a thread (ingest-batch.ts, autoParsing). */
  fetchHere?: boolean;
};

/** `threads` parsing threads, or the run's own thread with 0. */
export function parsers(threads: number, opts: PoolOptions): Parsers {
  return threads > 0 ? new WorkerParsers(threads, opts) : new InlineParsers(opts);
}

/**
 * How often, at least, the run's own thread lets the event loop turn while it parses. Parsing a local
 * file is synchronous and the queued objects follow one another as microtasks, so without this the
 * loop would not turn until the whole batch is parsed; but the staged writer's thread says through it
 * that a part is written, and the next part is handed to it only then. Letting it turn every 5 ms keeps
 * the parts written while parsing goes on (measured when DuckDB wrote them, on the job bench's day:
 * 2.37 s against 2.55 s, medians of 10 interleaved runs; every 10 ms: 2.46 s).
 */
const TURN_MS = 5;

class InlineParsers implements Parsers {
  private readonly parser: ObjectParser;
  readonly slots = 1;
  private turnedAt = performance.now();

  constructor(private readonly opts: PoolOptions) {
    this.parser = new ObjectParser({ ...opts, name: 'rows' });
  }

  async parse(task: ParseTask): Promise<ParsedObject> {
    const ready = await fetched(this.opts.source, task);
    const parsed = 'records' in ready ? ready : this.parser.parse(ready);
    if (performance.now() - this.turnedAt >= TURN_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.turnedAt = performance.now();
    }
    return parsed;
  }

  async flush(): Promise<void> {
    this.parser.flush();
  }

  async close(): Promise<void> {
    this.parser.close();
  }
}

const WORKER = 'dist/bundle/parse-worker.cjs';

interface Waiting { resolve: (value: unknown) => void; reject: (err: Error) => void }
interface Thread { worker: Worker; tasks: Map<number, Waiting>; flushes: Waiting[] }

class WorkerParsers implements Parsers {
  private readonly threads: Thread[] = [];
  private broken: Error | null = null;
  readonly slots: number;
  /** Set when the threads fetch for themselves; otherwise objects are fetched here and their bytes handed over. */
  private readonly spec: S3SourceSpec | undefined;

  constructor(count: number, private readonly opts: PoolOptions) {
    this.slots = count * 2;
    this.spec = opts.fetchHere ? undefined : (opts.source as { spec?: S3SourceSpec }).spec;
    for (let i = 0; i < count; i++) {
      const worker = new Worker(projectFile(WORKER), { workerData: { pingKeys: [...opts.pingKeys], privacy: opts.privacy ?? 'keep', geoipDb: opts.geoipDb ?? null, dir: opts.dir, name: `rows-${i}`, partBytes: opts.partBytes, source: this.spec } });
      const thread: Thread = { worker, tasks: new Map(), flushes: [] };
      worker.on('message', (msg: { part?: string; index?: number; result?: ParsedObject; failed?: string; flushed?: true }) => {
        if (msg.part !== undefined) opts.onPart(msg.part);
        else if (msg.flushed) {
          const w = thread.flushes.shift();
          if (msg.failed !== undefined) w?.reject(new Error(msg.failed));
          else w?.resolve(undefined);
        } else {
          const w = thread.tasks.get(msg.index!);
          thread.tasks.delete(msg.index!);
          if (msg.failed !== undefined) w?.reject(new Error(msg.failed));
          else w?.resolve(msg.result);
        }
      });
      const fail = (err: Error): void => {
        this.broken ??= err;
        for (const w of [...thread.tasks.values(), ...thread.flushes]) w.reject(err);
        thread.tasks.clear();
        thread.flushes.length = 0;
      };
      worker.on('error', fail);
      worker.on('exit', (code) => fail(new Error(`a parsing thread stopped (exit code ${code})`)));
      this.threads.push(thread);
    }
  }

  /** To the thread with the fewest tasks in hand; an object's bytes move to it without a copy. */
  async parse(task: ParseTask): Promise<ParsedObject> {
    if (!this.spec) {
      const ready = await fetched(this.opts.source, task);
      if ('records' in ready) return ready;
      task = ready;
    }
    if (this.broken) throw this.broken;
    const thread = this.threads.reduce((a, b) => (b.tasks.size < a.tasks.size ? b : a));
    return new Promise((resolve, reject) => {
      thread.tasks.set(task.index, { resolve: resolve as (v: unknown) => void, reject });
      thread.worker.postMessage({ task }, task.bytes ? [task.bytes.buffer as ArrayBuffer] : []);
    });
  }

  async flush(): Promise<void> {
    if (this.broken) throw this.broken;
    await Promise.all(this.threads.map((t) => new Promise((resolve, reject) => {
      t.flushes.push({ resolve, reject });
      t.worker.postMessage({ flush: true });
    })));
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }
}
