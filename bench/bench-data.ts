/**
 * Bench inputs, generated once per machine and kept under `.bench/` (they take a while to make and
 * are the same for the same arguments).
 */
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import { generateSample } from '../tools/sample/access-log-generator.js';

export const BENCH_DIR = '.bench';

/**
 * One uncompressed access-log file of at least `minRecords` records of `date`, built from samples of
 * ~100k records each (different seeds, so sessions and request IDs never collide): the generator keeps
 * a whole sample in memory, and GC cost grows with it.
 */
export async function benchLogFile(minRecords: number, date = '2026-11-01'): Promise<{ path: string; records: number }> {
  await mkdir(BENCH_DIR, { recursive: true });
  const path = join(BENCH_DIR, `access-${date}-${minRecords}.log`);
  const countPath = path + '.records';
  if (existsSync(path) && existsSync(countPath)) {
    return { path, records: Number(await readFile(countPath, 'utf8')) };
  }
  const tmp = path + '.tmp';
  const out = createWriteStream(tmp);
  let records = 0;
  for (let shard = 0; records < minRecords; shard++) {
    const sample = generateSample({ date, sessions: 3300, seed: 1000 + shard, gzipShare: 0 });
    for (const o of sample.objects) if (!out.write(o.text)) await once(out, 'drain');
    records += sample.records;
    process.stderr.write(`\rgenerating bench data: ${records} records`);
  }
  out.end();
  await once(out, 'finish');
  await rename(tmp, path);
  await writeFile(countPath, String(records));
  process.stderr.write('\n');
  return { path, records };
}
