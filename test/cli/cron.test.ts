/**
 * The daily cron line as the README documents it, taken from the README as written and run by
 * /bin/sh as cron runs it: its exit status is the program's own code (0, 2, 3, 4), not make's, and
 * its log file ends with the line that says what to do.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { processStart } from '../../lib/process.js';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { lockKey } from '../../state/run-lock.js';
import { generateSample } from '../../tools/sample/access-log-generator.js';
import { tempRoots, writeObjects } from '../support/job-fixture.js';

const ROOT = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');
const INSTALLED = '/opt/pingroll';
const LOG = '/var/log/pingroll.log';
const roots = tempRoots();

/** The README's first cron line (the daily job), as cron hands it to the shell: the schedule's five fields taken off, `\%` made `%`. */
function readmeCronLine(readme: string): string {
  const block = /```cron\n([\s\S]*?)```/.exec(readme);
  if (!block) throw new Error('README.md has no ```cron block');
  const line = block[1]!.split('\n')[0]!;
  const m = /^\s*(?:\S+\s+){5}(.+)$/.exec(line);
  if (!m) throw new Error(`not a crontab line: ${line}`);
  // In a crontab an unescaped % ends the command (the rest is its stdin): the README's has none.
  expect(m[1]!.replace(/\\%/g, ''), line).not.toContain('%');
  return m[1]!.replace(/\\%/g, '%');
}

/** Runs `command` as cron does (`/bin/sh -c`), with only `env`: its exit status. */
function sh(command: string, env: Record<string, string>): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { env, stdio: 'ignore' });
    child.on('error', reject);
    child.on('close', resolve);
  });
}

describe('the README\'s cron line', () => {
  let line = '';
  // The day the line asks for, by the same `date` command.
  const day = spawnSync('date', ['-u', '-d', 'yesterday', '+%F'], { encoding: 'utf8' }).stdout.trim();
  beforeAll(async () => {
    line = readmeCronLine(await readFile(join(ROOT, 'README.md'), 'utf8'));
    expect(line).toContain(`cd ${INSTALLED} &&`);
    expect(line).toContain(`>> ${LOG} 2>&1`);
    expect(line).toContain('yesterday');
  });

  /** The line for a checkout at ROOT, logging to `log`; run with PATH, a home of its own and `env`. */
  async function cron(r: string, env: Record<string, string>): Promise<{ code: number | null; log: string[] }> {
    const log = join(r, `pingroll-${Math.random().toString(36).slice(2)}.log`);
    const code = await sh(line.replace(INSTALLED, ROOT).replace(LOG, log), { PATH: process.env.PATH ?? '', HOME: r, ...env });
    const text = await readFile(log, 'utf8').catch(() => '');
    return { code, log: text.trim().split('\n') };
  }

  const dirEnv = (r: string): Record<string, string> => ({ PINGROLL_LOGS: join(r, 'logs'), PINGROLL_OUTPUT: join(r, 'out'), PINGROLL_WAREHOUSE: 'none' });

  it('exits 0 for a good day, 2 for a setting to fix (a bad value, no AWS credentials), 3 while another run holds the lock', async () => {
    const r = roots();
    await writeObjects(join(r, 'logs'), generateSample({ date: day, sessions: 20, seed: 11 }).objects);

    const ok = await cron(r, dirEnv(r));
    expect(ok.code, ok.log.join('\n')).toBe(0);
    expect(ok.log.at(-1)).toMatch(new RegExp(`^${day}: \\d+ pings from \\d+ newly parsed objects`));

    const badSetting = await cron(r, { ...dirEnv(r), PINGROLL_PING_KEYS: ' , ' });
    expect(badSetting.code).toBe(2);
    expect(badSetting.log.at(-1)).toBe("pingroll: PINGROLL_PING_KEYS=' , ' names no key; set it to a comma-separated list such as p.gif");

    // An s3:// output and no credentials anywhere the SDK looks (an endpoint with nothing behind it: were any found, the run would fail to reach it, exit 1).
    await writeFile(join(r, 'empty'), '');
    const noCredentials = await cron(r, { ...dirEnv(r), PINGROLL_OUTPUT: 's3://out/pingroll/', AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:1',
      AWS_SHARED_CREDENTIALS_FILE: join(r, 'empty'), AWS_CONFIG_FILE: join(r, 'empty'), AWS_EC2_METADATA_DISABLED: 'true' });
    expect(noCredentials.code).toBe(2);
    expect(noCredentials.log.at(-1)).toMatch(/^pingroll: no AWS credentials found for PINGROLL_OUTPUT=s3:\/\/out\/pingroll\/; set AWS_PROFILE/);

    // Another run holds the output's lock (this process, alive, on this host).
    const store = new DirectoryObjectStore(join(r, 'out'));
    await store.put(lockKey(99), Buffer.from(JSON.stringify({ run: 'r-cron', host: hostname(), pid: process.pid, pidStart: processStart(process.pid), since: 'now', command: `rollup ${day}`, expiresAt: Date.now() + 600_000 })));
    const held = await cron(r, dirEnv(r));
    expect(held.code).toBe(3);
    expect(held.log.at(-1)).toMatch(/locked by run r-cron .*; wait for it/);
    await store.delete(lockKey(99));
  });

  it('exits 4 when a log object could not be read (quarantined), where make rollup exits 2', async () => {
    const r = roots();
    await writeObjects(join(r, 'logs'), generateSample({ date: day, sessions: 20, seed: 12 }).objects);
    // A gzip whose stream is corrupt.
    await writeFile(join(r, 'logs', `${day}-10-00-00-CORRUPT.gz`), Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(400, 7)]));
    const quarantined = await cron(r, dirEnv(r));
    expect(quarantined.code, quarantined.log.join('\n')).toBe(4);
    expect(quarantined.log.at(-1)).toMatch(new RegExp(`^pingroll: completed, but 1 log object could not be read \\(first: ${day}-10-00-00-CORRUPT.gz: .*pingroll quarantine accept KEY`));
    // The same run through make, as people run it: the day is done, but make's own code is 2.
    const make = spawnSync('make', ['-s', 'rollup', `DATE=${day}`], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: r, ...dirEnv(r) }, encoding: 'utf8' });
    expect(make.status).toBe(2);
    expect(make.stderr).toMatch(/pingroll: completed, but 1 log object could not be read/);
  });

  it('exits 1 with one line when the build cannot be brought up to date, running nothing', async () => {
    const r = roots();
    const bin = join(r, 'bin');
    await mkdir(bin);
    await writeFile(join(bin, 'make'), '#!/bin/sh\necho "make: *** [Makefile] Error 2" >&2\nexit 2\n');
    await chmod(join(bin, 'make'), 0o755);
    const broken = await cron(r, { ...dirEnv(r), PATH: `${bin}:${process.env.PATH ?? ''}` });
    expect(broken.code).toBe(1);
    expect(broken.log).toEqual(['make: *** [Makefile] Error 2', expect.stringMatching(/^pingroll: bringing the build up to date failed \(make's reason is above\), so nothing was run; /)]);
  });
});
