/**
 * One run at a time per output: runs share the ingest ledger, so two at once could parse one new
 * object twice. The lock is a lease that nobody ever has to delete by hand.
 *
 * It is kept as generations, `<n>.json` in LOCK_PREFIX: whoever wrote the highest generation holds the
 * lock while its lease lasts. To take the lock, a run writes generation n+1 with a create-if-absent
 * write (a hard link on a filesystem, so the file is never seen empty; `If-None-Match: *` on S3), which
 * exactly one contender wins: taking over a stale holder is as atomic as taking a free lock. The
 * holder renews its lease (rewrites its own generation) every RENEW_MS; a holder that stops, wherever
 * it ran, is taken over once its lease has expired (plus a margin for clocks that disagree). On the
 * same host a dead holder, or a pid now used by another process, is taken over at once. A holder that
 * was taken over (it stalled past its lease) finds generation n+1 at its next renewal or commit
 * (`assertHeld`) and stops before it writes anything that counts.
 */
import { hostname } from 'node:os';
import { LOCK_PREFIX, SHARD_LOCKS } from '../datasets/layout.js';
import { processAlive, processStart } from '../lib/process.js';
import type { ObjectStore } from './object-store/object-store.js';

/** How long a lease lasts without renewal. */
export const LEASE_MS = 120_000;
const RENEW_MS = 20_000;
/** Clocks of different hosts may disagree this much. */
const CLOCK_SKEW_MS = 30_000;

export interface Holder {
  run: string;
  host: string;
  pid: number;
  /** The holder process's start time (Linux: ticks since boot), to tell a reused pid; null where unknown. */
  pidStart: string | null;
  since: string;
  command: string;
  /** Epoch ms: the lease ends here unless renewed. */
  expiresAt: number;
  released?: boolean;
}

export class LockHeldError extends Error {}
export class LockLostError extends Error {}

export interface RunLock {
  /** Where the lock is, for messages. */
  readonly key: string;
  /** Throws LockLostError when another run has taken the lock over (this one stalled past its lease). */
  assertHeld(): Promise<void>;
  release(): Promise<void>;
}

export interface LockOptions {
  /** Wait this long for a live holder before failing. */
  waitSeconds?: number;
  onWait?: (holder: Holder) => void;
  /** A stale holder is being taken over, and why. */
  onTakeover?: (holder: Holder | null, reason: string) => void;
  leaseMs?: number;
  renewMs?: number;
}

export function lockKey(generation: number, prefix = LOCK_PREFIX): string {
  return `${prefix}${String(generation).padStart(12, '0')}.json`;
}

const GENERATION = /(\d{12})\.json$/;

/**
 * The output's run lock, for a run that must be alone: a rollup, a backfill, an ingest that is not
 * sharded. Once it holds the lock it waits for the shards of a sharded ingest that are still running
 * (no new shard starts while it holds it): a day is never rolled up halfway through an ingest.
 */
export async function acquireLock(store: ObjectStore, run: string, command: string, opts: LockOptions = {}): Promise<RunLock> {
  const deadline = Date.now() + (opts.waitSeconds ?? 0) * 1000;
  const lock = await takeLock(store, LOCK_PREFIX, run, command, opts, deadline);
  try {
    let told = false;
    for (;;) {
      const shard = await liveShard(store);
      if (!shard) return lock;
      const [key, holder] = shard;
      if (Date.now() >= deadline) {
        throw new LockHeldError(`${store.url} is being ingested by shards, among them ${holder.command} (run ${holder.run}, pid ${holder.pid} on ${holder.host}; ${store.url}${key}); `
          + `wait for them (--wait SECONDS); a shard that has stopped lets runs go on once its lease has expired (${new Date(holder.expiresAt + CLOCK_SKEW_MS).toISOString()})`);
      }
      if (!told) opts.onWait?.(holder);
      told = true;
      await sleep(1000);
    }
  } catch (err) {
    await lock.release();
    throw err;
  }
}

/**
 * The lock of one shard of a sharded ingest (`shard` is its name, `3-of-8`). Shards of one ingest hold
 * their own locks and run side by side; a shard does not start while a run that must be alone holds
 * the output's lock, nor beside shards of another count (their keys would overlap). Each side writes
 * its own lock before it looks for the other's, so that of two that start at once, one at least sees
 * the other. Its `assertHeld` fails, too, once a run that must be alone holds the output's lock (this
 * shard stalled past its lease and was presumed stopped).
 */
