/**
 * IAM as the tests evaluate it: the calls pingroll's jobs made (recorded in process, test/support/
 * aws-calls.ts, or by a recording proxy in front of a stand-in, test/support/recording-proxy.ts)
 * as the requests IAM evaluates, and the synthesized policies deciding each, with an IAM policy
 * simulator (@cloud-copilot/iam-simulate). Used by iam.test.ts and deployed-night.test.ts.
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import { GRANTS_NOT_EXERCISED } from '../lib/pingroll-stack.js';
import { ACCOUNT, COPY_ROLE, WORKGROUP_ARN } from '../../test/support/stack-jobs.js';

export const REGION = 'us-east-1';
export const NAMESPACE_ARN = `arn:aws:redshift-serverless:${REGION}:${ACCOUNT}:namespace/fedcba98-7654-3210-fedc-ba9876543210`;

/** A request IAM evaluates: an action on a resource, with the context a condition may read. */
export interface Request { action: string; resource: string; context?: Record<string, string>; from: string }

export type Doc = { Statement: Array<{ Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }> };

/** The synthesized template's values made concrete: the buckets the jobs used, this account and region. */
export function resolver(t: Pick<Template, 'findResources'>): (v: unknown) => unknown {
  const buckets = Object.keys(t.findResources('AWS::S3::Bucket'));
  const bucket = (id: string): string => (id.startsWith('Output') ? 'rollups' : id.startsWith('AccessLogs') ? 'logs' : id.toLowerCase());
  const resolve = (v: unknown): unknown => {
    if (typeof v === 'string' || typeof v === 'number' || v === null) return v;
    if (Array.isArray(v)) return v.map(resolve);
    const o = v as Record<string, unknown>;
    if ('Ref' in o) return ({ 'AWS::Partition': 'aws', 'AWS::Region': REGION, 'AWS::AccountId': ACCOUNT } as Record<string, string>)[o.Ref as string] ?? `ref:${String(o.Ref)}`;
    if ('Fn::GetAtt' in o) {
      const [id] = o['Fn::GetAtt'] as [string, string];
      if (buckets.includes(id)) return `arn:aws:s3:::${bucket(id)}`;
      if (id.startsWith('RedshiftCopyRole')) return COPY_ROLE;
      return `arn:aws:iam::${ACCOUNT}:role/${id}`;
    }
    if ('Fn::Join' in o) {
      const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
      return parts.map((p) => String(resolve(p))).join(sep);
    }
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, resolve(x)]));
  };
  return resolve;
}

/** A role's policy documents, as IAM would hold them. */
export function policiesOf(t: Pick<Template, 'findResources'>, rolePrefix: string, resolve: (v: unknown) => unknown = resolver(t)): Doc[] {
  return (Object.values(t.findResources('AWS::IAM::Policy')) as Array<{ Properties: { Roles: Array<{ Ref: string }>; PolicyDocument: Doc } }>)
    .filter((p) => p.Properties.Roles.some((r) => r.Ref.startsWith(rolePrefix)))
    .map((p) => resolve(p.Properties.PolicyDocument) as Doc);
}

const objectArn = (bucket: unknown, key: unknown): string => `arn:aws:s3:::${String(bucket)}/${String(key)}`;

