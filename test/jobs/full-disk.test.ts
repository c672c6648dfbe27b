/**
 * A full disk while log objects are parsed (the parser's own row files cannot be written) stops the
 * run with the one line that says what to do, not the name of the object that was being read; the
 * next run, with room again, makes the day exactly.
 */
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { failureLine } from '../../cli/failure-message.js';
import { memoryLog } from '../../lib/log.js';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { dirConfig, readDay, runDay, tempRoots, writeObjects } from '../support/job-fixture.js';
import { expectedDay } from '../support/oracle.js';

/** While set, a write of a row file's size (the parser's 4 MB buffer, flushed whole) fails as a full disk does. */
const disk = vi.hoisted(() => ({ full: false }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const writeSync = ((...args: Parameters<typeof fs.writeSync>) => {
    const data = args[1];
    if (disk.full && ArrayBuffer.isView(data) && data.byteLength >= 32 << 10) {
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
    }
    return fs.writeSync(...args);
  }) as typeof fs.writeSync;
  return { ...fs, default: { ...fs, writeSync }, writeSync };
});

const DAY = '2026-11-01';
const root = tempRoots();

describe('a full disk while parsing', () => {
  it('fails the run with the full disk\'s one line; the next run makes the day', async () => {
    const r = root();
    const config = { ...dirConfig(r), parseThreads: 0 };
    const sample = generateSample({ date: DAY, sessions: 300, seed: 47, truth: true, recordsPerObject: 2000 });
    await writeObjects(join(r, 'logs'), sample.objects);
    disk.full = true;
    let failure: unknown = null;
    try {
      await runDay(config, { day: DAY, log: memoryLog() });
    } catch (err) {
      failure = err;
    } finally {
      disk.full = false;
    }
    expect(failure).not.toBeNull();
    expect(failureLine(failure)).toBe('the disk is full; free space under TMPDIR and PINGROLL_OUTPUT and run again (nothing of the day was replaced)');
    await runDay(config, { day: DAY, log: memoryLog() });
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(sample.objects.flatMap((o) => o.truth), DAY));
  });
});