export async function acquireShardLock(store: ObjectStore, run: string, command: string, shard: string, opts: LockOptions = {}): Promise<RunLock> {
  const deadline = Date.now() + (opts.waitSeconds ?? 0) * 1000;
  const countOf = (name: string): string => name.replace(/^\d+-of-/, '');
  // What keeps this shard from running: a run that must be alone, or shards of another count. Only
  // locks of another count are read: with thousands of shards, each reading every fellow's lock
  // would be millions of requests.
  const blocker = async (): Promise<[string, Holder] | null> =>
    (await liveHolder(store, LOCK_PREFIX)) ?? (await liveShard(store, (name) => countOf(name) !== countOf(shard)));
  let told = false;
  for (;;) {
    // Looked for before this shard writes its lock (a shard that waits writes nothing), and again
    // after (of two that start at once, one at least sees the other).
    let found = await blocker();
    if (!found) {
      const lock = await takeLock(store, `${SHARD_LOCKS}${shard}/`, run, command, opts, deadline);
      found = await blocker();
      if (!found) {
        return {
          key: lock.key,
          async assertHeld() {
            await lock.assertHeld();
            const holder = await liveHolder(store, LOCK_PREFIX);
            if (holder) throw new LockLostError(`this shard lost its lock on ${store.url}: ${holder[1].command} (run ${holder[1].run}) holds the output's lock, this shard having stalled past its lease; it stopped before changing anything more. Run it again`);
          },
          release: () => lock.release(),
        };
      }
      await lock.release();
    }
    if (Date.now() >= deadline) throw heldError(store, found[0], found[1]);
    if (!told) opts.onWait?.(found[1]);
    told = true;
    await sleep(1000);
  }
}

/** The holder of the lock at `prefix` and its key, while it holds it. */
async function liveHolder(store: ObjectStore, prefix: string): Promise<[string, Holder] | null> {
  const top = (await store.list(prefix)).filter((k) => GENERATION.test(k) && !k.slice(prefix.length).includes('/')).sort().at(-1);
  return top ? liveAt(store, top) : null;
}

/** The holder a lock generation names, while it holds the lock. */
async function liveAt(store: ObjectStore, key: string): Promise<[string, Holder] | null> {
  const body = await store.get(key);
  const holder = body ? parseHolder(body) : null;
  return holder && staleReason(holder, Date.now()) === null ? [key, holder] : null;
}

/**
 * A shard of a sharded ingest that holds its lock (of those whose name, `3-of-8`, `which` takes), or
 * null: one listing, then the locks read one by one until a live one.
 */
async function liveShard(store: ObjectStore, which: (name: string) => boolean = () => true): Promise<[string, Holder] | null> {
  // Each shard's highest generation is its lock; lower ones are history a new holder is removing.
  const tops = new Map<string, string>();
  for (const key of (await store.list(SHARD_LOCKS)).filter((k) => GENERATION.test(k)).sort()) {
    const prefix = key.slice(0, key.lastIndexOf('/') + 1);
    if (which(prefix.slice(SHARD_LOCKS.length, -1))) tops.set(prefix, key);
  }
  for (const top of tops.values()) {
    const held = await liveAt(store, top);
    if (held) return held;
  }
  return null;
}

/** Takes the generational lock at `prefix` (see the top of this file), waiting for a live holder until `deadline`. */
async function takeLock(store: ObjectStore, prefix: string, run: string, command: string, opts: LockOptions, deadline: number): Promise<RunLock> {
  const leaseMs = opts.leaseMs ?? LEASE_MS;
  // Who this run is does not change while it renews its lease: only when the lease ends.
  const holder = { run, host: hostname(), pid: process.pid, pidStart: processStart(process.pid), since: new Date().toISOString(), command };
  const me = (): Holder => ({ ...holder, expiresAt: Date.now() + leaseMs });
  let told = false;
  for (;;) {
    const generations = (await store.list(prefix)).filter((k) => GENERATION.test(k) && !k.slice(prefix.length).includes('/')).sort();
    const top = generations.at(-1);
    const n = top ? Number(GENERATION.exec(top)![1]) : 0;
    if (top) {
      const body = await store.get(top);
      if (body === null) continue; // cleaned up by a run that just took it: look again
      const holder = parseHolder(body);
      const reason = staleReason(holder, Date.now());
      if (reason === null) {
        if (Date.now() >= deadline) throw heldError(store, top, holder!);
        if (!told) opts.onWait?.(holder!);
        told = true;
        await sleep(1000);
        continue;
      }
      if (!holder?.released) opts.onTakeover?.(holder, reason);
    }
    const key = lockKey(n + 1, prefix);
    if (!(await store.putIfAbsent(key, encode(me())))) continue; // another run took it first
    // Older generations are history now.
    for (const old of generations) await store.delete(old).catch(() => {});
    return holdLease(store, prefix, n + 1, me, opts.renewMs ?? RENEW_MS, leaseMs);
  }
}

