/**
 * Where a monthly table's items are read from (contract §1b): a parallel Scan of the table, or a completed
 * DynamoDB export of it (DYNAMODB_JSON), which holds the same items and costs no read capacity.
 * `TableItemSources` picks one for each table.
 */
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ObjectSource } from '../object-source/object-source.js';
import type { Item } from './item-rules.js';
import { isClosed, type MonthlyTable } from './monthly-tables.js';
import { ExportCatalog, ExportItemSource } from './table-export.js';
import { ScanItemSource, type ScanResult } from './table-scan.js';
import type { TablePart } from '../../state/ledger.js';

export interface ItemSource {
  /** The export read, or null for a Scan (recorded in the scan's commit). */
  readonly exportArn: string | null;
  /** The share of the table this source reads (a shard's), or null for all of it. */
  readonly part: TablePart | null;
  /** What a log line says about the read. */
  readonly details: Record<string, unknown>;
  /** Every item, in pages, in no particular order; what the read cost. */
  read(onItems: (items: Item[]) => void): Promise<ScanResult>;
}

export interface ScanSettings {
  /** Parallel scan segments per table. */
  segments: number;
  /** Read capacity units per second, at most; null for no limit. */
  maxRcu: number | null;
  onThrottle?: (table: string, segment: number, attempt: number, waitMs: number) => void;
}

/** The items of the legacy tables: each read from its export when it can be, else scanned. */
export class TableItemSources {
  private catalog: Promise<ExportCatalog> | null = null;

  /** @param exports where DynamoDB exports are (`PINGROLL_DDB_EXPORTS`), or null. */
  constructor(readonly client: DynamoDBClient, private readonly exports: ObjectSource | null, private readonly scan: ScanSettings) {}

  /**
   * A closed table with a completed full export taken after it closed is read from the export; any
   * other table is scanned. Null when the table does not exist.
   *
   * A shard of N reads its share: of an export, the data files whose number is its index modulo N;
   * of a Scan, the segments so numbered among max(segments, N), with that share of the read budget.
   * Its share can be empty (an export of fewer files than shards).
   */
  async forTable(table: MonthlyTable, now: Date, shard?: { index: number; count: number } | null): Promise<ItemSource | null> {
    const share = (n: number): number[] | undefined => (shard && shard.count > 1 ? Array.from({ length: n }, (_, i) => i).filter((i) => i % shard.count === shard.index) : undefined);
    if (this.exports && isClosed(table, now)) {
      // The exports location is read once, and only if a closed table may need it.
      const catalog = await (this.catalog ??= ExportCatalog.load(this.exports));
      const exp = await catalog.find(table);
      if (exp) {
        return new ExportItemSource(catalog.source, exp, share(exp.dataFiles.length));
      }
    }
    try {
      await this.client.send(new DescribeTableCommand({ TableName: table.name }));
    } catch (err) {
      if ((err as { name?: string }).name === 'ResourceNotFoundException') return null;
      throw err;
    }
    const { onThrottle } = this.scan;
    const segments = shard && shard.count > 1 ? Math.max(this.scan.segments, shard.count) : this.scan.segments;
    const only = share(segments);
    const maxRcu = this.scan.maxRcu === null ? undefined : only ? (this.scan.maxRcu * only.length) / segments : this.scan.maxRcu;
    return new ScanItemSource({
      client: this.client, table: table.name, segments, only, maxRcu,
      onThrottle: onThrottle && ((segment, attempt, waitMs) => onThrottle(table.name, segment, attempt, waitMs)),
    });
  }
}
