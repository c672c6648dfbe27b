// Loads the linked program (dist/bundle/program.cjs) with V8's code cache, so that a run does not
// parse and compile it again (issue #42: a run with nothing to do spends most of its time starting).
// - Node 22.1 and later cache it themselves (`module.enableCompileCache`): the program is required.
// - Older Node (20, the machines' own) has no such cache: the program is compiled here as Node's
//   loader would compile it (`Module.wrap`, then run with the CommonJS arguments), with the code V8
//   made for it at an earlier run, and that code is saved when there was none (the way @vercel/ncc's
//   `--v8-cache` loads a bundle). The saved code includes what the run compiled on its way (V8's
//   `createCachedData` after the run), not only the top level: a cache for each kind of run (the
//   command). The program has no `import()` (tools/bundle.mjs makes each a `require`): code V8 reads
//   from a cache cannot import.
// The cache is a file of the user's own cache folder (`$XDG_CACHE_HOME` or `~/.cache`, then
// `pingroll/compile-cache/`), named by the Node version and the SHA-1 of the program's path and
// bytes: V8 checks a cache against the length of the source only, so a program rebuilt to the same
// length must not find the old one; and code read from a cache keeps the file name it was compiled
// under, so another copy of the same program (a second clone, an install beside the old one) must
// not find it either, or its stack traces would name the other copy's file. It is used only from a
// folder that is the user's own and no one else can write (code read from it runs as the program),
// written whole or not at all (a temporary file renamed), and at most KEPT of them stay. Anything
// amiss (no such folder, a read-only disk, V8 refusing the data) loads the program without a cache,
// as `NODE_DISABLE_COMPILE_CACHE=1` asks too.
// CommonJS (bin/package.json), as bin/pingroll.js: Node starts a CommonJS file without its ES module
// loader, ~4 ms of a run with nothing to do.
'use strict';
const Module = require('node:module');
const vm = require('node:vm');
const { isAscii } = require('node:buffer');
const { createHash } = require('node:crypto');
const { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } = require('node:fs');
const { homedir } = require('node:os');
const { dirname, isAbsolute, join } = require('node:path');

/** Caches kept (one per program build, Node version and kind of run); the oldest go first. */
const KEPT = 16;

/**
 * The program's exports.
 * @param {string} file the program's file
 * @param {{ cacheDir?: string | null, nodeCache?: boolean, kind?: string }} [options] where the caches
 *   are (null: none); whether Node caches compiled code itself (the tests load as older Node does on
 *   any Node); the kind of run, a cache of its own: the code V8 saves is what the first run of it
 *   compiled (a rollup's cache holds the rollup's functions, not only those `--version` needed)
 */
function loadProgram(file, { cacheDir = defaultCacheDir(), nodeCache = typeof Module.enableCompileCache === 'function', kind = 'run' } = {}) {
  if (nodeCache || process.env.NODE_DISABLE_COMPILE_CACHE || cacheDir === null || !ownFolder(cacheDir)) {
    if (nodeCache) Module.enableCompileCache();
    return require(file);
  }
  // Loaded already (the tests' kill points require it before the run starts): that one.
  if (require.cache[file]?.loaded) return require.cache[file].exports;
  const bytes = readFileSync(file);
  // The build makes the program ASCII (tools/bundle.mjs): read as Latin-1, it is not decoded.
  const source = isAscii(bytes) ? bytes.latin1Slice(0, bytes.length) : bytes.toString('utf8');
  const cacheFile = join(cacheDir, `${process.version}-${createHash('sha1').update(`${file}\0`).update(bytes).digest('hex')}-${/^[a-z][a-z-]{0,31}$/.test(kind) ? kind : 'other'}.bin`);
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  const script = new vm.Script(Module.wrap(source), { filename: file, cachedData });
  // A module of Node's own, in require's cache as the file's: a later require of the file gets this one.
  const loaded = new Module(file, null);
  loaded.filename = file;
  require.cache[file] = loaded;
  script.runInThisContext().call(loaded.exports, loaded.exports, Module.createRequire(file), loaded, file, dirname(file));
  loaded.loaded = true;
  if (cachedData === undefined || script.cachedDataRejected) process.once('exit', () => save(cacheDir, cacheFile, script));
  return loaded.exports;
}

/** `$XDG_CACHE_HOME/pingroll/compile-cache`, or `~/.cache/...`; null when neither is an absolute path. */
function defaultCacheDir() {
  let base = process.env.XDG_CACHE_HOME || null;
  try {
    base ??= join(homedir(), '.cache');
  } catch {
    // No home (no HOME and no account entry): no cache.
  }
  return base && isAbsolute(base) ? join(base, 'pingroll', 'compile-cache') : null;
}

/** Whether `dir` is (or is now made) a folder of this user's that no one else can write. */
function ownFolder(dir) {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = statSync(dir);
    return st.isDirectory() && (process.getuid === undefined || st.uid === process.getuid()) && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** Writes the code V8 holds for the program now (what the run compiled included), and keeps the newest KEPT. */
function save(dir, cacheFile, script) {
  try {
    const temporary = `${cacheFile}.${process.pid}.tmp`;
    writeFileSync(temporary, script.createCachedData(), { mode: 0o600 });
    renameSync(temporary, cacheFile);
    // Temporaries count too: one a killed run left goes in its turn.
    const files = readdirSync(dir).map((n) => ({ path: join(dir, n), at: statSync(join(dir, n)).mtimeMs }));
    for (const old of files.sort((a, b) => b.at - a.at).slice(KEPT)) unlinkSync(old.path);
  } catch {
    // A cache not written costs the next run its compile time, nothing else.
  }
}

module.exports = { loadProgram };
