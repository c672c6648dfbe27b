/**
 * A suite's runs with PINGROLL_ROLLUP=redshift: moto's S3 (buckets `logs` and `rollups`, its
 * environment set), PostgreSQL playing Redshift behind the mocked Data API (redshift-on-postgres.ts),
 * bootstrapped as `warehouse bootstrap` does, and the output's store (`s3://rollups/pingroll/`).
 * Started before the suite's tests and stopped after them: call it inside the suite's `describe`.
 */
import { RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll } from 'vitest';
import type { RedshiftConfig } from '../../export/warehouse/redshift/redshift-config.js';
import { DuckDBInstance } from '../../lib/duckdb-engine.js';
import { S3ObjectStore } from '../../state/object-store/s3-object-store.js';
import { setEnv } from './job-fixture.js';
import { startMoto, type Moto } from './moto.js';
import { startPostgres, type Postgres } from './postgres.js';
import { redshiftOnPostgres } from './redshift-on-postgres.js';

const dataApiStub = () => mockClient(RedshiftDataClient);

export interface RedshiftRun {
  s3: Moto;
  pg: Postgres;
  store: S3ObjectStore;
  /** The statements each batch sent, in order. */
  sent: string[][];
  /** The Data API's mock (the one AWS API with no local stand-in). */
  rs: ReturnType<typeof dataApiStub>;
  /** `warehouse bootstrap` against the stand-in as its administrator, for other settings (another schema). */
  bootstrap: (cfg: RedshiftConfig) => Promise<void>;
}

/** @param redshift the runs' Redshift settings (loadConfig(env).redshift), which the bootstrap grants for; `root`: the stand-in's scratch folder. */
export function redshiftRunSuite(redshift: () => RedshiftConfig, root: string): RedshiftRun {
  const run = { rs: dataApiStub() } as RedshiftRun;
  let restoreEnv: (() => void) | undefined;
  let duck: Awaited<ReturnType<typeof DuckDBInstance.create>> | undefined;
  beforeAll(async () => {
    run.s3 = await startMoto(['logs', 'rollups']);
    restoreEnv = setEnv(run.s3.env);
    run.pg = await startPostgres();
    duck = await DuckDBInstance.create(':memory:');
    const { makeS3Client } = await import('../../infra/aws/s3-client.js');
    run.store = new S3ObjectStore(makeS3Client({ s3EndpointOverride: true }), 'rollups', 'pingroll/');
    const standIn = redshiftOnPostgres(run.rs, run.pg, run.store, await duck.connect(), root);
    await standIn.bootstrap(redshift());
    run.sent = standIn.sent;
    run.bootstrap = (cfg) => standIn.bootstrap(cfg);
  }, 120_000);
  afterAll(async () => {
    run.rs.restore();
    duck?.closeSync();
    await run.pg?.close();
    restoreEnv?.();
    await run.s3?.stop();
  });
  return run;
}
