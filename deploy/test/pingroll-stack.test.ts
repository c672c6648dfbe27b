/**
 * `cdk synth` of the deployment, offline (CDK's own synthesis, as the CLI runs it), with assertions on
 * the template (aws-cdk-lib/assertions).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import jsonata from 'jsonata';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import { REJECTS_TAGS, WAREHOUSE_ROLLUP } from '../../datasets/layout.js';
import { DAY_BEFORE_SCHEDULE, nightCommand, PingrollStack, type PingrollStackProps } from '../lib/pingroll-stack.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const WORKGROUP_ARN = 'arn:aws:redshift-serverless:eu-west-1:123456789012:workgroup/0b2f89bd-6884-7ca8-de44-3aac051aedd2';

// Synthesized into a folder of its own, removed after: the image asset is a copy of the repository.
const out = mkdtempSync(join(tmpdir(), 'pingroll-cdk-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function synth(shards = 8, extra: Partial<PingrollStackProps> = {}): Template {
  const app = new App({ outdir: join(out, `${shards}${Object.keys(extra).join('-')}`) });
  const stack = new PingrollStack(app, 'Pingroll', { imageDirectory: repo, shards, redshiftWorkgroup: 'analytics', redshiftWorkgroupArn: WORKGROUP_ARN, redshiftDatabase: 'dev', alarmEmail: 'ops@example.com', ...extra });
  app.synth();
  return Template.fromStack(stack);
}

const ADMIN_SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:redshift-admin-AbCdEf';

/** The stack synthesized under cdk-nag's AwsSolutions pack: its validation report, and the acknowledgments in the stack's source. */
function nag(): { violations: Array<{ rule: string; path: string }>; report: string } {
  const outdir = join(out, 'nag');
  const app = new App({ outdir });
  new PingrollStack(app, 'Pingroll', { imageDirectory: repo, shards: 8, redshiftWorkgroup: 'analytics', redshiftWorkgroupArn: WORKGROUP_ARN, redshiftDatabase: 'dev', alarmEmail: 'ops@example.com', episodeCatalogKey: 'catalog/episodes.csv', redshiftAdminSecretArn: ADMIN_SECRET });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  let thrown = '';
  try {
    app.synth();
  } catch (err) {
    thrown = String(err);
  }
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as { pluginReports: Array<{ violations: Array<{ ruleName: string; violatingConstructs: Array<{ constructPath: string }> }> }> };
  const violations = report.pluginReports.flatMap((p) => p.violations.flatMap((v) => v.violatingConstructs.map((c) => ({ rule: v.ruleName, path: c.constructPath }))));
  return { violations, report: thrown };
}

/**
 * Whether an EventBridge event pattern matches an event, for what the stack's patterns use: a list of
 * values (one must equal the event's), `{"exists": false}`, and nested objects (EventBridge's
 * "Content filtering in Amazon EventBridge event patterns").
 */
function matches(pattern: unknown, event: unknown): boolean {
  if (Array.isArray(pattern)) {
    return pattern.some((p) => (p !== null && typeof p === 'object' && 'exists' in p ? (event !== undefined) === (p as { exists: boolean }).exists : p === event));
  }
  const e = (event ?? {}) as Record<string, unknown>;
  return Object.entries(pattern as Record<string, unknown>).every(([k, p]) => matches(p, e[k]));
}

