#!/usr/bin/env node
// V8's compile cache where Node has it (22.1 and later): the program's modules are compiled once,
// not at every run. The program is dist/bundle/ (`make build`: tsc, then esbuild links it into a few
// files, each command's own modules a chunk loaded when it runs).
import module from 'node:module';

module.enableCompileCache?.();
await import('../dist/bundle/main.js');
