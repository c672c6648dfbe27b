/**
 * One scan of a legacy monthly table: every item to one outcome, pings and bad items staged by the
 * day they belong to (a scan stages every day the table holds, not just the day being run), then
 * committed as the table's latest scan (see ledger.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { classifyItem } from '../dynamodb/item-rules.js';
import { firstDayOf, type MonthlyTable } from '../dynamodb/monthly-tables.js';
import { scanTable, type ScanResult } from '../dynamodb/table-scan.js';
import type { Item } from '../dynamodb/item-rules.js';
import { DaySpool } from './day-spool.js';
import { batchId, dayOf } from './ingest-batch.js';
import type { Ledger, TableScanCommit } from '../../state/ledger.js';

export interface ScanBatchOptions {
  client: DynamoDBClient;
  table: MonthlyTable;
  store: ObjectStore;
  ledger: Ledger;
  engine: DuckDBConnection;
  segments?: number;
  maxRcu?: number;
  now?: Date;
  onThrottle?: (segment: number, attempt: number, waitMs: number) => void;
  /** Reads the items some other way than a Scan (an export): returns what a scan would. */
  read?: (onItems: (items: Item[]) => void) => Promise<ScanResult>;
  /** The export `read` reads, for the commit. */
  exportArn?: string;
}

/** A table is closed when its month ended more than a day before `now`: nothing more can arrive. */
export function isClosed(table: MonthlyTable, now: Date): boolean {
  return now.getTime() >= table.monthEndMs + 86_400_000;
}

export async function scanAndStage(opts: ScanBatchOptions): Promise<TableScanCommit> {
  const now = opts.now ?? new Date();
  const scan = batchId(now);
  const dir = await mkdtemp(join(tmpdir(), 'pingroll-scan-'));
  const spool = new DaySpool(dir, opts.engine);
  const noTimeDay = firstDayOf(opts.table);
  try {
    const onItems = (items: Item[]): void => {
        for (const item of items) {
          const v = classifyItem(item);
          if (v.outcome === 'ping') spool.addPing(dayOf(v.eventTimeMs), v.ping, 0);
          else {
            // An item without a readable time belongs to the first day of its table's month (SPEC §5).
            spool.addReject(Number.isNaN(v.eventTimeMs) ? noTimeDay : dayOf(v.eventTimeMs), {
              source: 'dynamodb', outcome: 'bad_item', reason: v.reason, input: opts.table.name,
              at: `${item.ts_shard?.S ?? '?'}|${item.session_id?.S ?? '?'}`, record: JSON.stringify(item),
            }, 0);
          }
        }
    };
    const result = opts.read
      ? await opts.read(onItems)
      : await scanTable({ client: opts.client, table: opts.table.name, segments: opts.segments, maxRcu: opts.maxRcu, onThrottle: opts.onThrottle, onItems });
    const days = await spool.stage(opts.store, scan);
    const commit: TableScanCommit = {
      scan, table: opts.table.name, month: opts.table.month, scannedAt: now.toISOString(), closed: isClosed(opts.table, now),
      items: result.items, pages: result.pages, consumedCapacity: result.consumedCapacity, throttledRetries: result.throttledRetries, days,
      ...(opts.exportArn ? { export: opts.exportArn } : {}),
    };
    await opts.ledger.commitScan(opts.store, commit);
    return commit;
  } finally {
    await spool.discard();
    await rm(dir, { recursive: true, force: true });
  }
}
