/** allEnded: bounded, every task ended before it returns or throws, results in order. */
import { describe, expect, it, vi } from 'vitest';
import { allEnded } from '../../lib/all-ended.js';

describe('allEnded', () => {
  it('runs at most atOnce tasks at a time and returns their results in order, whatever order they end in', async () => {
    let running = 0, most = 0;
    // Each task waits at its own gate; the test opens them, the latest started first.
    const gates = new Map<number, () => void>();
    const results = allEnded(Array.from({ length: 20 }, (_, i) => async () => {
      most = Math.max(most, ++running);
      await new Promise<void>((open) => gates.set(i, open));
      running--;
      return i * 2;
    }), 4);
    for (let ended = 0; ended < 20; ended++) {
      await vi.waitFor(() => expect(running).toBe(Math.min(4, 20 - ended)));
      const latest = Math.max(...gates.keys());
      gates.get(latest)!();
      gates.delete(latest);
    }
    expect(await results).toEqual(Array.from({ length: 20 }, (_, i) => i * 2));
    expect(most).toBe(4);
  });

  it('throws the first failure only after every task has ended', async () => {
    let ended = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => { open = resolve; });
    const tasks = Array.from({ length: 10 }, (_, i) => async () => {
      if (i !== 1) await gate;
      ended++;
      if (i === 1) throw new Error('put failed');
      if (i === 7) throw new Error('a later failure');
    });
    let settled = false;
    const all = allEnded(tasks, 3);
    all.catch(() => {}).finally(() => { settled = true; });
    // The second task has failed; the others wait at the gate: nothing is thrown yet.
    await vi.waitFor(() => expect(ended).toBe(1));
    expect(settled).toBe(false);
    open();
    await expect(all).rejects.toThrow('put failed');
    expect(ended).toBe(10);
  });
});
