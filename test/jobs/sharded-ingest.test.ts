/**
 * A sharded ingest: N `pingroll ingest --shard I/N` processes at once on one output, then `pingroll
 * rollup --date D --no-ingest`, give exactly what one `pingroll rollup --date D` gives, on a generated
 * day with objects delivered late and the same records delivered twice in objects of different shards.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateSample, objectBody, redeliver, type LogObject } from '../../tools/sample/access-log-generator.js';
import { shardOf } from '../../ingest/batch/shard.js';
import { expectedDay } from '../support/oracle.js';
import { startMoto } from '../support/moto.js';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { S3ObjectStore } from '../../state/object-store/s3-object-store.js';
import { inEventTimeFolder, readDay, readStoreDay, tempRoots, writeObjects } from '../support/job-fixture.js';
import { CLI, killedAt } from '../support/kill-run.js';
import { cli } from '../support/cli.js';

const DAY = '2026-11-01';
const root = tempRoots();

function cliEnv(logs: string, out: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '', PINGROLL_LOGS: logs, PINGROLL_OUTPUT: out, PINGROLL_WAREHOUSE: `duckdb:${out}.duckdb`, ...extra };
}

/**
 * The day's objects: its own, some delivered late (next day's names), some delivered twice under
 * another name; and the day before's, late into this one. With the pairs delivered twice.
 */
function sampleObjects(): { objects: LogObject[]; twice: Array<[LogObject, LogObject]> } {
  const day = generateSample({ date: DAY, sessions: 120, seed: 61, truth: true, recordsPerObject: 80, lateShare: 0.2 });
  const before = generateSample({ date: '2026-10-31', sessions: 40, seed: 62, truth: true, recordsPerObject: 80, lateShare: 0.5 });
  const twice = day.objects.filter((_, i) => i % 5 === 3).map((o) => [o, redeliver(o, o.deliveredMs + 41 * 60_000)] as [LogObject, LogObject]);
  return { objects: [...day.objects, ...before.objects, ...twice.map(([, again]) => again)], twice };
}

