/**
 * The command line as cron and operators meet it: exit codes, and one line on stderr that says
 * what to do. Runs the built CLI (`make test` builds first).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { lockKey } from '../../state/run-lock.js';
import { processStart } from '../../lib/process.js';
import { rm, tempDir, writeObjects } from '../support/job-fixture.js';
import { cli } from '../support/cli.js';
import { startMoto } from '../support/moto.js';

const CLI = new URL('../../bin/pingroll.js', import.meta.url).pathname;
const root = tempDir();
afterAll(() => rm(root, { recursive: true, force: true }));

function pingroll(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', PINGROLL_LOGS: join(root, 'logs'), PINGROLL_OUTPUT: join(root, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(root, 'wh.duckdb')}`, ...env },
    encoding: 'utf8', timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr.trim() };
}

describe('bad configuration fails before any work, with exit 2 and one line', () => {
  it.each([
    [['rollup'], {}, /^pingroll: --date is missing; give it as YYYY-MM-DD \(e\.g\. pingroll rollup --date 2026-11-01, or make rollup DATE=2026-11-01\)$/],
    [['rollup', '--date', '2026-02-30'], {}, /^pingroll: --date=2026-02-30 is not a day; give it as YYYY-MM-DD/],
    [['backfill', '--from', '2026-11-01'], {}, /^pingroll: a backfill needs --from and --to, the first and last day as YYYY-MM-DD \(e\.g\. pingroll backfill --from 2026-11-01 --to 2026-11-07, or make backfill FROM=2026-11-01 TO=2026-11-07\); or --stale/],
    [['backfill', '--from', '1/11/2026', '--to', '2026-11-07'], {}, /^pingroll: --from=1\/11\/2026 is not a day; give it as YYYY-MM-DD \(e\.g\. pingroll backfill --from 2026-11-01/],
    [['rollup', '--date', '2026-11-01'], { PINGROLL_WAREHOUSE: 'mysql://x' }, /PINGROLL_WAREHOUSE='mysql:\/\/x' is not one of duckdb:<file>, redshift, none/],
    [['rollup', '--date', '2026-11-01'], { PINGROLL_DDB_TABLES: 'pings' }, /PINGROLL_DDB_TABLES='pings' must contain \{yyyy\} and \{mm\}/],
    [['rollup', '--date', '2026-11-01'], { PINGROLL_OUTPUT: 's3://Bad_Bucket/x' }, /PINGROLL_OUTPUT=s3:\/\/Bad_Bucket\/x is not a valid s3:\/\/bucket\/prefix\//],
    [['rollup', '--date', '2026-11-01'], { PINGROLL_PING_KEYS: ' , ' }, /PINGROLL_PING_KEYS=' , ' names no key/],
    [['rollup', '--date', '2026-11-01', '--concurrency', '0'], {}, /--concurrency=0 must be a whole number from 1 to 1024/],
    [['rollup', '--date', '2026-11-01', '--parse-threads', 'many'], {}, /--parse-threads=many must be a whole number from 0 to 64/],
    [['rollup', '--date', '2026-11-01'], { PINGROLL_THREADS: 'all' }, /PINGROLL_THREADS=all must be a whole number from 1 to 1024/],
    [['rollup', '--date', '2026-11-01', '--no-such-flag'], {}, /Unknown option '--no-such-flag'/],
    // A --month given in another form is named, with the form expected (not taken for none).
    [['report', '--month', '2026-1'], {}, /^pingroll: --month=2026-1 is not a month; give it as YYYY-MM \(such as 2026-01\)$/],
    [['report'], {}, /^pingroll: report needs --month YYYY-MM/],
  ] as const)('%j %j', (args, env, message) => {
    const r = pingroll([...args], { ...env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.split('\n')).toHaveLength(1);
  });
});

describe('days that are not over, and status for monitoring', () => {
  const today = new Date().toISOString().slice(0, 10);
  it('refuses today and later days, saying which day is the last that can be rolled up', () => {
    const r = pingroll(['rollup', '--date', today]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^pingroll: --date=${today} is today: its logs are still arriving; the last day that can be rolled up is \\d{4}-\\d{2}-\\d{2}$`));
    const b = pingroll(['backfill', '--from', '2026-11-01', '--to', '2999-01-01']);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/^pingroll: --to=2999-01-01 is in the future: its logs are still arriving/);
  });

  it('exits 5 while a day in the range is not complete, with each day\'s state on stdout', () => {
    const fresh = tempDir();
    const r = pingroll(['status', '--from', '2026-11-01', '--to', '2026-11-02', '--json'], { PINGROLL_OUTPUT: join(fresh, 'out') });
    expect(r.code).toBe(5);
    expect(r.stdout.trim().split('\n').map((l) => JSON.parse(l).state)).toEqual(['never run', 'never run']);
    expect(r.stderr).toBe('pingroll: not every day in the range is complete or provisional (see the reasons above)');
  });
});

describe('run failures', () => {
  it('exit 2 with one line, before anything is created, when a location cannot serve', async () => {
    const fresh = tempDir();
    const { mkdir, writeFile } = await import('node:fs/promises');
    await writeFile(join(fresh, 'a-file'), 'x');
    await mkdir(join(fresh, 'logs'));
    for (const [env, message] of [
      [{ PINGROLL_LOGS: join(fresh, 'nowhere') }, /the directory .*nowhere does not exist; set PINGROLL_LOGS to where the access logs are/],
      [{ PINGROLL_LOGS: join(fresh, 'a-file') }, /a-file is not a directory; set PINGROLL_LOGS/],
      [{ PINGROLL_OUTPUT: join(fresh, 'a-file') }, /PINGROLL_OUTPUT=.*a-file is a file, not a directory/],
      [{ PINGROLL_OUTPUT: join(fresh, 'a-file', 'out') }, /a-file\/out cannot be a directory \(a file stands on its path\); check PINGROLL_OUTPUT/],
    ] as const) {
      const r = pingroll(['rollup', '--date', '2026-11-01'], Object.assign({ PINGROLL_LOGS: join(fresh, 'logs'), PINGROLL_OUTPUT: join(fresh, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(fresh, 'wh.duckdb')}` }, env));
      expect(r.code, JSON.stringify(env)).toBe(2);
      expect(r.stderr.split('\n'), JSON.stringify(env)).toEqual([expect.stringMatching(message)]);
    }
    const { readdir } = await import('node:fs/promises');
    expect((await readdir(fresh)).sort()).toEqual(['a-file', 'logs']);
    await rm(fresh, { recursive: true, force: true });
  });

  it('one line that says what to do for AWS trouble, and off a terminal JSON lines only before it', () => {
    const s3 = { PINGROLL_LOGS: 's3://logs/x/', HOME: '/nonexistent' };
    // No region: the configuration's error, found by the preflight before any work (exit 2).
    const noRegion = pingroll(['rollup', '--date', '2026-11-01'], s3);
    expect(noRegion.code).toBe(2);
    expect(noRegion.stderr.split('\n').at(-1)).toBe('pingroll: no AWS region is set for PINGROLL_LOGS=s3://logs/x/; set AWS_REGION (e.g. AWS_REGION=us-east-1), and run again');
    const refused = pingroll(['rollup', '--date', '2026-11-01'], { ...s3, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b', AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:1' });
    expect(refused.code).toBe(1);
    expect(refused.stderr.split('\n').at(-1)).toMatch(/^pingroll: cannot reach 127\.0\.0\.1:1 \(ECONNREFUSED\); check the endpoint settings/);
    for (const r of [noRegion, refused]) for (const line of r.stderr.split('\n').slice(0, -1)) expect(() => JSON.parse(line), line).not.toThrow();
  });

  it('exit 2 with one line, before any work, when an s3:// location has no credentials; with credentials the same settings run', async () => {
    const moto = await startMoto(['logs', 'out']);
    const fresh = tempDir();
    try {
      await writeObjects(join(fresh, 'logs'), generateSample({ date: '2026-11-01', sessions: 10, seed: 9 }).objects);
      // No credentials anywhere the SDK looks: none in the environment, empty shared files, no instance role.
      await writeFile(join(fresh, 'credentials'), '');
      await writeFile(join(fresh, 'config'), '');
      const none = {
        PATH: process.env.PATH ?? '', HOME: fresh, AWS_SHARED_CREDENTIALS_FILE: join(fresh, 'credentials'), AWS_CONFIG_FILE: join(fresh, 'config'), AWS_EC2_METADATA_DISABLED: 'true',
        AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_S3: moto.endpoint, PINGROLL_WAREHOUSE: 'none',
      };
      const toS3 = { ...none, PINGROLL_LOGS: join(fresh, 'logs'), PINGROLL_OUTPUT: 's3://out/run/' };
      const output = await cli(toS3, 'rollup', '--date', '2026-11-01');
      expect(output.status, output.stderr).toBe(2);
      expect(output.stderr.trim().split('\n')).toEqual(['pingroll: no AWS credentials found for PINGROLL_OUTPUT=s3://out/run/; set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or run where a role provides them), and run again']);
      const logs = await cli({ ...none, PINGROLL_LOGS: 's3://logs/access/', PINGROLL_OUTPUT: join(fresh, 'out') }, 'rollup', '--date', '2026-11-01');
      expect(logs.status, logs.stderr).toBe(2);
      expect(logs.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^pingroll: no AWS credentials found for PINGROLL_LOGS=s3:\/\/logs\/access\/; set AWS_PROFILE/)]);
      // Nothing was written: not the output, not its lock.
      expect((await moto.client().send(new ListObjectsV2Command({ Bucket: 'out' }))).KeyCount).toBe(0);
      expect(existsSync(join(fresh, 'out'))).toBe(false);
      // The same settings with credentials: the run goes through.
      const ok = await cli({ ...toS3, AWS_ACCESS_KEY_ID: moto.env.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: moto.env.AWS_SECRET_ACCESS_KEY }, 'rollup', '--date', '2026-11-01');
      expect(ok.status, ok.stderr).toBe(0);
    } finally {
      await moto.stop();
      await rm(fresh, { recursive: true, force: true });
    }
  });

  it('read-only commands create nothing: top with a mistyped warehouse says so', async () => {
    const fresh = tempDir();
    const r = pingroll(['top', '--date', '2026-11-01'], { PINGROLL_WAREHOUSE: `duckdb:${join(fresh, 'typo', 'wh.duckdb')}` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^pingroll: there is no warehouse at .*typo\/wh.duckdb: check PINGROLL_WAREHOUSE, or run make rollup/);
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(fresh)).toEqual([]);
    await rm(fresh, { recursive: true, force: true });
  });

  it('exit 3 naming the holder when another run holds the lock, and a clean run once it is gone', async () => {
    await writeObjects(join(root, 'logs'), generateSample({ date: '2026-11-01', sessions: 20, seed: 3 }).objects);
    const store = new DirectoryObjectStore(join(root, 'out'));
    await store.put(lockKey(99), Buffer.from(JSON.stringify({ run: 'r-1', host: hostname(), pid: process.pid, pidStart: processStart(process.pid), since: 'now', command: 'rollup 2026-11-01', expiresAt: Date.now() + 600_000 })));
    const held = pingroll(['rollup', '--date', '2026-11-01']);
    expect(held.code).toBe(3);
    expect(held.stderr.split('\n').at(-1)).toMatch(/locked by run r-1 \(rollup 2026-11-01, pid \d+ on .*\); wait for it/);
    await store.delete(lockKey(99));
    const ok = pingroll(['rollup', '--date', '2026-11-01']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^2026-11-01: \d+ pings from \d+ newly parsed objects/);
    // Off a terminal, the log is JSON lines.
    for (const line of ok.stderr.split('\n')) expect(() => JSON.parse(line)).not.toThrow();
  });
});

describe('make', () => {
  it('a day that is not YYYY-MM-DD: one message that fits pingroll rollup --date and make rollup DATE= alike', () => {
    const want = 'pingroll: --date=11/20/2026 is not a day; give it as YYYY-MM-DD (e.g. pingroll rollup --date 2026-11-01, or make rollup DATE=2026-11-01)';
    const direct = pingroll(['rollup', '--date', '11/20/2026']);
    expect(direct.code).toBe(2);
    expect(direct.stderr).toBe(want);
    const viaMake = spawnSync('make', ['-s', 'rollup', 'DATE=11/20/2026'], {
      cwd: new URL('../..', import.meta.url).pathname, encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', PINGROLL_LOGS: join(root, 'logs'), PINGROLL_OUTPUT: join(root, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(root, 'wh.duckdb')}` },
    });
    expect(viaMake.stderr.trim().split('\n')[0]).toBe(want);
  });

  it('watches the program\'s own sources only: no installed package\'s files, nothing of deploy/ (walking them cost every make rollup a second)', () => {
    const r = spawnSync('make', ['-s', '--eval=print-sources: ; @echo $(TS_SOURCES)', 'print-sources'], { cwd: new URL('../..', import.meta.url).pathname, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const sources = r.stdout.trim().split(/\s+/);
    expect(sources).toContain('./ingest/batch/ingest-batch.ts');
    expect(sources.filter((f) => f.includes('node_modules') || f.startsWith('./deploy/') || f.startsWith('./dist/'))).toEqual([]);
  });
});
