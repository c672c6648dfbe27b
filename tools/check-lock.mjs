#!/usr/bin/env node
// Checks that a package-lock.json names every package npm ci will ask for, before npm ci does.
//
// Why: npm ci refuses a lock in which a locked package's optional dependency has no entry (DuckDB's
// bindings for other platforms, once the registry served them), and a user finds out on a fresh
// clone. This reads the lock alone (no network, no node_modules, no dependencies of its own), so
// `make` runs it before npm ci and the tests run it on every lock the project keeps.
//
// For every entry of `packages`, each name in its `dependencies` and `optionalDependencies` must
// resolve the way Node resolves it: `<entry>/node_modules/<name>`, then each enclosing node_modules
// folder up to the root. Peer dependencies are the consumer's to provide and are not checked.
//
//   node tools/check-lock.mjs [LOCK...]       default: ./package-lock.json; exit 1 when one is incomplete
import { readFileSync } from 'node:fs';

/** The lock entries a dependency `name` of the package at `location` can resolve to, nearest first. */
export function candidates(location, name) {
  const out = [];
  let at = location;
  for (;;) {
    out.push(at === '' ? `node_modules/${name}` : `${at}/node_modules/${name}`);
    if (at === '') return out;
    const cut = at.lastIndexOf('node_modules/');
    at = cut <= 0 ? '' : at.slice(0, cut - 1);
  }
}

/** Each dependency of a locked package that has no lock entry: `{ name, range, of, optional }`. */
export function missingEntries(lock) {
  const packages = lock.packages;
  if (!packages || typeof packages !== 'object') {
    throw new Error('the lock has no "packages" map (lockfileVersion 2 or 3 is needed): run npm install with npm 7 or later and commit the lock');
  }
  const missing = [];
  for (const [location, entry] of Object.entries(packages)) {
    if (entry.link) continue;
    for (const [field, optional] of [['dependencies', false], ['optionalDependencies', true]]) {
      for (const [name, range] of Object.entries(entry[field] ?? {})) {
        if (candidates(location, name).some((key) => key in packages)) continue;
        missing.push({ name, range, of: location === '' ? '(the project)' : location.replace(/^.*node_modules\//, ''), optional });
      }
    }
  }
  return missing;
}

function main(files) {
  let bad = 0;
  for (const file of files) {
    const missing = missingEntries(JSON.parse(readFileSync(file, 'utf8')));
    for (const m of missing) {
      console.error(`${file}: ${m.name}@${m.range} (${m.optional ? 'an optional dependency' : 'a dependency'} of ${m.of}) has no entry`);
    }
    bad += missing.length;
  }
  if (bad > 0) {
    console.error(`${bad} locked package(s) missing: the lock is incomplete; run \`npm install\` in that folder and commit its package-lock.json`);
    process.exit(1);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main(process.argv.length > 2 ? process.argv.slice(2) : ['package-lock.json']);
