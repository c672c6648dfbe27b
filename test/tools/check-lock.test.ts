/**
 * tools/check-lock.mjs, the check that runs before every `npm ci`: each lock the project keeps is
 * complete, and a lock that lacks one platform's optional build is refused with that package named.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script with no declarations (it must run before anything is installed)
import { candidates, missingEntries } from '../../tools/check-lock.mjs';

const ROOT = new URL('../../', import.meta.url).pathname;
const LOCKS = ['package-lock.json', 'deploy/package-lock.json', 'tools/node-lts/package-lock.json'];
const scratch = mkdtempSync(join(tmpdir(), 'pingroll-lock-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function check(...files: string[]) {
  return spawnSync(process.execPath, [join(ROOT, 'tools/check-lock.mjs'), ...files], { cwd: ROOT, encoding: 'utf8' });
}

describe('check-lock', () => {
  it.each(LOCKS)('finds %s complete', (lock) => {
    const r = check(lock);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it("names a platform's optional build the lock lacks, and exits 1", () => {
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
    const bindings = lock.packages['node_modules/@duckdb/node-bindings'];
    expect(Object.keys(bindings.optionalDependencies)).toContain('@duckdb/node-bindings-darwin-arm64');
    delete lock.packages['node_modules/@duckdb/node-bindings-darwin-arm64'];
    const file = join(scratch, 'package-lock.json');
    writeFileSync(file, JSON.stringify(lock));
    const r = check(file);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('@duckdb/node-bindings-darwin-arm64@');
    expect(r.stderr).toContain('an optional dependency of @duckdb/node-bindings');
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(/run `npm install` in that folder and commit its package-lock\.json$/);
  });

  it('resolves a dependency the way Node does: nested first, then each enclosing node_modules', () => {
    expect(candidates('node_modules/a/node_modules/@s/b', 'c')).toEqual([
      'node_modules/a/node_modules/@s/b/node_modules/c',
      'node_modules/a/node_modules/c',
      'node_modules/c',
    ]);
    expect(candidates('', 'c')).toEqual(['node_modules/c']);
    const lock = { packages: {
      '': { dependencies: { a: '1' } },
      'node_modules/a': { dependencies: { b: '1' }, optionalDependencies: { c: '1' } },
      'node_modules/a/node_modules/b': { dependencies: { a: '1' } },
      'node_modules/c': {},
    } };
    expect(missingEntries(lock)).toEqual([]);
    delete (lock.packages as Record<string, unknown>)['node_modules/c'];
    expect(missingEntries(lock)).toEqual([{ name: 'c', range: '1', of: 'a', optional: true }]);
  });
});
