/**
 * The data catalog over pingroll's published Parquet: a Glue database with a table per dataset
 * (`<output>/<table>/dt=YYYY-MM-DD/part-00000.parquet`), each with partition projection on `dt` (no
 * crawler, no MSCK REPAIR: a new day is queryable the moment it is published), and an Athena
 * workgroup with its results location, encryption and a limit on the bytes a query may scan. Redshift
 * reads the same tables through an external schema, which pingroll's `warehouse init` makes
 * (PINGROLL_REDSHIFT_CATALOG_DATABASE). The columns here are checked against real published files
 * (deploy/test), and come from the dataset registry, as the warehouse's do: the catalog cannot drift
 * from what pingroll writes.
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as athena from 'aws-cdk-lib/aws-athena';
import * as glue from 'aws-cdk-lib/aws-glue';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { DATASETS, glueType } from '../../datasets/registry.js';

/** A Glue table: a dataset of the registry (datasets/registry.ts), its columns in Glue's terms, and how its `dt` steps. */
export interface CatalogTable {
  name: string;
  columns: Array<[string, ReturnType<typeof glueType>]>;
  /** `dt` steps a day, or a month (the monthly table's dt is the month's first day). */
  every: 'DAYS' | 'MONTHS';
}

/** Every published dataset, as the registry declares it (no list of columns of its own here). */
export const CATALOG_TABLES: CatalogTable[] = DATASETS.map((d) => ({
  name: d.name, every: d.by === 'day' ? 'DAYS' : 'MONTHS', columns: d.columns.map((c) => [c.name, glueType(c.type)]),
}));

export interface CatalogProps {
  outputBucket: s3.IBucket;
  /** The output prefix (`pingroll/`). */
  outputPrefix: string;
  /** Where the Athena results bucket logs its requests. */
  accessLogs: s3.IBucket;
  /** Glue database name. */
  database: string;
  /** Athena workgroup name (unique in the region: it carries the stage). */
  workgroup: string;
  /** The most a query of the workgroup may scan, in bytes. */
  bytesScannedCutoff: number;
  /** The first day partitions are projected from (YYYY-MM-DD); a monthly table's, from its month's first day. */
  firstDay: string;
}

export class Catalog extends Construct {
  readonly databaseArn: string;
  readonly tableArns: string[];
  readonly workgroup: athena.CfnWorkGroup;
  readonly results: s3.Bucket;

  constructor(scope: Construct, id: string, props: CatalogProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const catalogId = stack.account;
    const database = new glue.CfnDatabase(this, 'Database', {
      catalogId, databaseInput: { name: props.database, description: "pingroll's published rollups (Parquet, dt= partitions projected)" },
    });
    const location = (name: string): string => `s3://${props.outputBucket.bucketName}/${props.outputPrefix}${name}/`;
    this.tableArns = [];
    for (const d of CATALOG_TABLES) {
      const table = new glue.CfnTable(this, d.name, {
        catalogId, databaseName: props.database,
        tableInput: {
          name: d.name, tableType: 'EXTERNAL_TABLE',
          partitionKeys: [{ name: 'dt', type: 'string' }],
          parameters: {
            classification: 'parquet', EXTERNAL: 'TRUE',
            'projection.enabled': 'true',
            'projection.dt.type': 'date',
            'projection.dt.format': 'yyyy-MM-dd',
            'projection.dt.range': `${d.every === 'MONTHS' ? `${props.firstDay.slice(0, 7)}-01` : props.firstDay},NOW`,
            'projection.dt.interval': '1',
            'projection.dt.interval.unit': d.every,
            'storage.location.template': `${location(d.name)}dt=\${dt}/`,
          },
          storageDescriptor: {
            location: location(d.name),
            inputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat',
            outputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat',
            serdeInfo: { serializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe' },
            columns: d.columns.map(([name, type]) => ({ name, type })),
          },
        },
      });
      table.addDependency(database);
      this.tableArns.push(stack.formatArn({ service: 'glue', resource: 'table', resourceName: `${props.database}/${d.name}` }));
    }
    this.databaseArn = stack.formatArn({ service: 'glue', resource: 'database', resourceName: props.database });

    // Athena's results: a bucket of their own, kept 30 days.
    this.results = new s3.Bucket(this, 'AthenaResults', {
      encryption: s3.BucketEncryption.S3_MANAGED, blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL, enforceSSL: true,
      removalPolicy: RemovalPolicy.RETAIN, serverAccessLogsBucket: props.accessLogs, serverAccessLogsPrefix: 'athena-results-access-logs/',
      lifecycleRules: [{ expiration: Duration.days(30) }],
    });
    this.workgroup = new athena.CfnWorkGroup(this, 'Workgroup', {
      name: props.workgroup, description: "pingroll's tables: results kept 30 days, each query's scan limited",
      state: 'ENABLED', recursiveDeleteOption: false,
      workGroupConfiguration: {
        enforceWorkGroupConfiguration: true, publishCloudWatchMetricsEnabled: true,
        bytesScannedCutoffPerQuery: props.bytesScannedCutoff,
        engineVersion: { selectedEngineVersion: 'Athena engine version 3' },
        resultConfiguration: { outputLocation: `s3://${this.results.bucketName}/`, encryptionConfiguration: { encryptionOption: 'SSE_S3' } },
      },
    });
  }

  /** The catalog, the database and the tables: what a grant on them names. */
  get arns(): string[] {
    return [Stack.of(this).formatArn({ service: 'glue', resource: 'catalog' }), this.databaseArn, ...this.tableArns];
  }

  /** Reading the tables and their partitions (Redshift Spectrum, through an external schema). */
  grantRead(role: iam.IRole): void {
    role.addToPrincipalPolicy(new iam.PolicyStatement({
      actions: ['glue:GetDatabase', 'glue:GetTable', 'glue:GetPartition', 'glue:GetPartitions', 'glue:BatchGetPartition'],
      resources: this.arns,
    }));
  }

  /** Registering a published day's partitions (pingroll, PINGROLL_GLUE_DATABASE): Spectrum and EMR do not project them as Athena does. */
  grantAddPartitions(role: iam.IRole): void {
    role.addToPrincipalPolicy(new iam.PolicyStatement({
      actions: ['glue:GetTable', 'glue:BatchCreatePartition'],
      resources: this.arns,
    }));
  }
}
