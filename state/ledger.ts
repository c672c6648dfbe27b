/**
 * The ingest ledger: which log objects have been parsed, and where their pings were staged.
 *
 * Each ingest run that finds new objects writes one batch: its staged files first, then a commit
 * file `_state/batches/<batch>.json`. The commit file is the commit point: an object counts as
 * parsed only when a commit lists it, and only committed staged files are ever read. A crash before
 * the commit leaves files no commit names (ignored; the next run parses those objects again); a
 * crash after it leaves a complete batch. So every object is counted exactly once across runs.
 */
import type { Outcome, Source } from '../ingest/ping-record.js';
import type { ObjectStore } from './object-store/object-store.js';

export const BATCHES = '_state/batches/';
/** Staged pings and rejects, by day: `_staging/dt=<day>/<batch or scan>...`. */
export const STAGING = '_staging/';
/** DynamoDB table scans: `_state/scans/<table>/<scan>.json`. Only a table's latest scan counts. */
export const SCANS = '_state/scans/';

export type OutcomeCounts = Partial<Record<Outcome, number>>;

export interface StagedDay {
  /** Staged pings (Parquet files, one per part of the batch), or null when the batch had no ping of the day. */
  pings: string[] | null;
  pingCount: number;
  /** Rejected records of the day (JSON lines, gzip), or null. */
  rejects: string | null;
  /** Records of the day by source and outcome. */
  outcomes: Partial<Record<Source, OutcomeCounts>>;
  /** Indexes into the batch's `objects` (or `tables`) of inputs that held records of the day. */
  inputs: number[];
}

export interface InputObject {
  key: string;
  size: number;
  etag: string;
  records: number;
}

export interface BatchCommit {
  batch: string;
  committedAt: string;
  /** Log objects parsed by the batch. */
  objects: InputObject[];
  days: Record<string, StagedDay>;
}

/** One full scan of a legacy table, staged by day. A later scan of the table replaces it whole. */
export interface TableScanCommit {
  scan: string;
  table: string;
  /** YYYY-MM of the table. */
  month: string;
  scannedAt: string;
  /** Whether the table's month had ended more than a day before the scan: nothing more can arrive. */
  closed: boolean;
  items: number;
  pages: number;
  consumedCapacity: number;
  throttledRetries: number;
  /** The export read instead of scanning the table (no read capacity), if one was. */
  export?: string;
  days: Record<string, StagedDay>;
}

/** What a day's rollup reads from one batch or scan. */
export interface DayInput {
  id: string;
  staged: StagedDay;
  objects: InputObject[];
  table: { name: string; scan: string; items: number; consumedCapacity: number } | null;
}

export class Ledger {
  private constructor(readonly batches: BatchCommit[], private readonly parsed: Map<string, string>,
    private readonly scans: Map<string, TableScanCommit>) {}

  static async load(store: ObjectStore): Promise<Ledger> {
    const scans = new Map<string, TableScanCommit>();
    for (const key of (await store.list(SCANS)).filter((k) => k.endsWith('.json'))) {
      const body = await store.get(key);
      if (!body) continue;
      const scan = JSON.parse(body.toString('utf8')) as TableScanCommit;
      stagedAsLists(scan.days);
      const cur = scans.get(scan.table);
      if (!cur || cur.scan < scan.scan) scans.set(scan.table, scan);
    }
    const keys = (await store.list(BATCHES)).filter((k) => k.endsWith('.json'));
    const batches: BatchCommit[] = [];
    const parsed = new Map<string, string>();
    for (const key of keys) {
      const body = await store.get(key);
      if (!body) continue;
      const commit = JSON.parse(body.toString('utf8')) as BatchCommit;
      stagedAsLists(commit.days);
      batches.push(commit);
      for (const o of commit.objects) parsed.set(o.key, o.etag);
    }
    batches.sort((a, b) => a.batch.localeCompare(b.batch));
    return new Ledger(batches, parsed, scans);
  }

  /** The latest committed scan of a table, if any. */
  latestScan(table: string): TableScanCommit | undefined {
    return this.scans.get(table);
  }

  /** Everything staged for `day`: every S3 batch, and each table's latest scan. */
  inputsFor(day: string): DayInput[] {
    const out: DayInput[] = this.batches.flatMap((commit) => {
      const staged = commit.days[day];
      return staged ? [{ id: commit.batch, staged, objects: staged.inputs.map((i) => commit.objects[i]!).filter(Boolean), table: null }] : [];
    });
    for (const scan of [...this.scans.values()].sort((a, b) => a.table.localeCompare(b.table))) {
      const staged = scan.days[day];
      if (staged) out.push({ id: scan.scan, staged, objects: [], table: { name: scan.table, scan: scan.scan, items: scan.items, consumedCapacity: scan.consumedCapacity } });
    }
    return out;
  }

  async commitScan(store: ObjectStore, scan: TableScanCommit): Promise<void> {
    await store.put(`${SCANS}${scan.table}/${scan.scan}.json`, Buffer.from(JSON.stringify(scan)));
    this.scans.set(scan.table, scan);
  }

  /** Every staged file a commit names: every batch's, and each table's latest scan's (older scans are never read). */
  stagedKeys(): Set<string> {
    const keys = new Set<string>();
    const add = (days: Record<string, StagedDay>): void => {
      for (const d of Object.values(days)) {
        for (const k of d.pings ?? []) keys.add(k);
        if (d.rejects) keys.add(d.rejects);
      }
    };
    for (const b of this.batches) add(b.days);
    for (const s of this.scans.values()) add(s.days);
    return keys;
  }

  /** Whether a log object was parsed by a committed batch. Log objects are never rewritten. */
  hasParsed(key: string): boolean {
    return this.parsed.has(key);
  }

  async commit(store: ObjectStore, commit: BatchCommit): Promise<void> {
    await store.put(`${BATCHES}${commit.batch}.json`, Buffer.from(JSON.stringify(commit)));
    this.batches.push(commit);
    for (const o of commit.objects) this.parsed.set(o.key, o.etag);
  }
}

/** Commits written before staging came in parts name one Parquet file per day, not a list. */
function stagedAsLists(days: Record<string, StagedDay>): void {
  for (const d of Object.values(days)) {
    const pings = d.pings as string[] | string | null;
    if (typeof pings === 'string') d.pings = [pings];
  }
}
