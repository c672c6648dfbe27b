import { ConfigError, type Config } from '../../infra/config.js';
import { makeLog } from '../run-log.js';

/** `pingroll warehouse bootstrap --grant-to USER`: Redshift made ready for the jobs (export/warehouse/redshift/bootstrap.ts). */
export async function bootstrapCommand(config: Config, user: string | undefined): Promise<string> {
  if (config.warehouse.kind !== 'redshift' || !config.redshift) throw new ConfigError('warehouse bootstrap is for PINGROLL_WAREHOUSE=redshift');
  if (!user) throw new ConfigError("warehouse bootstrap needs --grant-to <the jobs' database user>, e.g. IAMR:PingrollJobRole");
  const [{ RedshiftDataApi }, { bootstrapRedshift, lakeSchema }, { RedshiftDataClient }, { RedshiftServerlessClient }] = await Promise.all([
    import('../../export/warehouse/redshift/redshift-warehouse.js'), import('../../export/warehouse/redshift/bootstrap.js'),
    import('@aws-sdk/client-redshift-data'), import('@aws-sdk/client-redshift-serverless')]);
  const api = new RedshiftDataApi(new RedshiftDataClient({ maxAttempts: 5 }), config.redshift, { log: makeLog(), timeoutMs: config.redshiftWaitMinutes * 60_000 });
  const b = await bootstrapRedshift(api, new RedshiftServerlessClient({ maxAttempts: 5 }), config.redshift, user, { glueDatabase: config.glueDatabase });
  return `namespace ${b.namespace}: the COPY role ${b.roleAttached ? 'attached' : 'was attached already'}; ${user} ${b.userCreated ? 'made' : 'there already'}; ${b.statements} statements run (schema ${config.redshift.schema}${config.glueDatabase ? ` and ${lakeSchema(config.redshift.schema)} over Glue's ${config.glueDatabase}` : ''}, grants, ASSUMEROLE for ${user} only)\n`;
}