function holdLease(store: ObjectStore, prefix: string, generation: number, me: () => Holder, renewMs: number, leaseMs: number): RunLock {
  let lost: string | null = null;
  const key = lockKey(generation, prefix);
  let expiresAt = Date.now() + leaseMs;
  let renewing: Promise<void> = Promise.resolve();
  const taken = async (): Promise<boolean> => (await store.size(lockKey(generation + 1, prefix))) !== null;
  const takenOver = `another run took the lock over (${store.url}${lockKey(generation + 1, prefix)})`;
  const renew = async (): Promise<void> => {
    if (lost) return;
    try {
      if (await taken()) {
        lost = takenOver;
        return;
      }
      const next = me();
      await store.put(key, encode(next));
      expiresAt = next.expiresAt;
    } catch {
      // A failed renewal is tried again; assertHeld fails once the lease has run out.
    }
  };
  const timer = setInterval(() => { renewing = renewing.then(renew); }, renewMs);
  timer.unref();
  return {
    key,
    async assertHeld() {
      await renewing;
      if (!lost && await taken()) lost = takenOver;
      if (!lost && Date.now() > expiresAt) lost = `its lease ran out at ${new Date(expiresAt).toISOString()} (renewals failed)`;
      if (lost) throw new LockLostError(`this run lost the lock on ${store.url}: ${lost}; it stopped before changing anything more. Run again`);
    },
    async release() {
      clearInterval(timer);
      await renewing;
      if (lost || await taken()) return;
      // Released, not deleted: the generation stays, so that the next one is higher still. Not waited
      // onto the disk: a release a power cut takes leaves the lock as a killed run does (its holder
      // gone, taken over at once on this host, at its lease's end elsewhere), and a sync took up to
      // 10 ms of a run with nothing to do (issue #42).
      await store.putUnsynced(key, encode({ ...me(), released: true }));
    },
  };
}

/** Why a holder no longer holds the lock, or null when it does. */
export function staleReason(h: Holder | null, now: number): string | null {
  if (!h) return 'the lock file is empty or unreadable';
  if (h.released) return 'released';
  if (h.host === hostname()) {
    if (!processAlive(h.pid)) return `its process (pid ${h.pid}) is gone`;
    if (h.pidStart && processStart(h.pid) !== h.pidStart) return `pid ${h.pid} is another process now`;
  }
  if (now > h.expiresAt + CLOCK_SKEW_MS) return `its lease expired at ${new Date(h.expiresAt).toISOString()}`;
  return null;
}

function heldError(store: ObjectStore, key: string, h: Holder): LockHeldError {
  const expires = new Date(h.expiresAt + CLOCK_SKEW_MS).toISOString();
  return new LockHeldError(`${store.url} is locked by run ${h.run} (${h.command}, pid ${h.pid} on ${h.host} since ${h.since}; ${store.url}${key}); `
    + `wait for it (--wait SECONDS); if that run has stopped, its lease lets the next run take over after ${expires}`);
}

function parseHolder(body: Buffer): Holder | null {
  try {
    const h = JSON.parse(body.toString('utf8')) as Holder;
    return typeof h.run === 'string' && typeof h.pid === 'number' && typeof h.expiresAt === 'number' ? h : null;
  } catch {
    return null;
  }
}

function encode(h: Holder): Buffer {
  return Buffer.from(JSON.stringify(h));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The lock of a run: a shard's (`shard`, beside its fellow shards) or, with none, the output's alone. */
export function acquireRunLock(store: ObjectStore, run: string, command: string, shard: string | null, opts: LockOptions = {}): Promise<RunLock> {
  return shard === null ? acquireLock(store, run, command, opts) : acquireShardLock(store, run, command, shard, opts);
}
