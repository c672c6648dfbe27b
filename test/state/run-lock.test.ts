/**
 * The run lock as cron meets it over a year: no lock ever needs deleting by hand, and two runs never
 * both hold one. On a directory and on S3 (moto, which honours conditional writes).
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { S3ObjectStore } from '../../state/object-store/s3-object-store.js';
import { LOCK_PREFIX, SHARD_LOCKS } from '../../datasets/layout.js';
import { acquireLock, acquireShardLock, LockHeldError, lockKey, LockLostError, type Holder } from '../../state/run-lock.js';
import { processStart } from '../../lib/process.js';
import { rm, tempDir } from '../support/job-fixture.js';
import { startMoto, type Moto } from '../support/moto.js';

let moto: Moto;
const dir = tempDir();
beforeAll(async () => { moto = await startMoto(['locks']); }, 60_000);
afterAll(async () => {
  await moto?.stop();
  await rm(dir, { recursive: true, force: true });
});

let n = 0;
const stores: Array<[string, () => ObjectStore]> = [
  ['a directory', () => new DirectoryObjectStore(join(dir, `out-${++n}`))],
  ['S3 (moto)', () => new S3ObjectStore(moto.client(), 'locks', `out-${++n}/`)],
];

const holder = (over: Partial<Holder>): Buffer => Buffer.from(JSON.stringify({
  run: 'other', host: hostname(), pid: process.pid, pidStart: processStart(process.pid), since: 'then', command: 'rollup 2026-11-01',
  expiresAt: Date.now() + 600_000, ...over,
}));

describe.each(stores)('the run lock on %s', (_name, makeStore) => {
  it('is taken over when its file is empty or unreadable (a run killed while writing it)', async () => {
    const store = makeStore();
    await store.putIfAbsent(lockKey(1), Buffer.alloc(0));
    const lock = await acquireLock(store, 'mine', 'test');
    expect(lock.key).toBe(lockKey(2));
    await lock.release();
  });

  it("is taken over when its pid is alive but another process's (a reused pid)", async () => {
    const store = makeStore();
    await store.putIfAbsent(lockKey(1), holder({ pidStart: 'not-this-process' }));
    const takeovers: string[] = [];
    const lock = await acquireLock(store, 'mine', 'test', { onTakeover: (_h, reason) => takeovers.push(reason) });
    expect(lock.key).toBe(lockKey(2));
    expect(takeovers).toEqual([expect.stringMatching(/pid \d+ is another process now/)]);
    await lock.release();
  });

  it('holds against a live holder, and says who holds it and when a stopped one would be taken over', async () => {
    const store = makeStore();
    await store.putIfAbsent(lockKey(1), holder({ host: 'another-host', pid: 4242 }));
    await expect(acquireLock(store, 'mine', 'test')).rejects.toThrow(LockHeldError);
    await expect(acquireLock(store, 'mine', 'test')).rejects.toThrow(/locked by run other \(rollup 2026-11-01, pid 4242 on another-host .*\); wait for it .*take over after/);
  });

  it('takes over a holder on another host once its lease has expired, with no hand repair', async () => {
    const store = makeStore();
    await store.putIfAbsent(lockKey(1), holder({ host: 'another-host', pid: 4242, expiresAt: Date.now() - 60_000 }));
    const takeovers: string[] = [];
    const lock = await acquireLock(store, 'mine', 'test', { onTakeover: (_h, reason) => takeovers.push(reason) });
    expect(takeovers).toEqual([expect.stringMatching(/lease expired/)]);
    await lock.release();
    // Released: the next run takes it at once.
    await (await acquireLock(store, 'next', 'test')).release();
  });

  it('is taken over by exactly one of many runs racing for a stale lock', async () => {
    const store = makeStore();
    await store.putIfAbsent(lockKey(1), holder({ host: 'another-host', pid: 4242, expiresAt: Date.now() - 60_000 }));
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => acquireLock(store, `racer-${i}`, 'test')));
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected').every((r) => (r as PromiseRejectedResult).reason instanceof LockHeldError)).toBe(true);
    const keys = await store.list(LOCK_PREFIX);
    expect(keys).toEqual([lockKey(2)]);
    await (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof acquireLock>>>).value.release();
  });

  it('stops a holder that stalled past its lease and was taken over, before it commits anything', async () => {
    const store = makeStore();
    const stalled = await acquireLock(store, 'stalled', 'test', { leaseMs: 1, renewMs: 3_600_000 });
    // Another host sees the expired lease (its clock 31 s ahead of the skew margin) and takes over.
    const body = JSON.parse((await store.get(lockKey(1)))!.toString()) as Holder;
    await store.put(lockKey(1), Buffer.from(JSON.stringify({ ...body, host: 'another-host', expiresAt: Date.now() - 60_000 })));
    const next = await acquireLock(store, 'next', 'test');
    await expect(stalled.assertHeld()).rejects.toThrow(LockLostError);
    await expect(stalled.assertHeld()).rejects.toThrow(/lost the lock .* another run took the lock over/);
    // Its release leaves the new holder alone.
    await stalled.release();
    await next.assertHeld();
    await next.release();
  });

  it('renews its lease while the run goes on', async () => {
    const store = makeStore();
    const lock = await acquireLock(store, 'long', 'test', { leaseMs: 2_000, renewMs: 100 });
    const expiresAt = async (): Promise<number> => (JSON.parse((await store.get(lockKey(1)))!.toString()) as Holder).expiresAt;
    const first = await expiresAt();
    // Renewed: the lease in the store moves on (waited for, not slept on).
    await vi.waitFor(async () => expect(await expiresAt()).toBeGreaterThan(first), { timeout: 10_000, interval: 25 });
    await lock.assertHeld();
    await lock.release();
  });
});

describe.each(stores)('the locks of a sharded ingest on %s', (_name, makeStore) => {
  it('let the shards of one ingest hold theirs at once, and keep a run that must be alone waiting until they are done', async () => {
    const store = makeStore();
    const shards = await Promise.all([0, 1, 2].map((i) => acquireShardLock(store, `shard-${i}`, `ingest --shard ${i}/3`, `${i}-of-3`)));
    for (const s of shards) await s.assertHeld();
    await expect(acquireLock(store, 'rollup', 'rollup 2026-11-01')).rejects.toThrow(/is being ingested by shards, among them ingest --shard 0\/3 .*wait for them \(--wait SECONDS\)/);
    // The rollup that gave up let go of the output's lock: the shards go on, and a fourth may start.
    for (const s of shards) await s.assertHeld();
    // Once it holds the output's lock and waits for the shards, it says so (onWait): no sleep stands in for that.
    let inWait!: () => void;
    const holdsAndWaits = new Promise<void>((resolve) => { inWait = resolve; });
    const waiting = acquireLock(store, 'rollup', 'rollup 2026-11-01', { waitSeconds: 30, onWait: () => inWait() });
    await holdsAndWaits;
    // While the rollup holds the output's lock and waits, no new shard starts.
    await expect(acquireShardLock(store, 'late', 'ingest --shard 0/3', '0-of-3')).rejects.toThrow(LockHeldError);
    for (const s of shards) await s.release();
    const rollup = await waiting;
    await expect(acquireShardLock(store, 'late', 'ingest --shard 1/3', '1-of-3')).rejects.toThrow(/is locked by run rollup \(rollup 2026-11-01/);
    await rollup.release();
    const after = await acquireShardLock(store, 'late', 'ingest --shard 1/3', '1-of-3');
    await after.release();
  });

  it('keep two processes of one shard, and shards of another count, from running at once', async () => {
    const store = makeStore();
    const one = await acquireShardLock(store, 'a', 'ingest --shard 1/3', '1-of-3');
    await expect(acquireShardLock(store, 'b', 'ingest --shard 1/3', '1-of-3')).rejects.toThrow(/is locked by run a \(ingest --shard 1\/3/);
    await expect(acquireShardLock(store, 'c', 'ingest --shard 1/4', '1-of-4')).rejects.toThrow(/is locked by run a \(ingest --shard 1\/3/);
    // A shard that is kept waiting writes nothing.
    expect(await store.list(`${SHARD_LOCKS}1-of-4/`)).toEqual([]);
    await one.release();
    const other = await acquireShardLock(store, 'c', 'ingest --shard 1/4', '1-of-4');
    await other.release();
  });

  it('stop a shard that stalled past its lease once a run that must be alone holds the output, before it commits anything', async () => {
    const store = makeStore();
    const shard = await acquireShardLock(store, 'slow', 'ingest --shard 0/2', '0-of-2');
    // A rollup on another host found the shard's lease expired and took the output's lock.
    await store.putIfAbsent(lockKey(1), holder({ run: 'rollup-elsewhere', host: 'another-host', pid: 4242 }));
    await expect(shard.assertHeld()).rejects.toThrow(LockLostError);
    await expect(shard.assertHeld()).rejects.toThrow(/holds the output's lock, this shard having stalled past its lease/);
    expect((await store.list(SHARD_LOCKS)).length).toBe(1);
  });
});
