/**
 * The app as `cdk synth` runs it: deploy/bin/pingroll-app.ts in a process of its own, given its context
 * the way the CDK CLI gives it (CDK_CONTEXT_JSON: cdk.json's context and every `-c`, values from `-c` as
 * strings) and writing where the CLI says (CDK_OUTDIR). Every documented option is set, and the
 * template is held to show each one; and how the options are read, the wrong ones refused.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, describe, expect, it } from 'vitest';
import { CONTEXT_OPTIONS, propsFromContext } from '../lib/props-from-context.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const WORKGROUP_ARN = 'arn:aws:redshift-serverless:eu-west-1:123456789012:workgroup/0b2f89bd-6884-7ca8-de44-3aac051aedd2';
const ADMIN_SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:redshift-admin-AbCdEf';
const out = mkdtempSync(join(tmpdir(), 'pingroll-app-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** The app run as the CDK CLI runs it (cdk.json's "app"), with `context`: its template. */
function synthApp(context: Record<string, unknown>, name: string): Template {
  const outdir = join(out, name);
  const r = spawnSync(process.execPath, [join(repo, 'node_modules/.bin/tsx'), join(repo, 'deploy/bin/pingroll-app.ts')], {
    cwd: join(repo, 'deploy'), encoding: 'utf8', env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify(context), CDK_OUTDIR: outdir },
  });
  expect(r.status, r.stderr).toBe(0);
  return Template.fromJSON(JSON.parse(readFileSync(join(outdir, 'Pingroll.template.json'), 'utf8')) as Record<string, unknown>);
}

/** Every option set: from `-c` (strings, JSON text) except existingLogs, an object as cdk.json holds it. */
const CONTEXT: Record<string, unknown> = {
  'pingroll:stage': 'qa',
  'pingroll:shards': '16',
  'pingroll:redshiftWorkgroup': 'analytics-qa',
  'pingroll:redshiftWorkgroupArn': WORKGROUP_ARN,
  'pingroll:redshiftDatabase': 'warehouse',
  'pingroll:alarmEmail': 'oncall@example.com',
  'pingroll:vpc': JSON.stringify({ vpcId: 'vpc-0123456789abcdef0', subnetIds: ['subnet-0aaaaaaaaaaaaaaaa', 'subnet-0bbbbbbbbbbbbbbbb'], availabilityZones: ['eu-west-1a', 'eu-west-1b'], publicSubnets: true }),
  'pingroll:existingLogs': { bucketName: 'acme-player-logs', prefix: 'ping-logs/' },
  'pingroll:logsExpireDays': '120',
  'pingroll:firstDay': '2019-06-15',
  'pingroll:pingKey': 'px.gif',
  'pingroll:ddbTables': 'pings_{yyyy}_{mm}',
  'pingroll:redshiftAdminSecretArn': ADMIN_SECRET,
  'pingroll:redshiftWaitMinutes': '45',
  'pingroll:rejectsRetentionDays': '60',
  'pingroll:closeAfterDays': '10',
  'pingroll:retentionDays': '400',
  'pingroll:catalogDatabase': 'analytics_pings',
  'pingroll:athenaBytesScannedCutoff': '1073741824',
  'pingroll:rejectsShareAlarm': '7',
  'pingroll:episodeCatalogKey': 'catalog/episodes.csv',
  // The CLI's own keys ride along and are not pingroll's to judge.
  'aws:cdk:enable-path-metadata': true,
};

type Statement = { Action: string | string[]; Resource: unknown };

