/**
 * Each published day's partitions in the Glue Data Catalog (PINGROLL_GLUE_DATABASE), against moto's
 * Glue and S3: registered with the table's storage description at the day's location, a second
 * publication harmless, a missing table a clear failure after the day is published. (And the day's
 * rejects on S3 carry the tag the deployment's lifecycle rule expires them by.)
 */
import { BatchDeletePartitionCommand, CreateDatabaseCommand, CreateTableCommand, GetPartitionsCommand, GlueClient } from '@aws-sdk/client-glue';
import { GetObjectTaggingCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../infra/config.js';
import { TABLES } from '../../../rollup/rules.js';
import { generateSample, objectBody } from '../../../tools/sample/access-log-generator.js';
import { memoryLog } from '../../../lib/log.js';
import { runDay, runDays, setEnv } from '../../support/job-fixture.js';
import { startMoto, type Moto } from '../../support/moto.js';

const DAY = '2026-11-01';

describe('Glue partitions of published days', () => {
  let moto: Moto;
  let restore: () => void;
  let glue: GlueClient;
  beforeAll(async () => {
    moto = await startMoto(['logs', 'rollups']);
    restore = setEnv({ ...moto.env, AWS_ENDPOINT_URL_GLUE: moto.endpoint });
    glue = new GlueClient({ endpoint: moto.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'moto', secretAccessKey: 'moto' } });
    const client = moto.client();
    for (const o of generateSample({ date: DAY, sessions: 20, seed: 5, lateShare: 0 }).objects) await client.send(new PutObjectCommand({ Bucket: 'logs', Key: o.key, Body: objectBody(o) }));
  }, 60_000);
  afterAll(async () => {
    restore();
    await moto.stop();
  });

  const env = (db: string): Record<string, string> => ({ ...moto.env, PINGROLL_LOGS: 's3://logs/logs/', PINGROLL_OUTPUT: `s3://rollups/${db}/`, PINGROLL_WAREHOUSE: 'none', PINGROLL_GLUE_DATABASE: db });

  it('registers each table\'s day with the table\'s storage description at the day\'s location; publishing the day again is harmless', async () => {
    await glue.send(new CreateDatabaseCommand({ DatabaseInput: { Name: 'pingroll' } }));
    for (const t of [...TABLES, 'daily_runs']) {
      await glue.send(new CreateTableCommand({
        DatabaseName: 'pingroll',
        TableInput: {
          Name: t, TableType: 'EXTERNAL_TABLE', PartitionKeys: [{ Name: 'dt', Type: 'string' }],
          StorageDescriptor: {
            Location: `s3://rollups/pingroll/${t}/`, Columns: [{ Name: 'day', Type: 'date' }],
            InputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat',
            SerdeInfo: { SerializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe' },
          },
        },
      }));
    }
    for (let run = 0; run < 2; run++) {
      const summary = await runDay(loadConfig(env('pingroll')), { day: DAY, log: memoryLog() });
      expect(summary.pings).toBeGreaterThan(0);
      for (const t of [...TABLES, 'daily_runs']) {
        const parts = (await glue.send(new GetPartitionsCommand({ DatabaseName: 'pingroll', TableName: t }))).Partitions ?? [];
        expect(parts.map((p) => [p.Values, p.StorageDescriptor?.Location, p.StorageDescriptor?.Columns?.[0]?.Name]), t).toEqual([[[DAY], `s3://rollups/pingroll/${t}/dt=${DAY}/`, 'day']]);
      }
    }
  });

  it('registers an unchanged day a backfill skips again (its registration may have failed after it was published)', async () => {
    await glue.send(new BatchDeletePartitionCommand({ DatabaseName: 'pingroll', TableName: 'daily_series_stats', PartitionsToDelete: [{ Values: [DAY] }] }));
    const summary = await runDays(loadConfig(env('pingroll')), { from: DAY, to: DAY, log: memoryLog() });
    expect(summary.skipped).toEqual([DAY]);
    const parts = (await glue.send(new GetPartitionsCommand({ DatabaseName: 'pingroll', TableName: 'daily_series_stats' }))).Partitions ?? [];
    expect(parts.map((p) => p.Values)).toEqual([[DAY]]);
  });

  it('writes a day\'s rejects with the tag the deployment\'s lifecycle rule expires them by, kept through the move into place', async () => {
    const tags = await moto.client().send(new GetObjectTaggingCommand({ Bucket: 'rollups', Key: `pingroll/_runs/dt=${DAY}/rejects.jsonl.gz` }));
    expect(tags.TagSet).toEqual([{ Key: 'pingroll-kind', Value: 'rejects' }]);
    const manifest = await moto.client().send(new GetObjectTaggingCommand({ Bucket: 'rollups', Key: `pingroll/_runs/dt=${DAY}/manifest.json` }));
    expect(manifest.TagSet).toEqual([]);
  });

  it('says what to do when the table is missing, after the day is published', async () => {
    await glue.send(new CreateDatabaseCommand({ DatabaseInput: { Name: 'empty' } }));
    await expect(runDay(loadConfig(env('empty')), { day: DAY, log: memoryLog() })).rejects.toThrow(/the Glue table empty\.daily_episode_stats does not exist: deploy the catalog \(deploy\/\) or unset PINGROLL_GLUE_DATABASE; the day is published, run again/);
  });

  it('needs the output on S3', () => {
    expect(() => loadConfig({ PINGROLL_OUTPUT: '/tmp/out', PINGROLL_GLUE_DATABASE: 'pingroll' })).toThrow(/PINGROLL_GLUE_DATABASE needs PINGROLL_OUTPUT on S3/);
  });
});
