/**
 * pingroll on AWS, as code. One stack:
 * - the ping bucket (the public object players GET) with S3 server access logging into the log bucket,
 *   PartitionedPrefix by EventTime (the layout pingroll's listing window is built for);
 * - the output bucket (Parquet, staging, state);
 * - pingroll's container image, built from the repository's Dockerfile;
 * - AWS Batch on Fargate: an array job of ingest shards (`pingroll ingest`, the shard from
 *   AWS_BATCH_JOB_ARRAY_INDEX/SIZE) and a job for the rollup and load (`pingroll rollup --no-ingest`);
 * - a Step Functions state machine running the shards, then the rollup, each night on an EventBridge
 *   schedule, or for any day given (`{"date": "YYYY-MM-DD"}`: the backfill entry point, one day per
 *   execution; a Map over days in the input runs a range);
 * - least-privilege IAM: the jobs read the logs and read and write the output, and may use the Redshift
 *   Data API on one workgroup; Redshift's COPY role reads the output (and writes what UNLOAD writes);
 * - alarms on failed, timed-out and aborted runs, to an SNS topic.
 * The Redshift Serverless workgroup itself is the analysts' and is named, not created.
 */
import { Duration, RemovalPolicy, Size, Stack, type StackProps } from 'aws-cdk-lib';
import * as batch from 'aws-cdk-lib/aws-batch';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';

export interface PingrollStackProps extends StackProps {
  /** The repository's root, where the Dockerfile is. */
  imageDirectory: string;
  /** Ingest shards per night (the array job's size; 1 runs one shard). */
  shards: number;
  redshiftWorkgroup: string;
  redshiftDatabase: string;
  /** Where alarms are mailed; none: the topic only. */
  alarmEmail?: string;
}

/** What the container runs: pingroll's CLI (Dockerfile: WORKDIR /app). */
const PINGROLL = ['node', 'bin/pingroll.js'];

export class PingrollStack extends Stack {
  readonly stateMachine: sfn.StateMachine;
  readonly pingBucket: s3.Bucket;

