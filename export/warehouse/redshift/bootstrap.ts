/**
 * What Redshift needs before the jobs can use it, done once by an administrator and again whenever
 * (idempotent): `pingroll warehouse bootstrap --grant-to <user>`, with the administrator's secret
 * (PINGROLL_REDSHIFT_SECRET_ARN). The deployment runs it before every night's jobs.
 *
 * - The COPY role (PINGROLL_REDSHIFT_IAM_ROLE) attached to the workgroup's namespace, beside the roles
 *   it has (Redshift Serverless replaces the list whole: it is read first), and the namespace
 *   AVAILABLE again before anything goes on (a role being attached is not yet usable by COPY).
 * - The jobs' database user (`IAMR:<role name>` for a role using the Data API) made when missing.
 * - The schemas made here, by the administrator: the schema, and with a Glue database
 *   (PINGROLL_GLUE_DATABASE) the external schema `<schema>_lake` over it. Making a schema takes CREATE
 *   on the database, which the jobs' user is not given: Redshift (like PostgreSQL) refuses even
 *   `CREATE SCHEMA IF NOT EXISTS` of a schema that exists to a user without it. The runs' own init
 *   makes only tables and views, in the schema (RedshiftWarehouse.initStatements).
 * - The user allowed to use the schema and create its tables, and temporary tables (the rollup inside
 *   Redshift COPYs its inputs into them). It gets nothing on `<schema>_lake`: no job reads it
 *   (analysts do; grant them USAGE on it).
 * - The COPY role assumable by that user only, for COPY and UNLOAD: Redshift lets every user (PUBLIC)
 *   assume every attached role until a superuser runs `REVOKE ASSUMEROLE ON ALL FROM PUBLIC FOR ALL`
 *   (the GRANT and REVOKE pages' usage notes give that statement as the one that makes ASSUMEROLE
 *   grants matter; a revoke of one role from PUBLIC is not documented to). It is the cluster's
 *   setting, not pingroll's: other users then need grants of their own (docs/running-on-aws.md).
 */
import { GetNamespaceCommand, GetWorkgroupCommand, UpdateNamespaceCommand, type RedshiftServerlessClient } from '@aws-sdk/client-redshift-serverless';
import type { RedshiftConfig } from './redshift-config.js';
import type { RedshiftDataApi } from './redshift-warehouse.js';

/** A database user's name as Redshift quotes it. */
function quoted(user: string): string {
  if (!/^[A-Za-z0-9_:@.+-]{1,127}$/.test(user)) throw new Error(`--grant-to ${user} is not a database user name`);
  return `"${user}"`;
}

/** The external schema over the Glue database (Redshift Spectrum): the published Parquet, beside the loaded tables (docs/analysts.md). */
export function lakeSchema(schema: string): string {
  return `${schema}_lake`;
}

/**
 * The statements after the user exists: the schemas, the user's rights, and the COPY role's.
 * `glueDatabase`: the Glue database of the published tables (PINGROLL_GLUE_DATABASE); none: no external schema.
 */
export function bootstrapStatements(cfg: Pick<RedshiftConfig, 'schema' | 'iamRole' | 'database'>, user: string, glueDatabase: string | null = null): string[] {
  const u = quoted(user);
  return [
    `CREATE SCHEMA IF NOT EXISTS ${cfg.schema}`,
    ...(glueDatabase ? [`CREATE EXTERNAL SCHEMA IF NOT EXISTS ${lakeSchema(cfg.schema)} FROM DATA CATALOG DATABASE '${glueDatabase}' IAM_ROLE '${cfg.iamRole}'`] : []),
    `GRANT USAGE, CREATE ON SCHEMA ${cfg.schema} TO ${u}`,
    `GRANT TEMP ON DATABASE "${cfg.database.replace(/"/g, '""')}" TO ${u}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${cfg.schema} TO ${u}`,
    `ALTER DEFAULT PRIVILEGES IN SCHEMA ${cfg.schema} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${u}`,
    'REVOKE ASSUMEROLE ON ALL FROM PUBLIC FOR ALL',
    `GRANT ASSUMEROLE ON '${cfg.iamRole}' TO ${u} FOR COPY`,
    `GRANT ASSUMEROLE ON '${cfg.iamRole}' TO ${u} FOR UNLOAD`,
  ];
}

