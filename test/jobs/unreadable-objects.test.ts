/**
 * One bad log object never stops the pipeline and is never silently lost: a corrupt or truncated
 * gzip, an object gone between list and get are quarantined, retried by every run,
 * named in the manifests, and taken in as soon as they read, or accepted as lost by an operator.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../infra/config.js';
import type { ObjectSource } from '../../ingest/object-source/object-source.js';
import type { ListPlan } from '../../ingest/object-source/object-source.js';
import { memoryLog } from '../../lib/log.js';
import { Quarantine } from '../../state/quarantine.js';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { S3ObjectStore } from '../../state/object-store/s3-object-store.js';
import { generateSample, objectBody, type LogObject } from '../../tools/sample/access-log-generator.js';
import { dirConfig, readDay, readStoreDay, rm, runDay, setEnv, tempDir, tempRoots, writeObjects } from '../support/job-fixture.js';
import { startMoto } from '../support/moto.js';
import { expectedDay } from '../support/oracle.js';

const DAY = '2026-11-01';
const CLI = new URL('../../bin/pingroll.js', import.meta.url).pathname;
const root = tempRoots();

const truthOf = (objects: LogObject[]) => objects.flatMap((o) => o.truth);

describe('unreadable log objects', () => {
  it.each([['in the run\'s own thread', 0], ['in parsing threads', 2]])('are quarantined while every other object and the day go on; taken in once they read; accepted as lost by an operator (parsed %s)', async (_where, threads) => {
    const r = root();
    const config = { ...dirConfig(r), parseThreads: threads };
    const sample = generateSample({ date: DAY, sessions: 150, seed: 41, truth: true, recordsPerObject: 200, gzipShare: 0.5 });
    const gz = sample.objects.filter((o) => o.gzip);
    const [corrupt, truncated] = [gz[0]!, gz[1]!];
    const good = sample.objects.filter((o) => o !== corrupt && o !== truncated);
    await writeObjects(join(r, 'logs'), good);
    await writeFile(join(r, 'logs', corrupt.key), Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(500, 7)]));
    const body = objectBody(truncated);
    await writeFile(join(r, 'logs', truncated.key), body.subarray(0, body.length >> 1));
    const dangling = '2026-11-01-23-59-59-DANGLING';
    await symlink(join(r, 'nowhere'), join(r, 'logs', dangling));

    const log = memoryLog();
    const first = await runDay(config, { day: DAY, log });
    expect(first.unreadable.map((u) => u.key).sort()).toEqual([corrupt.key, truncated.key].sort());
    // A link is not followed, dangling or not: passed over, and named with why (contract §2).
    expect(first.skipped).toBe(1);
    expect(log.events.filter((e) => e.event === 'object.skipped').map((e) => e.fields.key)).toEqual([dangling]);
    expect(first.parsedObjects).toBe(good.length);
    // The day is exact over every object that read.
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(truthOf(good), DAY));
    const manifest = JSON.parse(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json'), 'utf8'));
    expect(manifest.quarantined.map((q: { key: string }) => q.key).sort()).toEqual([corrupt.key, truncated.key].sort());

    // The truncated object is delivered whole after all: the next run takes it in.
    await writeFile(join(r, 'logs', truncated.key), body);
    const second = await runDay(config, { day: DAY, log: memoryLog() });
    expect(second.parsedObjects).toBe(1);
    expect(second.unreadable.map((u) => u.key)).toEqual([corrupt.key]);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(truthOf([...good, truncated]), DAY));
    const q = await Quarantine.load(new DirectoryObjectStore(join(r, 'out')));
    expect(q.pending().map((o) => [o.key, o.attempts])).toEqual([[corrupt.key, 2]]);

    // As cron sees it: exit 4, and a last line that says what to do.
    const env = { PATH: process.env.PATH ?? '', PINGROLL_LOGS: join(r, 'logs'), PINGROLL_OUTPUT: join(r, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(r, 'wh.duckdb')}` };
    const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8', timeout: 60_000 });
    const run = cli('rollup', '--date', DAY);
    expect(run.status).toBe(4);
    expect(run.stderr.trim().split('\n').at(-1), run.stderr).toMatch(new RegExp(`^pingroll: completed, but 1 log objects? could not be read \\(first: ${corrupt.key}: .*\\); they are listed in .*_state/quarantine.json .*pingroll quarantine accept KEY`));
    expect(cli('quarantine', 'accept', '--all').stdout).toMatch(/accepted as lost: /);
    const accepted = cli('rollup', '--date', DAY);
    expect(accepted.status).toBe(0);
    const after = JSON.parse(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json'), 'utf8'));
    expect(after.quarantined).toEqual([]);
    expect(after.acceptedLost.map((q: { key: string }) => q.key)).toEqual([corrupt.key]);
  });

  it.each([['in the run\'s own thread', 0], ['by parsing threads', 2]])('quarantines an S3 object gone between list and get, and tries it by its key at every run (fetched %s)', async (_where, threads) => {
    const moto = await startMoto(['logs', 'out']);
    // The SDK reads its own settings (region, credentials, endpoint) from the environment.
    const restore = setEnv(moto.env);
    try {
      const sample = generateSample({ date: DAY, sessions: 40, seed: 43, truth: true, recordsPerObject: 200 });
      const s3 = moto.client();
      for (const o of sample.objects) await s3.send(new PutObjectCommand({ Bucket: 'logs', Key: o.key, Body: objectBody(o) }));
      const gone = sample.objects[1]!;
      const config = { ...loadConfig({ ...moto.env, PINGROLL_LOGS: 's3://logs/', PINGROLL_OUTPUT: 's3://out/run/', PINGROLL_WAREHOUSE: 'none' }), parseThreads: threads };
      // Deleted after the run listed it, before it read it.
      const deletingAfterList = (logs: ObjectSource): ObjectSource => Object.assign(Object.create(logs) as ObjectSource, {
        listPlanned: async function* (plan: ListPlan) {
          for await (const ref of logs.listPlanned(plan)) yield ref;
          await s3.send(new DeleteObjectCommand({ Bucket: 'logs', Key: gone.key }));
        },
      });
      const first = await runDay(config, { day: DAY, log: memoryLog() }, (b) => ({ ...b, logs: deletingAfterList(b.logs) }));
      expect(first.unreadable).toEqual([{ key: gone.key, reason: 'The specified key does not exist.' }]);
      const rest = sample.objects.filter((o) => o !== gone);
      const store = new S3ObjectStore(s3, 'out', 'run/');
      expect(await readStoreDay(store, DAY, root())).toEqual(expectedDay(truthOf(rest), DAY));
      // Not listed any more, still tried by its key, still reported.
      const second = await runDay(config, { day: DAY, log: memoryLog() });
      expect(second.unreadable.map((u) => u.key)).toEqual([gone.key]);
      expect((await Quarantine.load(store)).pending()[0]).toMatchObject({ key: gone.key, attempts: 2 });
    } finally {
      restore();
      await moto.stop();
    }
  });

  it.each([['in the run\'s own thread', 0], ['by parsing threads', 2]])('reads no more of an S3 object than its listed size: one overwritten by a larger one after the listing is quarantined, and read whole by the next run (fetched %s)', async (_where, threads) => {
    const moto = await startMoto(['logs', 'out']);
    const restore = setEnv(moto.env);
    try {
      const sample = generateSample({ date: DAY, sessions: 40, seed: 44, truth: true, recordsPerObject: 200, gzipShare: 0 });
      const s3 = moto.client();
      for (const o of sample.objects) await s3.send(new PutObjectCommand({ Bucket: 'logs', Key: o.key, Body: objectBody(o) }));
      // Overwritten after the run listed it, before it read it: its records and as many again.
      const grown = sample.objects[1]!;
      const more = generateSample({ date: DAY, sessions: 10, seed: 45, truth: true, recordsPerObject: 400, gzipShare: 0 }).objects[0]!;
      const config = { ...loadConfig({ ...moto.env, PINGROLL_LOGS: 's3://logs/', PINGROLL_OUTPUT: 's3://out/run/', PINGROLL_WAREHOUSE: 'none' }), parseThreads: threads };
      const growingAfterList = (logs: ObjectSource): ObjectSource => Object.assign(Object.create(logs) as ObjectSource, {
        listPlanned: async function* (plan: ListPlan) {
          for await (const ref of logs.listPlanned(plan)) yield ref;
          await s3.send(new PutObjectCommand({ Bucket: 'logs', Key: grown.key, Body: Buffer.concat([objectBody(grown), objectBody(more)]) }));
        },
      });
      const first = await runDay(config, { day: DAY, log: memoryLog() }, (b) => ({ ...b, logs: growingAfterList(b.logs) }));
      expect(first.unreadable).toEqual([{ key: grown.key, reason: `it holds more than the ${objectBody(grown).length} bytes it was listed at: it changed after the listing, and the next run reads it again` }]);
      const store = new S3ObjectStore(s3, 'out', 'run/');
      expect(await readStoreDay(store, DAY, root())).toEqual(expectedDay(truthOf(sample.objects.filter((o) => o !== grown)), DAY));
      // The next run's listing no longer shows it (as once its window has passed it): tried by its
      // name, at the most an object may be, since it was quarantined for growing, it reads whole.
      const unlisted = (logs: ObjectSource): ObjectSource => Object.assign(Object.create(logs) as ObjectSource, {
        listPlanned: async function* (plan: ListPlan) {
          for await (const ref of logs.listPlanned(plan)) if (ref.key !== grown.key) yield ref;
        },
      });
      const second = await runDay(config, { day: DAY, log: memoryLog() }, (b) => ({ ...b, logs: unlisted(b.logs) }));
      expect(second.unreadable).toEqual([]);
      expect(second.parsedObjects).toBe(1);
      expect(await readStoreDay(store, DAY, root())).toEqual(expectedDay([...truthOf(sample.objects), ...more.truth], DAY));
      expect((await Quarantine.load(store)).pending()).toEqual([]);
    } finally {
      restore();
      await moto.stop();
    }
  });

  it.each([['in the run\'s own thread', 0], ['in parsing threads', 2]])('never reads a quarantined key, retried by its name, through a folder made a link since: it stays quarantined, with why (parsed %s)', async (_where, threads) => {
    const r = root();
    const config = { ...dirConfig(r), parseThreads: threads };
    const sample = generateSample({ date: DAY, sessions: 20, seed: 47, truth: true, recordsPerObject: 200 });
    await writeObjects(join(r, 'logs'), sample.objects);
    // A bogus gzip in a subfolder: quarantined by the first run.
    const key = 'sub/2026-11-01-18-00-00-ESCAPE';
    await mkdir(join(r, 'logs', 'sub'), { recursive: true });
    await writeFile(join(r, 'logs', key), Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(100, 7)]));
    const first = await runDay(config, { day: DAY, log: memoryLog() });
    expect(first.unreadable.map((u) => u.key)).toEqual([key]);
    // Then the subfolder becomes a link to a folder outside the logs holding a real log of that name:
    // the listing passes the link over, and the retry of the key by its name must not read through it.
    const outside = generateSample({ date: DAY, sessions: 5, seed: 48, truth: true, recordsPerObject: 50 }).objects[0]!;
    await rm(join(r, 'logs', 'sub'), { recursive: true });
    await mkdir(join(r, 'outside'), { recursive: true });
    await writeFile(join(r, 'outside', '2026-11-01-18-00-00-ESCAPE'), objectBody(outside));
    await symlink(join(r, 'outside'), join(r, 'logs', 'sub'));
    const second = await runDay(config, { day: DAY, log: memoryLog() });
    expect(second.unreadable).toEqual([{ key, reason: expect.stringMatching(/^its path leads out of the log directory through a link, to .*outside.*: pingroll reads only regular files under it, and follows no link$/) }]);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(truthOf(sample.objects), DAY));
    expect((await Quarantine.load(new DirectoryObjectStore(join(r, 'out')))).pending().map((o) => o.key)).toEqual([key]);
  });

  it('quarantines a file whose name is not valid UTF-8 with why and what to do, and reads it once renamed', async () => {
    const r = root();
    const sample = generateSample({ date: DAY, sessions: 10, seed: 49, truth: true, recordsPerObject: 100 });
    const [odd, ...rest] = sample.objects;
    await writeObjects(join(r, 'logs'), rest);
    await writeFile(Buffer.concat([Buffer.from(join(r, 'logs', `${odd!.key}-`)), Buffer.from([0xff, 0xfe])]), objectBody(odd!));
    const first = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(first.unreadable).toEqual([{ key: `${odd!.key}-\uFFFD\uFFFD`, reason: expect.stringMatching(/^its name is not valid UTF-8 .*: rename the file, then accept this key as lost/) }]);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(truthOf(rest), DAY));
    // Renamed: the next run reads it under its new name (the old key stays quarantined until accepted).
    const { rename } = await import('node:fs/promises');
    await rename(Buffer.concat([Buffer.from(join(r, 'logs', `${odd!.key}-`)), Buffer.from([0xff, 0xfe])]), join(r, 'logs', odd!.key));
    const second = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(second.parsedObjects).toBe(1);
    expect(second.unreadable.map((u) => u.key)).toEqual([`${odd!.key}-\uFFFD\uFFFD`]);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(truthOf(sample.objects), DAY));
  });

  it('keeps a rejected line\'s original bytes when they are not valid UTF-8', async () => {
    const r = root();
    await mkdir(join(r, 'logs'), { recursive: true });
    const line = Buffer.concat([Buffer.from('not a log line \u00e9 '), Buffer.from([0xff, 0xfe, 0x41]), Buffer.from('\n')]);
    await writeFile(join(r, 'logs', '2026-11-01-10-00-00-BADBYTES'), line);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const rejects = gunzipSync(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'rejects.jsonl.gz'))).toString('utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(rejects).toHaveLength(1);
    expect(rejects[0].record).toContain('\uFFFD');
    expect(Buffer.from(rejects[0].recordBase64, 'base64')).toEqual(line.subarray(0, line.length - 1));
  });
});
