import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { projectFile } from '../lib/project-file.js';

/** The package version, as manifests record it. */
export function codeVersion(): string {
  try {
    return (JSON.parse(readFileSync(projectFile('package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** The git revision of the code when it runs from a checkout (with `-dirty` for local changes), else null. */
export function gitRevision(): string | null {
  try {
    const cwd = dirname(projectFile('package.json'));
    const rev = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return rev + (dirty ? '-dirty' : '');
  } catch {
    return null;
  }
}

/** pingroll's version as `pingroll --version` says it first: the package version, and the git revision from a checkout. */
export function versionLine(): string {
  const rev = gitRevision();
  return `pingroll ${codeVersion()}${rev ? ` (${rev})` : ''}`;
}
