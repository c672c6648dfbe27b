/**
 * `pingroll summarize DIR` over a directory holding an object it cannot read: the rest is summarized,
 * the object counts for nothing, and the last line names it, with why and what to do (exit 4).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { tempRoots, writeObjects } from '../support/job-fixture.js';
import { cli } from '../support/cli.js';

const roots = tempRoots();

describe('pingroll summarize', () => {
  it('names a corrupt gzip with why and what to do, exit 4, and summarizes every other object as if it were not there', async () => {
    const r = roots();
    const logs = join(r, 'logs');
    await writeObjects(logs, generateSample({ date: '2026-11-01', sessions: 30, seed: 21, gzipShare: 0.5 }).objects);
    const env = { PATH: process.env.PATH ?? '' };
    const clean = await cli(env, 'summarize', logs);
    expect(clean.status, clean.stderr).toBe(0);

    // A gzip cut short, as a copy interrupted midway leaves it.
    const corrupt = '2026-11-01-12-00-00-TRUNCATED.gz';
    const whole = gzipSync(Buffer.from(generateSample({ date: '2026-11-01', sessions: 5, seed: 22 }).objects[0]!.text));
    await writeFile(join(logs, corrupt), whole.subarray(0, whole.length >> 1));
    const run = await cli(env, 'summarize', logs);
    expect(run.status, run.stderr).toBe(4);
    expect(run.stderr.trim().split('\n')).toEqual([
      `pingroll: 1 log object could not be read and is not counted above (first: ${join(logs, corrupt)}: unexpected end of file: a corrupt or truncated gzip); `
      + 're-deliver or fix it (a whole copy from the bucket), or move it out of the directory, and run again',
    ]);
    // The same counts as without it; the first line says one more could not be read.
    const [head, ...rest] = run.stdout.split('\n');
    const [cleanHead, ...cleanRest] = clean.stdout.split('\n');
    expect(head).toBe(`${cleanHead} (and 1 that could not be read, not counted)`);
    expect(rest).toEqual(cleanRest);
  });
});