describe('the app (deploy/bin/pingroll-app.ts) with every option in its context', () => {
  const t = synthApp(CONTEXT, 'all');
  const jobs = Object.values(t.findResources('AWS::Batch::JobDefinition')) as Array<{ Properties: { ContainerProperties: { Command: string[]; Environment: Array<{ Name: string; Value: unknown }> } } }>;
  /** The value every job has for `name`. */
  const env = (name: string): unknown[] => [...new Set(jobs.map((j) => JSON.stringify(j.Properties.ContainerProperties.Environment.find((e) => e.Name === name)?.Value)))].map((v) => (v === undefined ? undefined : JSON.parse(v)));
  const statements = (Object.values(t.findResources('AWS::IAM::Policy')) as Array<{ Properties: { PolicyDocument: { Statement: Statement[] } } }>).flatMap((p) => p.Properties.PolicyDocument.Statement);
  const machine = JSON.stringify(t.findResources('AWS::StepFunctions::StateMachine'));
  const buckets = Object.entries(t.findResources('AWS::S3::Bucket')) as Array<[string, { Properties: { LifecycleConfiguration?: { Rules: Array<Record<string, unknown>> } } }]>;
  const glueRanges = (Object.values(t.findResources('AWS::Glue::Table')) as Array<{ Properties: { TableInput: { Parameters: Record<string, string> } } }>).map((x) => x.Properties.TableInput.Parameters);

  /** What each option does to the template, one check each. */
  const CHECKS: Record<string, () => void> = {
    stage: () => {
      t.hasResourceProperties('AWS::Athena::WorkGroup', { Name: 'pingroll-qa' });
      t.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/aws/vendedlogs/states/pingroll-qa-nightly' });
    },
    shards: () => expect(machine).toMatch(/\\"ArrayProperties\\":\{\\"Size\\":16\}/),
    redshiftWorkgroup: () => expect(env('PINGROLL_REDSHIFT_WORKGROUP')).toEqual(['analytics-qa']),
    redshiftWorkgroupArn: () => expect(statements.filter((s) => [s.Action].flat().includes('redshift-serverless:GetCredentials')).map((s) => s.Resource)).toEqual([WORKGROUP_ARN]),
    redshiftDatabase: () => expect(env('PINGROLL_REDSHIFT_DATABASE')).toEqual(['warehouse']),
    alarmEmail: () => t.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com' }),
    vpc: () => {
      t.resourceCountIs('AWS::EC2::VPC', 0);
      t.hasResourceProperties('AWS::Batch::ComputeEnvironment', { ComputeResources: { Subnets: ['subnet-0aaaaaaaaaaaaaaaa', 'subnet-0bbbbbbbbbbbbbbbb'] } });
      // publicSubnets: the jobs get a public IP there.
      expect(JSON.stringify(jobs)).toContain('"AssignPublicIp":"ENABLED"');
    },
    existingLogs: () => {
      expect(env('PINGROLL_LOGS')).toEqual(['s3://acme-player-logs/ping-logs/']);
      expect(buckets.map(([id]) => id).filter((id) => id.startsWith('Pings'))).toEqual([]);
      expect(statements.filter((s) => JSON.stringify(s.Resource).includes('acme-player-logs')).flatMap((s) => [s.Action].flat()).sort()).toEqual(['s3:GetObject', 's3:ListBucket']);
    },
    logsExpireDays: () => expect(buckets.find(([id]) => id.startsWith('AccessLogs'))![1].Properties.LifecycleConfiguration!.Rules).toContainEqual(expect.objectContaining({ ExpirationInDays: 120 })),
    firstDay: () => expect(new Set(glueRanges.map((p) => `${p['projection.dt.interval.unit']} ${p['projection.dt.range']}`))).toEqual(new Set(['DAYS 2019-06-15,NOW', 'MONTHS 2019-06-01,NOW'])),
    pingKey: () => expect(env('PINGROLL_PING_KEYS')).toEqual(['px.gif']),
    ddbTables: () => {
      expect(env('PINGROLL_DDB_TABLES')).toEqual(['pings_{yyyy}_{mm}']);
      expect(JSON.stringify(statements.filter((s) => [s.Action].flat().includes('dynamodb:Scan')).map((s) => s.Resource))).toContain(':table/pings_*');
    },
    redshiftAdminSecretArn: () => {
      // The nightly bootstrap is on: its job, with the administrator's secret, run before each night.
      const bootstrap = jobs.filter((j) => j.Properties.ContainerProperties.Command.includes('bootstrap'));
      expect(bootstrap.map((j) => j.Properties.ContainerProperties.Environment.find((e) => e.Name === 'PINGROLL_REDSHIFT_SECRET_ARN')?.Value)).toEqual([ADMIN_SECRET]);
      expect(machine).toContain('Bootstrap the warehouse');
      expect(Object.keys(t.toJSON().Outputs ?? {})).not.toContain('BootstrapCommand');
    },
    redshiftWaitMinutes: () => expect(env('PINGROLL_REDSHIFT_WAIT')).toEqual(['45']),
    rejectsRetentionDays: () => {
      expect(env('PINGROLL_REJECTS_RETENTION_DAYS')).toEqual(['60']);
      t.hasResourceProperties('AWS::S3::Bucket', { LifecycleConfiguration: { Rules: Match.arrayWith([Match.objectLike({ TagFilters: [{ Key: 'pingroll-kind', Value: 'rejects' }], ExpirationInDays: 60 })]) } });
    },
    closeAfterDays: () => expect(env('PINGROLL_CLOSE_AFTER_DAYS')).toEqual(['10']),
    retentionDays: () => expect(env('PINGROLL_RETENTION_DAYS')).toEqual(['400']),
    catalogDatabase: () => {
      t.hasResourceProperties('AWS::Glue::Database', { DatabaseInput: Match.objectLike({ Name: 'analytics_pings' }) });
      expect(env('PINGROLL_GLUE_DATABASE')).toEqual(['analytics_pings']);
    },
    athenaBytesScannedCutoff: () => t.hasResourceProperties('AWS::Athena::WorkGroup', { WorkGroupConfiguration: Match.objectLike({ BytesScannedCutoffPerQuery: 1073741824 }) }),
    rejectsShareAlarm: () => t.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'RejectsShare', Threshold: 7 }),
    episodeCatalogKey: () => expect(JSON.stringify(env('PINGROLL_EPISODE_CATALOG'))).toMatch(/"s3:\/\/",.*"\/catalog\/episodes\.csv"/),
  };

  it('has a check for every option, and every option in docs/running-on-aws.md', () => {
    expect(Object.keys(CHECKS).sort()).toEqual([...CONTEXT_OPTIONS].sort());
    expect(Object.keys(CONTEXT).filter((k) => k.startsWith('pingroll:')).sort()).toEqual(CONTEXT_OPTIONS.map((o) => `pingroll:${o}`).sort());
    const docs = readFileSync(join(repo, 'docs/running-on-aws.md'), 'utf8');
    expect(CONTEXT_OPTIONS.filter((o) => !docs.includes(`pingroll:${o}`))).toEqual([]);
  });

  for (const option of CONTEXT_OPTIONS) it(`reads pingroll:${option}`, () => CHECKS[option]!());
});

