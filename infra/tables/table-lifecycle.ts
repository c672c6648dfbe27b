/**
 * The legacy monthly tables' lifecycle: what exists and in what state (`plan`), next month's table
 * created ahead of time (`rotate`), old tables deleted once, and only once, a completed export holds
 * them (`retire`).
 */
import {
  CreateTableCommand, DeleteTableCommand, DescribeTableCommand, ListTablesCommand, waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { ExportCatalog, TableExport } from '../../ingest/dynamodb/table-export.js';
import { isClosed, PING_TABLE_KEYS, tableForMonth, type MonthlyTable } from '../../ingest/dynamodb/monthly-tables.js';

export type TableState = 'live' | 'closed' | 'exported' | 'future';

export interface TablePlanRow {
  table: string;
  month: string;
  state: TableState;
  status: string;
  billingMode: string;
  itemCount: number;
  export: string | null;
}

export interface TablePlan {
  tables: TablePlanRow[];
  /** Next month's table, when it does not exist yet. */
  missingNextMonth: string | null;
}

/** The tables whose names fit the template, with their months. */
async function monthlyTables(client: DynamoDBClient, template: string): Promise<MonthlyTable[]> {
  const order: Array<'y' | 'm'> = [];
  const pattern = new RegExp('^' + template.split(/(\{yyyy\}|\{mm\})/).map((part) => {
    if (part === '{yyyy}') return order.push('y'), '(\\d{4})';
    if (part === '{mm}') return order.push('m'), '(\\d{2})';
    return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }).join('') + '$');
  const out: MonthlyTable[] = [];
  let start: string | undefined;
  do {
    const r = await client.send(new ListTablesCommand({ ExclusiveStartTableName: start }));
    for (const name of r.TableNames ?? []) {
      const m = pattern.exec(name);
      if (!m) continue;
      const y = Number(m[order.indexOf('y') + 1]), mo = Number(m[order.indexOf('m') + 1]);
      if (mo >= 1 && mo <= 12) out.push(tableForMonth(template, y, mo));
    }
    start = r.LastEvaluatedTableName;
  } while (start);
  return out.sort((a, b) => a.month.localeCompare(b.month));
}

function nextMonth(template: string, now: Date): MonthlyTable {
  const y = now.getUTCFullYear(), m = now.getUTCMonth() + 1;
  return m === 12 ? tableForMonth(template, y + 1, 1) : tableForMonth(template, y, m + 1);
}

export async function planTables(client: DynamoDBClient, template: string, exports: ExportCatalog | null, now = new Date()): Promise<TablePlan> {
  const rows: TablePlanRow[] = [];
  for (const t of await monthlyTables(client, template)) {
    const d = (await client.send(new DescribeTableCommand({ TableName: t.name }))).Table!;
    const exp: TableExport | null = exports && isClosed(t, now) ? await exports.find(t) : null;
    const monthStart = Date.parse(`${t.month}-01T00:00:00Z`);
    const state: TableState = exp ? 'exported' : isClosed(t, now) ? 'closed' : now.getTime() < monthStart ? 'future' : 'live';
    rows.push({
      table: t.name, month: t.month, state, status: d.TableStatus ?? '?', billingMode: d.BillingModeSummary?.BillingMode ?? 'PROVISIONED',
      itemCount: d.ItemCount ?? 0, export: exp?.exportArn ?? null,
    });
  }
  const next = nextMonth(template, now);
  return { tables: rows, missingNextMonth: rows.some((r) => r.table === next.name) ? null : next.name };
}

/**
 * Creates next month's table with the documented key schema (contract §1b): hash `ts_shard` (S), range
 * `session_id` (S); on-demand unless given provisioned capacity. Idempotent; waits until ACTIVE.
 */
export async function rotateTables(client: DynamoDBClient, template: string, opts: { now?: Date; provisioned?: { read: number; write: number }; maxWaitSeconds?: number } = {}): Promise<{ table: string; created: boolean }> {
  const next = nextMonth(template, opts.now ?? new Date());
  let created = true;
  try {
    await client.send(new CreateTableCommand({
      TableName: next.name,
      AttributeDefinitions: [...PING_TABLE_KEYS.AttributeDefinitions],
      KeySchema: [...PING_TABLE_KEYS.KeySchema],
      ...(opts.provisioned
        ? { BillingMode: 'PROVISIONED', ProvisionedThroughput: { ReadCapacityUnits: opts.provisioned.read, WriteCapacityUnits: opts.provisioned.write } }
        : { BillingMode: 'PAY_PER_REQUEST' }),
    }));
  } catch (err) {
    if ((err as { name?: string }).name !== 'ResourceInUseException') throw err;
    created = false;
  }
  await waitUntilTableExists({ client, maxWaitTime: opts.maxWaitSeconds ?? 300 }, { TableName: next.name });
  return { table: next.name, created };
}

export interface RetireStep {
  table: string;
  month: string;
  action: 'delete' | 'export first' | 'still open';
  export: string | null;
  done: boolean;
}

/**
 * Tables of months before `before` (YYYY-MM): each is deleted only when a completed full export taken
 * after its month closed holds it; the others are listed as needing an export. Nothing is deleted
 * without `apply`.
 */
export async function retireTables(client: DynamoDBClient, template: string, before: string, exports: ExportCatalog | null,
  opts: { apply?: boolean; now?: Date } = {}): Promise<RetireStep[]> {
  const now = opts.now ?? new Date();
  const steps: RetireStep[] = [];
  for (const t of await monthlyTables(client, template)) {
    if (t.month >= before) continue;
    if (!isClosed(t, now)) {
      steps.push({ table: t.name, month: t.month, action: 'still open', export: null, done: false });
      continue;
    }
    const exp = exports ? await exports.find(t) : null;
    const step: RetireStep = { table: t.name, month: t.month, action: exp ? 'delete' : 'export first', export: exp?.exportArn ?? null, done: false };
    if (exp && opts.apply) {
      await client.send(new DeleteTableCommand({ TableName: t.name }));
      step.done = true;
    }
    steps.push(step);
  }
  return steps;
}
