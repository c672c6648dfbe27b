/**
 * DynamoDB export-to-S3 output as a source of items (contract §1b): under the exports location,
 * `AWSDynamoDB/<export id>/manifest-summary.json` (written when an export completes),
 * `manifest-files.json` (one JSON object per line, naming each data file) and `data/*.json.gz`
 * (DYNAMODB_JSON: one `{"Item": {...}}` per line). Reading an export costs no read capacity.
 */
import { createGunzip } from 'node:zlib';
import { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import type { ObjectSource } from '../object-source/object-source.js';
import type { Item } from './item-rules.js';
import type { ItemSource } from './item-source.js';
import type { ScanResult } from './table-scan.js';
import type { TablePart } from '../../state/ledger.js';
import { closedAt, type MonthlyTable } from './monthly-tables.js';

export interface TableExport {
  id: string;
  exportArn: string;
  exportTime: string;
  itemCount: number | null;
  /** Data files, relative to the exports location. */
  dataFiles: string[];
}

interface ManifestSummary {
  exportArn?: string;
  tableArn?: string;
  exportTime?: string;
  itemCount?: number;
  outputFormat?: string;
  exportType?: string;
  manifestFilesS3Key?: string;
}

async function readText(source: ObjectSource, key: string): Promise<string> {
  let text = '';
  for await (const c of await source.open({ key, size: 0, etag: '' })) text += Buffer.from(c).toString('utf8');
  return text;
}

/**
 * The completed exports under an exports location, their summaries read once (a location holds the
 * exports of every table: listing it per table would read the same objects again and again).
 */
export class ExportCatalog {
  private constructor(readonly source: ObjectSource, private readonly summaries: Array<{ key: string; summary: ManifestSummary }>) {}

  static async load(source: ObjectSource): Promise<ExportCatalog> {
    const summaries: Array<{ key: string; summary: ManifestSummary }> = [];
    for await (const ref of source.list()) {
      if (/(^|\/)AWSDynamoDB\/[^/]+\/manifest-summary\.json$/.test(ref.key)) {
        summaries.push({ key: ref.key, summary: JSON.parse(await readText(source, ref.key)) as ManifestSummary });
      }
    }
    return new ExportCatalog(source, summaries);
  }

  /**
   * The latest completed full DYNAMODB_JSON export of `table` taken after the table closed, or null:
   * only such an export holds every item the table will ever have. Exports are matched by the table
   * name at the end of their table ARN.
   */
  async find(table: MonthlyTable): Promise<TableExport | null> {
    const notBefore = closedAt(table);
    let best: { summary: ManifestSummary; key: string } | null = null;
    for (const { key, summary } of this.summaries) {
      if (!summary.tableArn?.endsWith(`:table/${table.name}`)) continue;
      if ((summary.outputFormat ?? 'DYNAMODB_JSON') !== 'DYNAMODB_JSON' || (summary.exportType ?? 'FULL_EXPORT') !== 'FULL_EXPORT') continue;
      const at = Date.parse(summary.exportTime ?? '');
      if (!(at >= notBefore)) continue;
      if (!best || Date.parse(best.summary.exportTime!) < at) best = { summary, key };
    }
    if (!best) return null;
    const base = best.key.slice(0, best.key.lastIndexOf('/') + 1);
    const root = base.slice(0, base.indexOf('AWSDynamoDB/'));
    const relative = (key: string): string => root + key.slice(key.indexOf('AWSDynamoDB/'));
    const filesKey = best.summary.manifestFilesS3Key ? relative(best.summary.manifestFilesS3Key) : `${base}manifest-files.json`;
    const dataFiles = (await readText(this.source, filesKey)).split('\n').filter((l) => l.trim())
      .map((l) => relative((JSON.parse(l) as { dataFileS3Key: string }).dataFileS3Key));
    return {
      id: base.split('/').at(-2)!, exportArn: best.summary.exportArn ?? '', exportTime: best.summary.exportTime!,
      itemCount: best.summary.itemCount ?? null, dataFiles,
    };
  }
}

/** A table's items from a completed export (of its data files, those numbered `only` when given: a shard's share): no read capacity. */
export class ExportItemSource implements ItemSource {
  constructor(private readonly source: ObjectSource, readonly exp: TableExport, private readonly only?: number[]) {}

  get part(): TablePart | null {
    return this.only ? { of: this.exp.dataFiles.length, parts: this.only } : null;
  }

  get exportArn(): string {
    return this.exp.exportArn;
  }

  get details(): Record<string, unknown> {
    return { export: this.exp.exportArn, exportTime: this.exp.exportTime, files: this.exp.dataFiles.length, ...(this.only ? { reading: this.only } : {}) };
  }

  async read(onItems: (items: Item[]) => void): Promise<ScanResult> {
    const files = this.only ?? this.exp.dataFiles.map((_, i) => i);
    const items = await readExport(this.source, this.exp, files, onItems);
    return { items, pages: files.length, consumedCapacity: 0, throttledRetries: 0 };
  }
}

/**
 * The items of an export's data files numbered `files`, in pages of up to 1000. Returns the number
 * of items read; when that is every file, it must be the manifest's count.
 */
async function readExport(source: ObjectSource, exp: TableExport, files: number[], onItems: (items: Item[]) => void): Promise<number> {
  let n = 0;
  for (const key of files.map((i) => exp.dataFiles[i]!)) {
    const body = Readable.from(await source.open({ key, size: 0, etag: '' }));
    const lines = createInterface({ input: key.endsWith('.gz') ? body.pipe(createGunzip()) : body, crlfDelay: Infinity });
    let page: Item[] = [];
    for await (const line of lines) {
      if (!line.trim()) continue;
      page.push((JSON.parse(line) as { Item: Item }).Item);
      if (page.length === 1000) {
        onItems(page);
        n += page.length;
        page = [];
      }
    }
    if (page.length) onItems(page);
    n += page.length;
  }
  if (exp.itemCount !== null && files.length === exp.dataFiles.length && n !== exp.itemCount) {
    throw new Error(`export ${exp.id} holds ${n} items where its manifest says ${exp.itemCount}; the export is incomplete or damaged`);
  }
  return n;
}
