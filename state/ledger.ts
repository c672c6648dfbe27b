/**
 * The ingest ledger: which log objects have been parsed, and where their pings were staged.
 *
 * Each ingest run that finds new objects writes one batch: an intent (`_state/intents/<batch>.json`),
 * its staged files under `_staging/<batch>/`, then a commit file `_state/batches/<batch>.json`. The
 * commit file is the commit point: an object counts as parsed only when a commit lists it, and only
 * committed staged files are ever read. A crash before the commit leaves an intent with no commit:
 * the next run deletes that batch's staging and parses its objects again. So every object is counted
 * exactly once across runs.
 *
 * A run never reads the whole history. Right after its commit, a batch is compacted into two indexes,
 * each split by day, so that a run reads only the days it works on:
 * - `_state/parsed/<delivery day>/<batch>.json`: the keys the batch parsed, by the day in the object's
 *   name (`undated/` when it has none). Whether an object was parsed is asked of its delivery day only.
 * - `_state/days/dt=<day>/<batch>.json`: what the batch staged for a day of records, and its inputs.
 *   A day's rollup reads its own folder.
 * Then the intent and the commit file go. Each step is a whole-file write, done again whole by the next
 * run if a crash stopped it, so `_state/batches/` holds only commits a crash left uncompacted.
 */
import type { Outcome, Source } from '../ingest/ping-record.js';
import { dayInObjectName } from '../ingest/object-source/object-source.js';
import type { ObjectStore } from './object-store/object-store.js';

/** Batch commits not compacted yet. */
export const BATCHES = '_state/batches/';
/** Keys parsed, by delivery day and batch. */
export const PARSED = '_state/parsed/';
/** What each batch staged for each day of records. */
export const DAYS = '_state/days/';
/** Staging under way: one file per batch or scan until it is committed (or found dead and removed). */
export const INTENTS = '_state/intents/';
/** Staged pings and rejects: `_staging/<batch or scan>/dt=<day>/...`. */
export const STAGING = '_staging/';
/** DynamoDB table scans: `_state/scans/<table>/<scan>.json`. Only a table's latest scan counts. */
export const SCANS = '_state/scans/';

/** Where a batch or scan stages its files. */
export function stagingPrefix(id: string): string {
  return `${STAGING}${id}/`;
}

/** The parsed index's folder for objects whose name holds no date. */
const UNDATED = 'undated';
/** Delivery days of parsed keys held in memory at once (a run's listing touches two or three). */
const PARSED_DAYS_CACHED = 16;

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

/** `_state/days/dt=<day>/<batch>.json`: one batch's part of one day (its `staged.inputs` index `objects`). */
interface DayEntry { batch: string; staged: StagedDay; objects: InputObject[] }

/** `_state/parsed/<delivery day>/<batch>.json`. */
interface ParsedEntry { batch: string; keys: string[] }

/** `_state/intents/<id>.json`: the commit file that makes the staging under `_staging/<id>/` count. */
interface Intent { id: string; commit: string; at: string; owner?: string }

/** What tidying removed: staged files of dead batches and superseded scans. */
export interface Tidied { staged: number; compacted: number }

export class Ledger {
  /** Parsed keys by delivery day, loaded as asked for, the least recently asked dropped past PARSED_DAYS_CACHED. */
  private readonly parsedDays = new Map<string, Set<string>>();
  /** The keys of commits not compacted yet (no index has them). */
  private readonly pendingKeys = new Set<string>();
  /** Days' index entries read so far; a compaction forgets the days it wrote. */
  private readonly dayEntries = new Map<string, Promise<DayEntry[]>>();

  private constructor(private readonly store: ObjectStore, private readonly pending: BatchCommit[],
    private readonly scans: Map<string, TableScanCommit>, private readonly superseded: TableScanCommit[]) {
    for (const c of pending) for (const o of c.objects) this.pendingKeys.add(o.key);
  }

