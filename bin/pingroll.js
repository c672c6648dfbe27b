#!/usr/bin/env node
// V8's compile cache where Node has it (22.1 and later): the program's modules are compiled once,
// not at every run. DuckDB's native library starts loading on another thread (lib/native-preload.ts).
import module from 'node:module';

module.enableCompileCache?.();
const { preloadDuckDb } = await import('../dist/lib/native-preload.js');
preloadDuckDb(process.argv[2]);
await import('../dist/infra/cli/main.js');
