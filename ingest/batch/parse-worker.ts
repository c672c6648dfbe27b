/**
 * A parsing thread (parse-pool.ts): an ObjectParser of its own, fed one task at a time by the run's
 * thread. Messages back, in order: `{ part }` when a part file is complete, then `{ result }` or
 * `{ failed }` for the task; `{ flushed }` after a flush.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ObjectParser, type ParseTask } from './object-parser.js';

const port = parentPort!;
const { pingKeys, dir, name, partBytes } = workerData as { pingKeys: string[]; dir: string; name: string; partBytes: number };
const parser = new ObjectParser({ pingKeys, dir, name, partBytes, onPart: (part) => port.postMessage({ part }) });

port.on('message', (msg: { task?: ParseTask; flush?: true }) => {
  try {
    if (msg.flush) {
      parser.flush();
      port.postMessage({ flushed: true });
    } else {
      port.postMessage({ result: parser.parse(msg.task!) });
    }
  } catch (err) {
    port.postMessage({ failed: (err as Error).message });
  }
});
