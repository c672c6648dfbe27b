// Links tsc's output into CommonJS files in dist/bundle/ (`make build`, after tsc): program.cjs,
// the command line (cli/program.ts), parse-worker.cjs, the parsing thread, keys-merge-worker.cjs,
// the window check's second thread, staged-writer-worker.cjs, the staged files' writer, and
// duckdb-api.cjs, DuckDB's JavaScript API (LINKED, below). Why one CommonJS file
// (issue #42, a run with nothing to do: docs/benchmarks.md):
// - Node's CommonJS loader reads and compiles a file at once, where its ES module loader resolved,
//   read (through the thread pool) and linked the 40-odd chunks a split ES module bundle needed;
// - each module is still evaluated only when first used: esbuild wraps the modules a command loads
//   with `import()` in functions run on demand, and the packages they import are required there, so a
//   rollup does not load the report's charts or the AWS SDK for a directory of logs.
// Packages stay in node_modules, except the few small pure-JS ones every run loads before it can
// decide anything (INLINED): linked in, Node does not resolve each package and read its package.json,
// nor scan CommonJS source for its exports. A package not named here is never linked into the
// program (the AWS SDK, DuckDB's native bindings, the MMDB reader...): a new dependency stays in
// node_modules, unless LINKED links it into a file of its own.
import { readFile, writeFile } from 'node:fs/promises';
import { build, transform } from 'esbuild';

const NOT_ASCII = /[^\x00-\x7f]/;

const INLINED = new Set(['commander', 'p-queue', 'eventemitter3', 'p-timeout']);

/** The package a bare import names: `@scope/name` or `name`, without a subpath. */
function packageOf(path) {
  const parts = path.split('/');
  return path.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** How every file here is linked: the program's, the threads' and LINKED's. */
const linking = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  // Each `import()` a `require` (Promise.resolve().then(...)): code V8 reads from a cache (bin/load-program.js)
  // cannot import ("A dynamic import callback was not specified"), and every package here has a CommonJS entry.
  supported: { 'dynamic-import': false },
  logLevel: 'warning',
};

/** The program's and the threads': tsc's output, its packages external but INLINED's and LINKED's. */
const common = {
  ...linking,
  // The sources are ES modules: `import.meta.url` (a module's own address, to find the project's
  // files and packages from it) is the linked file's.
  define: { 'import.meta.url': '__pingrollFileUrl' },
  banner: { js: "const __pingrollFileUrl = require('node:url').pathToFileURL(__filename).href;" },
  plugins: [{
    name: 'linked-packages-loaded-with-the-cache',
    setup(b) {
      // The loader bin/pingroll.js itself uses, not a copy linked in.
      b.onResolve({ filter: /^\.\.\/\.\.\/bin\/load-program\.js$/ }, (args) => ({ path: args.path, external: true }));
      b.onLoad({ filter: /[\\/]dist[\\/].*\.js$/ }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        if (!text.includes('createRequire(import.meta.url)(')) return undefined;
        return { loader: 'js', contents: text.replace(/createRequire\(import\.meta\.url\)\('([^']+)'\)/g, (call, name) => (LINKED[name]
          ? `require('../../bin/load-program.js').loadProgram(require('node:path').join(__dirname, ${JSON.stringify(LINKED[name].file)}), { kind: 'linked' })`
          : call)) };
      });
    },
  }, {
    name: 'packages-external-but-inlined',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.path.startsWith('node:') || INLINED.has(packageOf(args.path))) return undefined;
        return { path: args.path, external: true };
      });
    },
  }],
};

/**
 * Packages a command loads only when it gets that far, linked into files of their own (`file`), each
 * loaded at its first use with V8's code cache as the program is (bin/load-program.js): DuckDB's
 * JavaScript API is 181 CommonJS files, which Node resolved, read and compiled one by one on every
 * run that rolls up (about 45 ms of the run's thread on Node 20, between the ingest and the rollup's
 * first statement), and which a run with nothing to do never loads. In the program, where the sources
 * load the package at its first use (`createRequire(import.meta.url)('name')`, which esbuild does not
 * follow), that call loads the linked file instead; its native bindings stay in node_modules.
 */
const LINKED = { '@duckdb/node-api': { file: 'duckdb-api.cjs', external: ['@duckdb/node-bindings'] } };

const outputs = { 'dist/cli/program.js': 'dist/bundle/program.cjs', 'dist/ingest/batch/parse-worker.js': 'dist/bundle/parse-worker.cjs',
  'dist/rollup/engines/duckdb/keys-merge-worker.js': 'dist/bundle/keys-merge-worker.cjs', 'dist/ingest/batch/staged-writer-worker.js': 'dist/bundle/staged-writer-worker.cjs' };
const builds = [
  ...Object.entries(outputs).map(([entry, outfile]) => ({ ...common, entryPoints: [entry], outfile })),
  ...Object.entries(LINKED).map(([name, { file, external }]) => ({ ...linking, entryPoints: [name], outfile: `dist/bundle/${file}`, external })),
];
await Promise.all(builds.map(async (options) => {
  const { outfile } = options;
  await build(options);
  // ASCII throughout, so that bin/load-program.js reads the file as Latin-1 (1.7 ms where decoding it
  // as UTF-8 took 3 of a run with nothing to do) and V8 keeps it one byte a character. esbuild escapes
  // what it can (its `charset`); what it leaves in comments is escaped here, each UTF-16 unit a
  // \uXXXX, which reads as the same text in a comment. Only when the code without its comments, as
  // esbuild escapes it, is ASCII (a tagged template's raw text, which it cannot escape, is never
  // changed): else the file stays as it is, and is read as UTF-8.
  const text = await readFile(outfile, 'utf8');
  if (!NOT_ASCII.test(text)) return;
  const { code } = await transform(text, { loader: 'js', minifyWhitespace: true, legalComments: 'none', charset: 'ascii' });
  if (NOT_ASCII.test(code)) return;
  await writeFile(outfile, text.replace(new RegExp(NOT_ASCII.source, 'g'), (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}));