/** The IAM role ARNs of a namespace, as Redshift Serverless lists them (`IamRole(applyStatus=..., iamRoleArn=arn:...)`, or the ARN alone). */
export function namespaceRoles(iamRoles: readonly string[] | undefined): string[] {
  return (iamRoles ?? []).map((r) => /arn:aws[a-z-]*:iam::\d{12}:role\/[^,)\s]+/.exec(r)?.[0] ?? r);
}

export interface Bootstrapped { namespace: string; roleAttached: boolean; userCreated: boolean; statements: number }

export interface BootstrapOptions {
  /** The Glue database of the published tables (PINGROLL_GLUE_DATABASE): the external schema `<schema>_lake` over it. */
  glueDatabase?: string | null;
  /** How long to wait for the namespace to be AVAILABLE (default 15 minutes), polling every `pollMs` (default 10 s). */
  waitMs?: number;
  pollMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export async function bootstrapRedshift(api: RedshiftDataApi, serverless: RedshiftServerlessClient, cfg: RedshiftConfig, user: string, opts: BootstrapOptions = {}): Promise<Bootstrapped> {
  const glueDatabase = opts.glueDatabase ?? null;
  if (!('workgroup' in cfg.target)) throw new Error('pingroll warehouse bootstrap is for Redshift Serverless (PINGROLL_REDSHIFT_WORKGROUP); on a provisioned cluster, attach the role and run these statements as its administrator: ' + bootstrapStatements(cfg, user, glueDatabase).join('; '));
  const workgroup = (await serverless.send(new GetWorkgroupCommand({ workgroupName: cfg.target.workgroup }))).workgroup;
  const namespaceName = workgroup?.namespaceName;
  if (!namespaceName) throw new Error(`Redshift Serverless did not name the namespace of workgroup ${cfg.target.workgroup}`);
  // A namespace being modified refuses UpdateNamespace, and a role being attached is not usable yet:
  // wait for AVAILABLE before and after (with the role listed, after).
  const roles = namespaceRoles((await availableNamespace(serverless, namespaceName, null, opts)).iamRoles);
  const roleAttached = !roles.includes(cfg.iamRole);
  if (roleAttached) {
    await serverless.send(new UpdateNamespaceCommand({ namespaceName, iamRoles: [...roles, cfg.iamRole] }));
    await availableNamespace(serverless, namespaceName, cfg.iamRole, opts);
  }
  const exists = await api.query(`SELECT 1 AS found FROM pg_user WHERE usename = '${user.replace(/'/g, "''")}'`, `bootstrap: does ${user} exist`);
  const userCreated = exists.length === 0;
  const statements = [...(userCreated ? [`CREATE USER ${quoted(user)} PASSWORD DISABLE`] : []), ...bootstrapStatements(cfg, user, glueDatabase)];
  await api.batch(statements, 'bootstrap');
  return { namespace: namespaceName, roleAttached, userCreated, statements: statements.length };
}

/** The namespace once its status is AVAILABLE (and `role` among its roles, when given), polled within a bounded wait. */
async function availableNamespace(serverless: RedshiftServerlessClient, namespaceName: string, role: string | null, opts: BootstrapOptions): Promise<{ iamRoles?: string[] }> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = opts.now ?? Date.now;
  const waitMs = opts.waitMs ?? 15 * 60_000;
  const deadline = now() + waitMs;
  for (;;) {
    const namespace = (await serverless.send(new GetNamespaceCommand({ namespaceName }))).namespace;
    if (namespace?.status === 'AVAILABLE' && (!role || namespaceRoles(namespace.iamRoles).includes(role))) return namespace;
    if (now() >= deadline) {
      throw new Error(`Redshift Serverless namespace ${namespaceName} is ${namespace?.status ?? 'of no status'}${role ? ' after the COPY role was attached' : ''}, not AVAILABLE, after ${Math.round(waitMs / 1000)} s; `
        + `nothing was granted: run pingroll warehouse bootstrap again once aws redshift-serverless get-namespace --namespace-name ${namespaceName} says AVAILABLE`);
    }
    await sleep(opts.pollMs ?? 10_000);
  }
}
