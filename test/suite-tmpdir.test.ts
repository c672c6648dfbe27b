/** The run's temporary folders are its own (test/global-setup.ts). */
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';

describe("the suite's TMPDIR", () => {
  it("is a folder of the run's own in the test workers, which others may pass through (PostgreSQL runs as nobody under root) but not list", () => {
    const own = process.env.TMPDIR ?? '';
    expect(basename(own)).toMatch(/^pingroll-suite-\d+-/);
    expect(statSync(own).mode & 0o777).toBe(0o711);
  });
});
