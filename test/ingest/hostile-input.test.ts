/**
 * A log directory holding whatever landed in it: each hostile kind ends in the outcome the contract
 * names (a reject with its reason, a quarantine with its reason and exit 4, a skip the log names, or
 * exit 2 before any work), the audit accounts for every record, and nothing else changes: the day's
 * tables are those of the good objects alone. Large inputs are made as streams; the peak memory of the
 * largest is measured by the hostile bench (bench/hostile-bench.ts), not timed here.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { gunzipSync, createGzip } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSample, objectBody, type Sample } from '../../tools/sample/access-log-generator.js';
import { MAX_RECORD_BYTES } from '../../ingest/access-log/record-reader.js';
import { MAX_INFLATION_RATIO } from '../../ingest/batch/object-parser.js';
import { expectedDay } from '../support/oracle.js';
import { readDay, tempRoots, writeObjects } from '../support/job-fixture.js';
import { cli as runCli, events, type CliRun } from '../support/cli.js';
import { killedAt } from '../support/kill-run.js';

/** The CLI with only these settings (and PATH). */
const cli = (env: Record<string, string>, ...args: string[]): Promise<CliRun> => runCli({ PATH: process.env.PATH ?? '', ...env }, ...args);

const DAY = '2026-11-01';
const root = tempRoots();


/** `n` bytes from `make(i)` pieces, written as a stream (no large buffer in the test). */
async function writeStream(path: string, pieces: number, make: (i: number) => Buffer, gzip = false): Promise<void> {
  const body = Readable.from((function* () { for (let i = 0; i < pieces; i++) yield make(i); })());
  await (gzip ? pipeline(body, createGzip({ level: 9 }), createWriteStream(path)) : pipeline(body, createWriteStream(path)));
}

