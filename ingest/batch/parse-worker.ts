/**
 * A parsing thread (parse-pool.ts): an ObjectParser of its own, and for S3 logs a client of its own
 * that fetches the objects handed to it (their requests then cost this thread's core, not the run's).
 * Messages back: `{ part }` when a part file is complete (always before the result of the object that
 * filled it), `{ index, result }` or `{ index, failed }` per task, `{ flushed }` after a flush.
 */
import type { Privacy } from '../privacy.js';
import { parentPort, workerData } from 'node:worker_threads';
import { S3ObjectSource, type S3SourceSpec } from '../object-source/s3-object-source.js';
import { fetched, ObjectParser, type ParseTask } from './object-parser.js';

const port = parentPort!;
const { pingKeys, privacy, geoipDb, dir, name, partBytes, source: spec } = workerData as { pingKeys: string[]; privacy: Privacy; geoipDb: string | null; dir: string; name: string; partBytes: number; source?: S3SourceSpec };
const parser = new ObjectParser({ pingKeys, privacy, geoipDb, dir, name, partBytes, onPart: (part) => port.postMessage({ part }) });
const source = spec ? S3ObjectSource.from(spec) : null;

port.on('message', (msg: { task?: ParseTask; flush?: true }) => {
  if (msg.flush) {
    try {
      parser.flush();
      // The batch's last task is done: its rejects file is read by the run's thread from here on.
      parser.close();
      port.postMessage({ flushed: true });
    } catch (err) {
      port.postMessage({ flushed: true, failed: (err as Error).message });
    }
    return;
  }
  void handle(msg.task!);
});

async function handle(task: ParseTask): Promise<void> {
  const ready = await fetched(source!, task);
  try {
    port.postMessage({ index: task.index, result: 'records' in ready ? ready : parser.parse(ready) });
  } catch (err) {
    port.postMessage({ index: task.index, failed: (err as Error).message });
  }
}
