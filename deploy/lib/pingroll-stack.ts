/**
 * pingroll on AWS, as code. One stack:
 * - the ping bucket (the public object players GET) with S3 server access logging into the log bucket,
 *   PartitionedPrefix by EventTime (the layout pingroll's listing window is built for);
 * - the output bucket (Parquet, staging, state);
 * - pingroll's container image, built from the repository's Dockerfile;
 * - AWS Batch on Fargate: an array job of ingest shards (`pingroll ingest`, the shard from
 *   AWS_BATCH_JOB_ARRAY_INDEX/SIZE) and a job for the rollup and load (`pingroll rollup --no-ingest`);
 * - a Step Functions state machine running the shards, then the rollup, each night on an EventBridge
 *   schedule, or for a day given (`{"date": "YYYY-MM-DD"}`), or for a range (`{"dates": [...]}`: the
 *   backfill entry point, the shards once, then each day); the licensors' month on the 2nd;
 * - least-privilege IAM: the jobs read the logs and read and write the output, and may use the Redshift
 *   Data API on one workgroup; Redshift's COPY role reads the output (and writes what UNLOAD writes);
 * - alarms on failed, timed-out and aborted runs, and on any job failing for good, to an SNS topic.
 * The Redshift Serverless workgroup itself is the analysts' and is named, not created.
 *
 * It passes cdk-nag's AwsSolutions pack (deploy/test): every permission names its resource where the
 * name is known at synth time; what cannot (objects S3 names at run time, actions AWS offers without
 * resource-level permissions) is acknowledged beside the grant, with its reason (`ack`).
 */
import { Duration, IgnoreMode, RemovalPolicy, Size, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as batch from 'aws-cdk-lib/aws-batch';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct, IConstruct } from 'constructs';
import { Catalog } from './catalog.js';

/** A cdk-nag finding acknowledged on `scope`, with why it cannot be fixed there (never a whole rule). */
function ack(scope: IConstruct, id: string, reason: string): void {
  // A rule with findings (IAM5: one per permission) is acknowledged one finding at a time; a rule
  // without (SMG4) only on the one resource `scope`.
  if (!/^AwsSolutions-[A-Z]+\d+\[.+\]$/.test(id) && !(id === 'AwsSolutions-SMG4' && scope.node.children.length <= 1)) throw new Error(`acknowledge one finding (Rule[Finding]), not a whole rule: ${id}`);
  Validations.of(scope).acknowledge({ id, reason });
}

export interface PingrollStackProps extends StackProps {
  /** The repository's root, where the Dockerfile is. */
  imageDirectory: string;
  /** Ingest shards per night (the array job's size; 1 runs one shard). */
  shards: number;
  redshiftWorkgroup: string;
  /**
   * The workgroup's ARN (it holds the workgroup's id, not its name): the Data API permissions name it.
   * `aws redshift-serverless get-workgroup --workgroup-name NAME --query workgroup.workgroupArn`.
   */
  redshiftWorkgroupArn: string;
  redshiftDatabase: string;
  /** Days a day's rejects are kept (the job's PINGROLL_REJECTS_RETENTION_DAYS and the bucket's lifecycle rule); 90 when not given. */
  rejectsRetentionDays?: number;
  /**
   * Days after a month ends that the nightly job closes it (PINGROLL_CLOSE_AFTER_DAYS, contract §9):
   * its statement issued, later pings adjustments; none when not given (pingroll close does it).
   */
  closeAfterDays?: number;
  /**
   * Days what a closed month's days were counted from is kept (PINGROLL_RETENTION_DAYS): staged pings,
   * parsed keys, run state; none when not given (kept). The job deletes them itself: only it knows which
   * months are closed, so no lifecycle rule can (one by age alone would delete open months' data). What
   * it keeps of records that came too late is written with the rejects' tag: the rejects' rule expires it.
   */
  retentionDays?: number;
  /** The Glue database of the published tables; `pingroll` when not given. */
  catalogDatabase?: string;
  /** The most one Athena query of the workgroup may scan, in bytes; 10 GiB when not given. */
  athenaBytesScannedCutoff?: number;
  /** The rejects share (percent of a run's records that are not pings) above which to alarm; 5 when not given. */
  rejectsShareAlarm?: number;
  /** Where alarms are mailed; none: the topic only. */
  alarmEmail?: string;
  /**
   * The episode catalog CSV's key in the output bucket (e.g. `catalog/episodes.csv`: the jobs'
   * PINGROLL_EPISODE_CATALOG, read-only to them); none: completion figures are NULL.
   */
  episodeCatalogKey?: string;
}

