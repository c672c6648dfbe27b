/**
 * A log directory as the lister reads it: names and types from reading the folders (no stat a file),
 * and a stat only of the objects a run reads (`describe`), which says what became of each since it was
 * named. `list()` stays whole (each file with its size and etag).
 */
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DirectoryObjectSource } from '../../../ingest/object-source/directory-object-source.js';
import type { ObjectRef } from '../../../ingest/object-source/object-source.js';
import { tempRoots } from '../../support/job-fixture.js';

const root = tempRoots();
const PLAN = { sinceMs: null, days: [], shard: null, untilMs: Date.now() };

async function collect(refs: AsyncIterable<ObjectRef>): Promise<ObjectRef[]> {
  const out: ObjectRef[] = [];
  for await (const r of refs) out.push(r);
  return out;
}

describe('a log directory, named then described', () => {
  it('names its files in key order without their sizes; describes those a run reads; passes over links either way', async () => {
    const dir = root();
    await mkdir(join(dir, 'b'), { recursive: true });
    await writeFile(join(dir, 'a.log'), 'x'.repeat(10));
    await writeFile(join(dir, 'b', 'c.log'), 'y'.repeat(3));
    await writeFile(join(dir, '.dot'), 'z');
    await symlink(join(dir, 'a.log'), join(dir, 'link'));
    const source = new DirectoryObjectSource(dir);
    const named = await collect(source.listPlanned(PLAN));
    expect(named).toEqual([
      { key: '.dot', size: 0, etag: '' }, { key: 'a.log', size: 0, etag: '' }, { key: 'b/c.log', size: 0, etag: '' },
    ]);
    expect(source.passedOver().named).toEqual([{ key: 'link', reason: expect.stringContaining('a symbolic link') }]);
    // Described: the sizes and etags `list()` gives.
    const whole = await collect(new DirectoryObjectSource(dir).list());
    expect(source.describe(named)).toEqual(whole);
    expect(whole.map((r) => r.size)).toEqual([1, 10, 3]);
    expect(whole.every((r) => /^\d+-\d+$/.test(r.etag))).toBe(true);
  });

  it('describes what became of a file after it was named: gone (unreadable, for the run to quarantine), a link (passed over), grown', async () => {
    const dir = root();
    for (const n of ['gone', 'linked', 'grown']) await writeFile(join(dir, n), 'abc');
    const source = new DirectoryObjectSource(dir);
    const named = await collect(source.listPlanned(PLAN));
    await rm(join(dir, 'gone'));
    await rm(join(dir, 'linked'));
    await symlink(join(dir, 'grown'), join(dir, 'linked'));
    await writeFile(join(dir, 'grown'), 'abcdef');
    const described = source.describe(named);
    expect(described).toEqual([
      { key: 'gone', size: 0, etag: 'unreadable-ENOENT' },
      { key: 'grown', size: 6, etag: expect.stringMatching(/^6-\d+$/) },
    ]);
    expect(source.passedOver()).toEqual({ named: [{ key: 'linked', reason: expect.stringContaining('a symbolic link') }], count: 1 });
  });
});
