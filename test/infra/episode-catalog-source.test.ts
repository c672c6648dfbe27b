/**
 * Where the episode catalog comes from (PINGROLL_EPISODE_CATALOG): a local file or an S3 object (moto's
 * S3 server, and a local server that only ever answers 503), fetched whole or refused. A catalog that
 * is missing, not allowed or too large is a configuration error (exit 2); S3 failing for a while is
 * not (exit 1: run again).
 */
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { readFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { episodeCatalogAt } from '../../infra/backends.js';
import { loadConfig } from '../../infra/config.js';
import { EpisodeCatalogError, MAX_CATALOG_BYTES } from '../../rollup/episode-catalog.js';
import { startMoto, type Moto } from '../support/moto.js';
import { setEnv, tempRoots } from '../support/job-fixture.js';

const root = tempRoots();
const CSV = 'series_id,episode_id,duration_seconds\ns1000,e1,1320\n';
let moto: Moto;
let unavailable: Server;
let stalling: Server;
beforeAll(async () => {
  moto = await startMoto(['catalogs']);
  await moto.client().send(new PutObjectCommand({ Bucket: 'catalogs', Key: 'tv/episodes.csv', Body: CSV }));
  unavailable = createServer((req, res) => {
    req.resume();
    res.writeHead(503, { 'content-type': 'application/xml' }).end('<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
  });
  await new Promise<void>((r) => unavailable.listen(0, '127.0.0.1', r));
  // Starts the object's body, then says nothing more.
  stalling = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/csv', 'content-length': '1000' });
    res.write('series_id,');
  });
  await new Promise<void>((r) => stalling.listen(0, '127.0.0.1', r));
}, 60_000);
afterAll(async () => {
  await moto?.stop();
  unavailable?.close();
  stalling?.closeAllConnections();
  stalling?.close();
});

async function fetched(env: Record<string, string>, catalog: string, opts: { dest?: string; fetchMs?: number } = {}): Promise<string> {
  const restore = setEnv(env);
  try {
    const source = (await episodeCatalogAt(loadConfig({ ...env, PINGROLL_EPISODE_CATALOG: catalog }), { fetchMs: opts.fetchMs }))!;
    expect(source.url).toBe(catalog);
    const dest = opts.dest ?? join(root(), 'fetched.csv');
    await source.fetch(dest);
    return await readFile(dest, 'utf8');
  } finally {
    restore();
  }
}

describe('the episode catalog\'s source', () => {
  it('is none when PINGROLL_EPISODE_CATALOG is unset or empty', async () => {
    expect(await episodeCatalogAt(loadConfig({}))).toBeNull();
    expect(await episodeCatalogAt(loadConfig({ PINGROLL_EPISODE_CATALOG: ' ' }))).toBeNull();
  });

  it('copies a local file; refuses a missing one, a directory and one over the cap as configuration errors', async () => {
    const dir = root();
    await writeFile(join(dir, 'episodes.csv'), CSV);
    expect(await fetched({}, join(dir, 'episodes.csv'))).toBe(CSV);
    await expect(fetched({}, join(dir, 'none.csv'))).rejects.toThrow(new EpisodeCatalogError(`PINGROLL_EPISODE_CATALOG=${join(dir, 'none.csv')} cannot be read: ENOENT; point it at the catalog CSV, or unset it`));
    await expect(fetched({}, dir)).rejects.toThrow(/cannot be read: not a regular file/);
    // (Sparse: no 64 MiB written.)
    await writeFile(join(dir, 'big.csv'), CSV);
    await truncate(join(dir, 'big.csv'), MAX_CATALOG_BYTES + 1);
    const big = fetched({}, join(dir, 'big.csv'));
    await expect(big).rejects.toBeInstanceOf(EpisodeCatalogError);
    await expect(big).rejects.toThrow(`it is ${MAX_CATALOG_BYTES + 1} bytes, over the ${MAX_CATALOG_BYTES} a catalog may have`);
    // A copy that cannot be written (a full disk) is this machine's trouble, not the setting's: exit 1.
    const full = fetched({}, join(dir, 'episodes.csv'), { dest: '/dev/full' });
    await expect(full).rejects.toThrow(/copying the episode catalog .* to \/dev\/full failed: ENOSPC; free space in the work folder and run again/);
    await expect(full).rejects.not.toBeInstanceOf(EpisodeCatalogError);
  });

  it('downloads an S3 object; a missing one is a configuration error, S3 answering 503 is not (run again)', async () => {
    expect(await fetched(moto.env, 's3://catalogs/tv/episodes.csv')).toBe(CSV);
    const missing = fetched(moto.env, 's3://catalogs/tv/none.csv');
    await expect(missing).rejects.toBeInstanceOf(EpisodeCatalogError);
    await expect(missing).rejects.toThrow(/PINGROLL_EPISODE_CATALOG=s3:\/\/catalogs\/tv\/none\.csv cannot be read: NoSuchKey/);
    const down = fetched({ ...moto.env, AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${(unavailable.address() as AddressInfo).port}` }, 's3://catalogs/tv/episodes.csv');
    await expect(down).rejects.toThrow(/^reading the episode catalog s3:\/\/catalogs\/tv\/episodes\.csv failed: .*; run again$/);
    await expect(down).rejects.not.toBeInstanceOf(EpisodeCatalogError);
    // A connection that stalls mid-body ends the fetch at its bound, as a failure to run again.
    const stalled = fetched({ ...moto.env, AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${(stalling.address() as AddressInfo).port}` }, 's3://catalogs/tv/episodes.csv', { fetchMs: 1500 });
    await expect(stalled).rejects.toThrow(/^reading the episode catalog s3:\/\/catalogs\/tv\/episodes\.csv failed: .*; run again$/);
    await expect(stalled).rejects.not.toBeInstanceOf(EpisodeCatalogError);
  }, 60_000);

  it('is refused in configuration when it is not an object\'s URL or a path', () => {
    for (const bad of ['s3://catalogs/', 's3://catalogs', 's3://catalogs/tv/', 'https://example.com/episodes.csv']) {
      expect(() => loadConfig({ PINGROLL_EPISODE_CATALOG: bad }), bad).toThrow(/PINGROLL_EPISODE_CATALOG=/);
    }
  });
});