describe('the deployment (cdk synth)', () => {
  const t = synth();

  it("passes cdk-nag's AwsSolutions pack: no unacknowledged error, and each acknowledgment one finding with its reason", () => {
    const { violations, report } = nag();
    expect(violations, report).toEqual([]);
    // What is acknowledged, in the stack's source: one finding each (Rule[Finding]), each with a reason of its own.
    const source = readFileSync(fileURLToPath(new URL('../lib/pingroll-stack.ts', import.meta.url)), 'utf8');
    const acks = [...source.matchAll(/ack\(([^,]+), `?'?(AwsSolutions-[^'`]+)['`], '((?:[^'\\]|\\.)+)'\)/g)].map((m) => ({ scope: m[1]!, id: m[2]!, reason: m[3]! }));
    // Every ack( call of the source is read by the pattern above (none escapes the checks below).
    expect(acks.length).toBe((source.match(/\n\s+(?:(?:if \([^)]*\)|else) )?ack\(/g) ?? []).length);
    for (const a of acks) {
      // IAM5 one finding at a time; SMG4 (no rotation) for the viewer key only, whose rotation would split uniques; S2 (public read) for the ping bucket only.
      expect(a.id).toMatch(/^AwsSolutions-IAM5\[.+\]$|^AwsSolutions-SMG4$|^AwsSolutions-S2$/);
      expect(a.reason.length).toBeGreaterThan(40);
    }
    expect(new Set(acks.map((a) => a.reason)).size).toBe(acks.length);
    expect(acks.filter((a) => a.id === 'AwsSolutions-SMG4').map((a) => a.scope)).toEqual(['viewerKey']);
    expect(acks.filter((a) => a.id === 'AwsSolutions-S2').map((a) => a.scope)).toEqual(['pingBucket']);
  });

  it('catalogs every published dataset with the columns and types of real published files: Glue tables with dt projected, an Athena workgroup with a scan limit, Spectrum\'s read and the jobs\' partition registration', async () => {
    // A day and its month, published by pingroll itself (dist/: make build), read back by DuckDB.
    const work = mkdtempSync(join(tmpdir(), 'pingroll-catalog-'));
    try {
      const cli = (...args: string[]): void => {
        const r = spawnSync(process.execPath, [join(repo, 'bin/pingroll.js'), ...args], {
          env: { PATH: process.env.PATH ?? '', PINGROLL_LOGS: join(work, 'logs'), PINGROLL_OUTPUT: join(work, 'out'), PINGROLL_WAREHOUSE: 'none' }, encoding: 'utf8',
        });
        expect(r.status, r.stderr).toBe(0);
      };
      cli('generate', '--out', join(work, 'logs'), '--date', '2026-10-31', '--sessions', '40');
      cli('rollup', '--date', '2026-10-31');
      cli('rollup', '--month', '2026-10');
      const { DuckDBInstance } = createRequire(import.meta.url)('@duckdb/node-api') as typeof import('@duckdb/node-api');
      const duck = await (await DuckDBInstance.create(':memory:')).connect();
      const GLUE: Record<string, string> = { DATE: 'date', BIGINT: 'bigint', VARCHAR: 'string', TIMESTAMP: 'timestamp', DOUBLE: 'double' };
      const tables = Object.values(t.findResources('AWS::Glue::Table')) as Array<{ Properties: { TableInput: { Name: string; PartitionKeys: unknown; Parameters: Record<string, string>; StorageDescriptor: { Columns: Array<{ Name: string; Type: string }> } } } }>;
      const published = readdirSync(join(work, 'out')).filter((d) => !d.startsWith('_') && !d.startsWith('.')).sort();
      // A close's datasets are published by a close (test/jobs/close.test.ts holds their files to the registry the Glue tables come from); monthly like the month's.
      const byClose = ['monthly_statements', 'statement_adjustments'];
      expect(tables.map((x) => x.Properties.TableInput.Name).filter((n) => !byClose.includes(n)).sort()).toEqual(published);
      for (const { Properties: { TableInput: ti } } of tables.filter((x) => byClose.includes(x.Properties.TableInput.Name))) expect(ti.Parameters['projection.dt.interval.unit'], ti.Name).toBe('MONTHS');
      for (const { Properties: { TableInput: ti } } of tables.filter((x) => !byClose.includes(x.Properties.TableInput.Name))) {
        const dir = join(work, 'out', ti.Name);
        const file = join(dir, readdirSync(dir)[0]!, 'part-00000.parquet');
        const described = (await duck.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}', hive_partitioning = false)`)).getRowObjects() as Array<{ column_name: string; column_type: string }>;
        expect(ti.StorageDescriptor.Columns, ti.Name).toEqual(described.map((c) => ({ Name: c.column_name, Type: GLUE[c.column_type] ?? `unmapped ${c.column_type}` })));
        expect(ti.PartitionKeys).toEqual([{ Name: 'dt', Type: 'string' }]);
        expect(ti.Parameters).toMatchObject({ 'projection.enabled': 'true', 'projection.dt.type': 'date', 'projection.dt.format': 'yyyy-MM-dd', 'projection.dt.interval.unit': ti.Name === 'monthly_series_stats' ? 'MONTHS' : 'DAYS' });
        expect(JSON.stringify(ti.Parameters['storage.location.template'])).toContain(`/pingroll/${ti.Name}/dt=\${dt}/`);
      }
      duck.closeSync();
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    t.hasResourceProperties('AWS::Athena::WorkGroup', { WorkGroupConfiguration: Match.objectLike({ EnforceWorkGroupConfiguration: true, BytesScannedCutoffPerQuery: 10 * 2 ** 30, ResultConfiguration: Match.objectLike({ EncryptionConfiguration: { EncryptionOption: 'SSE_S3' } }) }) });
    // Privacy: the jobs mask what rejects keep and expire them; the bucket's lifecycle rule mirrors it by pingroll's tag.
    t.hasResourceProperties('AWS::Batch::JobDefinition', { ContainerProperties: Match.objectLike({ Environment: Match.arrayWith([{ Name: 'PINGROLL_PRIVACY', Value: 'mask' }, { Name: 'PINGROLL_REJECTS_RETENTION_DAYS', Value: '90' }]) }) });
    t.hasResourceProperties('AWS::S3::Bucket', { LifecycleConfiguration: { Rules: Match.arrayWith([Match.objectLike({ TagFilters: [{ Key: 'pingroll-kind', Value: 'rejects' }], ExpirationInDays: 90, Status: 'Enabled' })]) } });
    // The tag is the one the jobs write rejects with (datasets/layout.ts).
    expect(REJECTS_TAGS).toEqual({ 'pingroll-kind': 'rejects' });
    // Closing months and retention (contract §9), when given: the jobs' settings. Neither is set otherwise.
    expect(JSON.stringify(t.findResources('AWS::Batch::JobDefinition'))).not.toMatch(/PINGROLL_CLOSE_AFTER_DAYS|PINGROLL_RETENTION_DAYS/);
    synth(8, { closeAfterDays: 10, retentionDays: 400 }).hasResourceProperties('AWS::Batch::JobDefinition', { ContainerProperties: Match.objectLike({ Environment: Match.arrayWith([{ Name: 'PINGROLL_CLOSE_AFTER_DAYS', Value: '10' }, { Name: 'PINGROLL_RETENTION_DAYS', Value: '400' }]) }) });
    // What a rollup inside Redshift leaves (the viewer key's secret among it) goes after a day whatever happens to the runs:
    // the prefix pingroll writes under (datasets/layout.ts, which the Redshift rollup writes under too).
    expect(WAREHOUSE_ROLLUP).toBe('_warehouse-rollup/');
    t.hasResourceProperties('AWS::S3::Bucket', { LifecycleConfiguration: { Rules: Match.arrayWith([Match.objectLike({ Prefix: `pingroll/${WAREHOUSE_ROLLUP}`, ExpirationInDays: 1, Status: 'Enabled' })]) } });
    // The jobs register each day's partitions (for Spectrum and EMR), and know where.
    t.hasResourceProperties('AWS::Batch::JobDefinition', { ContainerProperties: Match.objectLike({ Environment: Match.arrayWith([{ Name: 'PINGROLL_GLUE_DATABASE', Value: 'pingroll_prod' }]) }) });
    const statements = (Object.values(t.findResources('AWS::IAM::Policy')) as Array<{ Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[] }> } } }>).flatMap((p) => p.Properties.PolicyDocument.Statement);
    expect(statements.some((st) => [st.Action].flat().includes('glue:BatchCreatePartition'))).toBe(true);
    // Writing the rejects tagged, and moving them with their tags, needs both tagging actions.
    expect(statements.some((st) => ['s3:PutObject', 's3:PutObjectTagging', 's3:GetObjectTagging'].every((a) => [st.Action].flat().includes(a)))).toBe(true);
  }, 60_000);

  it('computes the day before the schedule in the state machine (JSONata, no Lambda function), across month and year ends', async () => {
    for (const [time, day] of [['2026-11-25T02:30:00Z', '2026-11-24'], ['2026-12-01T02:30:00Z', '2026-11-30'], ['2027-01-01T02:30:00Z', '2026-12-31'], ['2028-03-01T02:30:00Z', '2028-02-29']]) {
      expect(await jsonata(DAY_BEFORE_SCHEDULE).evaluate({}, { states: { input: { time } } })).toBe(day);
    }
    // The expression as the template holds it: inside the definition string, itself a JSON string.
    expect(JSON.stringify(t.findResources('AWS::StepFunctions::StateMachine'))).toContain(JSON.stringify(JSON.stringify(`{% ${DAY_BEFORE_SCHEDULE} %}`)).slice(3, -3));
    t.resourceCountIs('AWS::Lambda::Function', 0);
  });

  it('logs the ping bucket\'s requests to the log bucket, PartitionedPrefix by EventTime', () => {
    t.hasResourceProperties('AWS::S3::Bucket', {
      LoggingConfiguration: {
        DestinationBucketName: Match.anyValue(), LogFilePrefix: 'logs/',
        TargetObjectKeyFormat: { PartitionedPrefix: { PartitionDateSource: 'EventTime' } },
      },
    });
    t.resourceCountIs('AWS::S3::Bucket', 4);
  });

  it('runs pingroll\'s image on AWS Batch on Fargate: ingest shards as an array job, then the rollup inside Redshift', () => {
    t.hasResourceProperties('AWS::Batch::ComputeEnvironment', { Type: 'managed', ComputeResources: Match.objectLike({ Type: 'FARGATE' }) });
    // Each command through nightCommand: exit 4 (quarantined objects) does not fail the night.
    const night = (...args: string[]): unknown[] => ['sh', '-c', Match.stringLikeRegexp('^node bin/pingroll.js "\\$@"; rc=\\$\\?; if \\[ "\\$rc" -eq 4 \\]; then .* exit 0; fi; exit "\\$rc"$'), 'pingroll', ...args];
    // The shards are given the run's days: they list them and read the legacy tables that can hold them (issue #53).
    t.hasResourceProperties('AWS::Batch::JobDefinition', {
      PlatformCapabilities: ['FARGATE'], Parameters: { date: 'YYYY-MM-DD' },
      ContainerProperties: Match.objectLike({ Command: night('ingest', '--wait', '600', '--date', 'Ref::date') }),
    });
    t.hasResourceProperties('AWS::Batch::JobDefinition', {
      Parameters: { date: 'YYYY-MM-DD' },
      ContainerProperties: Match.objectLike({ Command: night('rollup', '--no-ingest', '--wait', '600', '--date', 'Ref::date') }),
    });
    t.hasResourceProperties('AWS::Batch::JobDefinition', { ContainerProperties: Match.objectLike({ Command: night('backfill', '--stale', '--no-ingest', '--wait', '600') }) });
    for (const name of ['PINGROLL_ROLLUP', 'PINGROLL_WAREHOUSE']) {
      t.hasResourceProperties('AWS::Batch::JobDefinition', { ContainerProperties: Match.objectLike({ Environment: Match.arrayWith([{ Name: name, Value: 'redshift' }]) }) });
    }
    // The viewer key from Secrets Manager (in no job definition's environment), generated once and kept.
    const definitions = Object.values(t.findResources('AWS::Batch::JobDefinition')) as Array<{ Properties: { ContainerProperties: { Secrets?: Array<{ Name: string; ValueFrom: unknown }>; Environment: Array<{ Name: string }> } } }>;
    expect(definitions).toHaveLength(4);
    // Retries by exit code, on every job: 2 (a wrong setting) and 4 never; 1, 3 and the host's failures.
    for (const d of Object.values(t.findResources('AWS::Batch::JobDefinition')) as Array<{ Properties: { RetryStrategy: { Attempts: number; EvaluateOnExit: Array<Record<string, string>> } } }>) {
      expect(d.Properties.RetryStrategy).toEqual({ Attempts: 3, EvaluateOnExit: [
        { Action: 'EXIT', OnExitCode: '2' }, { Action: 'EXIT', OnExitCode: '4' }, { Action: 'RETRY', OnExitCode: '1' }, { Action: 'RETRY', OnExitCode: '3' }, { Action: 'RETRY', OnStatusReason: 'Host EC2*' },
      ] });
    }
    // What nightCommand makes of each exit code, in a shell: 4 is 0, the rest as they are.
    for (const [code, want] of [[0, 0], [1, 1], [2, 2], [3, 3], [4, 0]] as const) {
      const cmd = nightCommand(['x']);
      const fake = spawnSync('sh', ['-c', cmd[2]!.replace('node bin/pingroll.js "$@"', `(exit ${code})`), ...cmd.slice(3)], { encoding: 'utf8' });
      expect(fake.status, `exit ${code}`).toBe(want);
    }
    for (const d of definitions) {
      expect(d.Properties.ContainerProperties.Secrets?.map((x) => x.Name)).toEqual(['PINGROLL_VIEWER_KEY']);
      expect(d.Properties.ContainerProperties.Environment.map((e) => e.Name)).not.toContain('PINGROLL_VIEWER_KEY');
    }
    t.hasResource('AWS::SecretsManager::Secret', { DeletionPolicy: 'Retain', Properties: Match.objectLike({ GenerateSecretString: Match.objectLike({ PasswordLength: 48, ExcludePunctuation: true }) }) });
    const definition = JSON.stringify(t.findResources('AWS::StepFunctions::StateMachine'));
    expect(definition).toMatch(/\\"ArrayProperties\\":\{\\"Size\\":8\}/);
    expect(definition).toMatch(/batch:submitJob\.sync/);
    expect(definition.indexOf('Ingest shards')).toBeLessThan(definition.indexOf('Roll up and load'));
    // Late data republished every night after the rollup, without a person (the scheduled full listings
    // of delivery days are the shards' own: contract §8).
    expect(definition.indexOf('Roll up and load')).toBeLessThan(definition.indexOf('Republish late data'));
    // The .sync integration may follow and stop what it started.
    const machinePolicy = JSON.stringify(Object.values(t.findResources('AWS::IAM::Policy')).filter((p) => JSON.stringify(p).includes('NightlyRole')));
    for (const action of ['batch:SubmitJob', 'batch:DescribeJobs', 'batch:TerminateJob', 'events:PutRule']) expect(machinePolicy).toContain(action);
  });

  it('runs on day one: an image for x86_64 whatever builds it, Outputs, names carrying the stage, an alarm address, a ping object players can read', () => {
    const assets = JSON.parse(readFileSync(join(out, '8', 'Pingroll.assets.json'), 'utf8')) as { dockerImages: Record<string, { source: { platform?: string } }> };
    expect(Object.values(assets.dockerImages).map((d) => d.source.platform)).toEqual(['linux/amd64']);
    const outputs = Object.keys(t.toJSON().Outputs ?? {});
    for (const o of ['OutputLocation', 'LogsLocation', 'PingUrl', 'PingObjectCommand', 'StateMachineArn', 'JobQueueArn', 'AlarmTopicArn', 'RedshiftCopyRoleArn', 'GlueDatabase', 'AthenaWorkgroup']) expect(outputs).toContain(o);
    const staging = synth(8, { stage: 'staging' });
    staging.hasResourceProperties('AWS::Glue::Database', { DatabaseInput: Match.objectLike({ Name: 'pingroll_staging' }) });
    staging.hasResourceProperties('AWS::Athena::WorkGroup', { Name: 'pingroll-staging' });
    expect(() => synth(8, { stage: 'Bad Stage' })).toThrow(/pingroll:stage must be lowercase/);
    expect(() => synth(8, { alarmEmail: '' })).toThrow(/pingroll:alarmEmail must be the address/);
    // The ping object: public read of that one key (ACLs blocked), put by every run before anything else.
    t.hasResourceProperties('AWS::S3::Bucket', { PublicAccessBlockConfiguration: { BlockPublicAcls: true, IgnorePublicAcls: true, BlockPublicPolicy: false, RestrictPublicBuckets: false } });
    t.hasResourceProperties('AWS::S3::BucketPolicy', { PolicyDocument: Match.objectLike({ Statement: Match.arrayWith([Match.objectLike({ Effect: 'Allow', Principal: { AWS: '*' }, Action: 's3:GetObject', Resource: { 'Fn::Join': ['', [Match.objectLike({ 'Fn::GetAtt': [Match.stringLikeRegexp('^Pings'), 'Arn'] }), '/p.gif']] } })]) }) });
    const definition = JSON.stringify(t.findResources('AWS::StepFunctions::StateMachine'));
    expect(definition).toMatch(/\\"StartAt\\":\\"Put the ping object\\"/);
    expect(definition).toMatch(/:states:::aws-sdk:s3:putObject/);
    t.resourceCountIs('AWS::Lambda::Function', 0);
  });

  it('makes Redshift ready before each night with an administrator\'s secret (the COPY role attached, the jobs\' user and grants), or names the command', () => {
    expect(Object.keys(t.toJSON().Outputs ?? {})).toContain('BootstrapCommand');
    // By hand, the bootstrap makes <schema>_lake too: it is given the Glue database (the runs no longer make schemas).
    expect(JSON.stringify(t.toJSON().Outputs.BootstrapCommand.Value)).toContain('PINGROLL_GLUE_DATABASE=pingroll_prod ');
    const withAdmin = synth(8, { redshiftAdminSecretArn: ADMIN_SECRET });
    expect(Object.keys(withAdmin.toJSON().Outputs ?? {})).not.toContain('BootstrapCommand');
    const definition = JSON.stringify(withAdmin.findResources('AWS::StepFunctions::StateMachine'));
    expect(definition).toMatch(/\\"StartAt\\":\\"Put the ping object\\"/);
    expect(definition.indexOf('Bootstrap the warehouse')).toBeLessThan(definition.indexOf('What to roll up?'));
    const jobs = Object.values(withAdmin.findResources('AWS::Batch::JobDefinition')) as Array<{ Properties: { ContainerProperties: { Command: string[]; Environment: Array<{ Name: string; Value: unknown }>; JobRoleArn: unknown } } }>;
    const bootstrap = jobs.find((j) => j.Properties.ContainerProperties.Command.includes('bootstrap'))!;
    expect(bootstrap.Properties.ContainerProperties.Command.slice(4, 7)).toEqual(['warehouse', 'bootstrap', '--grant-to']);
    expect(bootstrap.Properties.ContainerProperties.Environment).toContainEqual({ Name: 'PINGROLL_REDSHIFT_SECRET_ARN', Value: ADMIN_SECRET });
    // The namespace's update and the administrator's secret are the bootstrap role's alone.
    const policies = Object.entries(withAdmin.findResources('AWS::IAM::Policy')) as Array<[string, { Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[]; Resource: unknown }> } } }]>;
    const holders = (action: string, on = ''): string[] => policies.filter(([, p]) => p.Properties.PolicyDocument.Statement.some((st) => [st.Action].flat().includes(action) && JSON.stringify(st.Resource).includes(on))).map(([id]) => id);
    expect(holders('redshift-serverless:UpdateNamespace')).toEqual([expect.stringMatching(/^BootstrapRole/)]);
    expect(holders('iam:PassRole')).toEqual([expect.stringMatching(/^BootstrapRole/)]);
    expect(holders('secretsmanager:GetSecretValue', 'redshift-admin')).toEqual([expect.stringMatching(/^BootstrapRole/)]);
  });

  it('takes an existing VPC and an existing bucket of the pings\' logs, and the legacy tables read-only', () => {
    const t2 = synth(8, {
      vpc: { vpcId: 'vpc-0123456789abcdef0', subnetIds: ['subnet-0aaaaaaaaaaaaaaaa', 'subnet-0bbbbbbbbbbbbbbbb'], availabilityZones: ['eu-west-1a', 'eu-west-1b'] },
      existingLogs: { bucketName: 'acme-player-logs', prefix: 'ping-logs/' }, ddbTables: 'pings_{yyyy}_{mm}', redshiftWaitMinutes: 90,
    });
    t2.resourceCountIs('AWS::EC2::VPC', 0);
    t2.hasResourceProperties('AWS::Batch::ComputeEnvironment', { ComputeResources: Match.objectLike({ Subnets: ['subnet-0aaaaaaaaaaaaaaaa', 'subnet-0bbbbbbbbbbbbbbbb'] }) });
    // No ping bucket of the stack's: the users' own logs, read only.
    expect(JSON.stringify(t2.findResources('AWS::S3::Bucket'))).not.toMatch(/Pings/);
    const env = JSON.stringify(t2.findResources('AWS::Batch::JobDefinition'));
    expect(env).toContain('s3://acme-player-logs/ping-logs/');
    expect(env).toMatch(/"Name":"PINGROLL_DDB_TABLES","Value":"pings_\{yyyy\}_\{mm\}"/);
    expect(env).toMatch(/"Name":"PINGROLL_REDSHIFT_WAIT","Value":"90"/);
    expect(env).toMatch(/"AssignPublicIp":"DISABLED"/);
    const statements = (Object.values(t2.findResources('AWS::IAM::Policy')) as Array<{ Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[]; Resource: unknown }> } } }>).flatMap((p) => p.Properties.PolicyDocument.Statement);
    const ddb = statements.filter((st) => [st.Action].flat().some((a) => a.startsWith('dynamodb:')));
    expect(ddb.flatMap((st) => [st.Action].flat()).sort()).toEqual(['dynamodb:DescribeTable', 'dynamodb:Scan']);
    expect(JSON.stringify(ddb[0]!.Resource)).toContain(':table/pings_*');
    const logsRead = statements.filter((st) => JSON.stringify(st.Resource).includes('acme-player-logs'));
    expect(logsRead.flatMap((st) => [st.Action].flat()).sort()).toEqual(['s3:GetObject', 's3:ListBucket']);
  });

  it('expires the log bucket\'s objects (90 days, or logsExpireDays), never moving them to Standard-IA; flow logs of rejected traffic only', () => {
    const accessLogs = (tpl: Template): { LifecycleConfiguration: { Rules: Array<Record<string, unknown>> } } => {
      const found = Object.entries(tpl.findResources('AWS::S3::Bucket')).filter(([id]) => id.startsWith('AccessLogs'));
      expect(found).toHaveLength(1);
      return (found[0]![1] as { Properties: { LifecycleConfiguration: { Rules: Array<Record<string, unknown>> } } }).Properties;
    };
    const rules = accessLogs(t).LifecycleConfiguration.Rules;
    expect(rules).toContainEqual(expect.objectContaining({ ExpirationInDays: 90, Status: 'Enabled' }));
    expect(rules.filter((r) => r.ExpirationInDays !== undefined)).toHaveLength(1);
    // No transition: a request per object ($165 a day at 16.5M objects) that the storage saved never pays back before expiry.
    expect(JSON.stringify(rules)).not.toMatch(/Transition|STANDARD_IA/);
    expect(accessLogs(synth(8, { logsExpireDays: 400 })).LifecycleConfiguration.Rules).toContainEqual(expect.objectContaining({ ExpirationInDays: 400 }));
    // Not before the last full listing of a delivery day PINGROLL_RECONCILE_AFTER may ask for (30 days).
    expect(() => synth(8, { logsExpireDays: 30 })).toThrow(/pingroll:logsExpireDays must be a whole number of days above 30/);
    // The docs price the default the stack has, and say what a first deploy needs.
    const docs = readFileSync(join(repo, 'docs/running-on-aws.md'), 'utf8');
    expect(docs).toContain(`| stored (${rules.find((r) => r.ExpirationInDays !== undefined)!.ExpirationInDays as number} days kept) |`);
    for (const needed of ['npx cdk bootstrap aws://ACCOUNT/REGION', 'aws s3control get-public-access-block', '`pingroll:firstDay`']) expect(docs).toContain(needed);
    t.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'REJECT', LogDestinationType: 's3' });
    expect(JSON.stringify(t.findResources('AWS::EC2::FlowLog'))).not.toContain('"ALL"');
  });

  it('logs the state machine under /aws/vendedlogs/states/, and projects Athena\'s partitions from firstDay', () => {
    t.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/aws/vendedlogs/states/pingroll-prod-nightly' });
    const [group] = Object.keys(t.findResources('AWS::Logs::LogGroup', { Properties: { LogGroupName: '/aws/vendedlogs/states/pingroll-prod-nightly' } }));
    t.hasResourceProperties('AWS::StepFunctions::StateMachine', { LoggingConfiguration: Match.objectLike({ Destinations: [{ CloudWatchLogsLogGroup: { LogGroupArn: { 'Fn::GetAtt': [group, 'Arn'] } } }] }) });
    synth(8, { stage: 'staging' }).hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/aws/vendedlogs/states/pingroll-staging-nightly' });
    const ranges = (tpl: Template): Record<string, string> => Object.fromEntries((Object.values(tpl.findResources('AWS::Glue::Table')) as Array<{ Properties: { TableInput: { Name: string; Parameters: Record<string, string> } } }>)
      .map((x) => [x.Properties.TableInput.Parameters['projection.dt.interval.unit'], x.Properties.TableInput.Parameters['projection.dt.range']]));
    expect(ranges(t)).toEqual({ DAYS: '2024-01-01,NOW', MONTHS: '2024-01-01,NOW' });
    // Legacy history older than 2024: the days from the day given, the months from its month's first day (a monthly dt is the 1st).
    expect(ranges(synth(8, { firstDay: '2019-06-15' }))).toEqual({ DAYS: '2019-06-15,NOW', MONTHS: '2019-06-01,NOW' });
    expect(() => synth(8, { firstDay: '2019-02-30' })).toThrow(/pingroll:firstDay must be a day, YYYY-MM-DD/);
  });

  it('runs a single shard as a plain job', () => {
    expect(JSON.stringify(synth(1).findResources('AWS::StepFunctions::StateMachine'))).not.toMatch(/ArrayProperties/);
  });

  it('starts the state machine every night on an EventBridge schedule, with the event time; takes a day, or a range of days for a backfill', () => {
    t.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'cron(30 2 * * ? *)',
      Targets: [Match.objectLike({ Arn: Match.anyValue(), InputTransformer: Match.objectLike({ InputPathsMap: { time: '$.time' } }) })],
    });
    const definition = JSON.stringify(t.findResources('AWS::StepFunctions::StateMachine'));
    expect(definition).toMatch(/\\"Variable\\":\\"\$\.dates\\",\\"IsPresent\\":true/);
    expect(definition).toMatch(/\\"Variable\\":\\"\$\.date\\",\\"IsPresent\\":true/);
    // A range: the shards once, then a Map over the days, one at a time.
    expect(definition).toMatch(/\\"Type\\":\\"Map\\".*\\"ItemsPath\\":\\"\$\.dates\\"/);
    expect(definition).toMatch(/\\"MaxConcurrency\\":1/);
    // Every ingest of the shards is given its days: the night's and a day's as $.date, a range's joined (issue #53).
    const states = JSON.parse(((Object.values(t.findResources('AWS::StepFunctions::StateMachine'))[0] as { Properties: { DefinitionString: { 'Fn::Join': [string, unknown[]] } } }).Properties.DefinitionString['Fn::Join'][1]).map((x) => typeof x === 'string' ? x : 'X').join('')) as { States: Record<string, { Type: string; Parameters?: { Parameters?: Record<string, string> }; Next?: string; Output?: Record<string, string> }> };
    const all = { ...states.States, ...Object.fromEntries(Object.values(states.States).flatMap((st) => Object.entries((st as { ItemProcessor?: { States: Record<string, unknown> } }).ItemProcessor?.States ?? {}))) } as typeof states.States;
    expect(all['Ingest shards']!.Parameters!.Parameters).toEqual({ 'date.$': '$.date' });
    expect(all['Ingest shards for a range']!.Parameters!.Parameters).toEqual({ 'date.$': '$.days' });
    expect(all['The range as one parameter']).toMatchObject({ Type: 'Pass', Output: { days: "{% $join($states.input.dates, ',') %}" }, Next: 'Ingest shards for a range' });
  });

  it('rolls up the licensors\' month on the 2nd, as a Batch job', () => {
    t.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'cron(30 6 2 * ? *)',
      Targets: [Match.objectLike({ BatchParameters: Match.objectLike({ JobName: 'pingroll-month' }) })],
    });
    t.hasResourceProperties('AWS::Batch::JobDefinition', {
      ContainerProperties: Match.objectLike({ Command: ['sh', '-c', Match.stringLikeRegexp('^node bin/pingroll.js rollup --wait 3600 --month .*\\[ "\\$rc" -eq 4 \\] && exit 0; exit "\\$rc"$')] }),
    });
  });

  it('gives Redshift a COPY role that reads the output, and the jobs only what they need', () => {
    t.hasResourceProperties('AWS::IAM::Role', { AssumeRolePolicyDocument: Match.objectLike({ Statement: [Match.objectLike({ Principal: { Service: 'redshift.amazonaws.com' } })] }) });
    const policies = Object.values(t.findResources('AWS::IAM::Policy')) as Array<{ Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[]; Resource: unknown; Condition?: unknown }> } } }>;
    const statements = policies.flatMap((p) => p.Properties.PolicyDocument.Statement);
    // No statement grants every action of a service, and nothing on S3 is granted on every resource.
    for (const s of statements) {
      for (const a of [s.Action].flat()) expect(a).not.toMatch(/:\*$/);
      if ([s.Action].flat().some((a) => a.startsWith('s3:'))) expect(s.Resource).not.toBe('*');
    }
    expect(statements.some((s) => [s.Action].flat().includes('redshift-data:BatchExecuteStatement'))).toBe(true);
    // The rollup's second batch runs in the session its first opened (no workgroup named): allowed on
    // any resource only in sessions the role itself opened.
    const inSession = statements.filter((s) => s.Resource === '*' && [s.Action].flat().includes('redshift-data:BatchExecuteStatement'));
    expect(inSession).toEqual([expect.objectContaining({ Action: 'redshift-data:BatchExecuteStatement', Condition: { StringEquals: { 'redshift-data:session-owner-iam-userid': '${aws:userid}' } } })]);
  });

  it('gives the jobs an episode catalog when one is named: its URL in their environment, and read access to that one object', () => {
    expect(JSON.stringify(t.findResources('AWS::Batch::JobDefinition'))).not.toContain('PINGROLL_EPISODE_CATALOG');
    const withCatalog = synth(8, { episodeCatalogKey: 'catalog/episodes.csv' });
    const defs = Object.values(withCatalog.findResources('AWS::Batch::JobDefinition')) as Array<{ Properties: { ContainerProperties: { Environment: Array<{ Name: string; Value: unknown }> } } }>;
    expect(defs.length).toBeGreaterThan(0);
    for (const d of defs) expect(JSON.stringify(d.Properties.ContainerProperties.Environment.find((e) => e.Name === 'PINGROLL_EPISODE_CATALOG')?.Value)).toMatch(/"s3:\/\/",.*"\/catalog\/episodes\.csv"/);
    const statements = (Object.values(withCatalog.findResources('AWS::IAM::Policy')) as Array<{ Properties: { PolicyDocument: { Statement: Array<{ Action: string | string[]; Resource: unknown }> } } }>)
      .flatMap((p) => p.Properties.PolicyDocument.Statement);
    const read = statements.filter((s) => JSON.stringify(s.Resource).includes('/catalog/episodes.csv'));
    expect(read.map((s) => s.Action)).toEqual(['s3:GetObject']);
  });

  it('alarms on failed, timed-out and aborted runs, and on the month\'s job failing for good, to a topic: one mail per failed night', () => {
    t.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: { source: ['aws.batch'], 'detail-type': ['Batch Job State Change'], detail: { status: ['FAILED'], jobQueue: [Match.anyValue()], jobDefinition: [Match.anyValue()] } },
    });
    // A night whose every shard failed for good, then the month's job: Batch's events as its docs give
    // them (an array child carries arrayProperties.index, the parent arrayProperties.size), each job
    // definition and the queue by a name of its own for its Ref.
    const resolve = (x: unknown): unknown => JSON.parse(JSON.stringify(x).replace(/\{"Ref":"([^"]+)"\}|\{"Fn::GetAtt":\["([^"]+)","[^"]+"\]\}/g, (_, a?: string, b?: string) => `"arn:aws:batch:eu-west-1:123456789012:x/${a ?? b}"`));
    const [rule] = Object.values(t.findResources('AWS::Events::Rule', { Properties: { EventPattern: Match.objectLike({ source: ['aws.batch'] }) } })) as Array<{ Properties: { EventPattern: unknown } }>;
    const pattern = resolve(rule!.Properties.EventPattern);
    const jobDefs = Object.entries(t.findResources('AWS::Batch::JobDefinition')).map(([id]) => id);
    const queue = Object.keys(t.findResources('AWS::Batch::JobQueue'))[0]!;
    const failed = (definition: string, arrayProperties?: object): Record<string, unknown> => ({
      source: 'aws.batch', 'detail-type': 'Batch Job State Change',
      detail: { status: 'FAILED', jobName: 'x', jobQueue: resolve({ Ref: queue }), jobDefinition: resolve({ Ref: jobDefs.find((d) => d.startsWith(definition))! }), ...(arrayProperties ? { arrayProperties } : {}) },
    });
    const night = [...Array.from({ length: 8 }, (_, index) => failed('IngestShard', { index })), failed('IngestShard', { size: 8 }), failed('Rollup'), failed('Stale')];
    expect(night.filter((e) => matches(pattern, e))).toEqual([]);
    expect(matches(pattern, failed('Month'))).toBe(true);
    // The night's one mail: its execution failed (the ExecutionsFailed alarm below).
    for (const metric of ['ExecutionsFailed', 'ExecutionsTimedOut', 'ExecutionsAborted']) {
      t.hasResourceProperties('AWS::CloudWatch::Alarm', { Namespace: 'AWS/States', MetricName: metric, Threshold: 1, AlarmActions: [Match.anyValue()] });
    }
    t.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    // From pingroll's own metrics (EMF): no successful rollup in 26 h (a missing datapoint is no run), rejects share, quarantine.
    t.hasResourceProperties('AWS::CloudWatch::Alarm', { Namespace: 'pingroll', MetricName: 'Success', Dimensions: [{ Name: 'Command', Value: 'rollup' }], Period: 26 * 3600, Statistic: 'Sum', ComparisonOperator: 'LessThanThreshold', Threshold: 1, TreatMissingData: 'missing' });
    t.hasResourceProperties('AWS::CloudWatch::Alarm', { Namespace: 'pingroll', MetricName: 'RejectsShare', Threshold: 5, ComparisonOperator: 'GreaterThanThreshold' });
    t.hasResourceProperties('AWS::CloudWatch::Alarm', { Namespace: 'pingroll', MetricName: 'QuarantinedObjects', Threshold: 1 });
    // The names the job prints (infra/observe/emf.ts): the alarms watch metrics that exist.
    const emf = readFileSync(fileURLToPath(new URL('../../infra/observe/emf.ts', import.meta.url)), 'utf8');
    expect(emf).toContain("EMF_NAMESPACE = 'pingroll'");
    expect(emf).toContain("Dimensions: [['Command']]");
    for (const name of ['Success', 'RejectsShare', 'QuarantinedObjects']) expect(emf).toContain(`['${name}', `);
  });

  it('builds the image from the repository\'s Dockerfile, whose every COPY source exists', () => {
    const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');
    for (const m of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const src of m[1]!.split(/\s+/)) expect(existsSync(join(repo, src)), src).toBe(true);
    }
    expect(dockerfile).toMatch(/^CMD \["node", "bin\/pingroll.js"/m);
  });
});
