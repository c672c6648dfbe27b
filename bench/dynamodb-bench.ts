/**
 * `make bench` (DynamoDB part), against DynamoDB Local: scan throughput (items/s) with 1 and 4
 * segments; then a backfill of a whole month with both neighbouring tables, reporting the read
 * capacity consumed per day rolled up, beside what scanning every table that can hold a day, for
 * every day, would have consumed (the cost without scan-once; computed from the same run's scans).
 */
import { BatchWriteItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { join } from 'node:path';
import { scanTable } from '../ingest/dynamodb/table-scan.js';
import { tablesForDay } from '../ingest/dynamodb/monthly-tables.js';
import { loadConfig } from '../infra/config.js';
import { memoryLog } from '../lib/log.js';
import { startDynamoLocal } from '../test/support/dynamodb-local.js';
import { rm, runDays, tempDir } from '../test/support/job-fixture.js';

const ITEMS_PER_MONTH = Number(process.env.BENCH_DDB_ITEMS ?? 20_000);

async function main(): Promise<void> {
  const ddb = await startDynamoLocal();
  Object.assign(process.env, ddb.env);
  const client = ddb.client();
  const months = [['pings_2026_10', Date.UTC(2026, 9, 1)], ['pings_2026_11', Date.UTC(2026, 10, 1)], ['pings_2026_12', Date.UTC(2026, 11, 1)]] as const;
  for (const [table, start] of months) {
    await ddb.createPingTable(table);
    const puts: Array<Record<string, AttributeValue>> = [];
    for (let i = 0; i < ITEMS_PER_MONTH; i++) {
      const t = start + Math.floor((i / ITEMS_PER_MONTH) * 30 * 86_400_000);
      puts.push({
        ts_shard: { S: `${Math.floor(t / 1000)}${String(i % 100).padStart(2, '0')}` }, session_id: { S: `s${i % 997}` },
        series: { S: `series-${i % 40}` }, episode: { N: String(1 + (i % 12)) }, user_id: { S: `u${i % 5000}` }, ping_id: { S: `p-${table}-${i}` },
        pos: { N: String(i % 3600) }, platform: { S: 'web' },
      });
    }
    for (let i = 0; i < puts.length; i += 25) {
      await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: puts.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }));
    }
    process.stderr.write(`loaded ${table}\n`);
  }

  const lines: string[] = [`dynamodb bench: DynamoDB Local 3.3, ${ITEMS_PER_MONTH.toLocaleString('en')} items per monthly table`, '',
    '| scan of one table | items/s | read capacity |', '|---|---:|---:|'];
  for (const segments of [1, 4]) {
    const t0 = process.hrtime.bigint();
    const r = await scanTable({ client, table: 'pings_2026_11', segments, onItems: () => {} });
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    lines.push(`| ${segments} segment${segments > 1 ? 's' : ''} | ${Math.round(r.items / s).toLocaleString('en')} | ${r.consumedCapacity} |`);
  }

  const root = tempDir();
  const config = loadConfig({ PINGROLL_LOGS: join(root, 'logs'), PINGROLL_OUTPUT: join(root, 'out'), PINGROLL_WAREHOUSE: 'none', PINGROLL_DDB_TABLES: 'pings_{yyyy}_{mm}' });
  const { mkdir } = await import('node:fs/promises');
  await mkdir(join(root, 'logs'), { recursive: true });
  const t0 = process.hrtime.bigint();
  const b = await runDays(config, { from: '2026-11-01', to: '2026-11-30', log: memoryLog(), now: new Date('2026-12-05T00:00:00Z') });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const perTable = new Map(b.scanned.map((t) => [t.table, t.consumedCapacity]));
  const naive = ['2026-11'].flatMap(() => Array.from({ length: 30 }, (_, i) => `2026-11-${String(i + 1).padStart(2, '0')}`))
    .reduce((n, d) => n + tablesForDay('pings_{yyyy}_{mm}', d).reduce((m, t) => m + (perTable.get(t.name) ?? 0), 0), 0);
  lines.push('', `backfill of November 2026 (30 days, ${b.pings.toLocaleString('en')} pings): ${seconds.toFixed(1)} s; tables scanned once each: ${b.scanned.map((t) => `${t.table} ${t.consumedCapacity} RCU`).join(', ')}`,
    `read capacity: ${b.consumedCapacity} in all, ${(b.consumedCapacity / 30).toFixed(1)} per day rolled up; scanning every table that can hold a day for each day would take ${naive} (${(naive / b.consumedCapacity).toFixed(1)}x)`);
  const again = await runDays(config, { from: '2026-11-01', to: '2026-11-30', log: memoryLog(), now: new Date('2026-12-05T00:00:00Z') });
  lines.push(`the same backfill again: ${again.skipped.length} days skipped, ${again.scanned.length} tables scanned, ${again.consumedCapacity} RCU`);
  process.stdout.write(lines.join('\n') + '\n');
  await ddb.stop();
  await rm(root, { recursive: true, force: true });
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