/**
 * The day before the nightly schedule's time (EventBridge's `time`, ISO 8601 UTC), in JSONata as Step
 * Functions evaluates it; the tests evaluate the same text.
 */
export const DAY_BEFORE_SCHEDULE = "$fromMillis($toMillis($states.input.time) - 86400000, '[Y0001]-[M01]-[D01]')";

/** What the container runs: pingroll's CLI (Dockerfile: WORKDIR /app). */
const PINGROLL = ['node', 'bin/pingroll.js'];

export class PingrollStack extends Stack {
  readonly stateMachine: sfn.StateMachine;
  readonly pingBucket: s3.Bucket;
  readonly catalog: Catalog;

  constructor(scope: Construct, id: string, props: PingrollStackProps) {
    super(scope, id, props);
    const shards = props.shards;
    if (!(Number.isInteger(shards) && shards >= 1 && shards <= 10_000)) throw new Error(`shards must be a whole number from 1 to 10000 (an AWS Batch array's size); got ${shards}`);
    if (!/^arn:aws[a-z-]*:redshift-serverless:[a-z0-9-]+:\d{12}:workgroup\/[0-9a-f-]{36}$/.test(props.redshiftWorkgroupArn)) {
      throw new Error(`pingroll:redshiftWorkgroupArn must be the workgroup's ARN (aws redshift-serverless get-workgroup --workgroup-name ${props.redshiftWorkgroup || 'NAME'} --query workgroup.workgroupArn); got '${props.redshiftWorkgroupArn}'`);
    }

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
    // The output's own requests are logged too, beside the pings' (another prefix: pingroll lists logs/ only).
    const rejectsRetentionDays = props.rejectsRetentionDays ?? 90;
    // Where pingroll's output lives in the bucket (PINGROLL_OUTPUT), and its objects: pingroll names them at run time.
    const OUTPUT_PREFIX = 'pingroll/';
    const outputBucket = new s3.Bucket(this, 'Output', {
      encryption: s3.BucketEncryption.S3_MANAGED, blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL, enforceSSL: true, removalPolicy: RemovalPolicy.RETAIN,
      serverAccessLogsBucket: logBucket, serverAccessLogsPrefix: 'output-access-logs/',
      // The rejects (raw records pingroll could not count) expire as the job expires them
      // (PINGROLL_REJECTS_RETENTION_DAYS): by the tag pingroll writes them with.
      lifecycleRules: [
        { id: 'rejects', tagFilters: { 'pingroll-kind': 'rejects' }, expiration: Duration.days(rejectsRetentionDays) },
        { id: 'unfinished-uploads', abortIncompleteMultipartUploadAfter: Duration.days(7) },
        // What a rollup inside Redshift keeps while it runs (COPY manifests, UNLOADed files, the viewer
        // key's secret): removed by the run, or by the next; this, should neither have run for a day.
        { id: 'warehouse-rollup', prefix: `${OUTPUT_PREFIX}_warehouse-rollup/`, expiration: Duration.days(1) },
      ],
    });
    const outputObjects = outputBucket.arnForObjects(`${OUTPUT_PREFIX}*`);

    // Redshift's COPY reads the staged and published Parquet; UNLOAD (the rollup inside Redshift) writes
    // under _warehouse-rollup/ of the output.
    const copyRole = new iam.Role(this, 'RedshiftCopyRole', { assumedBy: new iam.ServicePrincipal('redshift.amazonaws.com') });
    copyRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:ListBucket', 's3:GetBucketLocation'], resources: [outputBucket.bucketArn] }));
    copyRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [outputObjects] }));
    copyRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: [outputBucket.arnForObjects(`${OUTPUT_PREFIX}_warehouse-rollup/*`)] }));
    ack(copyRole, `AwsSolutions-IAM5[Resource::<${this.getLogicalId(outputBucket.node.defaultChild as s3.CfnBucket)}.Arn>/${OUTPUT_PREFIX}*]`, 'COPY reads objects pingroll names at run time (staged batches, each day\'s Parquet); the grant is limited to the output prefix');
    ack(copyRole, `AwsSolutions-IAM5[Resource::<${this.getLogicalId(outputBucket.node.defaultChild as s3.CfnBucket)}.Arn>/${OUTPUT_PREFIX}_warehouse-rollup/*]`, 'UNLOAD writes files it names itself, under a prefix per run; the grant is limited to _warehouse-rollup/ of the output');

    // The catalog over the published Parquet: Glue tables (dt projected for Athena, registered by each
    // run for Spectrum and EMR), an Athena workgroup; Redshift reads them through <schema>_lake.
    const catalog = new Catalog(this, 'Catalog', {
      outputBucket, outputPrefix: OUTPUT_PREFIX, accessLogs: logBucket, database: props.catalogDatabase ?? 'pingroll',
      bytesScannedCutoff: props.athenaBytesScannedCutoff ?? 10 * 2 ** 30, firstDay: '2024-01-01',
    });
    catalog.grantRead(copyRole);
    this.catalog = catalog;

    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2, natGateways: 0, subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }],
      flowLogs: { toLogBucket: { destination: ec2.FlowLogDestination.toS3(logBucket, 'vpc-flow-logs/'), trafficType: ec2.FlowLogTrafficType.ALL } },
    });
    const compute = new batch.FargateComputeEnvironment(this, 'Compute', { vpc, vpcSubnets: { subnetType: ec2.SubnetType.PUBLIC }, maxvCpus: Math.max(16, shards * 2) });
    const queue = new batch.JobQueue(this, 'Queue', { computeEnvironments: [{ computeEnvironment: compute, order: 1 }] });

    // What the image's build sees is the repository less its .dockerignore, which CDK reads (Docker's rules).
    const image = ecs.ContainerImage.fromAsset(props.imageDirectory, { ignoreMode: IgnoreMode.DOCKER });
    const jobRole = new iam.Role(this, 'JobRole', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
    // The logs: listed (HeadBucket and ListObjectsV2 need ListBucket on the bucket) and read.
    jobRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [logBucket.bucketArn] }));
    jobRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [logBucket.arnForObjects('logs/*')] }));
    ack(jobRole, `AwsSolutions-IAM5[Resource::<${this.getLogicalId(logBucket.node.defaultChild as s3.CfnBucket)}.Arn>/logs/*]`, 'S3 server access logging names the log objects at delivery time; the grant is read-only and limited to the logs/ prefix');
    // The output: state, staging and published files, written (conditionally), read, deleted, multipart uploads aborted.
    jobRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [outputBucket.bucketArn] }));
    // Tagging: the day's rejects are written with the tag the lifecycle rule expires them by, and a
    // move (CopyObject) copies the tags (GetObjectTagging on the source, PutObjectTagging on the copy).
    jobRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload', 's3:GetObjectTagging', 's3:PutObjectTagging'], resources: [outputObjects] }));
    ack(jobRole, `AwsSolutions-IAM5[Resource::<${this.getLogicalId(outputBucket.node.defaultChild as s3.CfnBucket)}.Arn>/${OUTPUT_PREFIX}*]`, 'pingroll names its state, staging and output objects at run time (batch ids, days); the grant is limited to the output prefix');
    catalog.grantAddPartitions(jobRole);
    // The episode catalog, that one object read.
    if (props.episodeCatalogKey) jobRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [outputBucket.arnForObjects(props.episodeCatalogKey)] }));
    const workgroupArn = props.redshiftWorkgroupArn;
    jobRole.addToPolicy(new iam.PolicyStatement({
      actions: ['redshift-data:BatchExecuteStatement', 'redshift-data:ExecuteStatement', 'redshift-serverless:GetCredentials'],
      resources: [workgroupArn],
    }));
    // Statement ids are not resources: the Data API scopes these to the statements the caller ran.
    jobRole.addToPolicy(new iam.PolicyStatement({
      actions: ['redshift-data:DescribeStatement', 'redshift-data:GetStatementResult', 'redshift-data:CancelStatement'],
      resources: ['*'],
    }));
    // A day rolled up inside Redshift is two batches in one Data API session; the second names the
    // session, not the workgroup, so no workgroup ARN applies to it: granted only in sessions this
    // role opened (AWS's documented condition for reusing a session).
    jobRole.addToPolicy(new iam.PolicyStatement({
      actions: ['redshift-data:BatchExecuteStatement'],
      resources: ['*'],
      conditions: { StringEquals: { 'redshift-data:session-owner-iam-userid': '${aws:userid}' } },
    }));
    ack(jobRole, 'AwsSolutions-IAM5[Resource::*]', 'redshift-data:DescribeStatement, GetStatementResult and CancelStatement have no resource-level permissions (a statement id is not a resource; the Data API lets a caller see only the statements it ran), and a BatchExecuteStatement in an open session names no workgroup: it is allowed only in sessions this role opened (redshift-data:session-owner-iam-userid)');
    // The jobs' own log group, kept 90 days (the default /aws/batch/job group keeps logs forever).
    const jobLogs = new logs.LogGroup(this, 'JobLogs', { retention: logs.RetentionDays.THREE_MONTHS, removalPolicy: RemovalPolicy.RETAIN });

    const environment = {
      PINGROLL_LOGS: logBucket.s3UrlForObject('logs/'),
      PINGROLL_OUTPUT: outputBucket.s3UrlForObject(OUTPUT_PREFIX),
      PINGROLL_WAREHOUSE: 'redshift',
      PINGROLL_ROLLUP: 'redshift',
      PINGROLL_REDSHIFT_WORKGROUP: props.redshiftWorkgroup,
      PINGROLL_REDSHIFT_DATABASE: props.redshiftDatabase,
      PINGROLL_REDSHIFT_IAM_ROLE: copyRole.roleArn,
      PINGROLL_GLUE_DATABASE: props.catalogDatabase ?? 'pingroll',
      // Rejects keep no client IP or requester ARN, and go after 90 days (README, Personal data).
      PINGROLL_PRIVACY: 'mask',
      PINGROLL_REJECTS_RETENTION_DAYS: String(rejectsRetentionDays),
      ...(props.closeAfterDays !== undefined ? { PINGROLL_CLOSE_AFTER_DAYS: String(props.closeAfterDays) } : {}),
      ...(props.retentionDays !== undefined ? { PINGROLL_RETENTION_DAYS: String(props.retentionDays) } : {}),
      ...(props.episodeCatalogKey ? { PINGROLL_EPISODE_CATALOG: outputBucket.s3UrlForObject(props.episodeCatalogKey) } : {}),
    };
    // The viewer key (PINGROLL_VIEWER_KEY): the secret of the keyed hash the viewer datasets hold instead
    // of user ids. Generated once, kept when the stack goes (uniques over a range need one key throughout),
    // given to the jobs by Batch from Secrets Manager (never in the job definition).
    const viewerKey = new secretsmanager.Secret(this, 'ViewerKey', {
      description: 'pingroll PINGROLL_VIEWER_KEY: the secret of the viewer datasets\' keyed hash. Rotating it splits unique-viewer counts at the change (README, Unique viewers).',
      generateSecretString: { passwordLength: 48, excludePunctuation: true, includeSpace: false },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    ack(viewerKey, 'AwsSolutions-SMG4', 'rotating the viewer key would give every viewer a new key from that day, so unique viewers over a range spanning the change would count them twice; pingroll refuses such ranges and the key is rotated by hand with a backfill');
    const secrets = { PINGROLL_VIEWER_KEY: batch.Secret.fromSecretsManager(viewerKey) };
    const container = (id: string, command: string[], cpu: number, memoryGiB: number): batch.EcsFargateContainerDefinition => {
      const c = new batch.EcsFargateContainerDefinition(this, id, {
        image, command, cpu, memory: Size.gibibytes(memoryGiB), jobRole, environment, secrets, assignPublicIp: true,
        fargateCpuArchitecture: ecs.CpuArchitecture.X86_64, logging: ecs.LogDrivers.awsLogs({ logGroup: jobLogs, streamPrefix: 'pingroll' }),
      });
      ack(c.executionRole, 'AwsSolutions-IAM5[Resource::*]', 'ecr:GetAuthorizationToken has no resource-level permissions; pulling the image is limited to its repository');
      ack(c.executionRole, `AwsSolutions-IAM5[Resource::<${this.getLogicalId(jobLogs.node.defaultChild as logs.CfnLogGroup)}.Arn>:*]`, 'log streams are named per job at run time; the grant is limited to the jobs\' own log group');
      return c;
    };
    // A shard parses ~240 MB of logs per CPU-second from a directory (half that from S3: README's
    // model) with ~0.5 GiB peak; 2 vCPU and 4 GiB leave room for a busy shard and DuckDB's conversions.
    const ingestJob = new batch.EcsJobDefinition(this, 'IngestShard', {
      container: container('IngestContainer', [...PINGROLL, 'ingest', '--wait', '600'], 2, 4),
      retryAttempts: 3, timeout: Duration.hours(2),
    });
    const rollupJob = new batch.EcsJobDefinition(this, 'Rollup', {
      container: container('RollupContainer', [...PINGROLL, 'rollup', '--no-ingest', '--wait', '600', '--date', 'Ref::date'], 1, 2),
      parameters: { date: 'YYYY-MM-DD' }, retryAttempts: 3, timeout: Duration.hours(2),
    });
    // The licensors' month, on the 2nd: the month before the job's own date.
    const monthJob = new batch.EcsJobDefinition(this, 'Month', {
      container: container('MonthContainer', ['sh', '-c', `exec ${PINGROLL.join(' ')} rollup --wait 3600 --month "$(date -u -d "$(date -u +%Y-%m-15) -1 month" +%Y-%m)"`], 2, 8),
      retryAttempts: 3, timeout: Duration.hours(4),
    });

    const submit = (id: string, definition: batch.EcsJobDefinition, extra: Partial<tasks.BatchSubmitJobProps> = {}): tasks.BatchSubmitJob =>
      new tasks.BatchSubmitJob(this, id, {
        jobName: `pingroll-${definition.node.id.toLowerCase()}`, jobQueueArn: queue.jobQueueArn, jobDefinitionArn: definition.jobDefinitionArn,
        integrationPattern: sfn.IntegrationPattern.RUN_JOB, resultPath: sfn.JsonPath.DISCARD, ...extra,
      });
    const shardsOf = shards > 1 ? { arraySize: shards } : {};
    const dateOf = { payload: sfn.TaskInput.fromObject({ date: sfn.JsonPath.stringAt('$.date') }) };

    // Input: {"date": "YYYY-MM-DD"} rolls up that day; {"dates": [...]} a range (a backfill: the shards
    // once, then each day, one at a time); the nightly schedule's {"time": ...} the day before it.
    const ingest = submit('Ingest shards', ingestJob, shardsOf);
    ingest.next(submit('Roll up and load', rollupJob, dateOf));
    // JSONata's date functions, in the state machine itself (no Lambda function to run, patch or permit).
    const dayBefore = sfn.Pass.jsonata(this, 'The day before the schedule', { outputs: { date: `{% ${DAY_BEFORE_SCHEDULE} %}` } });
    const eachDay = new sfn.Map(this, 'Each day', { itemsPath: '$.dates', itemSelector: { 'date.$': '$$.Map.Item.Value' }, maxConcurrency: 1, resultPath: sfn.JsonPath.DISCARD });
    eachDay.itemProcessor(submit('Roll up and load a day of the range', rollupJob, dateOf));
    const range = submit('Ingest shards for a range', ingestJob, shardsOf);
    range.next(eachDay);
    const what = new sfn.Choice(this, 'What to roll up?')
      .when(sfn.Condition.isPresent('$.dates'), range)
      .when(sfn.Condition.isPresent('$.date'), ingest)
      .otherwise(dayBefore.next(ingest));
    // The state machine's role is written here, statement by statement (CDK's Batch task would grant
    // SubmitJob on every job definition): SubmitJob on the queue and the two job definitions it runs;
    // the managed rule the .sync integration watches jobs with; logging and tracing.
    const machineRole = new iam.Role(this, 'NightlyRole', { assumedBy: new iam.ServicePrincipal('states.amazonaws.com') });
    machineRole.addToPolicy(new iam.PolicyStatement({ actions: ['batch:SubmitJob'], resources: [queue.jobQueueArn, ingestJob.jobDefinitionArn, rollupJob.jobDefinitionArn] }));
    machineRole.addToPolicy(new iam.PolicyStatement({
      actions: ['events:PutTargets', 'events:PutRule', 'events:DescribeRule'],
      resources: [this.formatArn({ service: 'events', resource: 'rule', resourceName: 'StepFunctionsGetEventsForBatchJobsRule' })],
    }));
    machineRole.addToPolicy(new iam.PolicyStatement({
      actions: ['logs:CreateLogDelivery', 'logs:GetLogDelivery', 'logs:UpdateLogDelivery', 'logs:DeleteLogDelivery', 'logs:ListLogDeliveries',
        'logs:PutResourcePolicy', 'logs:DescribeResourcePolicies', 'logs:DescribeLogGroups',
        'xray:PutTraceSegments', 'xray:PutTelemetryRecords', 'xray:GetSamplingRules', 'xray:GetSamplingTargets'],
      resources: ['*'],
    }));
    ack(machineRole, 'AwsSolutions-IAM5[Resource::*]', 'CloudWatch Logs\' log-delivery actions and X-Ray\'s trace actions have no resource-level permissions (Step Functions\' documented policy for logging and tracing)');
    const machineLogs = new logs.LogGroup(this, 'NightlyLogs', { retention: logs.RetentionDays.THREE_MONTHS, removalPolicy: RemovalPolicy.RETAIN });
    this.stateMachine = new sfn.StateMachine(this, 'Nightly', {
      definitionBody: sfn.DefinitionBody.fromChainable(what), timeout: Duration.hours(24), tracingEnabled: true,
      role: machineRole.withoutPolicyUpdates(), logs: { destination: machineLogs, level: sfn.LogLevel.ALL, includeExecutionData: true },
    });
    new events.Rule(this, 'EveryNight', {
      schedule: events.Schedule.cron({ minute: '30', hour: '2' }),
      targets: [new targets.SfnStateMachine(this.stateMachine, { input: events.RuleTargetInput.fromObject({ time: events.EventField.time }) })],
    });
    new events.Rule(this, 'EveryMonth', {
      schedule: events.Schedule.cron({ minute: '30', hour: '6', day: '2' }),
      targets: [new targets.BatchJob(queue.jobQueueArn, queue, monthJob.jobDefinitionArn, monthJob, { jobName: 'pingroll-month', retryAttempts: 2 })],
    });

    const topic = new sns.Topic(this, 'Alarms', { enforceSSL: true });
    if (props.alarmEmail) topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    for (const metric of ['ExecutionsFailed', 'ExecutionsTimedOut', 'ExecutionsAborted'] as const) {
      const alarm = new cloudwatch.Alarm(this, `Runs${metric}`, {
        metric: new cloudwatch.Metric({ namespace: 'AWS/States', metricName: metric, dimensionsMap: { StateMachineArn: this.stateMachine.stateMachineArn }, statistic: 'Sum', period: Duration.hours(1) }),
        threshold: 1, evaluationPeriods: 1, comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING, alarmDescription: `pingroll's nightly run: ${metric}; see the execution's failed job in AWS Batch and its log`,
      });
      alarm.addAlarmAction(new actions.SnsAction(topic));
    }
    // pingroll's own metrics: each run prints them as an Embedded Metric Format line (namespace pingroll,
    // dimension Command), which CloudWatch Logs makes metrics of. The rollup publishes the day.
    const pingrollMetric = (metricName: string, statistic: string, period: Duration): cloudwatch.Metric =>
      new cloudwatch.Metric({ namespace: 'pingroll', metricName, dimensionsMap: { Command: 'rollup' }, statistic, period });
    const emfAlarms: Array<[string, cloudwatch.AlarmProps]> = [
      ['NoSuccessfulRollup', {
        metric: pingrollMetric('Success', 'Sum', Duration.hours(26)), threshold: 1, evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD, treatMissingData: cloudwatch.TreatMissingData.BREACHING,
        alarmDescription: 'no pingroll rollup has succeeded in 26 hours: see the nightly execution and its jobs\' logs',
      }],
      ['RejectsShare', {
        metric: pingrollMetric('RejectsShare', 'Maximum', Duration.hours(1)), threshold: props.rejectsShareAlarm ?? 5, evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD, treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: `more than ${props.rejectsShareAlarm ?? 5}% of a run's records were not pings: see the day's rejects (_runs/dt=YYYY-MM-DD/rejects.jsonl.gz under the output) for the reasons`,
      }],
      ['QuarantinedObjects', {
        metric: pingrollMetric('QuarantinedObjects', 'Maximum', Duration.hours(1)), threshold: 1, evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: 'log objects could not be read and are held in the quarantine: pingroll quarantine list',
      }],
    ];
    for (const [id, alarmProps] of emfAlarms) new cloudwatch.Alarm(this, id, alarmProps).addAlarmAction(new actions.SnsAction(topic));
    // Any of pingroll's jobs failing for good (its retries spent), the month's included.
    new events.Rule(this, 'JobFailed', {
      eventPattern: { source: ['aws.batch'], detailType: ['Batch Job State Change'], detail: { status: ['FAILED'], jobQueue: [queue.jobQueueArn] } },
      targets: [new targets.SnsTopic(topic, { message: events.RuleTargetInput.fromText(`pingroll job ${events.EventField.fromPath('$.detail.jobName')} failed: ${events.EventField.fromPath('$.detail.statusReason')}; its log is in CloudWatch Logs (AWS Batch)`) })],
    });
    this.pingBucket = pingBucket;
  }
}
