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
 * - alarms on failed, timed-out and aborted runs (one mail a failed night), and on the month's job
 *   failing for good, to an SNS topic.
 * The Redshift Serverless workgroup itself is the analysts' and is named, not created.
 *
 * It passes cdk-nag's AwsSolutions pack (deploy/test): every permission names its resource where the
 * name is known at synth time; what cannot (objects S3 names at run time, actions AWS offers without
 * resource-level permissions) is acknowledged beside the grant, with its reason (`ack`).
 */
import { CfnOutput, Duration, IgnoreMode, RemovalPolicy, Size, Stack, Validations, type StackProps } from 'aws-cdk-lib';
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
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct, IConstruct } from 'constructs';
import { dayRejectsKey, REJECTS_TAGS, WAREHOUSE_ROLLUP } from '../../datasets/layout.js';
import { Catalog } from './catalog.js';

/** A cdk-nag finding acknowledged on `scope`, with why it cannot be fixed there (never a whole rule). */
function ack(scope: IConstruct, id: string, reason: string): void {
  // A rule with findings (IAM5: one per permission) is acknowledged one finding at a time; a rule
  // without (SMG4) only on the one resource `scope`.
  if (!/^AwsSolutions-[A-Z]+\d+\[.+\]$/.test(id) && !(['AwsSolutions-SMG4', 'AwsSolutions-S2'].includes(id) && scope.node.children.filter((c) => c.node.id === 'Resource').length <= 1)) throw new Error(`acknowledge one finding (Rule[Finding]), not a whole rule: ${id}`);
  Validations.of(scope).acknowledge({ id, reason });
}

export interface PingrollStackProps extends StackProps {
  /** The repository's root, where the Dockerfile is. */
  imageDirectory: string;
  /**
   * The stage this stack is (`prod`, `staging`, ...): the names that are unique in an account or region
   * (the Glue database, the Athena workgroup, jobs) carry it, so that two stages live side by side.
   * Lowercase letters and digits; `prod` when not given.
   */
  stage?: string;
  /**
   * Run in an existing VPC instead of making one: its id, the subnets the jobs run in, and their
   * availability zones (one each). Private subnets need a way to S3, ECR, CloudWatch Logs, Secrets
   * Manager, Glue, STS and the Redshift Data API (NAT or VPC endpoints); the jobs get no public IP there.
   */
  vpc?: { vpcId: string; subnetIds: string[]; availabilityZones: string[]; publicSubnets?: boolean };
  /**
   * An existing bucket S3 server access logging delivers the pings' logs to, and the prefix (its
   * `TargetPrefix`), instead of the stack's own ping and log buckets: most players already GET an
   * object of a bucket that logs. The jobs may only read it.
   */
  existingLogs?: { bucketName: string; prefix: string };
  /**
   * Days the stack's log bucket keeps an object (the pings' access logs, the output's, VPC flow logs)
   * before S3 expires it; 90 when not given, at least 31. pingroll reads a log object once, and lists
   * each delivery day again at most 30 days after it ends (PINGROLL_RECONCILE_AFTER's limit; 3 days by
   * default); the rest of the 90 leaves a quarantined object time to be fixed and a restore time to be
   * reconciled, and keeps the raw logs (client IPs) no longer than the rejects they hold too.
   */
  logsExpireDays?: number;
  /**
   * The first day the published tables hold, where Athena's partition projection starts (older days
   * are not queried); `2024-01-01` when not given. Set it to the oldest day of the legacy history
   * before it is backfilled. YYYY-MM-DD; the monthly tables start at its month.
   */
  firstDay?: string;
  /** The ping object's key in the stack's ping bucket (its GETs are the pings; PINGROLL_PING_KEYS): `p.gif` when not given. */
  pingKey?: string;
  /**
   * The legacy monthly DynamoDB tables' template (PINGROLL_DDB_TABLES, e.g. `pings_{yyyy}_{mm}`): the jobs
   * may read (Scan, DescribeTable) the tables it names and nothing else; none when not given.
   */
  ddbTables?: string;
  /**
   * The Secrets Manager secret of a Redshift administrator (username and password, as the Data API
   * takes it): with it, every night starts with `pingroll warehouse bootstrap` (idempotent): the COPY
   * role attached to the namespace, the jobs' user, schema and grants, ASSUMEROLE for that user only.
   * Without it, run that command once as an administrator (the Output BootstrapCommand).
   */
  redshiftAdminSecretArn?: string;
  /** How long a Redshift statement may run before the job gives up on it (PINGROLL_REDSHIFT_WAIT, minutes); 30 when not given. */
  redshiftWaitMinutes?: number;
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
  /** Where alarms are mailed (required: alarms nobody reads are none). */
  alarmEmail: string;
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

/**
 * Actions the stack grants that the jobs' recorded calls in the tests do not exercise
 * (deploy/test/iam.test.ts), each with why it is granted all the same.
 */
export const GRANTS_NOT_EXERCISED: Record<string, string> = {
  's3:AbortMultipartUpload': 'a file over the SDK\'s part size is uploaded in parts (@aws-sdk/lib-storage), and an upload that fails is aborted so that no part is left billed; the tests\' files are smaller',
  'redshift-data:CancelStatement': 'a statement still running after PINGROLL_REDSHIFT_WAIT is cancelled (held to it against the mocked Data API: test/export/warehouse/redshift-warehouse.test.ts, its timeout)',
};

/** `states` chained in order (those null left out), then `last`. */
function firstOf(states: Array<sfn.INextable & sfn.IChainable | null>, last: sfn.IChainable): sfn.IChainable {
  const present = states.filter((x): x is sfn.INextable & sfn.IChainable => x !== null);
  if (present.length === 0) return last;
  let chain = sfn.Chain.start(present[0]!);
  for (const x of present.slice(1)) chain = chain.next(x);
  return chain.next(last);
}

/** What the container runs: pingroll's CLI (Dockerfile: WORKDIR /app). */
const PINGROLL = ['node', 'bin/pingroll.js'];

/**
 * A pingroll command as a job runs it: exit 4 (it finished, but log objects could not be read; they
 * are quarantined, retried by every later run, and the QuarantinedObjects alarm says so) does not
 * fail the night; every other code is the job's own (evaluateOnExit decides what is retried).
 */
export function nightCommand(args: string[]): string[] {
  return ['sh', '-c', `${PINGROLL.join(' ')} "$@"; rc=$?; if [ "$rc" -eq 4 ]; then echo 'pingroll: finished with log objects quarantined (exit 4): the night goes on; pingroll quarantine list names them' >&2; exit 0; fi; exit "$rc"`, 'pingroll', ...args];
}

/**
 * Retries by exit code (Batch takes five rules, the first that matches decides; a job none matches is
 * retried): 1 (the run failed, nothing half done: run again) and 3 (another run holds the lock) and the
 * host's failures are retried; 2 (a setting is wrong: retrying cannot help) and 4 (quarantined objects:
 * nightCommand makes it 0) never are.
 */
export const RETRIES = [
  batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom({ onExitCode: '2' })),
  batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom({ onExitCode: '4' })),
  batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom({ onExitCode: '1' })),
  batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom({ onExitCode: '3' })),
  batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom({ onStatusReason: 'Host EC2*' })),
];

