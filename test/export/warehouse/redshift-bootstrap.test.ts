/**
 * Redshift made ready for the jobs (`pingroll warehouse bootstrap`): the COPY role attached beside the
 * namespace's own roles, the jobs' user made once, the schema and grants, the role assumable by that
 * user only. The Redshift Serverless and Data APIs have no local stand-in: mocked (aws-sdk-client-mock).
 */
import { BatchExecuteStatementCommand, DescribeStatementCommand, ExecuteStatementCommand, GetStatementResultCommand, RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { GetNamespaceCommand, GetWorkgroupCommand, RedshiftServerlessClient, UpdateNamespaceCommand } from '@aws-sdk/client-redshift-serverless';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { bootstrapRedshift, bootstrapStatements, namespaceRoles } from '../../../export/warehouse/redshift/bootstrap.js';
import { RedshiftDataApi } from '../../../export/warehouse/redshift/redshift-warehouse.js';
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
    serverless.on(GetNamespaceCommand).resolves({ namespace: { iamRoles: ['IamRole(applyStatus=in-sync, iamRoleArn=arn:aws:iam::123456789012:role/analysts)'] } as never });
    serverless.on(UpdateNamespaceCommand).resolves({});
    data.on(ExecuteStatementCommand).resolves({ Id: 'q' });
    data.on(DescribeStatementCommand).resolves({ Status: 'FINISHED' });
    data.on(GetStatementResultCommand).resolves({ ColumnMetadata: [{ name: 'found' }], Records: missing ? [] : [[{ longValue: 1 }]] });
    data.on(BatchExecuteStatementCommand).resolves({ Id: 'b' });
    const api = new RedshiftDataApi(new RedshiftDataClient({}), cfg(), { sleep: async () => {}, firstPollMs: 1 });
    const b = await bootstrapRedshift(api, new RedshiftServerlessClient({}), cfg(), 'IAMR:PingrollJobRole');
    expect(b).toEqual({ namespace: 'analytics-ns', roleAttached: true, userCreated: missing, statements: missing ? 8 : 7 });
    // The list is replaced whole: the namespace's own role kept.
    expect(serverless.commandCalls(UpdateNamespaceCommand)[0]!.args[0].input).toEqual({ namespaceName: 'analytics-ns', iamRoles: ['arn:aws:iam::123456789012:role/analysts', ROLE] });
    const sqls = data.commandCalls(BatchExecuteStatementCommand)[0]!.args[0].input.Sqls!;
    expect(sqls).toEqual([...(missing ? ['CREATE USER "IAMR:PingrollJobRole" PASSWORD DISABLE'] : []), ...bootstrapStatements(cfg(), 'IAMR:PingrollJobRole')]);
    expect(sqls).toContain(`REVOKE ASSUMEROLE ON '${ROLE}' FROM PUBLIC FOR ALL`);
    expect(sqls.filter((q) => q.startsWith('GRANT ASSUMEROLE')).map((q) => q.split(' TO ')[1])).toEqual(['"IAMR:PingrollJobRole" FOR COPY', '"IAMR:PingrollJobRole" FOR UNLOAD']);
  });

  it('leaves an attached role as it is, and refuses a user name that is not one', async () => {
    serverless.on(GetWorkgroupCommand).resolves({ workgroup: { namespaceName: 'ns' } as never });
    serverless.on(GetNamespaceCommand).resolves({ namespace: { iamRoles: [ROLE] } as never });
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
});
