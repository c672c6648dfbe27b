/** allEnded: bounded, every task ended before it returns or throws, results in order. */
import { describe, expect, it } from 'vitest';
import { allEnded } from '../../lib/all-ended.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('allEnded', () => {
  it('runs at most atOnce tasks at a time and returns their results in order', async () => {
    let running = 0, most = 0;
    const results = await allEnded(Array.from({ length: 20 }, (_, i) => async () => {
      most = Math.max(most, ++running);
      await sleep(20 - i);
      running--;
      return i * 2;
    }), 4);
    expect(most).toBe(4);
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i * 2));
  });

  it('throws the first failure only after every task has ended', async () => {
    let ended = 0;
    const tasks = Array.from({ length: 10 }, (_, i) => async () => {
      await sleep(i === 1 ? 1 : 15);
      ended++;
      if (i === 1) throw new Error('put failed');
      if (i === 7) throw new Error('a later failure');
    });
    await expect(allEnded(tasks, 3)).rejects.toThrow('put failed');
    expect(ended).toBe(10);
  });
});
