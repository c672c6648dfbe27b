/**
 * A viewer key for the embedded default (issue #41): with no PINGROLL_VIEWER_KEY, a DuckDB warehouse
 * and a local output, the first run that publishes makes a random secret and keeps it in the
 * output's state (VIEWER_KEY_FILE, datasets/layout.ts, readable by its owner only); every later run,
 * and `pingroll uniques`, reads it. So the viewer datasets have rows and uniques work out of the box, and the key
 * never changes unless the file is removed. A set PINGROLL_VIEWER_KEY always wins; S3 outputs and
 * Redshift never get one made (a deployment sets its own, from a secret store).
 */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { VIEWER_KEY_FILE } from '../datasets/layout.js';
import { VIEWER_SECRET, viewerKey } from '../rollup/viewer-key.js';
import { ConfigError, type Config } from './config.js';

/** `config` with the output's own viewer key when it has none set: read, or with `make`, made once. */
export function withOutputViewerKey(config: Config, make: boolean): Config {
  if (config.viewerKey || config.warehouse.kind !== 'duckdb' || config.output.kind !== 'dir') return config;
  const file = join(config.output.path, VIEWER_KEY_FILE);
  let secret = read(file);
  if (secret === null && make) {
    try {
      mkdirSync(dirname(file), { recursive: true });
    } catch {
      // An output that cannot hold it (a file on its path): the run's own check of it says so.
      return config;
    }
    // Made beside, then linked into place: two first runs at once end with one key, the first linked.
    const made = `${file}.${process.pid}.tmp`;
    writeFileSync(made, randomBytes(24).toString('base64url'), { mode: 0o600 });
    try {
      linkSync(made, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      rmSync(made, { force: true });
    }
    secret = read(file);
  }
  if (secret === null) return config;
  if (!VIEWER_SECRET.test(secret)) throw new ConfigError(`${file} does not hold a viewer key (16-256 of A-Z a-z 0-9 _+/=.:-): restore it, or set PINGROLL_VIEWER_KEY`);
  return { ...config, viewerKey: viewerKey(secret) };
}

function read(file: string): string | null {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    // None yet; or an output that is no directory, which the run's own check of it reports.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw err;
  }
}
