#!/usr/bin/env node
// The program is one CommonJS file, dist/bundle/program.cjs (`make build`: tsc, then esbuild links it,
// tools/bundle.mjs), loaded with V8's code cache (load-program.js), one for each command. CommonJS
// (bin/package.json): Node starts it without its ES module loader.
'use strict';
const { join } = require('node:path');
const { loadProgram } = require('./load-program.js');

loadProgram(join(__dirname, '../dist/bundle/program.cjs'), { kind: process.argv[2] }).start();
