/**
 * The merge of the window check (window-check.ts), on two threads: the day's sorted keys of a pass
 * cut in two halves, the first merged in the run's thread and the second in a thread of its own
 * against every other day's keys file at once (DuckDB waits for the check, so its cores are free).
 * The day's keys and event times are shared, not copied; each thread opens the files itself.
 */
import { Worker } from 'node:worker_threads';
import { projectFile } from '../../../lib/project-file.js';
import { KeysFile } from './ping-keys.js';

/** Another day's keys file, and where its survivors must lie to make the day's a repeat (window-check.ts). */
export interface MergeFile { path: string; from: number; to: number; after: boolean }

/** A half of a pass: the day's keys and event times (shared), the places from `lo` to before `hi`, the files, and the window. */
export interface MergeAsk { keys: Uint32Array; events: BigInt64Array; lo: number; hi: number; files: readonly MergeFile[]; dayStart: number; dayMs: number; W: number }

/** The places of the day's keys (lo to hi) that a file holds within the window, each once per file holding it. */
export function mergeHalf(ask: MergeAsk): Int32Array {
  const { keys, events, lo, hi, dayStart, dayMs, W } = ask;
  const found: number[] = [];
  const dayLast = dayStart + dayMs - 1;
  for (const file of ask.files) {
    const k = new KeysFile(file.path);
    try {
      const within = (h: number, d: number): boolean => h >= file.from && h < file.to && (file.after ? h - d <= W : d - h <= W);
      // Every key of the file in the side's span and close enough to any of the day's: no event time read.
      const all = k.n === 0 || (k.minEvent >= file.from && k.maxEvent < file.to && (file.after ? k.maxEvent - dayStart <= W : dayLast - k.minEvent <= W));
      k.merge({ keys, n: hi }, (d, j) => {
        if (all || within(k.eventAt(j), Number(events[d]))) found.push(d);
      }, lo, hi);
    } finally {
      k.close();
    }
  }
  return Int32Array.from(found);
}

const WORKER = 'dist/bundle/keys-merge-worker.cjs';

/** The run's thread and one more, a pass at a time. */
export class MergeThreads {
  private worker: Worker | null = null;

  /** The places found in [0, n): the halves' together. `keys` and `events` must be on shared memory. */
  async merge(ask: Omit<MergeAsk, 'lo' | 'hi'>, n: number): Promise<Int32Array[]> {
    const mid = n >>> 1;
    if (mid < 4096) return [mergeHalf({ ...ask, lo: 0, hi: n })];
    const worker = (this.worker ??= new Worker(projectFile(WORKER)));
    const other = new Promise<Int32Array>((resolve, reject) => {
      const done = (msg: { found?: Int32Array; failed?: string }): void => {
        worker.off('error', failed);
        if (msg.failed !== undefined) reject(new Error(msg.failed));
        else resolve(msg.found!);
      };
      const failed = (err: Error): void => {
        worker.off('message', done);
        this.worker = null;
        reject(err);
      };
      worker.once('message', done);
      worker.once('error', failed);
    });
    worker.postMessage({ ...ask, lo: mid, hi: n });
    let here: Int32Array;
    try {
      here = mergeHalf({ ...ask, lo: 0, hi: mid });
    } catch (err) {
      await other.catch(() => undefined);
      throw err;
    }
    return [here, await other];
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
    this.worker = null;
  }
}
