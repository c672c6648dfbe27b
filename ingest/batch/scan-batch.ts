/**
 * The legacy tables' ingest: each table that can hold the days being run is read whole (a Scan, or
 * its export), every item to one outcome, pings and bad items staged by the day they belong to (a
 * read stages every day the table holds, not just the day being run), then committed as the table's
 * latest scan (see state/ledger.ts).
 */
import { makeWorkDir } from '../../lib/work-dir.js';
import { rm } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Log } from '../../lib/log.js';
import { dayOf } from '../../lib/utc-day.js';
import type { ObjectStore } from '../../state/object-store/object-store.js';
import { scanCommitKey, type Ledger, type TableScanCommit } from '../../state/ledger.js';
import type { BatchWriter } from '../../state/batch-writer.js';
import { classifyItem, type Item } from '../dynamodb/item-rules.js';
import type { ItemSource, TableItemSources } from '../dynamodb/item-source.js';
import { firstDayOf, isClosed, type MonthlyTable } from '../dynamodb/monthly-tables.js';
import { DaySpool } from './day-spool.js';
import { stagedCodec } from '../../lib/parquet-codec.js';
import { batchId } from './ingest-batch.js';
import { maskedItem, type Privacy } from '../privacy.js';

export interface ScanBatchOptions {
  source: ItemSource;
  table: MonthlyTable;
  store: ObjectStore;
  /** Commits the read (state/batch-writer.ts). */
  writer: BatchWriter;
  engine: DuckDBConnection;
  now: Date;
  /** What a rejected item keeps (ingest/privacy.ts); `keep` when not said. */
  privacy?: Privacy;
}

/** Reads one table whole from `source`, stages every day it holds and commits the scan. */
export async function scanAndStage(opts: ScanBatchOptions): Promise<TableScanCommit> {
  const { now } = opts;
  const scan = batchId(now);
  const dir = await makeWorkDir('scan');
  const spool = new DaySpool(dir, { codec: stagedCodec(opts.store.local) });
  const noTimeDay = firstDayOf(opts.table);
  try {
    const result = await opts.source.read((items: Item[]): void => {
      for (const item of items) {
        const v = classifyItem(item);
        if (v.outcome === 'ping') spool.addPing(dayOf(v.eventTimeMs), v.ping, 0);
        else {
          // An item without a readable time belongs to the first day of its table's month (contract §5).
          spool.addReject(Number.isNaN(v.eventTimeMs) ? noTimeDay : dayOf(v.eventTimeMs), {
            source: 'dynamodb', outcome: 'bad_item', reason: v.reason, input: opts.table.name,
            at: `${item.ts_shard?.S ?? '?'}|${item.session_id?.S ?? '?'}`,
            ...(opts.privacy === 'mask' ? { record: JSON.stringify(maskedItem(item)), masked: true as const } : { record: JSON.stringify(item) }),
          }, 0);
        }
      }
    });
    await opts.writer.begin(scan, scanCommitKey(opts.table.name, scan));
    const days = await spool.stage(opts.store, scan);
    return await opts.writer.commitScan({
      scan, table: opts.table.name, month: opts.table.month, scannedAt: now.toISOString(), closed: isClosed(opts.table, now),
      items: result.items, pages: result.pages, consumedCapacity: result.consumedCapacity, throttledRetries: result.throttledRetries, days,
      ...(opts.source.exportArn ? { export: opts.source.exportArn } : {}),
      ...(opts.source.part ? { part: opts.source.part } : {}),
    });
  } finally {
    await spool.discard();
    await rm(dir, { recursive: true, force: true });
  }
}

/** What reading one table cost. */
export interface TableRead { table: string; items: number; consumedCapacity: number; throttledRetries: number }

export interface ScanTablesOptions {
  tables: MonthlyTable[];
  sources: TableItemSources;
  store: ObjectStore;
  ledger: Ledger;
  engine: DuckDBConnection;
  /** The run's clock: tables are closed relative to it. */
  now: Date;
  /** Read closed tables again even if they were read after closing. */
  rescan: boolean;
  log: Log;
  writer: BatchWriter;
  privacy?: Privacy;
  /** This run is a shard of a sharded ingest: it reads its share of each table (item-source.ts). */
  shard?: { index: number; count: number } | null | undefined;
}

/**
 * Reads the tables that can hold the days being run. A table read after its month closed is not read
 * again (nothing more can arrive) unless `rescan`; a live table is read on every run, its new scan
 * replacing the last. A missing table is reported, not fatal.
 */
export async function scanTables(opts: ScanTablesOptions): Promise<{ scanned: TableRead[]; missing: string[] }> {
  const { log } = opts;
  const scanned: TableRead[] = [], missing: string[] = [];
  for (const table of opts.tables) {
    const skip = (read: TableScanCommit[]): void => {
      const last = read.at(-1)!;
      log.info('table.skip', { table: table.name, reason: `closed; read ${last.scannedAt} (${last.export ? `export ${last.export}` : `scan ${last.scan}`}${read.length > 1 ? ` and ${read.length - 1} other part(s)` : ''}); --rescan to read again` });
    };
    const current = opts.ledger.tableReading(table.name);
    if (current && opts.ledger.tableClosed(table.name) && !opts.rescan) {
      skip(current);
      continue;
    }
    const source = await opts.sources.forTable(table, opts.now, opts.shard);
    if (!source) {
      missing.push(table.name);
      log.warn('table.missing', { table: table.name, month: table.month });
      continue;
    }
    // An export of fewer data files than shards leaves some shards nothing to read.
    if (source.part?.parts.length === 0) continue;
    if (source.part && opts.ledger.tableClosed(table.name, source.part, source.exportArn) && !opts.rescan) {
      log.info('table.skip', { table: table.name, reason: `closed; its part ${source.part.parts.join(',')} of ${source.part.of} was read after it closed; --rescan to read again` });
      continue;
    }
    log.info(source.exportArn ? 'table.export' : 'table.scan', { table: table.name, ...source.details });
    const scan = await scanAndStage({ source, table, store: opts.store, writer: opts.writer, engine: opts.engine, now: opts.now, privacy: opts.privacy ?? 'keep' });
    scanned.push({ table: table.name, items: scan.items, consumedCapacity: scan.consumedCapacity, throttledRetries: scan.throttledRetries });
    log.info('table.scanned', { table: table.name, items: scan.items, consumedCapacity: scan.consumedCapacity, closed: scan.closed, days: Object.keys(scan.days) });
  }
  return { scanned, missing };
}