describe('propsFromContext', () => {
  const base = { 'pingroll:redshiftWorkgroup': 'analytics', 'pingroll:redshiftWorkgroupArn': WORKGROUP_ARN, 'pingroll:redshiftDatabase': 'dev', 'pingroll:alarmEmail': 'ops@example.com' };

  it('reads numbers and objects as cdk.json holds them and as -c gives them (strings), and leaves out what is not given', () => {
    const vpc = { vpcId: 'vpc-1', subnetIds: ['subnet-1'], availabilityZones: ['eu-west-1a'] };
    const fromCli = propsFromContext({ ...base, 'pingroll:shards': '4', 'pingroll:vpc': JSON.stringify(vpc), 'pingroll:stage': '' }, '/repo');
    const fromJson = propsFromContext({ ...base, 'pingroll:shards': 4, 'pingroll:vpc': vpc }, '/repo');
    expect(fromCli).toEqual(fromJson);
    expect(fromCli).toEqual({ imageDirectory: '/repo', shards: 4, vpc, redshiftWorkgroup: 'analytics', redshiftWorkgroupArn: WORKGROUP_ARN, redshiftDatabase: 'dev', alarmEmail: 'ops@example.com' });
    expect(propsFromContext(base, '/repo').shards).toBe(8);
    // cdk.json's own context is options the app knows.
    const cdkJson = JSON.parse(readFileSync(join(repo, 'deploy/cdk.json'), 'utf8')) as { context: Record<string, unknown> };
    expect(propsFromContext({ ...cdkJson.context, ...base }, '/repo').shards).toBe(8);
  });

  it('refuses an option it does not know, a value of the wrong kind, and a required option left out, saying which', () => {
    expect(() => propsFromContext({ ...base, 'pingroll:existingLog': '{}' }, '/repo')).toThrow(/unknown context option pingroll:existingLog: pingroll's options are .*pingroll:existingLogs/);
    expect(() => propsFromContext({ ...base, 'pingroll:shards': 'eight' }, '/repo')).toThrow(/pingroll:shards must be a number; got "eight"/);
    expect(() => propsFromContext({ ...base, 'pingroll:existingLogs': 's3://bucket/prefix/' }, '/repo')).toThrow(/pingroll:existingLogs must be JSON, e\.g\./);
    expect(() => propsFromContext({ ...base, 'pingroll:existingLogs': '{"bucket":"b","prefix":"p/"}' }, '/repo')).toThrow(/pingroll:existingLogs has no field bucket \(its fields: bucketName, prefix\)/);
    expect(() => propsFromContext({ ...base, 'pingroll:vpc': '{"vpcId":"vpc-1","subnetIds":"subnet-1","availabilityZones":["a"]}' }, '/repo')).toThrow(/pingroll:vpc\.subnetIds is missing or of the wrong kind/);
    expect(() => propsFromContext({ ...base, 'pingroll:alarmEmail': '' }, '/repo')).toThrow(/pingroll:alarmEmail is required: -c pingroll:alarmEmail=/);
    expect(() => propsFromContext({ ...base, 'pingroll:stage': 7 }, '/repo')).toThrow(/pingroll:stage must be a string; got 7/);
  });
});
