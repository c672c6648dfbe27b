/**
 * A run's figures where operators look: a CloudWatch Embedded Metric Format line (validated against
 * the format's schema and its rules), a Prometheus textfile (read by a Prometheus text parser), and a
 * JSON POST to PINGROLL_NOTIFY_URL (a local HTTP server) when a run fails, quarantines or leaves days
 * stale, retried and bounded, never changing the exit code. Real runs of the CLI.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Ajv } from 'ajv';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSample, redeliver, type LogObject } from '../../../tools/sample/access-log-generator.js';
import { notificationFor, notify, type Notification } from '../../../infra/observe/notify.js';
import { RunFigures } from '../../../infra/observe/run-figures.js';
import { emfLine } from '../../../infra/observe/emf.js';
import { writePrometheusTextfile } from '../../../infra/observe/prometheus-textfile.js';
import { projectFile } from '../../../lib/project-file.js';
import { cli, events, type CliRun } from '../../support/cli.js';
import { tempRoots, writeObjects } from '../../support/job-fixture.js';

const DAY = '2026-11-01';
const root = tempRoots();

interface Posted { body: Notification; status: number }

/** A local endpoint that answers each POST with the next of `statuses` (then 200), recording what came. */
async function hook(): Promise<{ url: string; posted: Posted[]; answer: number[]; close(): Promise<void> }> {
  const posted: Posted[] = [];
  const answer: number[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString(); });
    req.on('end', () => {
      const status = answer.shift() ?? 200;
      posted.push({ body: JSON.parse(body) as Notification, status });
      res.writeHead(status);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, posted, answer, close: () => new Promise((r) => server.close(() => r())) };
}

const emfSchema = JSON.parse(await readFile(projectFile('test/fixtures/emf-schema.json'), 'utf8')) as object;
const validate = new Ajv({ strict: false }).compile(emfSchema);

/** The run's EMF line, checked against the schema and the rules it cannot say: every metric and dimension member at the root, numbers and strings. */
function emfOf(run: CliRun): Record<string, unknown> {
  const lines = run.stdout.split('\n').filter((l) => l.startsWith('{"_aws"'));
  expect(lines).toHaveLength(1);
  const doc = JSON.parse(lines[0]!) as Record<string, unknown> & { _aws: { CloudWatchMetrics: Array<{ Namespace: string; Dimensions: string[][]; Metrics: Array<{ Name: string }> }> } };
  expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
  for (const d of doc._aws.CloudWatchMetrics) {
    for (const m of d.Metrics) expect(typeof doc[m.Name], m.Name).toBe('number');
    for (const set of d.Dimensions) for (const name of set) expect(typeof doc[name], name).toBe('string');
  }
  return doc;
}

/** The textfile's samples: `name{command}` to value. */
async function textfile(file: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const f of parsePrometheusTextFormat(await readFile(file, 'utf8'))) {
    expect(f.type).toBe('GAUGE');
    expect(f.help.length).toBeGreaterThan(0);
    for (const m of f.metrics) out.set(`${f.name}{${m.labels?.command}}`, Number(m.value));
  }
  return out;
}