  constructor(scope: Construct, id: string, props: PingrollStackProps) {
    super(scope, id, props);
    const shards = props.shards;
    if (!(Number.isInteger(shards) && shards >= 1 && shards <= 10_000)) throw new Error(`shards must be a whole number from 1 to 10000 (an AWS Batch array's size); got ${shards}`);

    const logBucket = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED, blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL, enforceSSL: true,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [{ transitions: [{ storageClass: s3.StorageClass.INFREQUENT_ACCESS, transitionAfter: Duration.days(30) }] }],
    });
    // The pings' object: players GET it with the ping's fields in the query string; S3 logs each GET.
    const pingBucket = new s3.Bucket(this, 'Pings', {
      encryption: s3.BucketEncryption.S3_MANAGED, enforceSSL: true, removalPolicy: RemovalPolicy.RETAIN,
      serverAccessLogsBucket: logBucket, serverAccessLogsPrefix: 'logs/',
      targetObjectKeyFormat: s3.TargetObjectKeyFormat.partitionedPrefix(s3.PartitionDateSource.EVENT_TIME),
    });
    const outputBucket = new s3.Bucket(this, 'Output', {
      encryption: s3.BucketEncryption.S3_MANAGED, blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL, enforceSSL: true, removalPolicy: RemovalPolicy.RETAIN,
    });

    // Redshift's COPY (and UNLOAD, for the rollup inside Redshift) runs as this role.
    const copyRole = new iam.Role(this, 'RedshiftCopyRole', { assumedBy: new iam.ServicePrincipal('redshift.amazonaws.com') });
    outputBucket.grantRead(copyRole);
    outputBucket.grantPut(copyRole, '_warehouse-rollup/*');

    const vpc = new ec2.Vpc(this, 'Vpc', { maxAzs: 2, natGateways: 0, subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }] });
    const compute = new batch.FargateComputeEnvironment(this, 'Compute', { vpc, vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC }, maxvCpus: Math.max(16, shards * 2) });
    const queue = new batch.JobQueue(this, 'Queue', { computeEnvironments: [{ computeEnvironment: compute, order: 1 }] });

    const image = ecs.ContainerImage.fromAsset(props.imageDirectory, { exclude: ['node_modules', '**/node_modules', 'dist', 'data', '.bench', '.git', 'deploy/cdk.out'] });
    const jobRole = new iam.Role(this, 'JobRole', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
    logBucket.grantRead(jobRole, 'logs/*');
    outputBucket.grantReadWrite(jobRole);
    outputBucket.grantDelete(jobRole);
    const workgroupArn = this.formatArn({ service: 'redshift-serverless', resource: 'workgroup', resourceName: '*' });
    jobRole.addToPolicy(new iam.PolicyStatement({
      actions: ['redshift-data:BatchExecuteStatement', 'redshift-data:ExecuteStatement'],
      resources: [workgroupArn],
    }));
    // Statement ids are not resources: the Data API scopes these to the statements the caller ran.
    jobRole.addToPolicy(new iam.PolicyStatement({
      actions: ['redshift-data:DescribeStatement', 'redshift-data:GetStatementResult', 'redshift-data:CancelStatement'],
      resources: ['*'],
    }));
    jobRole.addToPolicy(new iam.PolicyStatement({ actions: ['redshift-serverless:GetCredentials'], resources: [workgroupArn] }));

    const environment = {
      PINGROLL_LOGS: logBucket.s3UrlForObject('logs/'),
      PINGROLL_OUTPUT: outputBucket.s3UrlForObject('pingroll/'),
      PINGROLL_WAREHOUSE: 'redshift',
      PINGROLL_ROLLUP: 'redshift',
      PINGROLL_REDSHIFT_WORKGROUP: props.redshiftWorkgroup,
      PINGROLL_REDSHIFT_DATABASE: props.redshiftDatabase,
      PINGROLL_REDSHIFT_IAM_ROLE: copyRole.roleArn,
    };
    const container = (id: string, command: string[], cpu: number, memoryGiB: number): batch.EcsFargateContainerDefinition =>
      new batch.EcsFargateContainerDefinition(this, id, {
        image, command, cpu, memory: Size.gibibytes(memoryGiB), jobRole, environment, assignPublicIp: true,
        fargateCpuArchitecture: ecs.CpuArchitecture.X86_64,
      });
    // Each shard: one vCPU parses ~1 GB of logs a minute; 4 GiB holds DuckDB's conversion and the read budget.
    const ingestJob = new batch.EcsJobDefinition(this, 'IngestShard', {
      container: container('IngestContainer', [...PINGROLL, 'ingest', '--wait', '600'], 2, 4),
      retryAttempts: 3, timeout: Duration.hours(2),
    });
    const rollupJob = new batch.EcsJobDefinition(this, 'Rollup', {
      container: container('RollupContainer', [...PINGROLL, 'rollup', '--no-ingest', '--wait', '600', '--date', 'Ref::date'], 1, 2),
      parameters: { date: 'YYYY-MM-DD' }, retryAttempts: 3, timeout: Duration.hours(2),
    });

    // The day: the input's `date`, or for the nightly schedule the day before the event's time.
    const ingest = new tasks.BatchSubmitJob(this, 'Ingest shards', {
      jobName: 'pingroll-ingest', jobQueueArn: queue.jobQueueArn, jobDefinitionArn: ingestJob.jobDefinitionArn,
      ...(shards > 1 ? { arraySize: shards } : {}), integrationPattern: sfn.IntegrationPattern.RUN_JOB, resultPath: sfn.JsonPath.DISCARD,
    });
    const rollup = new tasks.BatchSubmitJob(this, 'Roll up and load', {
      jobName: 'pingroll-rollup', jobQueueArn: queue.jobQueueArn, jobDefinitionArn: rollupJob.jobDefinitionArn,
      payload: sfn.TaskInput.fromObject({ date: sfn.JsonPath.stringAt('$.date') }),
      integrationPattern: sfn.IntegrationPattern.RUN_JOB, resultPath: sfn.JsonPath.DISCARD,
    });
    const yesterday = new sfn.Pass(this, 'The day before the schedule', {
      parameters: { 'date.$': "States.ArrayGetItem(States.StringSplit($.time, 'T'), 0)" },
    });
    const dayBefore = new tasks.EvaluateExpression(this, 'Day before', {
      expression: 'new Date(Date.parse($.date) - 86400000).toISOString().slice(0, 10)', resultPath: '$.date',
    });
    const day = new sfn.Choice(this, 'Day given?')
      .when(sfn.Condition.isPresent('$.date'), ingest)
      .otherwise(yesterday.next(dayBefore).next(ingest));
    ingest.next(rollup);
    this.stateMachine = new sfn.StateMachine(this, 'Nightly', {
      definitionBody: sfn.DefinitionBody.fromChainable(day), timeout: Duration.hours(6), tracingEnabled: false,
    });
    new events.Rule(this, 'EveryNight', {
      schedule: events.Schedule.cron({ minute: '30', hour: '2' }),
      targets: [new targets.SfnStateMachine(this.stateMachine, { input: events.RuleTargetInput.fromObject({ time: events.EventField.time }) })],
    });

    const topic = new sns.Topic(this, 'Alarms');
    if (props.alarmEmail) topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    for (const metric of ['ExecutionsFailed', 'ExecutionsTimedOut', 'ExecutionsAborted'] as const) {
      const alarm = new cloudwatch.Alarm(this, `Runs${metric}`, {
        metric: new cloudwatch.Metric({ namespace: 'AWS/States', metricName: metric, dimensionsMap: { StateMachineArn: this.stateMachine.stateMachineArn }, statistic: 'Sum', period: Duration.hours(1) }),
        threshold: 1, evaluationPeriods: 1, comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING, alarmDescription: `pingroll's nightly run: ${metric}; see the execution's failed job in AWS Batch and its log`,
      });
      alarm.addAlarmAction(new actions.SnsAction(topic));
    }
    this.pingBucket = pingBucket;
  }
}