export class PingrollStack extends Stack {
  readonly stateMachine: sfn.StateMachine;
  /** The stack's ping bucket; null with existingLogs. */
  readonly pingBucket: s3.Bucket | null;
  readonly catalog: Catalog;

  constructor(scope: Construct, id: string, props: PingrollStackProps) {
    super(scope, id, props);
    const shards = props.shards;
    const stage = props.stage ?? 'prod';
    if (!/^[a-z][a-z0-9]{0,15}$/.test(stage)) throw new Error(`pingroll:stage must be lowercase letters and digits (at most 16), starting with a letter; got '${stage}'`);
    if (!props.alarmEmail || !/^[^@\s]+@[^@\s]+$/.test(props.alarmEmail)) throw new Error(`pingroll:alarmEmail must be the address alarms are mailed to (an alarm nobody reads is none); got '${props.alarmEmail ?? ''}'`);
    if (!(Number.isInteger(shards) && shards >= 1 && shards <= 10_000)) throw new Error(`shards must be a whole number from 1 to 10000 (an AWS Batch array's size); got ${shards}`);
    if (!/^arn:aws[a-z-]*:redshift-serverless:[a-z0-9-]+:\d{12}:workgroup\/[0-9a-f-]{36}$/.test(props.redshiftWorkgroupArn)) {
      throw new Error(`pingroll:redshiftWorkgroupArn must be the workgroup's ARN (aws redshift-serverless get-workgroup --workgroup-name ${props.redshiftWorkgroup || 'NAME'} --query workgroup.workgroupArn); got '${props.redshiftWorkgroupArn}'`);
    }

    const logsExpireDays = props.logsExpireDays ?? 90;
    if (!(Number.isInteger(logsExpireDays) && logsExpireDays > 30)) throw new Error(`pingroll:logsExpireDays must be a whole number of days above 30 (PINGROLL_RECONCILE_AFTER lists a delivery day up to 30 days after it ends); got ${logsExpireDays}`);
    const firstDay = props.firstDay ?? '2024-01-01';
    if (!/^\d{4}-\d{2}-\d{2}$/.test(firstDay) || new Date(`${firstDay}T00:00:00Z`).toISOString().slice(0, 10) !== firstDay) throw new Error(`pingroll:firstDay must be a day, YYYY-MM-DD; got '${firstDay}'`);
    // Log objects expire, and stay in S3 Standard until then: no transition to Standard-IA. A
    // transition is a request ($0.01 per 1,000, us-east-1 list price) per object, and at 16.5M objects a
    // day that is $165 a day, while a ~200 KB object saves ~$0.000002 a month in IA: it would pay for
    // itself after 5 months, past the expiry. IA also bills objects under 128 KB as 128 KB.
    const logBucket = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED, blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL, enforceSSL: true,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [
        { id: 'expire', expiration: Duration.days(logsExpireDays) },
        { id: 'unfinished-uploads', abortIncompleteMultipartUploadAfter: Duration.days(7) },
      ],
    });
    // The pings' object: players GET it with the ping's fields in the query string; S3 logs each GET.
    // Public for that one key only (ACLs stay blocked; the bucket policy allows GetObject on the key),
    // made by the stack as an empty object. Or the users' own bucket already logging them (existingLogs).
    const pingKey = props.pingKey ?? 'p.gif';
    let pingBucket: s3.Bucket | null = null;
    if (!props.existingLogs) {
      pingBucket = new s3.Bucket(this, 'Pings', {
        encryption: s3.BucketEncryption.S3_MANAGED, enforceSSL: true, removalPolicy: RemovalPolicy.RETAIN,
        blockPublicAccess: new s3.BlockPublicAccess({ blockPublicAcls: true, ignorePublicAcls: true, blockPublicPolicy: false, restrictPublicBuckets: false }),
        serverAccessLogsBucket: logBucket, serverAccessLogsPrefix: 'logs/',
        targetObjectKeyFormat: s3.TargetObjectKeyFormat.partitionedPrefix(s3.PartitionDateSource.EVENT_TIME),
      });
      pingBucket.addToResourcePolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], principals: [new iam.AnyPrincipal()], resources: [pingBucket.arnForObjects(pingKey)] }));
      ack(pingBucket, 'AwsSolutions-S2', 'the ping object is read by every player: its GETs, logged by S3, are the pings; public read is allowed on that one key by the bucket policy, ACLs stay blocked');
    }
    const pingLogs = props.existingLogs ? s3.Bucket.fromBucketName(this, 'ExistingLogs', props.existingLogs.bucketName) : logBucket;
    const pingLogsPrefix = props.existingLogs?.prefix ?? 'logs/';
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
        { id: 'rejects', tagFilters: REJECTS_TAGS, expiration: Duration.days(rejectsRetentionDays) },
        { id: 'unfinished-uploads', abortIncompleteMultipartUploadAfter: Duration.days(7) },
        // What a rollup inside Redshift keeps while it runs (COPY manifests, UNLOADed files, the viewer
        // key's secret): removed by the run, or by the next; this, should neither have run for a day.
        { id: 'warehouse-rollup', prefix: `${OUTPUT_PREFIX}${WAREHOUSE_ROLLUP}`, expiration: Duration.days(1) },
      ],
    });
    const outputObjects = outputBucket.arnForObjects(`${OUTPUT_PREFIX}*`);

    // Redshift's COPY reads the staged and published Parquet; UNLOAD (the rollup inside Redshift) writes
    // under WAREHOUSE_ROLLUP of the output.
    const copyRole = new iam.Role(this, 'RedshiftCopyRole', { assumedBy: new iam.ServicePrincipal('redshift.amazonaws.com') });
    copyRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:ListBucket', 's3:GetBucketLocation'], resources: [outputBucket.bucketArn] }));
    copyRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [outputObjects] }));
    copyRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: [outputBucket.arnForObjects(`${OUTPUT_PREFIX}${WAREHOUSE_ROLLUP}*`)] }));
    ack(copyRole, `AwsSolutions-IAM5[Resource::<${this.getLogicalId(outputBucket.node.defaultChild as s3.CfnBucket)}.Arn>/${OUTPUT_PREFIX}*]`, 'COPY reads objects pingroll names at run time (staged batches, each day\'s Parquet); the grant is limited to the output prefix');
    ack(copyRole, `AwsSolutions-IAM5[Resource::<${this.getLogicalId(outputBucket.node.defaultChild as s3.CfnBucket)}.Arn>/${OUTPUT_PREFIX}${WAREHOUSE_ROLLUP}*]`, 'UNLOAD writes files it names itself, under a prefix per run; the grant is limited to the warehouse-rollup folder of the output');

    // The catalog over the published Parquet: Glue tables (dt projected for Athena, registered by each
    // run for Spectrum and EMR), an Athena workgroup; Redshift reads them through <schema>_lake.
    const catalog = new Catalog(this, 'Catalog', {
      outputBucket, outputPrefix: OUTPUT_PREFIX, accessLogs: logBucket, database: props.catalogDatabase ?? `pingroll_${stage}`, workgroup: `pingroll-${stage}`,
      bytesScannedCutoff: props.athenaBytesScannedCutoff ?? 10 * 2 ** 30, firstDay,
    });
    catalog.grantRead(copyRole);
    this.catalog = catalog;

    // A VPC of its own (public subnets, no NAT: the jobs reach AWS over the internet), or the one given.
    // Its flow logs record rejected traffic only (what a security review asks for): all of it would be a
    // record per connection to S3, a few per log object read, in the log bucket.
    const given = props.vpc;
    if (given && (given.subnetIds.length === 0 || given.subnetIds.length !== given.availabilityZones.length)) throw new Error('pingroll:vpc needs subnetIds and their availabilityZones, one each');
    const vpc = given
      ? ec2.Vpc.fromVpcAttributes(this, 'Vpc', { vpcId: given.vpcId, availabilityZones: given.availabilityZones, ...(given.publicSubnets ? { publicSubnetIds: given.subnetIds } : { privateSubnetIds: given.subnetIds }) })
      : new ec2.Vpc(this, 'Vpc', {
        maxAzs: 2, natGateways: 0, subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }],
        flowLogs: { toLogBucket: { destination: ec2.FlowLogDestination.toS3(logBucket, 'vpc-flow-logs/'), trafficType: ec2.FlowLogTrafficType.REJECT } },
      });
    const publicIp = !given || given.publicSubnets === true;
    const compute = new batch.FargateComputeEnvironment(this, 'Compute', { vpc, vpcSubnets: given ? { subnets: vpc.publicSubnets.length ? vpc.publicSubnets : vpc.privateSubnets } : { subnetType: ec2.SubnetType.PUBLIC }, maxvCpus: Math.max(16, shards * 2) });
    const queue = new batch.JobQueue(this, 'Queue', { computeEnvironments: [{ computeEnvironment: compute, order: 1 }] });

    // What the image's build sees is the repository less its .dockerignore, which CDK reads (Docker's rules).
    // Built for Fargate's x86_64 whatever machine deploys it (an arm64 laptop builds arm64 by default).
    const image = ecs.ContainerImage.fromAsset(props.imageDirectory, { ignoreMode: IgnoreMode.DOCKER, platform: Platform.LINUX_AMD64 });
    const jobRole = new iam.Role(this, 'JobRole', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
    // The logs: listed (HeadBucket and ListObjectsV2 need ListBucket on the bucket) and read.
    jobRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [pingLogs.bucketArn] }));
    jobRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [pingLogs.arnForObjects(`${pingLogsPrefix}*`)] }));
    if (props.existingLogs) ack(jobRole, `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::${props.existingLogs.bucketName}/${pingLogsPrefix}*]`, 'S3 server access logging names the log objects at delivery time; the grant is read-only and limited to the prefix the existing bucket\'s logs are delivered under');
    else ack(jobRole, `AwsSolutions-IAM5[Resource::<${this.getLogicalId(logBucket.node.defaultChild as s3.CfnBucket)}.Arn>/logs/*]`, 'S3 server access logging names the log objects at delivery time; the grant is read-only and limited to the logs/ prefix');
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
    // The jobs send batches (loads, rollups, the warehouse's tables), and queries whose rows they read
    // (a day's figures as its transaction committed them, what a statement's new version changed).
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
    // The legacy monthly tables, when named: read only (a Scan, and DescribeTable to find them).
    if (props.ddbTables) {
      const prefix = props.ddbTables.split('{')[0]!;
      if (!/^[A-Za-z0-9_.-]+$/.test(prefix)) throw new Error(`pingroll:ddbTables must start with the tables' fixed name, e.g. pings_{yyyy}_{mm}; got '${props.ddbTables}'`);
      jobRole.addToPolicy(new iam.PolicyStatement({ actions: ['dynamodb:Scan', 'dynamodb:DescribeTable'], resources: [this.formatArn({ service: 'dynamodb', resource: 'table', resourceName: `${prefix}*` })] }));
      ack(jobRole, `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/${prefix}*]`, 'the legacy tables are one a month, named by PINGROLL_DDB_TABLES\' template; the grant is read-only and limited to the names it makes');
    }
    // The jobs' own log group, kept 90 days (the default /aws/batch/job group keeps logs forever).
    const jobLogs = new logs.LogGroup(this, 'JobLogs', { retention: logs.RetentionDays.THREE_MONTHS, removalPolicy: RemovalPolicy.RETAIN });

    const environment = {
      PINGROLL_LOGS: pingLogs.s3UrlForObject(pingLogsPrefix),
      PINGROLL_PING_KEYS: pingKey,
      PINGROLL_OUTPUT: outputBucket.s3UrlForObject(OUTPUT_PREFIX),
      PINGROLL_WAREHOUSE: 'redshift',
      PINGROLL_ROLLUP: 'redshift',
      PINGROLL_REDSHIFT_WORKGROUP: props.redshiftWorkgroup,
      PINGROLL_REDSHIFT_DATABASE: props.redshiftDatabase,
      PINGROLL_REDSHIFT_IAM_ROLE: copyRole.roleArn,
      PINGROLL_GLUE_DATABASE: props.catalogDatabase ?? `pingroll_${stage}`,
      PINGROLL_REDSHIFT_WAIT: String(props.redshiftWaitMinutes ?? 30),
      ...(props.ddbTables ? { PINGROLL_DDB_TABLES: props.ddbTables } : {}),
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
        image, command, cpu, memory: Size.gibibytes(memoryGiB), jobRole, environment, secrets, assignPublicIp: publicIp,
        fargateCpuArchitecture: ecs.CpuArchitecture.X86_64, logging: ecs.LogDrivers.awsLogs({ logGroup: jobLogs, streamPrefix: 'pingroll' }),
      });
      ack(c.executionRole, 'AwsSolutions-IAM5[Resource::*]', 'ecr:GetAuthorizationToken has no resource-level permissions; pulling the image is limited to its repository');
      ack(c.executionRole, `AwsSolutions-IAM5[Resource::<${this.getLogicalId(jobLogs.node.defaultChild as logs.CfnLogGroup)}.Arn>:*]`, 'log streams are named per job at run time; the grant is limited to the jobs\' own log group');
      return c;
    };
    // A shard parses ~240 MB of logs per CPU-second from a directory (half that from S3: README's
    // model) with ~0.5 GiB peak; 2 vCPU and 4 GiB leave room for a busy shard and DuckDB's conversions.
    // Each shard is given the days the run is for (one, or a backfill's list, comma-separated): their
    // delivery days are listed if no run listed them, and the legacy tables that can hold them read.
    const ingestJob = new batch.EcsJobDefinition(this, 'IngestShard', {
      container: container('IngestContainer', nightCommand(['ingest', '--wait', '600', '--date', 'Ref::date']), 2, 4),
      parameters: { date: 'YYYY-MM-DD' }, retryAttempts: 3, retryStrategies: RETRIES, timeout: Duration.hours(2),
    });
    const rollupJob = new batch.EcsJobDefinition(this, 'Rollup', {
      container: container('RollupContainer', nightCommand(['rollup', '--no-ingest', '--wait', '600', '--date', 'Ref::date']), 1, 2),
      parameters: { date: 'YYYY-MM-DD' }, retryAttempts: 3, retryStrategies: RETRIES, timeout: Duration.hours(2),
    });
    // Late data: the days whose staged data changed since they were published (objects delivered after
    // the night's listing, and what the scheduled full listings of delivery days found), republished;
    // then months due to close, and retention (PINGROLL_CLOSE_AFTER_DAYS, PINGROLL_RETENTION_DAYS).
    const staleJob = new batch.EcsJobDefinition(this, 'Stale', {
      container: container('StaleContainer', nightCommand(['backfill', '--stale', '--no-ingest', '--wait', '600']), 1, 2),
      retryAttempts: 3, retryStrategies: RETRIES, timeout: Duration.hours(4),
    });
    // Redshift made ready for the jobs, as its administrator, before each night (idempotent): a role of
    // its own, with the namespace's update and the administrator's secret, nothing of the output.
    const jobUser = `IAMR:${jobRole.roleName}`;
    let bootstrapJob: batch.EcsJobDefinition | null = null;
    if (props.redshiftAdminSecretArn) {
      const admin = secretsmanager.Secret.fromSecretCompleteArn(this, 'RedshiftAdmin', props.redshiftAdminSecretArn);
      const bootstrapRole = new iam.Role(this, 'BootstrapRole', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
      const namespaceArn = this.formatArn({ service: 'redshift-serverless', resource: 'namespace', resourceName: '*' });
      bootstrapRole.addToPolicy(new iam.PolicyStatement({ actions: ['redshift-serverless:GetWorkgroup'], resources: [props.redshiftWorkgroupArn] }));
      bootstrapRole.addToPolicy(new iam.PolicyStatement({ actions: ['redshift-serverless:GetNamespace', 'redshift-serverless:UpdateNamespace'], resources: [namespaceArn] }));
      bootstrapRole.addToPolicy(new iam.PolicyStatement({ actions: ['iam:PassRole'], resources: [copyRole.roleArn] }));
      bootstrapRole.addToPolicy(new iam.PolicyStatement({ actions: ['redshift-data:BatchExecuteStatement', 'redshift-data:ExecuteStatement'], resources: [props.redshiftWorkgroupArn] }));
      bootstrapRole.addToPolicy(new iam.PolicyStatement({ actions: ['redshift-data:DescribeStatement', 'redshift-data:GetStatementResult', 'redshift-data:CancelStatement'], resources: ['*'] }));
      bootstrapRole.addToPolicy(new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [admin.secretArn] }));
      ack(bootstrapRole, 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:redshift-serverless:<AWS::Region>:<AWS::AccountId>:namespace/*]', 'the workgroup\'s namespace is known by name only (its ARN holds an id the stack is not given); the bootstrap reads it from the workgroup and updates its roles, nothing else');
      ack(bootstrapRole, 'AwsSolutions-IAM5[Resource::*]', 'the Data API\'s DescribeStatement, GetStatementResult and CancelStatement have no resource-level permissions (a caller sees only the statements it ran)');
      const c = new batch.EcsFargateContainerDefinition(this, 'BootstrapContainer', {
        image, command: nightCommand(['warehouse', 'bootstrap', '--grant-to', jobUser]), cpu: 0.25, memory: Size.gibibytes(0.5), jobRole: bootstrapRole,
        environment: { ...environment, PINGROLL_REDSHIFT_SECRET_ARN: props.redshiftAdminSecretArn }, assignPublicIp: publicIp,
        fargateCpuArchitecture: ecs.CpuArchitecture.X86_64, logging: ecs.LogDrivers.awsLogs({ logGroup: jobLogs, streamPrefix: 'pingroll' }),
      });
      ack(c.executionRole, 'AwsSolutions-IAM5[Resource::*]', 'ecr:GetAuthorizationToken has no resource-level permissions; pulling the image is limited to its repository (the bootstrap job)');
      ack(c.executionRole, `AwsSolutions-IAM5[Resource::<${this.getLogicalId(jobLogs.node.defaultChild as logs.CfnLogGroup)}.Arn>:*]`, 'log streams are named per job at run time; the grant is limited to the jobs\' own log group (the bootstrap job)');
      bootstrapJob = new batch.EcsJobDefinition(this, 'Bootstrap', { container: c, retryAttempts: 3, retryStrategies: RETRIES, timeout: Duration.minutes(30) });
    }
    // The licensors' month, on the 2nd: the month before the job's own date.
    const monthJob = new batch.EcsJobDefinition(this, 'Month', {
      container: container('MonthContainer', ['sh', '-c', `${PINGROLL.join(' ')} rollup --wait 3600 --month "$(date -u -d "$(date -u +%Y-%m-15) -1 month" +%Y-%m)"; rc=$?; [ "$rc" -eq 4 ] && exit 0; exit "$rc"`], 2, 8),
      retryAttempts: 3, retryStrategies: RETRIES, timeout: Duration.hours(4),
    });

    const submit = (id: string, definition: batch.EcsJobDefinition, extra: Partial<tasks.BatchSubmitJobProps> = {}): tasks.BatchSubmitJob =>
      new tasks.BatchSubmitJob(this, id, {
        jobName: `pingroll-${stage}-${definition.node.id.toLowerCase()}`, jobQueueArn: queue.jobQueueArn, jobDefinitionArn: definition.jobDefinitionArn,
        integrationPattern: sfn.IntegrationPattern.RUN_JOB, resultPath: sfn.JsonPath.DISCARD, ...extra,
      });
    const shardsOf = shards > 1 ? { arraySize: shards } : {};
    const dateOf = { payload: sfn.TaskInput.fromObject({ date: sfn.JsonPath.stringAt('$.date') }) };

    // Input: {"date": "YYYY-MM-DD"} rolls up that day; {"dates": [...]} a range (a backfill: the shards
    // once, then each day, one at a time); the nightly schedule's {"time": ...} the day before it.
    const ingest = submit('Ingest shards', ingestJob, { ...shardsOf, ...dateOf });
    ingest.next(submit('Roll up and load', rollupJob, dateOf)).next(submit('Republish late data', staleJob));
    // JSONata's date functions, in the state machine itself (no Lambda function to run, patch or permit).
    const dayBefore = sfn.Pass.jsonata(this, 'The day before the schedule', { outputs: { date: `{% ${DAY_BEFORE_SCHEDULE} %}` } });
    const eachDay = new sfn.Map(this, 'Each day', { itemsPath: '$.dates', itemSelector: { 'date.$': '$$.Map.Item.Value' }, maxConcurrency: 1, resultPath: sfn.JsonPath.DISCARD });
    eachDay.itemProcessor(submit('Roll up and load a day of the range', rollupJob, dateOf));
    // The range's days reach the shards as one parameter (Batch's are strings): joined in JSONata.
    const range = sfn.Pass.jsonata(this, 'The range as one parameter', { outputs: { dates: '{% $states.input.dates %}', days: "{% $join($states.input.dates, ',') %}" } });
    range.next(submit('Ingest shards for a range', ingestJob, { ...shardsOf, payload: sfn.TaskInput.fromObject({ date: sfn.JsonPath.stringAt('$.days') }) }))
      .next(eachDay).next(submit('Republish late data of the range', staleJob));
    // The ping object (empty: its GETs are what count) is put by every run, before anything else: no
    // Lambda function to make it at deploy time (Outputs name the one command that makes it at once).
    const ensurePing = pingBucket && new tasks.CallAwsService(this, 'Put the ping object', {
      service: 's3', action: 'putObject', parameters: { Bucket: pingBucket.bucketName, Key: pingKey, Body: '' },
      iamResources: [pingBucket.arnForObjects(pingKey)], resultPath: sfn.JsonPath.DISCARD,
    });
    const what = new sfn.Choice(this, 'What to roll up?')
      .when(sfn.Condition.isPresent('$.dates'), range)
      .when(sfn.Condition.isPresent('$.date'), ingest)
      .otherwise(dayBefore.next(ingest));
    // The state machine's role is written here, statement by statement (CDK's Batch task would grant
    // SubmitJob on every job definition): SubmitJob on the queue and the two job definitions it runs;
    // the managed rule the .sync integration watches jobs with; logging and tracing.
    const machineRole = new iam.Role(this, 'NightlyRole', { assumedBy: new iam.ServicePrincipal('states.amazonaws.com') });
    if (pingBucket) machineRole.addToPolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: [pingBucket.arnForObjects(pingKey)] }));
    machineRole.addToPolicy(new iam.PolicyStatement({ actions: ['batch:SubmitJob'], resources: [queue.jobQueueArn, ingestJob.jobDefinitionArn, rollupJob.jobDefinitionArn, staleJob.jobDefinitionArn, ...(bootstrapJob ? [bootstrapJob.jobDefinitionArn] : [])] }));
    // The .sync integration follows the jobs it ran (DescribeJobs: no resource-level permissions) and
    // stops them when the execution is stopped or times out (TerminateJob), so that no job outlives its
    // run holding the lock.
    machineRole.addToPolicy(new iam.PolicyStatement({ actions: ['batch:DescribeJobs'], resources: ['*'] }));
    machineRole.addToPolicy(new iam.PolicyStatement({ actions: ['batch:TerminateJob'], resources: [this.formatArn({ service: 'batch', resource: 'job', resourceName: '*' })] }));
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
    ack(machineRole, 'AwsSolutions-IAM5[Resource::*]', 'CloudWatch Logs\' log-delivery actions, X-Ray\'s trace actions and batch:DescribeJobs have no resource-level permissions (Step Functions\' documented policies for logging, tracing and the .sync Batch integration)');
    ack(machineRole, 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:batch:<AWS::Region>:<AWS::AccountId>:job/*]', 'job ids are made by Batch when the state machine submits them; TerminateJob stops the jobs of an execution stopped or timed out (the .sync integration\'s documented policy)');
    // Under /aws/vendedlogs/, as Step Functions' docs ask ("Avoiding CloudWatch Logs resource policy size
    // restrictions"): a group named otherwise is added to the account's CloudWatch Logs resource policy,
    // which holds at most 5,120 characters for every such group of the account.
    const machineLogs = new logs.LogGroup(this, 'NightlyLogs', { logGroupName: `/aws/vendedlogs/states/pingroll-${stage}-nightly`, retention: logs.RetentionDays.THREE_MONTHS, removalPolicy: RemovalPolicy.RETAIN });
    this.stateMachine = new sfn.StateMachine(this, 'Nightly', {
      definitionBody: sfn.DefinitionBody.fromChainable(firstOf([ensurePing, bootstrapJob && submit('Bootstrap the warehouse', bootstrapJob)], what)), timeout: Duration.hours(24), tracingEnabled: true,
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
        // Missing data is not a failure: on day one there is none yet (the nightly run's own failures,
        // timeouts and aborts alarm through Step Functions' metrics, the month's through JobFailed).
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD, treatMissingData: cloudwatch.TreatMissingData.MISSING,
        alarmDescription: 'no pingroll rollup has succeeded in 26 hours: see the nightly execution and its jobs\' logs',
      }],
      ['RejectsShare', {
        metric: pingrollMetric('RejectsShare', 'Maximum', Duration.hours(1)), threshold: props.rejectsShareAlarm ?? 5, evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD, treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: `more than ${props.rejectsShareAlarm ?? 5}% of a run's records were not pings: see the day's rejects (${dayRejectsKey('YYYY-MM-DD')} under the output) for the reasons`,
      }],
      ['QuarantinedObjects', {
        metric: pingrollMetric('QuarantinedObjects', 'Maximum', Duration.hours(1)), threshold: 1, evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: 'log objects could not be read and are held in the quarantine: pingroll quarantine list',
      }],
    ];
    for (const [id, alarmProps] of emfAlarms) new cloudwatch.Alarm(this, id, alarmProps).addAlarmAction(new actions.SnsAction(topic));
    // The month's job failing for good (its retries spent): it runs outside the state machine, so no
    // execution alarm sees it. The nightly jobs are not matched: a failed night is one failed
    // execution, one RunsExecutionsFailed mail, however many jobs failed in it (Batch sends an event
    // for each array child and one for the parent: 9 mails for 8 shards).
    new events.Rule(this, 'JobFailed', {
      eventPattern: { source: ['aws.batch'], detailType: ['Batch Job State Change'], detail: { status: ['FAILED'], jobQueue: [queue.jobQueueArn], jobDefinition: [monthJob.jobDefinitionArn] } },
      targets: [new targets.SnsTopic(topic, { message: events.RuleTargetInput.fromText(`pingroll job ${events.EventField.fromPath('$.detail.jobName')} failed: ${events.EventField.fromPath('$.detail.statusReason')}; its log is in CloudWatch Logs (AWS Batch)`) })],
    });
    this.pingBucket = pingBucket;

    // What an operator needs after a deploy.
    const output = (id: string, value: string, description: string): CfnOutput => new CfnOutput(this, id, { value, description });
    output('Stage', stage, 'the stage: names that are unique in the account carry it');
    output('OutputLocation', outputBucket.s3UrlForObject(OUTPUT_PREFIX), 'PINGROLL_OUTPUT: Parquet, manifests, statements and pingroll\'s state');
    output('LogsLocation', pingLogs.s3UrlForObject(pingLogsPrefix), 'PINGROLL_LOGS: the pings\' S3 server access logs');
    if (pingBucket) {
      output('PingUrl', `https://${pingBucket.bucketRegionalDomainName}/${pingKey}`, 'the object players GET, with the ping\'s fields in the query string');
      output('PingObjectCommand', `aws s3api put-object --bucket ${pingBucket.bucketName} --key ${pingKey}`, 'makes the ping object at once (each nightly run puts it too)');
    }
    output('StateMachineArn', this.stateMachine.stateMachineArn, 'the nightly run: start it with {"date": "YYYY-MM-DD"} for a day, {"dates": [...]} for a range');
    output('JobQueueArn', queue.jobQueueArn, 'AWS Batch queue of pingroll\'s jobs');
    output('JobLogGroup', jobLogs.logGroupName, 'the jobs\' logs (JSON lines)');
    output('AlarmTopicArn', topic.topicArn, 'where alarms go');
    output('RedshiftCopyRoleArn', copyRole.roleArn, 'the role Redshift assumes to COPY and UNLOAD (attached to the namespace by the stack)');
    output('JobRoleName', jobRole.roleName, 'the jobs\' role: its Redshift user is IAMR:<this name>');
    if (!bootstrapJob) output('BootstrapCommand', `PINGROLL_WAREHOUSE=redshift PINGROLL_OUTPUT=${outputBucket.s3UrlForObject(OUTPUT_PREFIX)} PINGROLL_REDSHIFT_WORKGROUP=${props.redshiftWorkgroup} PINGROLL_REDSHIFT_DATABASE=${props.redshiftDatabase} PINGROLL_REDSHIFT_IAM_ROLE=${copyRole.roleArn} PINGROLL_GLUE_DATABASE=${props.catalogDatabase ?? `pingroll_${stage}`} PINGROLL_REDSHIFT_SECRET_ARN=<an administrator's secret> node bin/pingroll.js warehouse bootstrap --grant-to ${jobUser}`, 'run once as a Redshift administrator (or deploy with redshiftAdminSecretArn): attaches the COPY role, makes the jobs\' user, schema and grants');
    output('GlueDatabase', props.catalogDatabase ?? `pingroll_${stage}`, 'the published tables in the Glue Data Catalog');
    output('AthenaWorkgroup', `pingroll-${stage}`, 'the Athena workgroup over them');
  }
}
