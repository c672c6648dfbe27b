/**
 * What Redshift needs before the jobs can use it, done once by an administrator and again whenever
 * (idempotent): `pingroll warehouse bootstrap --grant-to <user>`, with the administrator's secret
 * (PINGROLL_REDSHIFT_SECRET_ARN). The deployment runs it before every night's jobs.
 *
 * - The COPY role (PINGROLL_REDSHIFT_IAM_ROLE) attached to the workgroup's namespace, beside the roles
 *   it has (Redshift Serverless replaces the list whole: it is read first).
 * - The jobs' database user (`IAMR:<role name>` for a role using the Data API) made when missing, the
 *   schema made, and the user allowed to use it and create its tables.
 * - The COPY role assumable by that user only, for COPY and UNLOAD: Redshift lets every user (PUBLIC)
 *   assume an attached role until told otherwise.
 */
import { GetNamespaceCommand, GetWorkgroupCommand, UpdateNamespaceCommand, type RedshiftServerlessClient } from '@aws-sdk/client-redshift-serverless';
import type { RedshiftConfig } from './redshift-config.js';
import type { RedshiftDataApi } from './redshift-warehouse.js';

/** A database user's name as Redshift quotes it. */
function quoted(user: string): string {
  if (!/^[A-Za-z0-9_:@.+-]{1,127}$/.test(user)) throw new Error(`--grant-to ${user} is not a database user name`);
  return `"${user}"`;
}

/** The statements after the user exists: the schema, the user's rights on it, and the COPY role's. */
export function bootstrapStatements(cfg: Pick<RedshiftConfig, 'schema' | 'iamRole'>, user: string): string[] {
  const u = quoted(user);
  return [
    `CREATE SCHEMA IF NOT EXISTS ${cfg.schema}`,
    `GRANT USAGE, CREATE ON SCHEMA ${cfg.schema} TO ${u}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${cfg.schema} TO ${u}`,
    `ALTER DEFAULT PRIVILEGES IN SCHEMA ${cfg.schema} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${u}`,
    `REVOKE ASSUMEROLE ON '${cfg.iamRole}' FROM PUBLIC FOR ALL`,
    `GRANT ASSUMEROLE ON '${cfg.iamRole}' TO ${u} FOR COPY`,
    `GRANT ASSUMEROLE ON '${cfg.iamRole}' TO ${u} FOR UNLOAD`,
  ];
}

/** The IAM role ARNs of a namespace, as Redshift Serverless lists them (`IamRole(applyStatus=..., iamRoleArn=arn:...)`, or the ARN alone). */
export function namespaceRoles(iamRoles: readonly string[] | undefined): string[] {
  return (iamRoles ?? []).map((r) => /arn:aws[a-z-]*:iam::\d{12}:role\/[^,)\s]+/.exec(r)?.[0] ?? r);
}

export interface Bootstrapped { namespace: string; roleAttached: boolean; userCreated: boolean; statements: number }

export async function bootstrapRedshift(api: RedshiftDataApi, serverless: RedshiftServerlessClient, cfg: RedshiftConfig, user: string): Promise<Bootstrapped> {
  if (!('workgroup' in cfg.target)) throw new Error('pingroll warehouse bootstrap is for Redshift Serverless (PINGROLL_REDSHIFT_WORKGROUP); on a provisioned cluster, attach the role and run these statements as its administrator: ' + bootstrapStatements(cfg, user).join('; '));
  const workgroup = (await serverless.send(new GetWorkgroupCommand({ workgroupName: cfg.target.workgroup }))).workgroup;
  const namespaceName = workgroup?.namespaceName;
  if (!namespaceName) throw new Error(`Redshift Serverless did not name the namespace of workgroup ${cfg.target.workgroup}`);
  const roles = namespaceRoles((await serverless.send(new GetNamespaceCommand({ namespaceName }))).namespace?.iamRoles);
  const roleAttached = !roles.includes(cfg.iamRole);
  if (roleAttached) await serverless.send(new UpdateNamespaceCommand({ namespaceName, iamRoles: [...roles, cfg.iamRole] }));
  const exists = await api.query(`SELECT 1 AS found FROM pg_user WHERE usename = '${user.replace(/'/g, "''")}'`, `bootstrap: does ${user} exist`);
  const userCreated = exists.length === 0;
  const statements = [...(userCreated ? [`CREATE USER ${quoted(user)} PASSWORD DISABLE`] : []), ...bootstrapStatements(cfg, user)];
  await api.batch(statements, 'bootstrap');
  return { namespace: namespaceName, roleAttached, userCreated, statements: statements.length };
}
