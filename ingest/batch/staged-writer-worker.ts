/**
 * The staged writer's thread (staged-parquet.ts StagedWriterThread): part files of staged rows to
 * Parquet by day, one ask after another. Messages back: `{ written }`, or `{ failed }` with the
 * error's message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { StagedParquetWriter } from './staged-parquet.js';

const port = parentPort!;
const writer = new StagedParquetWriter((workerData as { codec: string }).codec);
let asks: Promise<void> = Promise.resolve();
port.on('message', (ask: { parts: string[]; base: string }) => {
  asks = asks.then(async () => {
    try {
      port.postMessage({ written: await writer.write(ask.parts, ask.base) });
    } catch (err) {
      port.postMessage({ failed: (err as Error).message });
    }
  });
});
