/**
 * Local work folders in TMPDIR, named after the process that made them (`pingroll-<kind>-<pid>-...`),
 * so that a later run can tell those of dead processes and remove them.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processAlive } from './process.js';

const WORK_DIR = /^pingroll-[a-z]+-(\d+)-/;

export function makeWorkDir(kind: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `pingroll-${kind}-${process.pid}-`));
}

/**
 * Removes the work folders of processes that are gone; returns how many. One it cannot remove (another
 * user's, in a shared TMPDIR) is left, and the run goes on: it is not this run's to clear.
 */
export async function removeDeadWorkDirs(): Promise<number> {
  let removed = 0;
  for (const name of await readdir(tmpdir()).catch(() => [] as string[])) {
    const pid = Number(WORK_DIR.exec(name)?.[1]);
    if (!pid || processAlive(pid)) continue;
    if (await rm(join(tmpdir(), name), { recursive: true, force: true }).then(() => true, () => false)) removed++;
  }
  return removed;
}
