/**
 * Packages only a bench uses (peers and candidates it measures): installed from npm into a folder of
 * the bench's own under .bench/ on first use, pinned by the caller, never dependencies of pingroll.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BENCH_DIR } from './bench-data.js';

/** A folder of bench-only packages: `.bench/<name>/`, holding `packages` (name to exact version). */
export class BenchPackages {
  readonly folder: string;

  constructor(name: string, private readonly packages: Record<string, string>, private readonly about = '') {
    this.folder = resolve(BENCH_DIR, name);
  }

  /** Installs the packages into the folder unless each is there at its version. */
  async ensure(): Promise<void> {
    const missing = Object.entries(this.packages).filter(([pkg, version]) => {
      const manifest = join(this.folder, 'node_modules', pkg, 'package.json');
      return !existsSync(manifest) || (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version !== version;
    });
    if (!missing.length) return;
    await mkdir(this.folder, { recursive: true });
    await writeFile(join(this.folder, 'package.json'), JSON.stringify({ name: `pingroll-bench-${this.folder.split('/').pop()}`, private: true }) + '\n');
    const specs = Object.entries(this.packages).map(([pkg, version]) => `${pkg}@${version}`);
    process.stderr.write(`bench: installing ${specs.join(' ')} into ${this.folder} (once${this.about ? `, ${this.about}` : ''})\n`);
    const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', ...specs], { cwd: this.folder, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`installing ${specs.join(' ')} into ${this.folder} failed (exit ${r.status}); check the npm registry is reachable, and run again`);
  }

  /** A package of the folder as CommonJS `require` loads it (ensure first). */
  require<T>(specifier: string): T {
    return createRequire(join(this.folder, 'package.json'))(specifier) as T;
  }

  /** A package of the folder as `import` loads the file its `require` conditions name (ensure first). */
  async import<T>(specifier: string): Promise<T> {
    return (await import(pathToFileURL(createRequire(join(this.folder, 'package.json')).resolve(specifier)).href)) as T;
  }
}
