#!/usr/bin/env node
// V8's compile cache where Node has it (22.1 and later): the program's modules are compiled once,
// not at every run.
import module from 'node:module';

module.enableCompileCache?.();
await import('../dist/cli/main.js');