/** What IAM evaluates for one call the code made. */
export function requestsOf(call: { client: string; command: string; input: Record<string, unknown> }): Request[] {
  const i = call.input;
  const from = `${call.client}.${call.command}`;
  const r = (action: string, resource: string, context?: Record<string, string>): Request => ({ action, resource, from, ...(context ? { context } : {}) });
  switch (call.client) {
    case 'S3Client': {
      const bucket = `arn:aws:s3:::${String(i.Bucket)}`;
      switch (call.command) {
        case 'ListObjectsV2': case 'HeadBucket': return [r('s3:ListBucket', bucket)];
        case 'GetObject': case 'HeadObject': return [r('s3:GetObject', objectArn(i.Bucket, i.Key))];
        case 'PutObject': return [r('s3:PutObject', objectArn(i.Bucket, i.Key)), ...(i.Tagging ? [r('s3:PutObjectTagging', objectArn(i.Bucket, i.Key))] : [])];
        case 'CopyObject': {
          const source = decodeURIComponent(String(i.CopySource));
          return [r('s3:PutObject', objectArn(i.Bucket, i.Key)), r('s3:GetObject', `arn:aws:s3:::${source}`),
            // Tags are copied with the object (TaggingDirective COPY, the default).
            r('s3:GetObjectTagging', `arn:aws:s3:::${source}`), r('s3:PutObjectTagging', objectArn(i.Bucket, i.Key))];
        }
        case 'DeleteObject': return [r('s3:DeleteObject', objectArn(i.Bucket, i.Key))];
        case 'GetObjectTagging': return [r('s3:GetObjectTagging', objectArn(i.Bucket, i.Key))];
        case 'PutObjectTagging': return [r('s3:PutObjectTagging', objectArn(i.Bucket, i.Key))];
        case 'ListParts': return [r('s3:ListMultipartUploadParts', objectArn(i.Bucket, i.Key))];
        case 'CreateMultipartUpload': case 'UploadPart': case 'CompleteMultipartUpload': return [r('s3:PutObject', objectArn(i.Bucket, i.Key))];
        case 'AbortMultipartUpload': return [r('s3:AbortMultipartUpload', objectArn(i.Bucket, i.Key))];
        default: throw new Error(`no IAM mapping for ${from}: add it`);
      }
    }
    case 'GlueClient': {
      const db = String(i.DatabaseName);
      return [`arn:aws:glue:${REGION}:${ACCOUNT}:catalog`, `arn:aws:glue:${REGION}:${ACCOUNT}:database/${db}`, ...(i.TableName ? [`arn:aws:glue:${REGION}:${ACCOUNT}:table/${db}/${String(i.TableName)}`] : [])]
        .map((res) => r(`glue:${call.command}`, res));
    }
    case 'DynamoDBClient': return [r(`dynamodb:${call.command}`, `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${String(i.TableName)}`)];
    case 'RedshiftDataClient': {
      if (['DescribeStatement', 'GetStatementResult', 'CancelStatement'].includes(call.command)) return [r(`redshift-data:${call.command}`, '*')];
      // In an open session the call names no workgroup: allowed only to the session's owner.
      const me = { 'aws:userid': 'AROAJOBROLE:job', 'redshift-data:session-owner-iam-userid': 'AROAJOBROLE:job' };
      if (i.SessionId) return [r(`redshift-data:${call.command}`, WORKGROUP_ARN, me)];
      // A statement by IAM: the Data API asks Redshift Serverless for credentials on the caller's behalf; by a secret, it reads the secret.
      return [r(`redshift-data:${call.command}`, WORKGROUP_ARN, me),
        i.SecretArn ? r('secretsmanager:GetSecretValue', String(i.SecretArn)) : r('redshift-serverless:GetCredentials', WORKGROUP_ARN)];
    }
    case 'RedshiftServerlessClient':
      if (call.command === 'GetWorkgroup') return [r('redshift-serverless:GetWorkgroup', WORKGROUP_ARN)];
      return [r(`redshift-serverless:${call.command}`, NAMESPACE_ARN), ...((i.iamRoles as string[] | undefined) ?? []).map((role) => r('iam:PassRole', role))];
    default: throw new Error(`no IAM mapping for ${from}: add it`);
  }
}

export async function decide(policies: Doc[], principal: string, q: Request): Promise<string> {
  const result = await runSimulation({
    request: { principal, action: q.action, resource: { resource: q.resource, accountId: ACCOUNT }, contextVariables: q.context ?? {} },
    identityPolicies: policies.map((policy, n) => ({ name: `p${n}`, policy: { Version: '2012-10-17', ...policy } })), serviceControlPolicies: [], resourceControlPolicies: [],
  }, {});
  if (result.resultType === 'error') return `error ${JSON.stringify(result.errors)}`;
  return result.overallResult;
}

/**
 * A role's policies against the requests of its calls: the requests denied, and the grants that no
 * request uses (unless GRANTS_NOT_EXERCISED says why).
 */
export async function checkRole(policies: Doc[], principal: string, requests: Request[]): Promise<{ denied: string[]; unused: string[] }> {
  const denied: string[] = [];
  const seen = new Map<string, Request>();
  for (const q of requests) {
    const key = `${q.action} ${q.resource}`;
    if (seen.has(key)) continue;
    seen.set(key, q);
    const d = await decide(policies, principal, q);
    if (d !== 'Allowed') denied.push(`${q.from}: ${q.action} on ${q.resource}: ${d}`);
  }
  const unused: string[] = [];
  for (const policy of policies) {
    for (const st of policy.Statement) {
      for (const action of [st.Action].flat()) {
        let used = false;
        for (const q of seen.values()) {
          if (q.action !== action) continue;
          if ((await decide([{ Statement: [st] }], principal, q)) === 'Allowed') { used = true; break; }
        }
        if (!used && !GRANTS_NOT_EXERCISED[action]) unused.push(`${action} on ${JSON.stringify(st.Resource)}`);
      }
    }
  }
  return { denied, unused };
}
