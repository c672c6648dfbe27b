/**
 * The night that is deployed is the night that is tested (issue #53): the CDK app synthesized with a
 * context, as `cdk synth` runs it; its state machine walked for the nightly schedule's input and for
 * a backfill's `{"dates": [...]}`, each Batch job run as its job definition says (command,
 * parameters, environment, array size); then the month's job as its EventBridge rule starts it.
 * The stand-ins: moto's S3 (the logs in the stack's own layout, PartitionedPrefix by EventTime) and
 * Glue, DynamoDB Local (a legacy monthly table), PostgreSQL playing Redshift behind a local Data API.
 * The figures are the independent oracle's (test/support/oracle.ts).
 *
 * The jobs are processes on the machine's clock, so the days are taken in the month before today's.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { BatchWriteItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateDatabaseCommand, CreateTableCommand, GlueClient } from '@aws-sdk/client-glue';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATASETS } from '../../datasets/registry.js';
import { readManifest } from '../../export/manifest.js';
import type { DuckDBConnection, DuckDBInstance as Duck } from '@duckdb/node-api';
import { DuckDBInstance } from '../../lib/duckdb-engine.js';
import { addDays } from '../../lib/utc-day.js';
import { S3ObjectStore } from '../../state/object-store/s3-object-store.js';
import { generateSample, objectBody, type LogObject, type TruthRecord } from '../../tools/sample/access-log-generator.js';
import { machineOf, resolveValue, runJob, runMachine, synthApp, type NightOptions, type Refs, type SynthTemplate } from './state-machine.js';
import { startDynamoLocal, type DynamoLocal } from '../../test/support/dynamodb-local.js';
import { inEventTimeFolder, query, readStoreDay, tempDir } from '../../test/support/job-fixture.js';
import { startMoto, type Moto } from '../../test/support/moto.js';
import { expectedDay, expectedMonth } from '../../test/support/oracle.js';
import { startPostgres, type Postgres } from '../../test/support/postgres.js';
import { handlerStub, startRedshiftServers, type RedshiftServers } from '../../test/support/redshift-data-server.js';
import { startRecordingProxy, type RecordingProxy } from '../../test/support/recording-proxy.js';
import { checkRole, policiesOf, requestsOf } from './iam-simulation.js';
import { redshiftOnPostgres } from '../../test/support/redshift-on-postgres.js';

const ACCOUNT = '123456789012';
const WORKGROUP_ARN = `arn:aws:redshift-serverless:us-east-1:${ACCOUNT}:workgroup/01234567-89ab-cdef-0123-456789abcdef`;
const VIEWER_KEY = 'deployed-night-viewer-key-0123456789';
const ADMIN_SECRET = `arn:aws:secretsmanager:us-east-1:${ACCOUNT}:secret:redshift-admin-AbCdEf`;
// The month before today's (the jobs run on the machine's clock; the month job rolls up that month).
const today = new Date().toISOString().slice(0, 10);
const MONTH = (() => { const d = new Date(`${today.slice(0, 7)}-01T00:00:00Z`); d.setUTCMonth(d.getUTCMonth() - 1); return d.toISOString().slice(0, 7); })();
const DAYS = [1, 2, 3].map((n) => `${MONTH}-0${n}`);
const BUCKETS = { logs: 'access-logs', output: 'rollups', pings: 'pings' };

/** The stack's own log layout: PartitionedPrefix by EventTime, every name of a day `YYYY-MM-DD-00-00-00-UNIQUE` (S3's unique part: hex, spread). */
function eventTimeLayout(day: string, o: LogObject, n: number): LogObject {
  const named = inEventTimeFolder(o, day, n, ACCOUNT, BUCKETS.pings);
  return { ...named, key: `logs/${named.key}` };
}

