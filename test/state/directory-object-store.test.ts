/**
 * A directory store's put of a local file: copied by default; with `move`, renamed when the file is
 * on the store's filesystem, and copied when it is not (a rename across filesystems fails with EXDEV).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { rm, tempDir } from '../support/job-fixture.js';

const dir = tempDir();
/** A folder on another filesystem than the store's, where this machine has one (tmpfs at /dev/shm). */
const elsewhere = existsSync('/dev/shm') && statSync('/dev/shm').dev !== statSync(tmpdir()).dev ? mkdtempSync('/dev/shm/pingroll-test-') : null;
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  if (elsewhere) await rm(elsewhere, { recursive: true, force: true });
});

describe('a directory store putting a local file', () => {
  const store = new DirectoryObjectStore(join(dir, 'out'));

  it('copies it, and leaves it where it was', async () => {
    const file = join(dir, 'kept.bin');
    writeFileSync(file, 'kept');
    await store.put('a/kept.bin', { file });
    expect(readFileSync(store.localFile('a/kept.bin'), 'utf8')).toBe('kept');
    expect(readFileSync(file, 'utf8')).toBe('kept');
  });

  it('with move, takes the file itself: same inode, nothing left behind', async () => {
    const file = join(dir, 'given.bin');
    writeFileSync(file, 'given');
    const inode = statSync(file).ino;
    await store.put('a/given.bin', { file, move: true });
    expect(readFileSync(store.localFile('a/given.bin'), 'utf8')).toBe('given');
    expect(statSync(store.localFile('a/given.bin')).ino).toBe(inode);
    expect(existsSync(file)).toBe(false);
  });

  it.skipIf(elsewhere === null)('with move, copies a file on another filesystem', async () => {
    const file = join(elsewhere!, 'far.bin');
    writeFileSync(file, 'far');
    await store.put('a/far.bin', { file, move: true });
    expect(readFileSync(store.localFile('a/far.bin'), 'utf8')).toBe('far');
  });
});

describe('a directory output over many runs', () => {
  it('leaves no folders of finished publications: what a run lists of _state/publish/ does not grow with the runs before it', async () => {
    const { dirConfig, runDay, writeObjects, tempRoots } = await import('../support/job-fixture.js');
    const { generateSample } = await import('../../tools/sample/access-log-generator.js');
    const { memoryLog } = await import('../../lib/log.js');
    const { readdirSync } = await import('node:fs');
    const r = tempRoots()();
    await writeObjects(join(r, 'logs'), generateSample({ date: '2026-11-01', sessions: 5, seed: 3 }).objects);
    const folders = (): string[] => (readdirSync(join(r, 'out', '_state'), { recursive: true, withFileTypes: true }) as Array<{ name: string; parentPath: string; isDirectory(): boolean }>)
      .filter((e) => e.isDirectory() && join(e.parentPath, e.name).includes('/_state/publish')).map((e) => join(e.parentPath, e.name));
    // Each run publishes the day again (a run with nothing new leaves it as it is): another setting each time.
    for (let i = 0; i < 4; i++) await runDay(dirConfig(r, { PINGROLL_WAREHOUSE: 'none', PINGROLL_PLATFORMS: i % 2 ? 'web' : 'web,ios' }), { day: '2026-11-01', log: memoryLog() });
    // The day's own folder, left by the last publication and pruned by the next run (without pruning:
    // a dozen a run, 49 after these four).
    const left = folders().map((f) => f.slice(f.indexOf('_state/'))).sort();
    expect(left).toEqual(['_state/publish', '_state/publish/dt=2026-11-01']);
  });
});

describe('a directory store read and listed', () => {
  const store = new DirectoryObjectStore(join(dir, 'read'));

  it('gives small and large objects whole (a small one read at once, a large one through the thread pool), null for none', async () => {
    const small = Buffer.from('{"state":1}\n');
    const large = Buffer.alloc((256 << 10) + 1, 7);
    large.write('end', large.length - 3);
    await store.put('_state/small.json', small);
    await store.put('_state/large.bin', large);
    expect(await store.get('_state/small.json')).toEqual(small);
    expect(await store.get('_state/large.bin')).toEqual(large);
    expect(await store.get('_state/none.json')).toBeNull();
    await expect(store.get('_state')).rejects.toMatchObject({ code: 'EISDIR' });
  });

  it('puts unsynced objects whole, replacing the old, leaving no temporary behind', async () => {
    await store.putUnsynced('_state/checks/dt=2026-11-01.json', Buffer.from('{"run":"a"}\n'));
    await store.putUnsynced('_state/checks/dt=2026-11-01.json', Buffer.from('{"run":"b"}\n'));
    expect((await store.get('_state/checks/dt=2026-11-01.json'))!.toString()).toBe('{"run":"b"}\n');
    expect(readdirSync(join(dir, 'read', '.tmp'))).toEqual([]);
  });

  it('lists the keys under a prefix, sorted, through nested folders, leaving out hidden ones and names outside the prefix', async () => {
    for (const key of ['_state/seals/2026-11-02/00-10.3.ab', '_state/seals/2026-11-01/23-50.1.cd', '_state/seals/2026-11-01/00-00.2.ef', '_state/sealsx/other']) await store.putMarker(key);
    writeFileSync(join(dir, 'read', '_state', 'seals', '2026-11-01', '.hidden'), '');
    expect(await store.list('_state/seals/')).toEqual(['_state/seals/2026-11-01/00-00.2.ef', '_state/seals/2026-11-01/23-50.1.cd', '_state/seals/2026-11-02/00-10.3.ab']);
    expect(await store.list('_state/seals/2026-11-01/23')).toEqual(['_state/seals/2026-11-01/23-50.1.cd']);
    expect(await store.list('_state/nothing/')).toEqual([]);
  });
});
