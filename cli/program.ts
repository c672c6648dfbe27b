/**
 * What the linked program (dist/bundle/program.cjs, tools/bundle.mjs) exposes: `start`, which
 * bin/pingroll.js calls, and the directory store's class, the one the program uses, so that the
 * tests' kill points (test/support/kill-at.mjs) wrap its methods without running the command line.
 */
export { start } from './main.js';
export { DirectoryObjectStore } from '../state/object-store/directory-object-store.js';