describe('hostile objects in the log directory', () => {
  let sample: Sample;
  let r: string;
  let run: CliRun;
  const logs = (): string => join(r, 'logs');
  const prefix = `${DAY}-23-59-59-`;
  beforeAll(async () => {
    sample = generateSample({ date: DAY, sessions: 60, seed: 5, truth: true, recordsPerObject: 200, automated: 0 });
    r = root();
    await writeObjects(logs(), sample.objects);
    const good = sample.objects[0]!;
    const lines = good.text.split('\n').filter(Boolean);
    // A gzip bomb: zeros past the inflation ratio.
    await writeStream(join(logs(), `${prefix}BOMB.gz`), 50, () => Buffer.alloc(1 << 20), true);
    // No newline at all, 5 MiB: one record, too long.
    await writeStream(join(logs(), `${prefix}NONEWLINE`), 5, () => Buffer.alloc(1 << 20, 'a'));
    // Binary: random bytes, 2 MiB.
    await writeStream(join(logs(), `${prefix}BINARY`), 2, randomish);
    // Line endings of a lone CR, which ends a record as LF does (contract §2).
    await writeFile(join(logs(), `${prefix}CRONLY`), lines.slice(0, 3).join('\r') + '\r');
    // Times before 1970, not at midnight, in an object delivered on the day (one named then would be of a delivery day no run asked for).
    const ping = lines.find((l) => / REST\.GET\.OBJECT p\.gif "GET \/p\.gif\?x-series=\w+&x-episode=\w+&x-session=[^& ]+[^"]*" 200 /.test(l))!;
    await writeFile(join(logs(), `${prefix}OLD`), ping.replace(/\[[^\]]+\]/, '[31/Dec/1969:23:59:58 +0000]') + '\n');
    // Links: to a file of pings outside the logs, to the logs' own folder (a loop), to a log in it.
    const outside = join(r, 'outside');
    await mkdir(outside, { recursive: true });
    await writeFile(join(outside, 'pings.log'), objectBody(sample.objects[1]!));
    await symlink(join(outside, 'pings.log'), join(logs(), `${prefix}LINKOUT`));
    await symlink(logs(), join(logs(), 'loop'));
    await symlink(join(logs(), good.key), join(logs(), `${prefix}LINKDUP`));
    // A FIFO.
    spawnSync('mkfifo', [join(logs(), `${prefix}FIFO`)]);
    run = await cli({ PINGROLL_LOGS: logs(), PINGROLL_OUTPUT: join(r, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(r, 'wh.duckdb')}` }, 'rollup', '--date', DAY);
  }, 120_000);

  it('quarantines the gzip bomb with its reason and exits 4; every other object is read', () => {
    expect(run.status, run.stderr).toBe(4);
    const unreadable = events(run).filter((e) => e.event === 'object.unreadable');
    expect(unreadable.map((e) => e.key)).toEqual([`${prefix}BOMB.gz`]);
    expect(String(unreadable[0]!.reason)).toMatch(new RegExp(`^gzip inflates past \\d+ bytes .*at most ${MAX_INFLATION_RATIO} times`));
  });

  it('reads no link and no FIFO, and names each in the log with why; no loop', () => {
    const skipped = events(run).filter((e) => e.event === 'object.skipped').map((e) => [e.key, String(e.reason).split(':')[0]]);
    expect(skipped.sort()).toEqual([
      [`${prefix}FIFO`, 'not a regular file (a FIFO)'], [`${prefix}LINKDUP`, 'a symbolic link'], [`${prefix}LINKOUT`, 'a symbolic link'], ['loop', 'a symbolic link'],
    ]);
    expect(run.stdout).toMatch(/4 entries of the log directory skipped/);
  });

  it('accounts for every record: the good objects\' day exactly, the hostile ones as rejects with reasons', async () => {
    const day = await readDay(join(r, 'out'), DAY);
    const want = expectedDay(sample.truth, DAY);
    // Pings from outside the logs (the link) and the linked duplicate are not counted.
    expect(day.episodes).toEqual(want.episodes);
    expect(day.series).toEqual(want.series);
    const rejects = (await readRejects(join(r, 'out', '_runs', `dt=${DAY}`, 'rejects.jsonl.gz'))).filter((x) => String(x.input).startsWith(prefix));
    const byInput = (k: string) => rejects.filter((x) => x.input === `${prefix}${k}`);
    const long = byInput('NONEWLINE');
    expect(long).toHaveLength(1);
    expect(long[0]).toMatchObject({ outcome: 'malformed', reason: `record longer than ${MAX_RECORD_BYTES} bytes`, at: 1, recordBytes: 5 << 20 });
    expect(String(long[0]!.record).length).toBeLessThanOrEqual(1024);
    expect(long[0]!.recordSha256).toBe(createHash('sha256').update(Buffer.alloc(5 << 20, 'a')).digest('hex'));
    const binary = byInput('BINARY');
    expect(binary.length).toBeGreaterThan(100);
    for (const x of binary) expect(Buffer.byteLength(String(x.record))).toBeLessThanOrEqual(3 * 16 * 1024);
    // The audit counts exactly the records the rejects file keeps, plus the good objects'.
    const audit = day.audit as Array<{ source: string; outcome: string; records: number }>;
    const malformed = audit.find((a) => a.source === 's3' && a.outcome === 'malformed')?.records ?? 0;
    const wantMalformed = want.audit.find((a) => a.source === 's3' && a.outcome === 'malformed')?.records ?? 0;
    expect(malformed - wantMalformed).toBe(rejects.filter((x) => x.outcome === 'malformed').length);
    // The object whose lines end in a lone CR is read as its three records (a copy of the first
    // object's: two not_ping, and a ping, counted and removed as a duplicate: contract §6).
    const delta = (outcome: string): number => (audit.find((a) => a.source === 's3' && a.outcome === outcome)?.records ?? 0) - (want.audit.find((a) => a.source === 's3' && a.outcome === outcome)?.records ?? 0);
    expect(byInput('CRONLY')).toEqual([]);
    expect([delta('not_ping'), delta('ping'), delta('duplicate')]).toEqual([2, 1, 1]);
  });

  it('stages a time before 1970 under its own day, and the run goes on', async () => {
    const staged = spawnSync('find', [join(r, 'out', '_staging'), '-path', '*dt=1969-12-31*'], { encoding: 'utf8' }).stdout.trim();
    expect(staged).not.toBe('');
  });
});

describe('files that are not access logs (no date in their names) in the log directory', () => {
  const DAY2 = '2026-11-02';
  const notLogs = ['README.txt', 'notes/photo.bin'];
  const today = new Date().toISOString().slice(0, 10);

  async function writeNotLogs(logs: string): Promise<void> {
    await writeFile(join(logs, 'README.txt'), 'This folder holds the S3 access logs.\n\nPlease put nothing else here.\n');
    await mkdir(join(logs, 'notes'), { recursive: true });
    await writeStream(join(logs, 'notes', 'photo.bin'), 1, randomish);
  }

  it('rejects their records under no day (_runs/undated/), counted there and in no day\'s audit, and says so once a run, not once a day', async () => {
    const r = root();
    const days = [DAY, DAY2].map((d, i) => generateSample({ date: d, sessions: 20, seed: 30 + i, truth: true, recordsPerObject: 200, automated: 0 }));
    for (const sample of days) await writeObjects(join(r, 'logs'), sample.objects);
    await writeNotLogs(join(r, 'logs'));
    const env = { PINGROLL_LOGS: join(r, 'logs'), PINGROLL_OUTPUT: join(r, 'out'), PINGROLL_WAREHOUSE: 'none' };
    const run = await cli(env, 'backfill', '--from', DAY, '--to', DAY2);
    expect(run.status, run.stderr).toBe(0);

    // Each day's tables and audit are its access logs' alone.
    for (const [i, d] of [DAY, DAY2].entries()) expect(await readDay(join(r, 'out'), d)).toEqual(expectedDay(days[i]!.truth, d));
    for (const d of [DAY, DAY2]) {
      const file = join(r, 'out', '_runs', `dt=${d}`, 'rejects.jsonl.gz');
      const rejects = existsSync(file) ? await readRejects(file) : [];
      expect(rejects.filter((x) => notLogs.includes(String(x.input)))).toEqual([]);
    }
    // Nothing staged under the day they were parsed (today), as it was before.
    expect(existsSync(join(r, 'out', '_state', 'days', `dt=${today}`))).toBe(false);

    // Rejected under no day: one batch's rejects and its counts.
    const undated = join(r, 'out', '_runs', 'undated');
    const files = (await readdir(undated)).sort();
    expect(files).toHaveLength(2);
    const [counts, kept] = files as [string, string];
    expect(counts).toMatch(/^\d{8}T\d{6}Z-[0-9a-f]+\.json$/);
    expect(kept).toBe(counts.replace(/\.json$/, '.jsonl.gz'));
    const rejects = await readRejects(join(undated, kept));
    const published = JSON.parse(await readFile(join(undated, counts), 'utf8')) as { records: { s3: Record<string, number> }; objects: string[]; rejects: string };
    expect(published.objects).toEqual(notLogs);
    expect(published.rejects).toBe(`_runs/undated/${kept}`);
    // Every record of theirs has one outcome, and each is in the rejects: the README's two lines, the binary's many.
    expect(published.records.s3).toEqual({ malformed: rejects.length });
    expect(rejects.filter((x) => x.input === 'README.txt').map((x) => [x.at, x.outcome, x.record])).toEqual([
      [1, 'malformed', 'This folder holds the S3 access logs.'], [3, 'malformed', 'Please put nothing else here.'],
    ]);
    expect(rejects.filter((x) => x.input === 'notes/photo.bin').length).toBeGreaterThan(100);
    expect(rejects.every((x) => notLogs.includes(String(x.input)))).toBe(true);
    // Their staged copy is gone: one copy of the raw records, under the rejects' retention.
    expect(spawnSync('find', [join(r, 'out', '_staging'), '-path', '*dt=undated*', '-name', '*.jsonl.gz'], { encoding: 'utf8' }).stdout.trim()).toBe('');

    // Said once for the run (two days), naming the objects.
    const said = events(run).filter((e) => e.event === 'records.undated');
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 'warn', objectCount: 2, objects: notLogs, records: rejects.length, rejects: `${join(r, 'out')}/_runs/undated/` });
    // Each object is parsed once: the next run has nothing to say.
    const again = await cli(env, 'rollup', '--date', DAY2);
    expect(again.status, again.stderr).toBe(0);
    expect(events(again).filter((e) => e.event === 'records.undated')).toEqual([]);
  });

  it('a run killed after the commit, before they were published: the next run publishes them and says so', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), generateSample({ date: DAY, sessions: 10, seed: 40, recordsPerObject: 200 }).objects);
    await writeNotLogs(join(r, 'logs'));
    const env = { PINGROLL_LOGS: join(r, 'logs'), PINGROLL_OUTPUT: join(r, 'out'), PINGROLL_WAREHOUSE: 'none' };
    const killed = await cli(killedAt(env, 'store:put:_runs/undated/:before'), 'rollup', '--date', DAY);
    expect(killed.status).toBe(null);
    expect(existsSync(join(r, 'out', '_runs', 'undated'))).toBe(false);
    const next = await cli(env, 'rollup', '--date', DAY);
    expect(next.status, next.stderr).toBe(0);
    expect(events(next).filter((e) => e.event === 'records.undated').map((e) => e.objects)).toEqual([notLogs]);
    const files = (await readdir(join(r, 'out', '_runs', 'undated'))).sort();
    expect(files.map((f) => f.replace(/^.*\./, ''))).toEqual(['json', 'gz']);
  });
});

describe('preflight', () => {
  it('exits 2 with one line, before listing anything, when the output or the warehouse cannot be written', async () => {
    const r = root();
    const sample = generateSample({ date: DAY, sessions: 5, seed: 6, recordsPerObject: 50 });
    await writeObjects(join(r, 'logs'), sample.objects);
    for (const [env, says] of [
      [{ PINGROLL_OUTPUT: '/proc/pingroll-out', PINGROLL_WAREHOUSE: `duckdb:${join(r, 'wh.duckdb')}` }, /^pingroll: cannot write to \/proc\/pingroll-out \(ENOENT\); set PINGROLL_OUTPUT/],
      [{ PINGROLL_OUTPUT: join(r, 'out'), PINGROLL_WAREHOUSE: 'duckdb:/proc/pingroll/wh.duckdb' }, /^pingroll: cannot write the warehouse \/proc\/pingroll\/wh\.duckdb \(ENOENT\); set PINGROLL_WAREHOUSE/],
    ] as const) {
      const run = await cli({ PINGROLL_LOGS: join(r, 'logs'), ...env }, 'rollup', '--date', DAY);
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr.trim().split('\n').at(-1)).toMatch(says);
      expect(events(run).some((e) => e.event === 'ingest.done' || e.event === 'run.start')).toBe(false);
    }
    expect(existsSync(join(r, 'out', '_state'))).toBe(false);
  });
});

/** Deterministic bytes that look like anything: some newlines, NULs, high bytes. */
function randomish(i: number): Buffer {
  const out = Buffer.alloc(1 << 20);
  let h = createHash('sha256').update(`seed-${i}`).digest();
  for (let at = 0; at < out.length; at += 32) {
    h.copy(out, at);
    h = createHash('sha256').update(h).digest();
  }
  return out;
}

async function readRejects(file: string): Promise<Array<Record<string, unknown>>> {
  const text = gunzipSync(await readFile(file)).toString('utf8');
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
}
