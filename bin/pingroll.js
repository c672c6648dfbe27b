#!/usr/bin/env node
// The program is one CommonJS file, dist/bundle/program.cjs (`make build`: tsc, then esbuild links it,
// tools/bundle.mjs), required here without Node's ES module loader. V8's compile cache where Node has
// it (22.1 and later): the program is compiled once, not at every run.
import module from 'node:module';

module.enableCompileCache?.();
module.createRequire(import.meta.url)('../dist/bundle/program.cjs').start();
