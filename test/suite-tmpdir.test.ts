/** The run's temporary folders are its own (test/global-setup.ts). */
import { spawnSync } from 'node:child_process';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';

describe("the suite's TMPDIR", () => {
  it("is a folder of the run's own, in the test workers and the processes they start", () => {
    const own = process.env.TMPDIR ?? '';
    expect(basename(own)).toMatch(/^pingroll-suite-\d+-/);
    const child = spawnSync(process.execPath, ['-e', "process.stdout.write(require('node:os').tmpdir())"], { encoding: 'utf8' });
    expect(child.stdout).toBe(own);
  });
});
