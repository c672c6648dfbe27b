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

export interface ItemSource {
  /** The export read, or null for a Scan (recorded in the scan's commit). */
  readonly exportArn: string | null;
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
   */
  async forTable(table: MonthlyTable, now: Date): Promise<ItemSource | null> {
    if (this.exports && isClosed(table, now)) {
      // The exports location is read once, and only if a closed table may need it.
      const catalog = await (this.catalog ??= ExportCatalog.load(this.exports));
      const exp = await catalog.find(table);
      if (exp) return new ExportItemSource(catalog.source, exp);
    }
    try {
      await this.client.send(new DescribeTableCommand({ TableName: table.name }));
    } catch (err) {
      if ((err as { name?: string }).name === 'ResourceNotFoundException') return null;
      throw err;
    }
    const { onThrottle } = this.scan;
    return new ScanItemSource({
      client: this.client, table: table.name, segments: this.scan.segments, maxRcu: this.scan.maxRcu ?? undefined,
      onThrottle: onThrottle && ((segment, attempt, waitMs) => onThrottle(table.name, segment, attempt, waitMs)),
    });
  }
}
