/**
 * A day's rejects (contract §6, §10): every record of the day that is not a ping, with its reason, from
 * every batch that staged some, and the pings its rollup left out as automated traffic, as one gzip
 * file at `dayRejectsKey(day)` (datasets/layout.ts), published with the day.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ObjectStore } from '../state/object-store/object-store.js';

/**
 * The day's rejects from every batch, then `rolledUp` (the records the rollup left out as automated
 * traffic, rollup/rejects-lines.ts), as one local gzip file (gzip members concatenate), or null when
 * there are none: copied piece by piece, never held (a day of a binary object's rejects is GBs).
 */
export async function dayRejects(store: ObjectStore, staged: readonly string[], dir: string, rolledUp: string | null = null): Promise<{ file: string; bytes: number } | null> {
  if (staged.length === 0 && rolledUp === null) return null;
  const file = join(dir, 'rejects.jsonl.gz'), part = join(dir, 'rejects-part.gz');
  await rm(file, { force: true });
  for (const s of staged) {
    if ((await store.size(s)) === null) throw new Error(`staged rejects ${s} are missing from ${store.url}; the ledger names them`);
    await store.download(s, part);
    await pipeline(createReadStream(part), createWriteStream(file, { flags: 'a' }));
  }
  await rm(part, { force: true });
  if (rolledUp !== null) await pipeline(createReadStream(rolledUp), createWriteStream(file, { flags: 'a' }));
  return { file, bytes: (await stat(file)).size };
}
