/**
 * The jobs the deployment runs (deploy/lib/pingroll-stack.ts), run here with its settings against the
 * local stand-ins (moto's S3 and Glue, DynamoDB Local, Redshift played by PostgreSQL through the mocked
 * Data API), every AWS call recorded: what deploy/test/iam.test.ts holds the stack's policies to.
 * The bootstrap role: `warehouse bootstrap`, first, into the PostgreSQL that plays Redshift; the jobs'
 * role: the ingest shards, the day's rollup and load, the stale days, the month, as the user the
 * bootstrap made, with the rights it granted.
 */
import { join } from 'node:path';
import { BatchWriteItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateDatabaseCommand, CreateTableCommand, GlueClient } from '@aws-sdk/client-glue';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { GetNamespaceCommand, GetWorkgroupCommand, RedshiftServerlessClient, UpdateNamespaceCommand } from '@aws-sdk/client-redshift-serverless';
import { mockClient } from 'aws-sdk-client-mock';
import { DATASETS } from '../../datasets/registry.js';
import { loadConfig } from '../../infra/config.js';
import { makeS3Client } from '../../infra/aws/s3-client.js';
import { runBackfill } from '../../jobs/backfill.js';
import { runDailyJob } from '../../jobs/daily.js';
import { runIngestJob } from '../../jobs/ingest.js';
import { runMonthRollup } from '../../jobs/month.js';
import { DuckDBInstance } from '../../lib/duckdb-engine.js';
import { memoryLog } from '../../lib/log.js';
import { S3ObjectStore } from '../../state/object-store/s3-object-store.js';
import { generateSample, objectBody, sampleEpisodeCatalog } from '../../tools/sample/access-log-generator.js';
import { recordAwsCalls, type AwsCall } from './aws-calls.js';
import { startDynamoLocal } from './dynamodb-local.js';
import { onBackends, rm, setEnv, tempDir } from './job-fixture.js';
import { startMoto } from './moto.js';
import { startPostgres } from './postgres.js';
import { redshiftOnPostgres } from './redshift-on-postgres.js';

export const ACCOUNT = '123456789012';
export const WORKGROUP_ARN = `arn:aws:redshift-serverless:us-east-1:${ACCOUNT}:workgroup/01234567-89ab-cdef-0123-456789abcdef`;
export const COPY_ROLE = `arn:aws:iam::${ACCOUNT}:role/pingroll-copy`;
export const ADMIN_SECRET = `arn:aws:secretsmanager:us-east-1:${ACCOUNT}:secret:redshift-admin-AbCdEf`;

/** A call of the Redshift Data or Serverless API (mocked), as the code sent it. */
export interface MockedCall { client: string; command: string; input: Record<string, unknown> }

export interface StackCalls { jobs: Array<AwsCall | MockedCall>; bootstrap: Array<AwsCall | MockedCall> }

