/**
 * bin/load-program.js: the program loaded with V8's code cache as Node before 22.1 has none (the
 * tests ask for that on any Node). Each load is a process of its own, as a run is: the cache is
 * written when the process exits.
 */
import { isAscii } from 'node:buffer';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const LOADER = pathToFileURL(join(import.meta.dirname, '../../bin/load-program.js')).href;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A folder with a program whose `main` prints `word`, and a cache folder beside it. */
function setup(): { program: string; cacheDir: string } {
  const root = mkdtempSync(join(tmpdir(), 'pingroll-load-'));
  dirs.push(root);
  const program = join(root, 'program.cjs');
  const cacheDir = join(root, 'cache');
  return { program, cacheDir };
}

function writeProgram(path: string, word: string): void {
  writeFileSync(path, `'use strict';\nexports.main = () => process.stdout.write(${JSON.stringify(word)} + ' ' + __filename + ' ' + typeof require('node:path').join);\n`);
}

/** Loads the program in a process of its own, as older Node does, and runs its `main`. */
function load(program: string, cacheDir: string, env: NodeJS.ProcessEnv = {}, kind = 'rollup'): string {
  const script = `import { loadProgram } from ${JSON.stringify(LOADER)};
loadProgram(${JSON.stringify(program)}, { cacheDir: ${JSON.stringify(cacheDir)}, nodeCache: false, kind: ${JSON.stringify(kind)} }).main();`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '', ...env } });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return r.stdout;
}

const caches = (dir: string): string[] => readdirSync(dir).filter((n) => n.endsWith('.bin')).sort();

describe('loading the program with a code cache', () => {
  it('runs the program with its CommonJS arguments, saves the cache once, and then reads it', () => {
    const { program, cacheDir } = setup();
    writeProgram(program, 'one');
    expect(load(program, cacheDir)).toBe(`one ${program} function`);
    const [saved] = caches(cacheDir);
    expect(saved).toMatch(new RegExp(`^${process.version.replace(/\./g, '\\.')}-[0-9a-f]{40}-rollup\\.bin$`));
    expect(statSync(cacheDir).mode & 0o777).toBe(0o700);
    const before = statSync(join(cacheDir, saved!));
    expect(before.size).toBeGreaterThan(0);
    // Read and accepted by V8: not written again.
    expect(load(program, cacheDir)).toBe(`one ${program} function`);
    expect(caches(cacheDir)).toEqual([saved]);
    const after = statSync(join(cacheDir, saved!));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });

  it("never gives a copy of the same program elsewhere the first copy's cache: code read from a cache names the file it was compiled from", () => {
    const { program, cacheDir } = setup();
    const other = setup().program;
    // Where the program's `main` runs from, as a stack trace names it.
    for (const p of [program, other]) writeFileSync(p, `'use strict';\nexports.main = () => process.stdout.write(new Error().stack.split('\\n')[1]);\n`);
    expect(load(program, cacheDir)).toContain(`${program}:2:`);
    expect(load(other, cacheDir)).toContain(`${other}:2:`);
    expect(caches(cacheDir)).toHaveLength(2);
    // Each read back from its own cache.
    expect(load(program, cacheDir)).toContain(`${program}:2:`);
    expect(load(other, cacheDir)).toContain(`${other}:2:`);
    expect(caches(cacheDir)).toHaveLength(2);
  });

  it('reads a program that is not ASCII as UTF-8', () => {
    const { program, cacheDir } = setup();
    writeProgram(program, 'caf\u00e9 \u00a710 \ud83e\udd84');
    expect(load(program, cacheDir)).toBe(`caf\u00e9 \u00a710 \ud83e\udd84 ${program} function`);
    expect(load(program, cacheDir)).toBe(`caf\u00e9 \u00a710 \ud83e\udd84 ${program} function`);
  });

  it('never runs the old code of a program rebuilt to the same length', () => {
    const { program, cacheDir } = setup();
    writeProgram(program, 'one');
    load(program, cacheDir);
    writeProgram(program, 'two');
    expect(load(program, cacheDir)).toBe(`two ${program} function`);
    expect(caches(cacheDir)).toHaveLength(2);
  });

  it('reads no cache from a folder others can write, and writes none there', () => {
    const { program, cacheDir } = setup();
    writeProgram(program, 'one');
    mkdirSync(cacheDir);
    chmodSync(cacheDir, 0o777);
    expect(load(program, cacheDir)).toBe(`one ${program} function`);
    expect(readdirSync(cacheDir)).toEqual([]);
  });

  it('loads without a cache when NODE_DISABLE_COMPILE_CACHE is set', () => {
    const { program, cacheDir } = setup();
    writeProgram(program, 'one');
    expect(load(program, cacheDir, { NODE_DISABLE_COMPILE_CACHE: '1' })).toBe(`one ${program} function`);
    expect(existsSync(cacheDir)).toBe(false);
  });

  it('keeps a cache for each kind of run, named safely whatever the kind', () => {
    const { program, cacheDir } = setup();
    writeProgram(program, 'one');
    load(program, cacheDir, {}, 'rollup');
    load(program, cacheDir, {}, 'status');
    load(program, cacheDir, {}, '../../escape');
    expect(caches(cacheDir).map((n) => n.replace(/^.*-/, ''))).toEqual(['other.bin', 'rollup.bin', 'status.bin']);
  });

  it('keeps the newest 16 files of the folder, the new cache among them', () => {
    const { program, cacheDir } = setup();
    mkdirSync(cacheDir, { mode: 0o700 });
    const old = Date.now() / 1000 - 86_400;
    for (let i = 0; i < 18; i++) {
      const f = join(cacheDir, `v0-${i}.bin`);
      writeFileSync(f, 'x');
      utimesSync(f, old + i, old + i);
    }
    writeProgram(program, 'one');
    load(program, cacheDir);
    const left = readdirSync(cacheDir).sort();
    expect(left).toHaveLength(16);
    expect(left.filter((n) => n.startsWith(`${process.version}-`))).toHaveLength(1);
    // The oldest three went.
    expect(left).not.toContain('v0-0.bin');
    expect(left).not.toContain('v0-2.bin');
    expect(left).toContain('v0-3.bin');
  });
});

describe('the linked program', () => {
  it('has no import() (code V8 reads from a cache could not run it), and is ASCII (read without decoding)', () => {
    for (const name of ['program.cjs', 'parse-worker.cjs', 'keys-merge-worker.cjs', 'duckdb-api.cjs']) {
      const bytes = readFileSync(join(import.meta.dirname, '../../dist/bundle', name));
      const source = bytes.toString('utf8');
      expect(source.length).toBeGreaterThan(name === 'keys-merge-worker.cjs' ? 2_000 : 10_000);
      expect(source.match(/\bimport\s*\(/g), name).toBeNull();
      expect(isAscii(bytes), name).toBe(true);
    }
  });

  it('loads DuckDB\'s JavaScript API from its linked file, with the code cache, not from node_modules module by module', () => {
    const program = readFileSync(join(import.meta.dirname, '../../dist/bundle/program.cjs'), 'utf8');
    expect(program).not.toMatch(/createRequire\([^)]*\)\(['"]@duckdb\/node-api['"]\)|require\(['"]@duckdb\/node-api['"]\)/);
    expect(program).toMatch(/loadProgram\(require\("node:path"\)\.join\(__dirname, "duckdb-api\.cjs"\)/);
  });
});
