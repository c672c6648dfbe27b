import { ExportCatalog } from '../../ingest/dynamodb/table-export.js';
import { makeDynamoClient } from '../../infra/aws/dynamodb-client.js';
import { ConfigError, type Config } from '../../infra/config.js';
import { objectSourceAt } from '../../infra/backends.js';
import { planTables, retireTables, rotateTables } from '../../infra/tables/table-lifecycle.js';

function exportCatalog(config: Config): Promise<ExportCatalog | null> {
  return config.ddbExports ? objectSourceAt(config.ddbExports, config).then((source) => ExportCatalog.load(source)) : Promise.resolve(null);
}

/** `pingroll tables plan | rotate | retire --before YYYY-MM [--apply]`. */
export async function tablesCommand(config: Config, action: string, values: { before?: string; apply?: boolean; provisioned?: string }): Promise<string> {
  if (!config.ddbTables) throw new ConfigError('PINGROLL_DDB_TABLES is empty; set it to the monthly table template (e.g. pings_{yyyy}_{mm})');
  const client = makeDynamoClient();
  switch (action) {
    case 'plan': {
      const plan = await planTables(client, config.ddbTables, await exportCatalog(config));
      const lines = ['table                month    state     status    billing          items  export'];
      for (const t of plan.tables) {
        lines.push(`${t.table.padEnd(20)} ${t.month}  ${t.state.padEnd(8)}  ${t.status.padEnd(8)}  ${t.billingMode.padEnd(15)} ${String(t.itemCount).padStart(6)}  ${t.export ?? '-'}`);
      }
      if (plan.missingNextMonth) lines.push(`next month's table ${plan.missingNextMonth} does not exist yet: run pingroll tables rotate`);
      return lines.join('\n') + '\n';
    }
    case 'rotate': {
      let provisioned: { read: number; write: number } | undefined;
      if (values.provisioned) {
        const m = /^(\d+),(\d+)$/.exec(values.provisioned);
        if (!m) throw new ConfigError(`--provisioned=${values.provisioned} must be READ,WRITE capacity units (e.g. 50,100)`);
        provisioned = { read: Number(m[1]), write: Number(m[2]) };
      }
      const r = await rotateTables(client, config.ddbTables, { provisioned });
      return `${r.table}: ${r.created ? 'created' : 'already there'}, ACTIVE\n`;
    }
    case 'retire': {
      if (!values.before || !/^\d{4}-\d{2}$/.test(values.before)) throw new ConfigError('retire needs --before YYYY-MM (tables of earlier months are retired)');
      const steps = await retireTables(client, config.ddbTables, values.before, await exportCatalog(config), { apply: values.apply });
      const lines = steps.map((s) => `${s.table}: ${s.action === 'delete' ? (s.done ? `deleted (held by ${s.export})` : `would delete (held by ${s.export})`) : s.action === 'export first'
        ? 'no completed full export taken after its month closed: export it first (ExportTableToPointInTime, DYNAMODB_JSON, into PINGROLL_DDB_EXPORTS); not deleted'
        : 'its month is not closed yet; not deleted'}`);
      if (!values.apply && steps.some((s) => s.action === 'delete')) lines.push('dry run: nothing deleted; add --apply to delete the tables marked would delete');
      return (lines.length ? lines.join('\n') : `no table before ${values.before}`) + '\n';
    }
    default:
      throw new ConfigError(`tables needs one of plan, rotate, retire (got '${action ?? ''}')`);
  }
}
