/**
 * The part file of staged rows: what is appended is what the file holds, and rows taken back (an
 * object that turned out unreadable) are gone whether they were still buffered or already written.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RowFile } from '../../../ingest/batch/row-file.js';
import { rm, tempDir } from '../../support/job-fixture.js';

const dir = tempDir();
afterAll(() => rm(dir, { recursive: true, force: true }));

const rows = (n: number, fill: number): Buffer => Buffer.alloc(n, fill);

/**
 * The file holds exactly `want`: compared as bytes (a deep equality of megabytes, element by element,
 * takes vitest most of a minute), and where they first differ said when they do.
 */
function expectBytes(path: string, want: Buffer): void {
  const got = readFileSync(path);
  let at = 0;
  while (at < Math.min(got.length, want.length) && got[at] === want[at]) at++;
  expect({ length: got.length, firstDifference: got.equals(want) ? null : at }).toEqual({ length: want.length, firstDifference: null });
}

describe('a row file', () => {
  it('takes back rows still in its buffer', () => {
    const f = new RowFile(join(dir, 'a.csv'));
    f.append(rows(1000, 0x61));
    f.append(rows(500, 0x62));
    f.truncate(1000);
    f.append(rows(10, 0x63));
    f.close();
    expectBytes(f.path, Buffer.concat([rows(1000, 0x61), rows(10, 0x63)]));
  });

  it('takes back rows already written, and writes on from where it cut (no hole)', () => {
    const f = new RowFile(join(dir, 'b.csv'));
    f.append(rows(3 << 20, 0x61));
    f.append(rows(3 << 20, 0x62)); // past the 4 MB buffer: the first piece is in the file
    f.append(rows(100 << 10, 0x63)); // written straight through
    f.truncate((3 << 20) + 7);
    expect(f.size).toBe((3 << 20) + 7);
    f.append(rows(5, 0x64));
    f.close();
    expectBytes(f.path, Buffer.concat([rows(3 << 20, 0x61), rows(7, 0x62), rows(5, 0x64)]));
  });
});
