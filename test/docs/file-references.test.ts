/**
 * Comments that name a file of the project name one that exists: a path (`ingest/listing/seals.ts`,
 * `docs/how-it-works.md`) from the project's root, from the commenting file's folder, or as the end of
 * a path in the tree; a bare file name (`ledger.ts`) as some file's name. Paths under the output
 * (`_state/...`), of what a run makes (`dist/`, `.bench/`) or with placeholders are not the project's.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectFile } from '../../lib/project-file.js';

const ROOT = dirname(projectFile('package.json'));
const tracked = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter((f) => f && existsSync(join(ROOT, f)));
const names = new Set(tracked.map((f) => basename(f)));
/** Names that are not the project's files: a package, and files of formats that others write. */
const NOT_OURS = new Set(['chart.js', 'manifest-files.json', 'manifest.json', 'package.json']);
const TOKEN = /(?<![\w@/.-])((?:[\w.-]+\/)*[\w-]+\.(?:ts|js|mjs|md|sql|sh|json|wasm))(?![\w/])/g;

/** The comment part of a line, or null. */
function commentOf(line: string): string | null {
  const t = line.trim();
  if (/^(\/\/|\*|\/\*|--|#)/.test(t)) return t;
  const at = line.indexOf(' // ');
  return at >= 0 ? line.slice(at) : null;
}

/** The files `text` (the file `file`'s) names in its comments that do not exist. */
function missing(file: string, text = readFileSync(join(ROOT, file), 'utf8')): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    const comment = commentOf(line);
    if (comment === null) return;
    for (const [, ref] of comment.matchAll(TOKEN)) {
      if (NOT_OURS.has(ref!) || /^(_|\.bench\/|dist\/|node_modules\/)|YYYY|<|\*/.test(ref!)) continue;
      const found = ref!.includes('/')
        ? existsSync(join(ROOT, ref!)) || existsSync(join(ROOT, dirname(file), ref!)) || tracked.some((f) => f.endsWith(`/${ref}`))
        : names.has(ref!);
      if (!found) out.push(`${file}:${i + 1}: ${ref}`);
    }
  });
  return out;
}

describe('comments that name files', () => {
  const sources = tracked.filter((f) => /\.(ts|mjs|sql|sh)$|(^|\/)(Makefile|Dockerfile)$/.test(f) && !f.startsWith('test/fixtures/'));

  it('name files that exist', () => {
    expect(sources.length).toBeGreaterThan(100);
    expect(sources.flatMap((f) => missing(f))).toEqual([]);
  });

  it('are caught when they do not, as a path or a bare name', () => {
    const text = ['/**', ' * Reads `state/ledger.ts` and `seals.ts` (both there), then `state/no-such-file.ts`.', ' */', 'const x = 1; /' + '/ see gone-file.ts', '-- from docs/how-it-works.md'].join('\n');
    expect(missing('state/example.ts', text)).toEqual(['state/example.ts:2: state/no-such-file.ts', 'state/example.ts:4: gone-file.ts']);
  });
});
