/**
 * Every AWS call pingroll's jobs make is allowed by the roles the stack gives them, and nothing is
 * granted that no call uses (unless GRANTS_NOT_EXERCISED says why). moto and DynamoDB Local do not
 * enforce IAM: the calls are recorded as the jobs the stack runs send them (test/support/stack-jobs.ts:
 * the ingest shards, the day, the stale days and the month on the jobs' role; warehouse bootstrap on
 * its own), and each is evaluated against the synthesized policies by an IAM policy simulator
 * (@cloud-copilot/iam-simulate; what IAM implies beside a call, such as the Data API's
 * GetCredentials or a copy's tagging, is added to it).
 */
import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { PingrollStack } from '../lib/pingroll-stack.js';
import { ACCOUNT, ADMIN_SECRET, runStackJobs, WORKGROUP_ARN, type StackCalls } from '../../test/support/stack-jobs.js';
import { checkRole, policiesOf, requestsOf } from './iam-simulation.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));

describe('the stack\'s IAM policies against the calls its jobs make', () => {
  let calls: StackCalls;
  let t: Template;
  beforeAll(async () => {
    calls = await runStackJobs();
    const app = new App({ outdir: fileURLToPath(new URL('../../.bench/iam-synth', import.meta.url)) });
    t = Template.fromStack(new PingrollStack(app, 'Pingroll', {
      imageDirectory: repo, shards: 2, redshiftWorkgroup: 'analytics', redshiftWorkgroupArn: WORKGROUP_ARN, redshiftDatabase: 'dev', alarmEmail: 'ops@example.com',
      episodeCatalogKey: 'catalog/episodes.csv', ddbTables: 'pings_{yyyy}_{mm}', redshiftAdminSecretArn: ADMIN_SECRET,
    }));
  }, 300_000);

  it.each([['the jobs\' role', 'JobRole', 'jobs'], ['the bootstrap\'s role', 'BootstrapRole', 'bootstrap']] as const)('allows every call of %s, and grants nothing no call uses without saying why', async (_name, role, which) => {
    const policies = policiesOf(t, role);
    const principal = `arn:aws:iam::${ACCOUNT}:role/${role}`;
    const requests = calls[which].flatMap(requestsOf);
    expect(requests.length).toBeGreaterThan(which === 'jobs' ? 100 : 5);
    const { denied, unused } = await checkRole(policies, principal, requests);
    expect(denied).toEqual([]);
    expect(unused, 'a grant no call of the jobs uses: remove it, or say why in GRANTS_NOT_EXERCISED (deploy/lib/pingroll-stack.ts)').toEqual([]);
  }, 300_000);
});
