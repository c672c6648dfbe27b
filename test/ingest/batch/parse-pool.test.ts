/**
 * Parsing threads fed by the run's own thread (ingest/batch/parse-pool.ts, `fetchHere`: what `auto`
 * gives a batch of S3 objects on 2 or 3 cores): every object fetched here and parsed in the thread
 * gives what parsing in the run's own thread gives, row for row, and an object that cannot be read is
 * that object's result, not the batch's failure.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { loadConfig } from '../../../infra/config.js';
import { parsers } from '../../../ingest/batch/parse-pool.js';
import { stagedRowSpans } from '../../../ingest/staged-ping.js';
import type { ParsedObject } from '../../../ingest/batch/object-parser.js';
import { S3ObjectSource } from '../../../ingest/object-source/s3-object-source.js';
import type { ObjectRef } from '../../../ingest/object-source/object-source.js';
import { generateSample, objectBody } from '../../../tools/sample/access-log-generator.js';
import { setEnv, tempDir } from '../../support/job-fixture.js';
import { isList, onRequests } from '../../support/s3-requests.js';
import { startMoto, type Moto } from '../../support/moto.js';

const DAY = '2026-11-01';

describe('parsing threads fed by the run\'s thread', () => {
  let moto: Moto;
  let restore = (): void => {};
  beforeAll(async () => {
    moto = await startMoto(['logs']);
    restore = setEnv(moto.env);
  }, 60_000);
  afterAll(async () => {
    restore();
    await moto?.stop();
  });

  it('parse S3 objects fetched by the run\'s thread as the run\'s own thread does, an unreadable one its own result', async () => {
    const sample = generateSample({ date: DAY, sessions: 30, seed: 57, truth: true, recordsPerObject: 150 });
    const s3 = moto.client();
    for (const o of sample.objects) await s3.send(new PutObjectCommand({ Bucket: 'logs', Key: o.key, Body: objectBody(o) }));
    const config = loadConfig({ ...moto.env, PINGROLL_LOGS: 's3://logs/' });
    const refs: ObjectRef[] = [];
    const source = S3ObjectSource.from({ client: { region: 'us-east-1', endpoint: moto.endpoint, forcePathStyle: true }, bucket: 'logs', prefix: '' });
    // The GETs this thread sends (a parsing thread that fetched would send its own, from a client of its own).
    let gets = 0;
    onRequests((source as unknown as { s3: S3Client }).s3, (r) => { if (r.method === 'GET' && !isList(r)) gets++; });
    for await (const ref of source.list()) refs.push(ref);
    expect(refs).toHaveLength(sample.objects.length);
    const tasks = [...refs, { key: `${DAY}-23-59-59-GONE`, size: 10, etag: '' }].map((ref, index) => ({ index, key: ref.key, day: DAY, fetch: ref }));

    const run = async (threads: number, fetchHere: boolean): Promise<{ results: ParsedObject[]; rows: string[] }> => {
      const parts: string[] = [];
      const pool = parsers(threads, { pingKeys: config.pingKeys, dir: tempDir(), partBytes: 1 << 20, onPart: (path) => parts.push(path), source, fetchHere });
      try {
        const results = await Promise.all(tasks.map((t) => pool.parse({ ...t })));
        await pool.flush();
        const rows = (await Promise.all(parts.map((p) => readFile(p)))).flatMap((b) => [...stagedRowSpans(b)].map(([s, e]) => b.toString('hex', s, e)));
        return { results: results.map((r) => ({ ...r, rejects: null })), rows: rows.sort() };
      } finally {
        await pool.close();
      }
    };
    const here = await run(0, false);
    expect(gets).toBe(tasks.length);
    const fed = await run(1, true);
    expect(gets).toBe(2 * tasks.length);
    // Threads that fetch for themselves (the source can be made again in a thread): none from here.
    await run(1, false);
    expect(gets).toBe(2 * tasks.length);
    expect(here.rows.length).toBeGreaterThan(500);
    expect(fed.rows).toEqual(here.rows);
    expect(fed.results).toEqual(here.results);
    expect(fed.results.at(-1)).toMatchObject({ records: 0, unreadable: 'The specified key does not exist.' });
    expect(fed.results.slice(0, -1).reduce((n, r) => n + r.records, 0)).toBe(sample.objects.reduce((n, o) => n + o.records, 0));
  }, 60_000);
});
