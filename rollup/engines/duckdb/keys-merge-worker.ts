/**
 * The window check's second thread (keys-merge.ts): a half of a pass at a time, its places found
 * posted back (`{ found }`, or `{ failed }` with the error's message).
 */
import { parentPort } from 'node:worker_threads';
import { mergeHalf, type MergeAsk } from './keys-merge.js';

const port = parentPort!;
port.on('message', (ask: MergeAsk) => {
  try {
    const found = mergeHalf(ask);
    port.postMessage({ found }, [found.buffer as ArrayBuffer]);
  } catch (err) {
    port.postMessage({ failed: (err as Error).message });
  }
});