export async function runStackJobs(): Promise<StackCalls> {
  const moto = await startMoto(['logs', 'rollups']);
  const ddb = await startDynamoLocal();
  const pg = await startPostgres();
  const duck = await DuckDBInstance.create(':memory:');
  const c = await duck.connect();
  const root = tempDir();
  const env = {
    ...moto.env, ...ddb.env, AWS_ENDPOINT_URL_GLUE: moto.env.AWS_ENDPOINT_URL_S3!,
    PINGROLL_LOGS: 's3://logs/logs/', PINGROLL_OUTPUT: 's3://rollups/pingroll/', PINGROLL_WAREHOUSE: 'redshift', PINGROLL_ROLLUP: 'redshift',
    PINGROLL_REDSHIFT_WORKGROUP: 'analytics', PINGROLL_REDSHIFT_DATABASE: 'dev', PINGROLL_REDSHIFT_IAM_ROLE: COPY_ROLE, PINGROLL_REDSHIFT_WAIT: '30',
    PINGROLL_GLUE_DATABASE: 'pingroll_prod', PINGROLL_PRIVACY: 'mask', PINGROLL_REJECTS_RETENTION_DAYS: '90', PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}',
    PINGROLL_EPISODE_CATALOG: 's3://rollups/catalog/episodes.csv', PINGROLL_VIEWER_KEY: 'stack-jobs-viewer-key-0123456789', PINGROLL_PING_KEYS: 'p.gif',
  };
  const restore = setEnv(env);
  const rs = mockClient(RedshiftDataClient);
  const serverless = mockClient(RedshiftServerlessClient);
  try {
    // What is there before the jobs run: the logs, the catalog, the Glue tables, a legacy table.
    const s3 = makeS3Client({ s3EndpointOverride: true });
    for (const [i, date] of ['2026-11-01', '2026-11-02'].entries()) {
      for (const o of generateSample({ date, sessions: 15, seed: 70 + i, recordsPerObject: 150, prefix: 'logs/' }).objects) await s3.send(new PutObjectCommand({ Bucket: 'logs', Key: o.key, Body: objectBody(o) }));
    }
    await s3.send(new PutObjectCommand({ Bucket: 'rollups', Key: 'catalog/episodes.csv', Body: sampleEpisodeCatalog() }));
    const glue = new GlueClient({ endpoint: moto.env.AWS_ENDPOINT_URL_S3, region: 'us-east-1' });
    await glue.send(new CreateDatabaseCommand({ DatabaseInput: { Name: 'pingroll_prod' } }));
    for (const d of DATASETS) {
      await glue.send(new CreateTableCommand({ DatabaseName: 'pingroll_prod', TableInput: {
        Name: d.name, TableType: 'EXTERNAL_TABLE', PartitionKeys: [{ Name: 'dt', Type: 'string' }],
        StorageDescriptor: { Location: `s3://rollups/pingroll/${d.name}/`, Columns: [{ Name: d.columns[0]!.name, Type: 'date' }],
          InputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat', SerdeInfo: { SerializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe' } },
      } }));
    }
    await ddb.createPingTable('pings_2026_11');
    const t0 = Date.parse('2026-11-01T10:00:00Z');
    await ddb.client().send(new BatchWriteItemCommand({ RequestItems: { pings_2026_11: Array.from({ length: 5 }, (_, i) => ({
      PutRequest: { Item: { ts_shard: { S: `${Math.floor(t0 / 1000) + i * 60}a${i}` }, session_id: { S: 'legacy-1' }, series: { S: 's9' }, episode: { S: 'e1' } } },
    })) } }));
    // Redshift, played by PostgreSQL: the administrator's secret runs as its superuser, anything else as the jobs' user.
    redshiftOnPostgres(rs, pg, new S3ObjectStore(s3, 'rollups', 'pingroll/'), c, root, null, { jobsUser: 'IAMR:JobRole', adminSecret: ADMIN_SECRET });
    const mocked = (m: typeof rs | typeof serverless, client: string): MockedCall[] => m.calls().map((call) => ({ client, command: (call.args[0] as { constructor: { name: string } }).constructor.name.replace(/Command$/, ''), input: (call.args[0] as unknown as { input: Record<string, unknown> }).input }));

    // The bootstrap role first, as the stack runs it before the night: warehouse bootstrap, as the
    // administrator. It makes the schemas, the jobs' user and its grants in Postgres: the jobs below
    // have those rights and no others.
    serverless.on(GetWorkgroupCommand).resolves({ workgroup: { namespaceName: 'analytics-ns', namespaceId: 'fedcba98-7654-3210-fedc-ba9876543210' } as never });
    serverless.on(GetNamespaceCommand).resolvesOnce({ namespace: { status: 'AVAILABLE', iamRoles: [] } as never }).resolves({ namespace: { status: 'AVAILABLE', iamRoles: [COPY_ROLE] } as never });
    serverless.on(UpdateNamespaceCommand).resolves({});
    const { bootstrapCommand } = await import('../../cli/commands/warehouse-bootstrap.js');
    await bootstrapCommand(loadConfig({ ...process.env, PINGROLL_REDSHIFT_SECRET_ARN: ADMIN_SECRET }), 'IAMR:JobRole');
    const bootstrap = [...mocked(rs, 'RedshiftDataClient'), ...mocked(serverless, 'RedshiftServerlessClient')];
    rs.resetHistory();
    serverless.resetHistory();

    // The jobs' role: the night (shards, the day, the stale days) and the month, as the stack runs them.
    const config = loadConfig(process.env);
    const log = memoryLog();
    const recorder = recordAwsCalls();
    const nov5 = new Date('2026-11-05T02:30:00Z');
    try {
      for (const index of [0, 1]) await onBackends(config, log, (b) => b, (b) => runIngestJob(config, b, { log, shard: { index, count: 2 }, days: ['2026-11-01'], waitSeconds: 0, now: nov5 }));
      await onBackends(config, log, (b) => b, (b) => runDailyJob(config, b, { day: '2026-11-01', log, noIngest: true, now: nov5 }));
      await onBackends(config, log, (b) => b, (b) => runBackfill(config, b, { stale: true, noIngest: true, log, now: nov5 }));
      await onBackends(config, log, (b) => b, (b) => runMonthRollup(config, b, { month: '2026-11', log, now: new Date('2026-12-02T06:30:00Z') }));
    } finally {
      recorder.stop();
    }
    const jobs: Array<AwsCall | MockedCall> = [...recorder.calls, ...rs.calls().map((call) => ({ client: 'RedshiftDataClient', command: (call.args[0] as { constructor: { name: string } }).constructor.name.replace(/Command$/, ''), input: (call.args[0] as unknown as { input: Record<string, unknown> }).input }))];

    return { jobs, bootstrap };
  } finally {
    rs.restore();
    serverless.restore();
    restore();
    c.closeSync();
    duck.closeSync();
    await pg.close();
    await ddb.stop();
    await moto.stop();
    await rm(root, { recursive: true, force: true });
    void join;
  }
}
