/** The run's temporary folders are its own (test/global-setup.ts): what a test makes there goes when the run ends. */
import { basename, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './support/job-fixture.js';

describe("the suite's TMPDIR", () => {
  it("is a folder of the run's own, which every temporary folder of a test is made in", () => {
    expect(basename(process.env.TMPDIR ?? '')).toMatch(/^pingroll-suite-\d+-/);
    expect(dirname(tempDir())).toBe(process.env.TMPDIR);
  });
});