describe('metrics and notifications', () => {
  let endpoint: Awaited<ReturnType<typeof hook>>;
  beforeAll(async () => { endpoint = await hook(); });
  afterAll(async () => { await endpoint.close(); });

  it('a rollup says its figures as EMF and in the textfile; a run that quarantines and leaves a day stale also notifies, retried, and keeps the last success', async () => {
    const r = root();
    const sample = generateSample({ date: DAY, sessions: 60, seed: 71, truth: true, recordsPerObject: 100, lateShare: 0 });
    await writeObjects(join(r, 'logs'), sample.objects);
    const prom = join(r, 'metrics', 'pingroll.prom');
    await mkdir(join(r, 'metrics'));
    const env = {
      PATH: process.env.PATH ?? '', PINGROLL_LOGS: join(r, 'logs'), PINGROLL_OUTPUT: join(r, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(r, 'wh.duckdb')}`,
      PINGROLL_METRICS_EMF: 'on', PINGROLL_PROMETHEUS_FILE: prom, PINGROLL_NOTIFY_URL: endpoint.url,
    };
    const startedAt = Math.floor(Date.now() / 1000);
    const first = await cli(env, 'rollup', '--date', DAY);
    const endedAt = Math.ceil(Date.now() / 1000);
    expect(first.status, first.stderr).toBe(0);
    const pings = Number(/: (\d+) pings/.exec(first.stdout)![1]);
    const manifest = JSON.parse(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json'), 'utf8')) as { outcomes: Record<string, Record<string, number>> };
    const rejects = Object.values(manifest.outcomes.s3!).reduce((a, b) => a + b, 0) - manifest.outcomes.s3!.ping!;
    expect(rejects).toBeGreaterThan(0);
    const emf = emfOf(first);
    expect(emf).toMatchObject({ Command: 'rollup', ExitCode: 0, Success: 1, Failure: 0, Pings: pings, RecordsRead: sample.records, ObjectsParsed: sample.objects.length, Rejects: rejects, QuarantinedObjects: 0, StaleDays: 0, Days: [DAY] });
    expect(emf.LagSeconds).toBeGreaterThan(0);
    // The share of the published day's records (every outcome) that are not pings.
    const dayRecords = Object.values(manifest.outcomes.s3!).reduce((a, b) => a + b, 0);
    expect(emf.RejectsShare).toBeCloseTo((100 * rejects) / dayRecords, 2);
    // Nothing to say: no notification.
    expect(endpoint.posted).toEqual([]);
    const t1 = await textfile(prom);
    expect(t1.get('pingroll_last_run_exit_code{rollup}')).toBe(0);
    expect(t1.get('pingroll_last_run_pings{rollup}')).toBe(pings);
    expect(t1.get('pingroll_last_run_rejects{rollup}')).toBe(rejects);
    // When the run ended: between the moments the test started and saw the end of it.
    const success = t1.get('pingroll_last_success_timestamp_seconds{rollup}')!;
    expect(success).toBeGreaterThanOrEqual(startedAt);
    expect(success).toBeLessThanOrEqual(endedAt);

    // The day before, published (empty) before its records arrive; then they arrive (it is now stale), and an object that cannot be read.
    expect((await cli(env, 'rollup', '--date', '2026-10-31')).status).toBe(0);
    const lastSuccess = (await textfile(prom)).get('pingroll_last_success_timestamp_seconds{rollup}')!;
    expect(lastSuccess).toBeGreaterThanOrEqual(success);
    const before = generateSample({ date: '2026-10-31', sessions: 10, seed: 72, recordsPerObject: 100, lateShare: 0 });
    // Delivered after everything listed so far (a listing starts from the latest delivery time it saw).
    const newest = Math.max(...sample.objects.map((o) => o.deliveredMs));
    const moved = before.objects.map((o, i): LogObject => redeliver(o, newest + 60_000 + i * 1000));
    await writeObjects(join(r, 'logs'), moved);
    await writeFile(join(r, 'logs', `${new Date(newest + 120_000).toISOString().slice(0, 19).replace(/[-T:]/g, '-')}-BROKEN.gz`), gzipSync(Buffer.from('x'.repeat(10_000))).subarray(0, 40));
    endpoint.answer.push(500, 503);
    const second = await cli(env, 'rollup', '--date', DAY);
    expect(second.status).toBe(4);
    const line = second.stderr.split('\n').find((l) => l.startsWith('pingroll: '))!.slice('pingroll: '.length);
    // Stale: the days published before that the new records fell on, but the one rolled up: the day
    // before (any other day its sessions reached was never published, so it is not stale).
    const touched = events(second).find((e) => e.event === 'ingest.done')!.days as string[];
    expect(touched).toContain('2026-10-31');
    const staleDays = 1;
    // Delivered on the third attempt; the run's exit code is its own.
    expect(endpoint.posted.map((p) => p.status)).toEqual([500, 503, 200]);
    expect(endpoint.posted[2]!.body).toMatchObject({ source: 'pingroll', command: 'rollup', days: [DAY], exitCode: 4, reason: line, counts: { quarantinedObjects: 1, staleDays } });
    // Exit 4 published the day: a success to the NoSuccessfulRollup alarm, the quarantine alarmed apart (QuarantinedObjects).
    expect(emfOf(second)).toMatchObject({ ExitCode: 4, Success: 1, Failure: 0, QuarantinedObjects: 1, StaleDays: staleDays });
    const t2 = await textfile(prom);
    expect(t2.get('pingroll_last_run_exit_code{rollup}')).toBe(4);
    // Exit 4 is a success to the textfile too, as to the EMF metric (issue #53: no false alarm on a night that quarantined).
    expect(t2.get('pingroll_last_success_timestamp_seconds{rollup}')).toBe(t2.get('pingroll_last_run_timestamp_seconds{rollup}'));
    expect(t2.get('pingroll_last_run_timestamp_seconds{rollup}')).toBeGreaterThan(lastSuccess);
    const quarantinedSuccess = t2.get('pingroll_last_success_timestamp_seconds{rollup}')!;

    // Another command's run keeps the rollup's series beside its own.
    const ingest = await cli(env, 'ingest');
    expect(ingest.status).toBe(4);
    const t3 = await textfile(prom);
    expect(t3.get('pingroll_last_run_exit_code{ingest}')).toBe(4);
    expect(t3.get('pingroll_last_success_timestamp_seconds{rollup}')).toBe(quarantinedSuccess);
    expect(t3.get('pingroll_last_success_timestamp_seconds{ingest}')).toBe(t3.get('pingroll_last_run_timestamp_seconds{ingest}'));
  }, 120_000);

  it('counts the days a run published provisional or settled, and the objects full listings found late, as the textfile and EMF say them', async () => {
    const f = new RunFigures();
    f.command = 'rollup';
    f.observe('ingest.done', { records: 10, objects: 2, lateObjects: 2 });
    f.observe('day.done', { day: DAY, state: 'provisional', pings: 5 });
    f.observe('day.settled', { day: '2026-10-28', state: 'complete' });
    f.observe('day.settled', { day: '2026-10-30', state: 'provisional' });
    expect([f.provisionalDays, f.settledDays, f.lateObjects]).toEqual([2, 1, 2]);
    expect(JSON.parse(emfLine(f, 0, Date.now()))).toMatchObject({ ProvisionalDays: 2, SettledDays: 1, LateObjects: 2 });
    // Success as the alarms count it: 0, and 4 (published, objects quarantined); 1, 2 and 3 are failures.
    for (const [code, success] of [[0, 1], [4, 1], [1, 0], [2, 0], [3, 0]] as const) {
      expect(JSON.parse(emfLine(f, code, Date.now())), `exit ${code}`).toMatchObject({ ExitCode: code, Success: success, Failure: 1 - success });
    }
    const file = join(root(), 'figures.prom');
    await writePrometheusTextfile(file, f, 0, Date.now());
    const t = await textfile(file);
    expect([t.get('pingroll_last_run_provisional_days{rollup}'), t.get('pingroll_last_run_settled_days{rollup}'), t.get('pingroll_last_run_late_objects{rollup}')]).toEqual([2, 1, 2]);
  });

  it('notifies stale days left by a backfill (make rollup-stale), not by a daily rollup, whose yesterday late records make stale as a matter of course', () => {
    const figures = (command: string, staleDays: number): RunFigures => Object.assign(new RunFigures(), { command, staleDays });
    expect(notificationFor(figures('rollup', 1), 0, null, Date.now())).toBeNull();
    expect(notificationFor(figures('ingest', 2), 0, null, Date.now())).toBeNull();
    expect(notificationFor(figures('backfill', 2), 0, null, Date.now())).toMatchObject({ exitCode: 0, reason: '2 days received records after they were published: run pingroll backfill --stale', counts: { staleDays: 2 } });
    expect(notificationFor(figures('rollup', 0), 1, 'the output is not writable', Date.now())).toMatchObject({ exitCode: 1, reason: 'the output is not writable' });
  });

  it('a bad setting is exit 2 before anything runs; an endpoint that does not answer is given up after its attempts, each cut at its timeout', async () => {
    const r = root();
    const bad = await cli({ PATH: process.env.PATH ?? '', PINGROLL_LOGS: join(r, 'logs'), PINGROLL_OUTPUT: join(r, 'out'), PINGROLL_PROMETHEUS_FILE: 'metrics.txt' }, 'rollup', '--date', DAY);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/PINGROLL_PROMETHEUS_FILE='metrics.txt' must be an absolute path ending in \.prom/);
    let requests = 0;
    const silent = createServer(() => { requests++; /* never answers */ });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      // Two attempts, each given up at its timeout (a hang would be the test's own timeout).
      const why = await notify(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/`, { source: 'pingroll' } as Notification, { attempts: 2, timeoutMs: 200, backoffMs: 10 });
      expect(why).toBe('no answer within 200 ms');
      expect(requests).toBe(2);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});
