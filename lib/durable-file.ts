/**
 * Making a file's bytes and its name durable before anything depends on them: a rename publishes a
 * file, but only an fsync of the file before and of its directory after makes the publication
 * survive a power cut.
 */
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Flushes a file's bytes to disk. */
export async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Flushes a directory's entries (a rename, a create) to disk. */
export async function syncDirOf(path: string): Promise<void> {
  const handle = await open(dirname(path), 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
