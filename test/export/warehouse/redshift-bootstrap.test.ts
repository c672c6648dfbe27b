/**
 * Redshift made ready for the jobs (`pingroll warehouse bootstrap`): the COPY role attached beside the
 * namespace's own roles (and the namespace AVAILABLE again before anything else), the jobs' user made
 * once, the schemas and grants, the role assumable by that user only. The Redshift Serverless and Data
 * APIs are mocked (aws-sdk-client-mock); that the grants are enough for the jobs, and no more than
 * they need, is test/export/warehouse/redshift-rights.test.ts (on PostgreSQL).
 */
import { BatchExecuteStatementCommand, DescribeStatementCommand, ExecuteStatementCommand, GetStatementResultCommand, RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { GetNamespaceCommand, GetWorkgroupCommand, RedshiftServerlessClient, UpdateNamespaceCommand } from '@aws-sdk/client-redshift-serverless';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { bootstrapRedshift, bootstrapStatements, namespaceRoles } from '../../../export/warehouse/redshift/bootstrap.js';
import { RedshiftDataApi, RedshiftWarehouse } from '../../../export/warehouse/redshift/redshift-warehouse.js';
import { loadConfig } from '../../../infra/config.js';

const data = mockClient(RedshiftDataClient);
const serverless = mockClient(RedshiftServerlessClient);
beforeEach(() => {
  data.reset();
  serverless.reset();
});

const ROLE = 'arn:aws:iam::123456789012:role/pingroll-copy';
const cfg = () => loadConfig({ PINGROLL_WAREHOUSE: 'redshift', PINGROLL_OUTPUT: 's3://rollups/pingroll/', PINGROLL_REDSHIFT_WORKGROUP: 'analytics', PINGROLL_REDSHIFT_DATABASE: 'dev', PINGROLL_REDSHIFT_IAM_ROLE: ROLE }).redshift!;

describe('warehouse bootstrap', () => {
  it.each([[true], [false]])('attaches the COPY role beside the namespace\'s own, makes the user when missing (%s), the schema and grants, and the role assumable by that user only', async (missing) => {
    serverless.on(GetWorkgroupCommand).resolves({ workgroup: { namespaceName: 'analytics-ns' } as never });
    serverless.on(GetNamespaceCommand).resolvesOnce({ namespace: { status: 'AVAILABLE', iamRoles: ['IamRole(applyStatus=in-sync, iamRoleArn=arn:aws:iam::123456789012:role/analysts)'] } as never })
      .resolves({ namespace: { status: 'AVAILABLE', iamRoles: ['IamRole(applyStatus=in-sync, iamRoleArn=arn:aws:iam::123456789012:role/analysts)', `IamRole(applyStatus=in-sync, iamRoleArn=${ROLE})`] } as never });
    serverless.on(UpdateNamespaceCommand).resolves({});
    data.on(ExecuteStatementCommand).resolves({ Id: 'q' });
    data.on(DescribeStatementCommand).resolves({ Status: 'FINISHED' });
    data.on(GetStatementResultCommand).resolves({ ColumnMetadata: [{ name: 'found' }], Records: missing ? [] : [[{ longValue: 1 }]] });
    data.on(BatchExecuteStatementCommand).resolves({ Id: 'b' });
    const api = new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { sleep: async () => {}, firstPollMs: 1 });
    const b = await bootstrapRedshift(api, new RedshiftServerlessClient({}), cfg(), 'IAMR:PingrollJobRole');
    expect(b).toEqual({ namespace: 'analytics-ns', roleAttached: true, userCreated: missing, statements: missing ? 9 : 8 });
    // The list is replaced whole: the namespace's own role kept.
    expect(serverless.commandCalls(UpdateNamespaceCommand)[0]!.args[0].input).toEqual({ namespaceName: 'analytics-ns', iamRoles: ['arn:aws:iam::123456789012:role/analysts', ROLE] });
    const sqls = data.commandCalls(BatchExecuteStatementCommand)[0]!.args[0].input.Sqls!;
    expect(sqls).toEqual([...(missing ? ['CREATE USER "IAMR:PingrollJobRole" PASSWORD DISABLE'] : []), ...bootstrapStatements(cfg(), 'IAMR:PingrollJobRole')]);
    // Redshift's documented step that makes ASSUMEROLE grants matter (REVOKE's and GRANT's usage notes): from every role, for every command.
    expect(sqls).toContain('REVOKE ASSUMEROLE ON ALL FROM PUBLIC FOR ALL');
    expect(sqls.filter((q) => q.includes('ASSUMEROLE'))[0]).toBe('REVOKE ASSUMEROLE ON ALL FROM PUBLIC FOR ALL');
    expect(sqls.filter((q) => q.startsWith('GRANT ASSUMEROLE')).map((q) => q.split(' TO ')[1])).toEqual(['"IAMR:PingrollJobRole" FOR COPY', '"IAMR:PingrollJobRole" FOR UNLOAD']);
  });

  it('leaves an attached role as it is, and refuses a user name that is not one', async () => {
    serverless.on(GetWorkgroupCommand).resolves({ workgroup: { namespaceName: 'ns' } as never });
    serverless.on(GetNamespaceCommand).resolves({ namespace: { status: 'AVAILABLE', iamRoles: [ROLE] } as never });
    data.on(ExecuteStatementCommand).resolves({ Id: 'q' });
    data.on(DescribeStatementCommand).resolves({ Status: 'FINISHED' });
    data.on(GetStatementResultCommand).resolves({ ColumnMetadata: [{ name: 'found' }], Records: [[{ longValue: 1 }]] });
    data.on(BatchExecuteStatementCommand).resolves({ Id: 'b' });
    const api = new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { sleep: async () => {}, firstPollMs: 1 });
    expect((await bootstrapRedshift(api, new RedshiftServerlessClient({}), cfg(), 'IAMR:x')).roleAttached).toBe(false);
    expect(serverless.commandCalls(UpdateNamespaceCommand)).toHaveLength(0);
    expect(() => bootstrapStatements(cfg(), 'x"; DROP TABLE y; --')).toThrow(/not a database user name/);
    expect(namespaceRoles(['arn:aws:iam::123456789012:role/a', 'IamRole(applyStatus=adding, iamRoleArn=arn:aws:iam::123456789012:role/b)'])).toEqual(['arn:aws:iam::123456789012:role/a', 'arn:aws:iam::123456789012:role/b']);
  });

  it('makes the schemas itself, the external one over the Glue database too: the runs\' own init makes only tables and views (their user may not make schemas)', () => {
    const sqls = bootstrapStatements(cfg(), 'IAMR:PingrollJobRole', 'pingroll_prod');
    expect(sqls.slice(0, 2)).toEqual(['CREATE SCHEMA IF NOT EXISTS pingroll',
      `CREATE EXTERNAL SCHEMA IF NOT EXISTS pingroll_lake FROM DATA CATALOG DATABASE 'pingroll_prod' IAM_ROLE '${ROLE}'`]);
    // The jobs' user: the schema's tables, and temporary tables (the rollup's inputs); nothing on the
    // database's schemas, nor on the external schema (no job reads it).
    expect(sqls).toContain('GRANT USAGE, CREATE ON SCHEMA pingroll TO "IAMR:PingrollJobRole"');
    expect(sqls).toContain('GRANT TEMP ON DATABASE "dev" TO "IAMR:PingrollJobRole"');
    expect(sqls.filter((q) => /\bCREATE ON DATABASE|pingroll_lake TO/.test(q))).toEqual([]);
    expect(bootstrapStatements(cfg(), 'IAMR:PingrollJobRole').some((q) => q.includes('EXTERNAL SCHEMA'))).toBe(false);
    const init = RedshiftWarehouse.initStatements('pingroll');
    expect(init.filter((q) => /^CREATE (EXTERNAL )?SCHEMA/.test(q))).toEqual([]);
    expect(init.filter((q) => !/^(CREATE TABLE IF NOT EXISTS pingroll\.|SET search_path TO pingroll$|CREATE OR REPLACE VIEW )/.test(q))).toEqual([]);
  });

  it('waits for the namespace to be AVAILABLE, before attaching the role and after, with the role listed, before any statement', async () => {
    serverless.on(GetWorkgroupCommand).resolves({ workgroup: { namespaceName: 'ns' } as never });
    serverless.on(GetNamespaceCommand)
      .resolvesOnce({ namespace: { status: 'MODIFYING', iamRoles: [] } as never })
      .resolvesOnce({ namespace: { status: 'AVAILABLE', iamRoles: [] } as never })
      .resolvesOnce({ namespace: { status: 'MODIFYING', iamRoles: [`IamRole(applyStatus=adding, iamRoleArn=${ROLE})`] } as never })
      .resolvesOnce({ namespace: { status: 'MODIFYING', iamRoles: [`IamRole(applyStatus=adding, iamRoleArn=${ROLE})`] } as never })
      .resolves({ namespace: { status: 'AVAILABLE', iamRoles: [`IamRole(applyStatus=in-sync, iamRoleArn=${ROLE})`] } as never });
    serverless.on(UpdateNamespaceCommand).resolves({});
    data.on(ExecuteStatementCommand).resolves({ Id: 'q' });
    data.on(DescribeStatementCommand).resolves({ Status: 'FINISHED' });
    data.on(GetStatementResultCommand).resolves({ ColumnMetadata: [{ name: 'found' }], Records: [[{ longValue: 1 }]] });
    data.on(BatchExecuteStatementCommand).resolves({ Id: 'b' });
    const order: string[] = [];
    const api = new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { sleep: async () => {}, firstPollMs: 1 });
    const sleeps: number[] = [];
    await bootstrapRedshift(api, new RedshiftServerlessClient({}), cfg(), 'IAMR:x', { sleep: async (ms) => { sleeps.push(ms); order.push(`sleep after ${serverless.commandCalls(GetNamespaceCommand).length}`); } });
    expect(serverless.commandCalls(GetNamespaceCommand)).toHaveLength(5);
    expect(sleeps).toEqual([10_000, 10_000, 10_000]);
    // Polled while MODIFYING (the first call), and after the update until AVAILABLE with the role (calls 3 and 4).
    expect(order).toEqual(['sleep after 1', 'sleep after 3', 'sleep after 4']);
    expect(data.commandCalls(BatchExecuteStatementCommand)).toHaveLength(1);
  });

  it('gives up on a namespace that stays MODIFYING, within its wait, saying what to do, with nothing granted', async () => {
    serverless.on(GetWorkgroupCommand).resolves({ workgroup: { namespaceName: 'ns' } as never });
    serverless.on(GetNamespaceCommand).resolvesOnce({ namespace: { status: 'AVAILABLE', iamRoles: [] } as never }).resolves({ namespace: { status: 'MODIFYING', iamRoles: [ROLE] } as never });
    serverless.on(UpdateNamespaceCommand).resolves({});
    let now = 0;
    const api = new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { sleep: async () => {}, firstPollMs: 1 });
    await expect(bootstrapRedshift(api, new RedshiftServerlessClient({}), cfg(), 'IAMR:x', { waitMs: 60_000, pollMs: 5_000, now: () => now, sleep: async (ms) => { now += ms; } }))
      .rejects.toThrow(/^Redshift Serverless namespace ns is MODIFYING after the COPY role was attached, not AVAILABLE, after 60 s; nothing was granted: run pingroll warehouse bootstrap again once aws redshift-serverless get-namespace --namespace-name ns says AVAILABLE$/);
    expect(serverless.commandCalls(GetNamespaceCommand).length).toBe(1 + 60_000 / 5_000 + 1);
    expect(data.commandCalls(BatchExecuteStatementCommand)).toHaveLength(0);
    expect(data.commandCalls(ExecuteStatementCommand)).toHaveLength(0);
  });
});