describe('sharded ingest', () => {
  const { objects, twice } = sampleObjects();
  // What a run asked for DAY lists: the objects of its delivery days (DAY to DAY + 2), not the day before's.
  const ofDay = objects.filter((o) => o.key.slice(o.key.lastIndexOf('/') + 1) >= DAY);

  it('has objects for every shard of 8, and records delivered twice in objects of different shards', () => {
    expect(new Set(objects.map((o) => shardOf(o.key, 8))).size).toBe(8);
    for (const n of [3, 8]) expect(twice.filter(([a, b]) => shardOf(a.key, n) !== shardOf(b.key, n)).length).toBeGreaterThan(2);
  });

  it.each([1, 3, 8])('%i shards at once, then rollup --no-ingest, give the single process\'s tables exactly; running them again changes nothing', async (n) => {
    const r = root();
    const logs = join(r, 'logs');
    await writeObjects(logs, objects);
    const single = await cli(cliEnv(logs, join(r, 'single')), 'rollup', '--date', DAY);
    expect(single.status, single.stderr).toBe(0);
    const want = await readDay(join(r, 'single'), DAY);
    // The single process is right to begin with.
    expect(want).toEqual(expectedDay(objects.flatMap((o) => o.truth), DAY));
    expect(want.audit).toContainEqual(expect.objectContaining({ source: 's3', outcome: 'duplicate' }));

    const env = cliEnv(logs, join(r, 'sharded'));
    const shards = await Promise.all(Array.from({ length: n }, (_, i) => cli(env, 'ingest', '--shard', `${i}/${n}`, '--date', DAY)));
    for (const s of shards) expect(s.status, s.stderr).toBe(0);
    // Each object was parsed by exactly one shard: its own.
    const parsed = shards.map((s) => Number(/: (\d+) log objects parsed/.exec(s.stdout)![1]));
    expect(ofDay.length).toBeLessThan(objects.length);
    expect(parsed).toEqual(Array.from({ length: n }, (_, i) => ofDay.filter((o) => shardOf(o.key, n) === i).length));
    const rollup = await cli(env, 'rollup', '--date', DAY, '--no-ingest');
    expect(rollup.status, rollup.stderr).toBe(0);
    expect(rollup.stdout).toMatch(/from 0 newly parsed objects/);
    expect(await readDay(join(r, 'sharded'), DAY)).toEqual(want);

    // Again: the shards find nothing new, and the day comes out the same (nothing counted twice).
    const again = await Promise.all(Array.from({ length: n }, (_, i) => cli(env, 'ingest', '--shard', `${i}/${n}`, '--date', DAY)));
    for (const s of again) expect(s.stdout).toMatch(/: 0 log objects parsed, 0 records$/m);
    expect((await cli(env, 'rollup', '--date', DAY, '--no-ingest')).status).toBe(0);
    expect(await readDay(join(r, 'sharded'), DAY)).toEqual(want);
    // Nothing of the shards' runs is left lying around: no intents, no uncompacted commits, no locks held.
    expect(await readdir(join(r, 'sharded', '_state', 'intents')).catch(() => [])).toEqual([]);
    expect(await readdir(join(r, 'sharded', '_state', 'batches')).catch(() => [])).toEqual([]);
    for (const dir of await readdir(join(r, 'sharded', '_state', 'shard-locks'))) {
      for (const f of await readdir(join(r, 'sharded', '_state', 'shard-locks', dir))) {
        expect(JSON.parse(await readFile(join(r, 'sharded', '_state', 'shard-locks', dir, f), 'utf8')).released).toBe(true);
      }
    }
  });

  it('repairs shards killed at any instant: the shards run again, and the day is exact; nothing staged is left without a commit', async () => {
    const r = root();
    const logs = join(r, 'logs');
    await writeObjects(logs, objects);
    const single = await cli(cliEnv(logs, join(r, 'single')), 'rollup', '--date', DAY);
    expect(single.status, single.stderr).toBe(0);
    const env = cliEnv(logs, join(r, 'out'));
    // Three rounds of the three shards at once: in each, shard `round` runs to its end and the two
    // others are killed at a named point of their run (test/support/kill-at.mjs): a shard with objects
    // still to parse after its intent, after its commit, before its staging; one with nothing new left
    // at its start, once it holds its lock, once its listing is done.
    const points: Array<Array<string | null>> = [
      [null, 'store:put:_state/batches/:after', 'store:put:_state/intents/:after'],
      ['event:ingest.start', null, 'event:ingest.staging'],
      ['store:putIfAbsent:_state/shard-locks/:after', 'event:ingest.done', null],
    ];
    let killed = 0;
    for (const round of [0, 1, 2]) {
      const runs = [0, 1, 2].map((i) => {
        const point = points[round]![i]!;
        const child = spawn(process.execPath, [CLI, 'ingest', '--shard', `${i}/3`, '--date', DAY], { env: point ? killedAt(env as Record<string, string>, point) : env, stdio: 'ignore' });
        return new Promise<void>((resolve) => child.once('exit', (_code, signal) => { if (signal === 'SIGKILL') killed++; resolve(); }));
      });
      await Promise.all(runs);
    }
    // Each was killed where it was meant to be: every point was reached.
    expect(killed).toBe(6);
    const again = await Promise.all([0, 1, 2].map((i) => cli(env, 'ingest', '--shard', `${i}/3`, '--date', DAY)));
    for (const a of again) expect(a.status, a.stderr).toBe(0);
    expect((await cli(env, 'rollup', '--date', DAY, '--no-ingest')).status).toBe(0);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(await readDay(join(r, 'single'), DAY));
    // Every staged batch is a committed one (its index names it); no intent is left.
    const committed = new Set<string>();
    for (const d of await readdir(join(r, 'out', '_state', 'days'))) {
      for (const f of await readdir(join(r, 'out', '_state', 'days', d))) committed.add(f.replace(/\.json$/, ''));
    }
    const stagedFiles = (await readdir(join(r, 'out', '_staging'), { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
    expect(stagedFiles.length).toBeGreaterThan(0);
    expect(stagedFiles.map((e) => e.parentPath.slice(join(r, 'out', '_staging').length + 1).split('/')[0]!).filter((b) => !committed.has(b))).toEqual([]);
    expect(await readdir(join(r, 'out', '_state', 'intents')).catch(() => [])).toEqual([]);
  });

  it('a backfill\'s days reach the shards (--date D1,D2,D3), and each day is exact; a day no shard was asked for is refused with exit 2, never published empty (issue #53)', async () => {
    const r = root();
    const logs = join(r, 'logs');
    const days = ['2026-10-01', '2026-10-02', '2026-10-03'];
    const old = days.flatMap((date, i) => generateSample({ date, sessions: 30, seed: 90 + i, truth: true, recordsPerObject: 80, lateShare: 0.3 }).objects);
    await writeObjects(logs, old);
    const env = cliEnv(logs, join(r, 'out'));
    // The shards as the nightly runs them, weeks later: their own clock's yesterday, not October.
    const night = await Promise.all([0, 1].map((i) => cli(env, 'ingest', '--shard', `${i}/2`)));
    for (const s of night) expect(s.status, s.stderr).toBe(0);
    const refused = await cli(env, 'rollup', '--date', days[0]!, '--no-ingest');
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim().split('\n').at(-1)).toMatch(/^pingroll: 2026-10-01 cannot be rolled up from what shards staged \(--no-ingest\): no ingest has listed delivery days 2026-10-01, 2026-10-02, 2026-10-03, .*run pingroll ingest --date 2026-10-01 \(every shard\) first/);
    expect(await readdir(join(r, 'out', 'daily_series_stats')).catch(() => [])).toEqual([]);
    const backfill = await cli(env, 'backfill', '--from', days[0]!, '--to', days[2]!, '--no-ingest');
    expect(backfill.status).toBe(2);
    expect(backfill.stderr).toMatch(/3 days \(2026-10-01 to 2026-10-03\) cannot be rolled up from what shards staged/);
    // --stale over the range rolls up only published days (none here): nothing refused.
    const stale = await cli(env, 'backfill', '--stale', '--from', days[0]!, '--to', days[2]!, '--no-ingest');
    expect(stale.status, stale.stderr).toBe(0);
    // The range given to the shards, as the deployment's backfill entry gives it: then each day is exact.
    const range = await Promise.all([0, 1].map((i) => cli(env, 'ingest', '--shard', `${i}/2`, '--date', days.join(','))));
    for (const s of range) expect(s.status, s.stderr).toBe(0);
    for (const day of days) {
      const rolled = await cli(env, 'rollup', '--date', day, '--no-ingest');
      expect(rolled.status, rolled.stderr).toBe(0);
      expect(await readDay(join(r, 'out'), day)).toEqual(expectedDay(old.flatMap((o) => o.truth), day));
    }
  });

  it('4 shards, then each day rolled up oldest first: pings resent days later with their ids are counted once (contract §4: the ping-id window), as the oracle counts them', async () => {
    const r = root();
    const logs = join(r, 'logs');
    const days = ['2026-10-01', '2026-10-02', '2026-10-03', '2026-10-04'];
    const samples = days.map((date, i) => generateSample({ date, sessions: 40, seed: 560 + i, truth: true, recordsPerObject: 80, lateShare: 0.2, resends: 0.5 }));
    await writeObjects(logs, samples.flatMap((s) => s.objects));
    const truth = samples.flatMap((s) => s.truth);
    const env = cliEnv(logs, join(r, 'out'));
    const shards = await Promise.all([0, 1, 2, 3].map((i) => cli(env, 'ingest', '--shard', `${i}/4`, '--date', days.join(','))));
    for (const s of shards) expect(s.status, s.stderr).toBe(0);
    let repeats = 0;
    for (const day of days) {
      const rolled = await cli(env, 'rollup', '--date', day, '--no-ingest');
      expect(rolled.status, rolled.stderr).toBe(0);
      const want = expectedDay(truth, day, 30);
      repeats += want.audit.filter((a) => a.outcome === 'repeat').reduce((n, a) => n + a.records, 0);
      expect(await readDay(join(r, 'out'), day), day).toEqual(want);
    }
    expect(repeats).toBeGreaterThan(10);
  });

  it('quarantines an unreadable object in its shard\'s own file; the rollup after the shards names it, exits 4 and keeps it in the quarantine', async () => {
    const r = root();
    const logs = join(r, 'logs');
    await writeObjects(logs, objects);
    const bad = objects.find((o) => shardOf(o.key, 2) === 1)!;
    await writeFile(join(logs, bad.key), Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(300, 7)]));
    const env = cliEnv(logs, join(r, 'out'));
    const [zero, one] = await Promise.all([cli(env, 'ingest', '--shard', '0/2', '--date', DAY), cli(env, 'ingest', '--shard', '1/2', '--date', DAY)]);
    expect(zero.status, zero.stderr).toBe(0);
    expect(one.status).toBe(4);
    expect(one.stderr.trim().split('\n').at(-1)).toMatch(new RegExp(`^pingroll: completed, but 1 log objects? could not be read \\(first: ${bad.key}: `));
    const shardFile = JSON.parse(await readFile(join(r, 'out', '_state', 'quarantine-shards', '1-of-2.json'), 'utf8'));
    expect(shardFile.objects.map((o: { key: string }) => o.key)).toEqual([bad.key]);
    const rollup = await cli(env, 'rollup', '--date', DAY, '--no-ingest');
    expect(rollup.status).toBe(4);
    const main = JSON.parse(await readFile(join(r, 'out', '_state', 'quarantine.json'), 'utf8'));
    expect(main.objects.map((o: { key: string }) => o.key)).toEqual([bad.key]);
    expect(await readdir(join(r, 'out', '_state', 'quarantine-shards'))).toEqual([]);
    // Delivered whole after all: its shard takes it in, and the next rollup is exact and clean.
    await writeObjects(logs, [bad]);
    expect((await cli(env, 'ingest', '--shard', '1/2', '--date', DAY)).stdout).toMatch(/^ingest shard 1\/2: 1 log objects parsed/);
    expect((await cli(env, 'rollup', '--date', DAY, '--no-ingest')).status).toBe(0);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(objects.flatMap((o) => o.truth), DAY));
    expect(JSON.parse(await readFile(join(r, 'out', '_state', 'quarantine.json'), 'utf8')).objects).toEqual([]);
  });

  it('runs on S3 too: 3 shards at once against moto, then rollup --no-ingest, give the directory run\'s tables', async () => {
    const moto = await startMoto(['logs', 'out']);
    try {
      const client = moto.client();
      for (const o of objects) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: `logs/${o.key}`, Body: objectBody(o) }));
      const env = { ...cliEnv('s3://logs/logs/', 's3://out/pingroll/'), ...moto.env, PINGROLL_WAREHOUSE: 'none' };
      const shards = await Promise.all([0, 1, 2].map((i) => cli(env, 'ingest', '--shard', `${i}/3`, '--date', DAY)));
      for (const sh of shards) expect(sh.status, sh.stderr).toBe(0);
      expect(shards.map((sh) => Number(/: (\d+) log objects parsed/.exec(sh.stdout)![1])).reduce((a, b) => a + b, 0)).toBe(ofDay.length);
      const rollup = await cli(env, 'rollup', '--date', DAY, '--no-ingest');
      expect(rollup.status, rollup.stderr).toBe(0);
      // The day's files, brought down to be read as the directory run's are.
      const r = root();
      const store = new S3ObjectStore(client, 'out', 'pingroll/');
      expect(await readStoreDay(store, DAY, join(r, 's3'))).toEqual(expectedDay(objects.flatMap((o) => o.truth), DAY));
      // Each shard's own state, on S3.
      expect((await store.list('_state/listing-shards/')).sort()).toEqual(['0-of-3', '1-of-3', '2-of-3'].map((n) => `_state/listing-shards/${n}.json`));
      // Objects delivered since (copies of the day's, named in the last hour): the nightly shards (asked
      // for yesterday, so following from then on) list only their own slices of the window, each parses
      // its own once, and the day is the same (the copies are duplicates).
      const again = objects.slice(0, 9).map((o, i) => redeliver(o, Date.now() - (i * 7 + 1) * 60_000));
      for (const o of again) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: `logs/${o.key}`, Body: objectBody(o) }));
      const second = await Promise.all([0, 1, 2].map((i) => cli(env, 'ingest', '--shard', `${i}/3`, '--list-margin', '60')));
      expect(second.map((sh) => Number(/: (\d+) log objects parsed/.exec(sh.stdout)?.[1] ?? 0))).toEqual([0, 1, 2].map((i) => again.filter((o) => shardOf(o.key, 3) === i).length));
      expect((await cli(env, 'rollup', '--date', DAY, '--no-ingest')).status).toBe(0);
      for (const t of ['daily_episode_stats', 'daily_series_stats']) await store.download(`${t}/dt=${DAY}/part-00000.parquet`, join(r, 's3', `${t}/dt=${DAY}/part-00000.parquet`));
      const after = await readDay(join(r, 's3'), DAY);
      const want = expectedDay(objects.flatMap((o) => o.truth), DAY);
      expect([after.episodes, after.series]).toEqual([want.episodes, want.series]);
      // Two shards now: with no state of their own, they start where all three had listed (not a full
      // listing each, the same 60-minute margin), list only their own slices of that window, and find nothing new.
      const changed = await Promise.all([0, 1].map((i) => cli(env, 'ingest', '--shard', `${i}/2`, '--list-margin', '60')));
      const done = changed.map((sh) => {
        expect(sh.status, sh.stderr).toBe(0);
        expect(sh.stdout).toMatch(/: 0 log objects parsed/);
        return JSON.parse(sh.stderr.split('\n').find((l) => l.includes('"ingest.done"'))!) as { deliveryDaysListedInFull: string[]; listed: number };
      });
      expect(done.map((d) => d.deliveryDaysListedInFull)).toEqual([[], []]);
      expect(done.reduce((n, d) => n + d.listed, 0)).toBe(again.length);
      // The day's delivery days listed in full again by each of three shards (pingroll reconcile): every
      // object is known, parsed: the parsed index, read in ranges from S3, knows them all.
      const third = await Promise.all([0, 1, 2].map((i) => cli(env, 'reconcile', '--shard', `${i}/3`, '--from', DAY, '--to', '2026-11-03')));
      for (const sh of third) expect(sh.stdout, sh.stderr).toMatch(/: \d+ log objects listed, 0 new parsed/);
      // Between them they listed every object of those days (and their windows' few newest).
      expect(third.map((sh) => Number(/: (\d+) log objects listed/.exec(sh.stdout)![1])).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(ofDay.length);
    } finally {
      await moto.stop();
    }
  });

  it('splits an event-time layout on S3 (PartitionedPrefix by EventTime, every name at 00-00-00): 4 shards against moto, each its share within 1.5x of the mean, a stray in a date folder once, then rollup --no-ingest, give one process\'s tables', async () => {
    const days = [DAY, '2026-11-02'];
    const event = days.flatMap((day, i) => generateSample({ date: day, sessions: 100, seed: 91 + i, truth: true, recordsPerObject: 40, lateShare: 0 }).objects.map((o, n) => inEventTimeFolder(o, day, n)));
    // A copy under a name no slice or part reaches, in the day's date folder: the folder's walker lists it (a stray, ingest/listing/slices.ts).
    const copied = event.findIndex((o) => o.key.includes(`/${DAY}-00-00-00-`));
    event[copied] = { ...event[copied]!, key: event[copied]!.key.replace(/[^/]+$/, (name) => `copy of ${name}`) };
    const moto = await startMoto(['logs', 'out']);
    try {
      const client = moto.client();
      for (let i = 0; i < event.length; i += 32) await Promise.all(event.slice(i, i + 32).map((o) => client.send(new PutObjectCommand({ Bucket: 'logs', Key: `logs/${o.key}`, Body: objectBody(o) }))));
      const base = { ...cliEnv('s3://logs/logs/', ''), ...moto.env, PINGROLL_WAREHOUSE: 'none' };
      const single = await cli({ ...base, PINGROLL_OUTPUT: 's3://out/single/' }, 'rollup', '--date', DAY);
      expect(single.status, single.stderr).toBe(0);
      const env = { ...base, PINGROLL_OUTPUT: 's3://out/sharded/' };
      const shards = await Promise.all([0, 1, 2, 3].map((i) => cli(env, 'ingest', '--shard', `${i}/4`, '--date', DAY)));
      for (const sh of shards) expect(sh.status, sh.stderr).toBe(0);
      const parsed = shards.map((sh) => Number(/: (\d+) log objects parsed/.exec(sh.stdout)![1]));
      expect(parsed).toEqual([0, 1, 2, 3].map((i) => event.filter((o) => shardOf(o.key, 4) === i).length));
      expect(parsed.reduce((a, b) => a + b, 0)).toBe(event.length);
      expect(Math.max(...parsed), `${parsed}`).toBeLessThanOrEqual(1.5 * event.length / 4);
      const rollup = await cli(env, 'rollup', '--date', DAY, '--no-ingest');
      expect(rollup.status, rollup.stderr).toBe(0);
      const r = root();
      for (const out of ['single', 'sharded']) {
        const store = new S3ObjectStore(client, 'out', `${out}/`);
        for (const t of ['daily_episode_stats', 'daily_series_stats', 'daily_ingest_audit']) {
          const key = `${t}/dt=${DAY}/part-00000.parquet`;
          await mkdir(join(r, out, t, `dt=${DAY}`), { recursive: true });
          await store.download(key, join(r, out, key));
        }
      }
      const want = await readDay(join(r, 'single'), DAY);
      expect(want).toEqual(expectedDay(event.flatMap((o) => o.truth), DAY));
      expect(await readDay(join(r, 'sharded'), DAY)).toEqual(want);
    } finally {
      await moto.stop();
    }
  }, 180_000);

  it('takes the shard from an AWS Batch array job\'s or a Kubernetes indexed Job\'s environment; says what is wrong with a bad one', async () => {
    const r = root();
    const logs = join(r, 'logs');
    await writeObjects(logs, objects);
    const out = join(r, 'out');
    const batch = await cli(cliEnv(logs, out, { AWS_BATCH_JOB_ARRAY_INDEX: '1', AWS_BATCH_JOB_ARRAY_SIZE: '3' }), 'ingest', '--date', DAY);
    expect(batch.status, batch.stderr).toBe(0);
    expect(batch.stdout).toMatch(new RegExp(`^ingest shard 1/3: ${ofDay.filter((o) => shardOf(o.key, 3) === 1).length} log objects parsed`));
    const k8s = await cli(cliEnv(logs, out, { JOB_COMPLETION_INDEX: '2', PINGROLL_SHARDS: '3' }), 'ingest', '--date', DAY);
    expect(k8s.stdout).toMatch(new RegExp(`^ingest shard 2/3: ${ofDay.filter((o) => shardOf(o.key, 3) === 2).length} log objects parsed`));
    const noCount = spawnSync(process.execPath, [CLI, 'ingest'], { env: cliEnv(logs, out, { JOB_COMPLETION_INDEX: '2' }), encoding: 'utf8' });
    expect(noCount.status).toBe(2);
    expect(noCount.stderr).toMatch(/^pingroll: JOB_COMPLETION_INDEX is set but PINGROLL_SHARDS is not/);
    const bad = spawnSync(process.execPath, [CLI, 'ingest', '--shard', '3/3'], { env: cliEnv(logs, out), encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^pingroll: --shard=3\/3 is not a shard; give it as I\/N/);
  });
});
