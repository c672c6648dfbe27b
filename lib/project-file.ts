import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A file of the project by its path from the project root, found from any module, whether it runs
 * from source (tests) or from `dist/` (the CLI).
 */
export function projectFile(relative: string, missingHint = 'run `make build` first'): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(join(dir, 'package.json'))) {
      const path = join(dir, relative);
      if (existsSync(path)) return path;
      break;
    }
    dir = dirname(dir);
  }
  throw new Error(`${relative} is missing; ${missingHint}`);
}
