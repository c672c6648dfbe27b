import { hostname } from 'node:os';
import type { ObjectStore } from './object-store/object-store.js';

export const LOCK_KEY = '_state/lock.json';

interface Holder {
  run: string;
  host: string;
  pid: number;
  since: string;
  command: string;
}

export class LockHeldError extends Error {}

/**
 * One run at a time per output: runs share the ingest ledger, so two at once could parse the same
 * new object twice. Taken by a create-if-absent write (an exclusive create on a filesystem, a
 * conditional PUT on S3). A lock left by a dead process on this host is taken over; one held by a
 * live process is waited for up to `waitSeconds`, then the run fails saying who holds it.
 */
export async function acquireLock(store: ObjectStore, run: string, command: string, waitSeconds = 0,
  onWait?: (holder: Holder) => void): Promise<() => Promise<void>> {
  const me: Holder = { run, host: hostname(), pid: process.pid, since: new Date().toISOString(), command };
  const deadline = Date.now() + waitSeconds * 1000;
  let told = false;
  for (;;) {
    if (await store.putIfAbsent(LOCK_KEY, Buffer.from(JSON.stringify(me)))) {
      return async () => {
        const body = await store.get(LOCK_KEY);
        if (body && (JSON.parse(body.toString()) as Holder).run === run) await store.delete(LOCK_KEY);
      };
    }
    const body = await store.get(LOCK_KEY);
    if (!body) continue; // released between our two calls
    let holder: Holder;
    try {
      holder = JSON.parse(body.toString()) as Holder;
    } catch {
      holder = { run: '?', host: '?', pid: 0, since: '?', command: '?' };
    }
    if (holder.host === me.host && holder.pid > 0 && !alive(holder.pid)) {
      await store.delete(LOCK_KEY);
      continue;
    }
    if (Date.now() >= deadline) {
      throw new LockHeldError(`${store.url} is locked by run ${holder.run} (${holder.command}, pid ${holder.pid} on ${holder.host} since ${holder.since}); `
        + `wait for it (--wait SECONDS), or if that process is gone, delete ${store.url}${LOCK_KEY} and run again`);
    }
    if (!told) onWait?.(holder);
    told = true;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