describe('the deployed night, run as the synthesized template runs it', () => {
  let moto: Moto, ddb: DynamoLocal, pg: Postgres, duck: Duck, c: DuckDBConnection, servers: RedshiftServers;
  let template: SynthTemplate;
  let proxies: RecordingProxy[] = [];
  let night: NightOptions;
  const root = tempDir();
  const truth: TruthRecord[] = [];
  const logKeys: string[] = [];
  const callsOf: Array<{ definition: string; calls: Array<{ client: string; command: string; input: Record<string, unknown> }> }> = [];
  let seen: number[] = [];

  beforeAll(async () => {
    [moto, ddb, pg] = await Promise.all([startMoto(Object.values(BUCKETS)), startDynamoLocal(), startPostgres()]);
    duck = await DuckDBInstance.create(':memory:');
    c = await duck.connect();
    template = synthApp({
      shards: 2, redshiftWorkgroup: 'analytics', redshiftWorkgroupArn: WORKGROUP_ARN, redshiftDatabase: 'dev',
      alarmEmail: 'ops@example.com', ddbTables: 'pings_{yyyy}_{mm}', stage: 'prod', redshiftAdminSecretArn: ADMIN_SECRET,
      // Closing and retention configured, as the stack passes them to the jobs.
      closeAfterDays: 5, retentionDays: 400,
    }, join(root, 'cdk.out'));
    const refs: Refs = (id, attr) => {
      if (template.Resources[id]?.Type === 'AWS::S3::Bucket') {
        const name = id.startsWith('AccessLogs') ? BUCKETS.logs : id.startsWith('Output') ? BUCKETS.output : id.startsWith('Pings') ? BUCKETS.pings : id.toLowerCase();
        return attr === 'Arn' ? `arn:aws:s3:::${name}` : attr ? `${name}.s3.us-east-1.amazonaws.com` : name;
      }
      if (attr === 'Arn') return `arn:aws:iam::${ACCOUNT}:role/${id}`;
      return id;
    };

    // The logs of three days, in the stack's layout; a legacy monthly table holding pings of two of them.
    const s3 = moto.client();
    for (const [i, day] of DAYS.entries()) {
      const objects = generateSample({ date: day, sessions: 12, seed: 530 + i, truth: true, recordsPerObject: 120, lateShare: 0 }).objects.map((o, n) => eventTimeLayout(day, o, i * 1000 + n));
      for (const o of objects) await s3.send(new PutObjectCommand({ Bucket: BUCKETS.logs, Key: o.key, Body: objectBody(o) }));
      logKeys.push(...objects.map((o) => o.key));
      truth.push(...objects.flatMap((o) => o.truth));
    }
    const table = `pings_${MONTH.replace('-', '_')}`;
    await ddb.createPingTable(table);
    const items = DAYS.slice(0, 2).flatMap((day, d) => Array.from({ length: 6 }, (_, i) => {
      const ms = Date.parse(`${day}T10:00:00Z`) + i * 60_000;
      const ts = `${Math.floor(ms / 1000)}${'ab'}`;
      const session = `legacy-${d}`;
      truth.push({ source: 'dynamodb', outcome: 'ping', eventTimeMs: ms, day, series: 's9', episode: 'e1', session, user: null, naturalKey: `k:${ts}|${session}`, dedupeKey: `k:${ts}|${session}` } as TruthRecord);
      return { PutRequest: { Item: { ts_shard: { S: ts }, session_id: { S: session }, series: { S: 's9' }, episode: { S: 'e1' } } } };
    }));
    await ddb.client().send(new BatchWriteItemCommand({ RequestItems: { [table]: items } }));
    // The Glue tables the stack's catalog makes (the jobs register each day's partitions in them).
    const glue = new GlueClient({ endpoint: moto.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'moto', secretAccessKey: 'moto' } });
    await glue.send(new CreateDatabaseCommand({ DatabaseInput: { Name: 'pingroll_prod' } }));
    for (const d of DATASETS) {
      await glue.send(new CreateTableCommand({ DatabaseName: 'pingroll_prod', TableInput: {
        Name: d.name, TableType: 'EXTERNAL_TABLE', PartitionKeys: [{ Name: 'dt', Type: 'string' }],
        StorageDescriptor: { Location: `s3://${BUCKETS.output}/pingroll/${d.name}/`, Columns: [{ Name: d.columns[0]!.name, Type: 'date' }],
          InputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat', SerdeInfo: { SerializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe' } },
      } }));
    }
    // Redshift: PostgreSQL behind a local Data API. Nothing is made in it beforehand: the stack's
    // bootstrap job makes the schema, the jobs' user (IAMR:<the jobs' role>) and its grants, as the
    // administrator; every job then runs as that user, with those rights only.
    const jobRole = Object.keys(template.Resources).find((id) => template.Resources[id]!.Type === 'AWS::IAM::Role' && id.startsWith('JobRole'))!;
    const { stub, handlers } = handlerStub();
    redshiftOnPostgres(stub as never, pg, new S3ObjectStore(s3, BUCKETS.output, 'pingroll/'), c, root, null, { jobsUser: `IAMR:${jobRole}`, adminSecret: ADMIN_SECRET });
    servers = await startRedshiftServers(handlers);
    // The jobs reach S3, Glue and DynamoDB through recording proxies: every call they make is seen.
    proxies = await Promise.all([startRecordingProxy(moto.endpoint), startRecordingProxy(ddb.endpoint)]);
    const [s3Proxy, ddbProxy] = proxies as [RecordingProxy, RecordingProxy];

    night = {
      template, refs,
      env: { PATH: process.env.PATH ?? '', HOME: root, ...servers.env, AWS_ENDPOINT_URL_S3: s3Proxy.endpoint, AWS_ENDPOINT_URL_GLUE: s3Proxy.endpoint, AWS_ENDPOINT_URL_DYNAMODB: ddbProxy.endpoint,
        AWS_ACCESS_KEY_ID: 'pingrolltest', AWS_SECRET_ACCESS_KEY: 'pingrolltest', AWS_REGION: 'us-east-1' },
      secrets: { PINGROLL_VIEWER_KEY: VIEWER_KEY },
      async sdkTask(service, action, p) {
        if (service !== 's3' || action !== 'putObject') throw new Error(`${service}:${action} is not played`);
        await s3.send(new PutObjectCommand({ Bucket: String(p.Bucket), Key: String(p.Key), Body: String(p.Body ?? '') }));
      },
      // Each job's calls: those made since the job before it ended (jobs run one after another).
      onJob: (run) => {
        const now = [...proxies.map((x) => x.calls.length), servers.calls.length];
        const sources = [...proxies.map((x) => x.calls), servers.calls];
        callsOf.push({ definition: run.definition, calls: sources.flatMap((list, i) => list.slice(seen[i] ?? 0, now[i])) });
        seen = now;
      },
    };
  }, 240_000);

  afterAll(async () => {
    for (const p of proxies) await p.stop();
    await servers?.stop();
    c?.closeSync();
    duck?.closeSync();
    await pg?.close();
    await ddb?.stop();
    await moto?.stop();
    await rm(root, { recursive: true, force: true });
  });

  /** The output bucket's store, as the jobs write it. */
  const outputStore = () => new S3ObjectStore(moto.client(), BUCKETS.output, 'pingroll/');
  /** A day's tables as published on S3, read as the directory runs' are. */
  const publishedDay = (day: string) => readStoreDay(outputStore(), day, join(root, `read-${day}-${Date.now()}`));

  it('synthesizes through the app: a state machine whose every Batch task names a job definition of the template', () => {
    const m = machineOf(template, (id) => id);
    const tasks = JSON.stringify(m).match(/"JobDefinition":"([^"]+)"/g) ?? [];
    expect(tasks.length).toBeGreaterThanOrEqual(4);
    for (const t of tasks) expect(template.Resources[/"JobDefinition":"([^"]+)"/.exec(t)![1]!]?.Type).toBe('AWS::Batch::JobDefinition');
  });

  it('a night (the schedule\'s input): the shards, the day\'s rollup into Redshift and the stale days; the day has its logs and its legacy table\'s pings', async () => {
    const ran = await runMachine(night, { time: `${addDays(DAYS[0]!, 1)}T02:30:00Z` });
    // The bootstrap (as the administrator), the shards, the day, the stale days.
    expect(ran.map((r) => [r.array, r.exits])).toEqual([[null, [0]], [2, [0, 0]], [null, [0]], [null, [0]]]);
    expect(ran[0]!.command.slice(4)).toEqual(['warehouse', 'bootstrap', '--grant-to', expect.stringMatching(/^IAMR:JobRole/)]);
    expect(ran[1]!.command.slice(4)).toEqual(['ingest', '--wait', '600', '--date', DAYS[0]]);
    // Each shard parsed its own share of the day's objects (the EventTime day's parts split between them).
    const parsed = ran[1]!.stdout.map((out) => Number(/: (\d+) log objects parsed/.exec(out)?.[1]));
    expect(parsed.every((n) => n > 0), parsed.join(', ')).toBe(true);
    expect(await publishedDay(DAYS[0]!)).toEqual(expectedDay(truth, DAYS[0]!));
    const rows = (await pg.query<{ pings: number }>(`SELECT SUM(pings)::BIGINT AS pings FROM pingroll.daily_series_stats WHERE day = DATE '${DAYS[0]}'`)).rows;
    expect(rows[0]!.pings).toBe(expectedDay(truth, DAYS[0]!).series.reduce((n, s) => n + Number((s as { pings: number }).pings), 0));
  }, 300_000);

  it('a backfill of three dates ({"dates": [...]}): the shards are given the three days, then each day is rolled up, exact', async () => {
    const ran = await runMachine(night, { dates: DAYS });
    expect(ran.map((r) => r.exits.every((e) => e === 0))).toEqual([true, true, true, true, true, true]);
    expect(ran[1]!.command.slice(4)).toEqual(['ingest', '--wait', '600', '--date', DAYS.join(',')]);
    for (const day of DAYS) expect(await publishedDay(day), day).toEqual(expectedDay(truth, day));
    // The ping-id window inside Redshift (rollup/engines/redshift/window-table.ts), as the jobs' user
    // kept it: each day but the last COPYed by the rollup of the day after it, as its manifest names it.
    const named = await Promise.all(DAYS.slice(0, -1).map(async (day) => {
      const { pingIds } = (await readManifest(outputStore(), day))!;
      return { day, file: pingIds!.key, n: pingIds!.rows };
    }));
    expect(named.every((f) => f.n > 0)).toBe(true);
    expect((await pg.query(`SELECT TO_CHAR(day, 'YYYY-MM-DD') AS day, file, COUNT(*)::BIGINT AS n FROM pingroll.window_ping_ids GROUP BY day, file ORDER BY day`)).rows).toEqual(named);
  }, 300_000);

  it('the month\'s job, as its EventBridge rule starts it: the month before today\'s, exact', async () => {
    const [id] = Object.entries(template.Resources).find(([, r]) => r.Type === 'AWS::Batch::JobDefinition' && JSON.stringify(r.Properties.ContainerProperties.Command).includes('--month'))!;
    const run = await runJob(night, { JobDefinition: id });
    expect(run.exits).toEqual([0]);
    const dir = join(root, 'month');
    const key = `monthly_series_stats/dt=${MONTH}-01/part-00000.parquet`;
    await mkdir(join(dir, `monthly_series_stats/dt=${MONTH}-01`), { recursive: true });
    await outputStore().download(key, join(dir, key));
    const cols = 'month::VARCHAR AS month, series_id, episodes, pings, sessions, viewers, minutes_watched, days_watched';
    expect(await query(`SELECT ${cols} FROM read_parquet('${join(dir, key)}', hive_partitioning = false) ORDER BY series_id`)).toEqual(expectedMonth(truth, MONTH));
  }, 300_000);

  it('every call of these runs, each GET included, is allowed by the jobs\' role as synthesized', async () => {
    const resources = (type: string) => Object.fromEntries(Object.entries(template.Resources).filter(([, r]) => r.Type === type));
    const calls = callsOf.flatMap((j) => j.calls);
    // Every log object was read by a GET through the proxy (the lean GET too).
    const read = new Set(calls.filter((x) => x.command === 'GetObject' && x.input.Bucket === BUCKETS.logs).map((x) => String(x.input.Key)));
    expect(logKeys.filter((k) => !read.has(k))).toEqual([]);
    expect([...new Set(calls.map((x) => x.client))].sort()).toEqual(['DynamoDBClient', 'GlueClient', 'RedshiftDataClient', 'RedshiftServerlessClient', 'S3Client']);
    // The bootstrap job's calls are its role's; every other job's, the jobs' role's.
    for (const role of ['JobRole', 'BootstrapRole']) {
      const roleId = Object.keys(template.Resources).find((id) => template.Resources[id]!.Type === 'AWS::IAM::Role' && id.startsWith(role))!;
      const mine = callsOf.filter((j) => j.definition.startsWith('Bootstrap') === (role === 'BootstrapRole')).flatMap((j) => j.calls);
      expect(mine.length, role).toBeGreaterThan(role === 'JobRole' ? 100 : 5);
      const { denied } = await checkRole(policiesOf({ findResources: resources } as never, roleId, (v) => resolveValue(v, night.refs)), `arn:aws:iam::${ACCOUNT}:role/${roleId}`, mine.flatMap(requestsOf));
      expect(denied, role).toEqual([]);
    }
  }, 120_000);
});
