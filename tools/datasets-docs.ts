/**
 * `make docs`: the column tables of docs/analysts.md, written from the dataset registry
 * (datasets/registry.ts). Each dataset's table stands between `<!-- columns of NAME -->` and
 * `<!-- end of columns -->`; everything else of the page is written by hand and left as it is.
 * test/datasets/registry.test.ts fails while the page's tables differ from what this writes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { columnTable, DATASETS } from '../datasets/registry.js';
import { projectFile } from '../lib/project-file.js';

export const ANALYSTS = 'docs/analysts.md';

const BLOCK = /<!-- columns of ([a-z_]+) -->\n[\s\S]*?<!-- end of columns -->/g;

/** The page with every dataset's column table as the registry says it; the datasets it has no place for. */
export function withColumnTables(page: string): { page: string; missing: string[] } {
  const seen = new Set<string>();
  const out = page.replace(BLOCK, (_all, name: string) => {
    const d = DATASETS.find((x) => x.name === name);
    if (!d) throw new Error(`${ANALYSTS} has a column table for ${name}, which datasets/registry.ts does not declare`);
    seen.add(name);
    return `<!-- columns of ${name} -->\n${columnTable(d)}\n<!-- end of columns -->`;
  });
  return { page: out, missing: DATASETS.map((d) => d.name).filter((n) => !seen.has(n)) };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const path = projectFile(ANALYSTS);
  const { page, missing } = withColumnTables(readFileSync(path, 'utf8'));
  if (missing.length) throw new Error(`${ANALYSTS} has no column table for ${missing.join(', ')}: add '<!-- columns of NAME -->' and '<!-- end of columns -->' where it goes`);
  writeFileSync(path, page);
  process.stdout.write(`${ANALYSTS}: the column tables of ${DATASETS.length} datasets written from datasets/registry.ts\n`);
}