  /** Reads the scans and any commit not yet compacted; nothing else until asked. Writes nothing. */
  static async load(store: ObjectStore): Promise<Ledger> {
    const scans = new Map<string, TableScanCommit>();
    const superseded: TableScanCommit[] = [];
    for (const key of (await store.list(SCANS)).filter((k) => k.endsWith('.json'))) {
      const scan = await readJson<TableScanCommit>(store, key);
      if (!scan) continue;
      stagedAsLists(scan.days);
      const cur = scans.get(scan.table);
      if (cur && cur.scan > scan.scan) superseded.push(scan);
      else {
        if (cur) superseded.push(cur);
        scans.set(scan.table, scan);
      }
    }
    const pending: BatchCommit[] = [];
    for (const key of (await store.list(BATCHES)).filter((k) => k.endsWith('.json'))) {
      const commit = await readJson<BatchCommit>(store, key);
      if (!commit) continue;
      stagedAsLists(commit.days);
      pending.push(commit);
    }
    pending.sort((a, b) => (a.batch < b.batch ? -1 : 1));
    return new Ledger(store, pending, scans, superseded);
  }

  /** The latest committed scan of a table, if any. */
  latestScan(table: string): TableScanCommit | undefined {
    return this.scans.get(table);
  }

  /** Everything staged for `day`: every S3 batch, and each table's latest scan. Reads the day's own index only. */
  async inputsFor(day: string): Promise<DayInput[]> {
    const out = new Map<string, DayInput>();
    const add = (id: string, staged: StagedDay, objects: InputObject[]): void => {
      out.set(id, { id, staged, objects: staged.inputs.map((i) => objects[i]!).filter(Boolean), table: null });
    };
    for (const entry of await (this.dayEntries.get(day) ?? this.readDay(day))) add(entry.batch, entry.staged, entry.objects);
    for (const commit of this.pending) if (commit.days[day]) add(commit.batch, commit.days[day], commit.objects);
    const batches = [...out.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
    for (const scan of [...this.scans.values()].sort((a, b) => a.table.localeCompare(b.table))) {
      const staged = scan.days[day];
      if (staged) batches.push({ id: scan.scan, staged, objects: [], table: { name: scan.table, scan: scan.scan, items: scan.items, consumedCapacity: scan.consumedCapacity } });
    }
    return batches;
  }

  /** A day's compacted batch entries, read once a run (a backfill asks for a day before publishing it and while publishing it). */
  private readDay(day: string): Promise<DayEntry[]> {
    const read = (async () => {
      const entries: DayEntry[] = [];
      for (const key of await this.store.list(`${DAYS}dt=${day}/`)) {
        const entry = await readJson<DayEntry>(this.store, key);
        if (!entry) continue;
        stagedAsLists({ [day]: entry.staged });
        entries.push(entry);
      }
      return entries;
    })();
    this.dayEntries.set(day, read);
    read.catch(() => this.dayEntries.delete(day));
    return read;
  }

  /** Whether a log object was parsed by a committed batch (log objects are never rewritten). Reads its delivery day's index once. */
  async hasParsed(key: string): Promise<boolean> {
    if (this.pendingKeys.has(key)) return true;
    return (await this.parsedOn(dayInObjectName(key) ?? UNDATED)).has(key);
  }

  private async parsedOn(day: string): Promise<Set<string>> {
    let keys = this.parsedDays.get(day);
    if (keys) {
      this.parsedDays.delete(day);
      this.parsedDays.set(day, keys);
      return keys;
    }
    keys = new Set();
    for (const file of await this.store.list(`${PARSED}${day}/`)) {
      for (const key of (await readJson<ParsedEntry>(this.store, file))?.keys ?? []) keys.add(key);
    }
    this.parsedDays.set(day, keys);
    if (this.parsedDays.size > PARSED_DAYS_CACHED) this.parsedDays.delete(this.parsedDays.keys().next().value!);
    return keys;
  }

  /**
   * Records that `id` is about to stage under `_staging/<id>/`, to be committed by writing `commit`.
   * `owner` names the shard of a sharded ingest that writes it (see `tidy`).
   */
  async intend(id: string, commit: string, owner?: string): Promise<void> {
    await this.store.put(`${INTENTS}${id}.json`, Buffer.from(JSON.stringify({ id, commit, at: new Date().toISOString(), ...(owner ? { owner } : {}) } satisfies Intent)));
  }

  /** The batch's commit point. Compact it next (`compact`); a crash in between leaves it for the next run's `tidy`. */
  async commit(commit: BatchCommit): Promise<void> {
    await this.store.put(batchKey(commit.batch), Buffer.from(JSON.stringify(commit)));
    this.pending.push(commit);
    for (const o of commit.objects) this.pendingKeys.add(o.key);
  }

  /** Folds every committed batch into the day indexes, then lets go of its intent and its commit file. */
  async compact(): Promise<number> {
    let compacted = 0;
    while (this.pending.length) {
      const commit = this.pending[0]!;
      for (const [day, staged] of Object.entries(commit.days)) {
        const objects = staged.inputs.map((i) => commit.objects[i]!);
        const entry: DayEntry = { batch: commit.batch, staged: { ...staged, inputs: objects.map((_, i) => i) }, objects };
        await this.store.put(`${DAYS}dt=${day}/${commit.batch}.json`, Buffer.from(JSON.stringify(entry)));
        this.dayEntries.delete(day);
      }
      const byDay = new Map<string, string[]>();
      for (const o of commit.objects) {
        const day = dayInObjectName(o.key) ?? UNDATED;
        const keys = byDay.get(day);
        if (keys) keys.push(o.key);
        else byDay.set(day, [o.key]);
      }
      for (const [day, keys] of byDay) {
        await this.store.put(`${PARSED}${day}/${commit.batch}.json`, Buffer.from(JSON.stringify({ batch: commit.batch, keys } satisfies ParsedEntry)));
        const cached = this.parsedDays.get(day);
        if (cached) for (const k of keys) cached.add(k);
      }
      await this.store.delete(`${INTENTS}${commit.batch}.json`);
      await this.store.delete(batchKey(commit.batch));
      this.pending.shift();
      for (const o of commit.objects) this.pendingKeys.delete(o.key);
      compacted++;
    }
    return compacted;
  }

  /** Commits a table's scan as its latest, then removes the scan it replaces (files and all). */
  async commitScan(scan: TableScanCommit): Promise<void> {
    await this.store.put(scanKey(scan), Buffer.from(JSON.stringify(scan)));
    await this.store.delete(`${INTENTS}${scan.scan}.json`);
    const previous = this.scans.get(scan.table);
    this.scans.set(scan.table, scan);
    if (previous) this.superseded.push(previous);
    await this.removeSuperseded();
  }

  /**
   * Repairs what a crash left (run holding the lock): compacts commits left uncompacted, removes the
   * staging of batches and scans that never committed, and scans replaced by a later one. A shard of a
   * sharded ingest (`shard`, holding its own lock) removes only its own dead batches: the other
   * shards' intents may be batches staging right now.
   */
  async tidy(shard?: string): Promise<Tidied> {
    const compacted = await this.compact();
    let staged = 0;
    for (const key of await this.store.list(INTENTS)) {
      const intent = await readJson<Intent>(this.store, key);
      if (shard !== undefined && intent?.owner !== shard) continue;
      if (intent && (await this.store.size(intent.commit)) !== null) {
        await this.store.delete(key); // committed; only the intent's removal was cut short
        continue;
      }
      const id = intent?.id ?? key.slice(INTENTS.length).replace(/\.json$/, '');
      for (const file of await this.store.list(stagingPrefix(id))) {
        await this.store.delete(file);
        staged++;
      }
      await this.store.delete(key);
    }
    if (shard === undefined) staged += await this.removeSuperseded();
    return { staged, compacted };
  }

  private async removeSuperseded(): Promise<number> {
    let removed = 0;
    while (this.superseded.length) {
      const old = this.superseded[0]!;
      for (const key of stagedFiles(old.days)) {
        await this.store.delete(key);
        removed++;
      }
      await this.store.delete(scanKey(old));
      this.superseded.shift();
    }
    return removed;
  }
}

export function batchKey(batch: string): string {
  return `${BATCHES}${batch}.json`;
}

function scanKey(scan: TableScanCommit): string {
  return scanCommitKey(scan.table, scan.scan);
}

/** Where a table's scan is committed. */
export function scanCommitKey(table: string, scan: string): string {
  return `${SCANS}${table}/${scan}.json`;
}

/** Every file a commit's days name. */
export function stagedFiles(days: Record<string, StagedDay>): string[] {
  return Object.values(days).flatMap((d) => [...(d.pings ?? []), ...(d.rejects ? [d.rejects] : [])]);
}

async function readJson<T>(store: ObjectStore, key: string): Promise<T | null> {
  const body = await store.get(key);
  return body ? (JSON.parse(body.toString('utf8')) as T) : null;
}

/** Commits written before staging came in parts name one Parquet file per day, not a list. */
function stagedAsLists(days: Record<string, StagedDay>): void {
  for (const d of Object.values(days)) {
    const pings = d.pings as string[] | string | null;
    if (typeof pings === 'string') d.pings = [pings];
  }
}
