/**
 * The ingest ledger: which log objects have been parsed, and where their pings were staged.
 *
 * Each ingest run that finds new objects writes one batch: an intent (`<batch>.json` in INTENTS),
 * its staged files under its staging folder (`stagingPrefix`), then a commit file (`<batch>.json` in
 * BATCHES; the folders are datasets/layout.ts's). The
 * commit file is the commit point: an object counts as parsed only when a commit lists it, and only
 * committed staged files are ever read. A crash before the commit leaves an intent with no commit:
 * the next run deletes that batch's staging and parses its objects again. So every object is counted
 * exactly once across runs.
 *
 * A run never reads the whole history, nor a whole day. Right after its commit, a batch is compacted
 * into two indexes, so that a run reads only the slices it lists and the days it rolls up:
 * - PARSED `<delivery day>/<batch>.<slices>.keys`: the keys the batch parsed on that day, a
 *   section a slice (ten minutes of delivery time, ingest/listing/slices.ts), sorted, gzip; the name says which
 *   slices the file holds (`putParsedFile`). Whether an object was parsed is asked of its slice only,
 *   read in ranges, so a process holds one slice's keys at a time, never a day's.
 * - DAYS `dt=<day>/<batch>.json`: what the batch staged for a day of records, with a count of
 *   its inputs; the inputs themselves are in `<batch>.objects.gz` beside it (JSON lines, gzip), read
 *   as a stream by whoever needs them (a day's manifest names those files; it does not copy them).
 * Then the intent and the commit file go. Each step is a whole-file write, done again whole by the next
 * run if a crash stopped it, so BATCHES holds only commits a crash left uncompacted.
 *
 * An output written before slices (format 1: one JSON list of keys per delivery day and batch, inputs
 * inline in the days index) is migrated once, by the first run that loads it (`migrate`).
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gunzipSync, gzip, gzipSync } from 'node:zlib';
import { removeUnder, type ObjectStore } from './object-store/object-store.js';
import { allEnded, STORE_CALLS_AT_ONCE } from '../lib/all-ended.js';
import { BATCHES, dayEntriesPrefix, DAYS, FORMAT_KEY, INTENTS, PARSED, SCANS, SEALS, stagingPrefix } from '../datasets/layout.js';

/** The ledger's layout version (written to FORMAT_KEY); an output without it is format 1 (`migrate`). */
export const FORMAT = 3;

/** The format an output's state is in: 1 without FORMAT_KEY. */
async function formatOf(store: ObjectStore): Promise<number> {
  const body = await store.get(FORMAT_KEY);
  return body ? Number((JSON.parse(body.toString('utf8')) as { format?: number }).format ?? 2) : 1;
}
/** Slices of parsed keys held in memory at once (a slice is ten minutes of delivery: ~115k keys at 16M objects a day). */
const PARSED_DAYS_CACHED = 16;
const PARSED_SLICES_CACHED = 64;

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Where records come from, and what became of each (contract §4); the ledger counts them, ingest decides them. */
export type Source = 's3' | 'dynamodb';
export type OutcomeCounts = { [outcome: string]: number };

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

/** One read of a legacy table, or of a part of it, staged by day. A later complete reading replaces it (`reading`). */
export interface TableScanCommit {
  scan: string;
  table: string;
  /** YYYY-MM of the table. */
  month: string;
  scannedAt: string;
  /** When the read was committed, by the machine's clock (ms): what orders a table's reads (`reading`). Absent in reads written before parts. */
  committedAt?: string;
  /** Whether the table's month had ended more than a day before the scan: nothing more can arrive. */
  closed: boolean;
  items: number;
  pages: number;
  consumedCapacity: number;
  throttledRetries: number;
  /** The export read instead of scanning the table (no read capacity), if one was. */
  export?: string;
  /**
   * The part of the table this read covers, when a sharded ingest divided it (`TablePart`); none
   * for a whole read.
   */
  part?: TablePart;
  days: Record<string, StagedDay>;
}

/**
 * A share of one table's read: of `of` parts (the Scan's TotalSegments, or the export's data files),
 * those numbered `parts`. Every item is in exactly one part of a given division, so reads of the same
 * division (same `of`, same export or none) cover the table exactly once between them, whenever each
 * was made.
 */
export interface TablePart {
  of: number;
  parts: number[];
}

/** What a day's rollup reads from one batch or scan. */
export interface DayInput {
  id: string;
  staged: StagedDay;
  /** How many log objects of the batch held records of the day. */
  objectCount: number;
  /** Where they are listed (JSON lines, gzip; `objectsOf` reads them), or null for a scan, a batch with none, or a commit not compacted yet. */
  objectsKey: string | null;
  /** SHA-256 of the list's bytes as stored (hex), or null. */
  objectsSha256: string | null;
  table: { name: string; scan: string; items: number; consumedCapacity: number; part?: TablePart } | null;
}

/** DAYS `dt=<day>/<batch>.json`: one batch's part of one day; its inputs are in `objectsKey`. */
interface DayEntry { batch: string; staged: StagedDay; objectCount: number; objectsKey: string | null; objectsSha256: string | null }

/** Format 1's days entry: the inputs inline. */
interface DayEntryV1 { batch: string; staged: StagedDay; objects: InputObject[] }

/** INTENTS `<id>.json`: the commit file that makes the staging under `stagingPrefix(id)` count. */
interface Intent { id: string; commit: string; at: string; owner?: string }

/** What tidying removed: staged files of dead batches and superseded scans. */
export interface Tidied { staged: number; compacted: number }

/**
 * What the ledger takes of the lister (ingest/listing/lister.ts, `LISTER_RULES`), which owns the
 * logs' naming: where a log object's parsed key is kept (its delivery day and slice), where a former
 * format kept it, and how to have every shard list in full once (keys changed owner in a migration).
 */
export interface ListerRules {
  sliceOf(key: string): { day: string; slice: string; part: number | null };
  /** Where the key was kept before it was in `now`'s slice; null: there. */
  formerSliceOf(key: string, now: { day: string; slice: string; part: number | null }): { day: string; slice: string } | null;
  forgetShardListings(store: ObjectStore): Promise<void>;
}

export class Ledger {
  /** Parsed keys by slice (`<day>/<slice>`), loaded as asked for, the least recently asked dropped past PARSED_SLICES_CACHED. */
  private readonly parsedSlices = new Map<string, Set<string>>();
  /** The parsed-index files of a day, as listed (and written) by this run, each with its header once read. */
  private readonly parsedDays = new Map<string, ParsedFile[]>();
  /** The keys of commits not compacted yet (no index has them): at most a few batches' worth. */
  private readonly pendingKeys = new Set<string>();
  /** Slices whose parsed keys this run read (each once, unless dropped from the cache): what a run's state reads follow. */
  slicesRead = 0;
  /** Days' index entries read so far; a compaction forgets the days it wrote. */
  private readonly dayEntries = new Map<string, Promise<DayEntry[]>>();

  private constructor(private readonly store: ObjectStore, private readonly rules: ListerRules, private readonly pending: BatchCommit[],
    private readonly scans: Map<string, TableScanCommit[]>, private readonly superseded: TableScanCommit[]) {
    for (const c of pending) for (const o of c.objects) this.pendingKeys.add(o.key);
  }

  /**
   * Reads the scans and any commit not yet compacted; nothing else until asked. Writes nothing, but
   * with `migrate` (a run that holds its lock) brings an output of an earlier format to this one first.
   */
  static async load(store: ObjectStore, rules: ListerRules, opts: { migrate?: boolean } = {}): Promise<Ledger> {
    if (opts.migrate) await migrate(store, rules);
    else if ((await formatOf(store)) < FORMAT && (await store.list(PARSED)).length + (await store.list(DAYS)).length > 0) {
      throw new Error(`the output ${store.url} keeps its state in an earlier format: run pingroll rollup (or make rollup) once, which brings it to this one, then this again`);
    }
    const scans = new Map<string, TableScanCommit[]>();
    for (const key of (await store.list(SCANS)).filter((k) => k.endsWith('.json'))) {
      const scan = await readJson<TableScanCommit>(store, key);
      if (!scan) continue;
      stagedAsLists(scan.days);
      scans.set(scan.table, [...(scans.get(scan.table) ?? []), scan]);
    }
    const superseded: TableScanCommit[] = [];
    for (const [table, reads] of scans) {
      const { current, old } = reading(reads);
      scans.set(table, reads.filter((r) => !old.includes(r)));
      if (current) superseded.push(...old);
    }
    const pending: BatchCommit[] = [];
    for (const key of (await store.list(BATCHES)).filter((k) => k.endsWith('.json'))) {
      const commit = await readJson<BatchCommit>(store, key);
      if (!commit) continue;
      stagedAsLists(commit.days);
      pending.push(commit);
    }
    pending.sort((a, b) => (a.batch < b.batch ? -1 : 1));
    return new Ledger(store, rules, pending, scans, superseded);
  }

  /** The reads that make a table's latest complete reading (one whole read, or one part of each of a division), if any. */
  tableReading(table: string): TableScanCommit[] | undefined {
    return reading(this.scans.get(table) ?? []).current;
  }

  /**
   * Whether nothing more can come of reading these parts of a table (all of it with none): each is
   * covered by a read made after the table closed, in the latest complete reading or in a read of the
   * same division.
   */
  tableClosed(table: string, part?: TablePart, exportArn?: string | null): boolean {
    const current = this.tableReading(table);
    if (current?.every((r) => r.closed)) return true;
    if (!part) return false;
    const same = (this.scans.get(table) ?? []).filter((r) => r.closed && r.part?.of === part.of && (r.export ?? null) === (exportArn ?? null));
    return part.parts.every((p) => same.some((r) => r.part!.parts.includes(p)));
  }

  /** Everything staged for `day`: every S3 batch, and each table's latest scan. Reads the day's own index only, never the inputs' lists. */
  async inputsFor(day: string): Promise<DayInput[]> {
    const out = new Map<string, DayInput>();
    for (const entry of await (this.dayEntries.get(day) ?? this.readDay(day))) {
      out.set(entry.batch, { id: entry.batch, staged: entry.staged, objectCount: entry.objectCount, objectsKey: entry.objectsKey, objectsSha256: entry.objectsSha256 ?? null, table: null });
    }
    for (const commit of this.pending) {
      // Not compacted yet (this run's own commit, compacted right after, or one a crash left for tidy).
      const staged = commit.days[day];
      if (staged) out.set(commit.batch, { id: commit.batch, staged, objectCount: staged.inputs.length, objectsKey: null, objectsSha256: null, table: null });
    }
    const batches = [...out.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
    for (const scan of [...this.scans.keys()].sort().flatMap((t) => this.tableReading(t) ?? [])) {
      const staged = scan.days[day];
      if (staged) batches.push({ id: scan.scan, staged, objectCount: 0, objectsKey: null, objectsSha256: null, table: { name: scan.table, scan: scan.scan, items: scan.items, consumedCapacity: scan.consumedCapacity, ...(scan.part ? { part: scan.part } : {}) } });
    }
    return batches;
  }

  /** The ids of the batches that staged records for `day`: its index listed, no entry read (`inputsFor` reads them). */
  async batchesFor(day: string): Promise<string[]> {
    const ids = new Set((await this.store.list(dayEntriesPrefix(day))).filter((k) => k.endsWith('.json')).map((k) => k.slice(k.lastIndexOf('/') + 1, -'.json'.length)));
    for (const commit of this.pending) if (commit.days[day]) ids.add(commit.batch);
    return [...ids].sort();
  }

  /** The log objects of one input of a day (`inputsFor`), read from its list: one batch's worth at a time. */
  async objectsOf(input: DayInput, day: string): Promise<InputObject[]> {
    const pending = this.pending.find((c) => c.batch === input.id);
    if (pending) return pending.days[day]?.inputs.map((i) => pending.objects[i]!) ?? [];
    if (input.objectsKey === null) return [];
    const body = await this.store.get(input.objectsKey);
    if (!body) throw new Error(`the list of batch ${input.id}'s inputs ${this.store.url}${input.objectsKey} is missing; ${await this.reparseHint(input.id)}`);
    const text = (await gunzipAsync(body)).toString('utf8');
    return text === '' ? [] : text.split('\n').map((l) => JSON.parse(l) as InputObject);
  }

  /** A day's compacted batch entries, read once a run (a backfill asks for a day before publishing it and while publishing it). */
  private readDay(day: string): Promise<DayEntry[]> {
    const read = (async () => {
      const entries: DayEntry[] = [];
      for (const key of await this.store.list(dayEntriesPrefix(day))) {
        if (!key.endsWith('.json')) continue;
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

  /**
   * Whether a log object was parsed by a committed batch (log objects are never rewritten). Reads its
   * slice's index once; for an event-time name that was in another slice before issue #53 made every
   * such name a part's (`formerSliceOf`: a unique part S3 does not write), that slice's too.
   */
  async hasParsed(key: string): Promise<boolean> {
    if (this.pendingKeys.has(key)) return true;
    const now = this.rules.sliceOf(key);
    if ((await this.parsedIn(now.day, now.slice)).has(key)) return true;
    const was = this.rules.formerSliceOf(key, now);
    return was !== null && (await this.parsedIn(was.day, was.slice)).has(key);
  }

  /**
   * What to do to parse a batch's log objects anew (its staging damaged or gone): remove what the
   * ledger keeps of it, then list its delivery days in full. An error path: it lists the parsed index.
   */
  async reparseHint(batch: string): Promise<string> {
    const days = [...new Set((await this.store.list(PARSED)).filter((k) => k.slice(k.lastIndexOf('/') + 1).startsWith(`${batch}.`)).map((k) => k.slice(PARSED.length, k.lastIndexOf('/'))))].sort();
    const reconcile = days.length ? `pingroll reconcile --from ${days[0]} --to ${days[days.length - 1]}` : 'pingroll reconcile over the delivery days of its log objects';
    return `delete ${DAYS}dt=*/${batch}.*, ${PARSED}*/${batch}.*.keys and ${SEALS}, then run ${reconcile}, which parses its log objects anew`;
  }

  /** The keys parsed in one slice, from the sections of its day's index files that hold it. */
  async parsedIn(day: string, slice: string): Promise<Set<string>> {
    const at = `${day}/${slice}`;
    let keys = this.parsedSlices.get(at);
    if (keys) {
      this.parsedSlices.delete(at);
      this.parsedSlices.set(at, keys);
      return keys;
    }
    keys = new Set();
    this.slicesRead++;
    const index = sliceIndex(slice);
    for (const file of await this.parsedFiles(day)) {
      if (!holdsSlice(file.key, index)) continue;
      for (const key of await readSection(this.store, file, slice)) keys.add(key);
    }
    this.parsedSlices.set(at, keys);
    if (this.parsedSlices.size > PARSED_SLICES_CACHED) this.parsedSlices.delete(this.parsedSlices.keys().next().value!);
    return keys;
  }

  /** A day's parsed-index files (names only: each says which slices it holds), listed once a run. */
  private async parsedFiles(day: string): Promise<ParsedFile[]> {
    let files = this.parsedDays.get(day);
    if (!files) {
      files = (await this.store.list(`${PARSED}${day}/`)).filter((k) => k.endsWith(PARSED_SUFFIX)).map((key) => ({ key, head: null }));
      this.parsedDays.set(day, files);
      if (this.parsedDays.size > PARSED_DAYS_CACHED) this.parsedDays.delete(this.parsedDays.keys().next().value!);
    }
    return files;
  }

  /**
   * Records that `id` is about to stage under `stagingPrefix(id)`, to be committed by writing `commit`.
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

  /** Folds every committed batch into the indexes, then lets go of its intent and its commit file. */
  async compact(): Promise<number> {
    let compacted = 0;
    while (this.pending.length) {
      const commit = this.pending[0]!;
      // The days' entries and the parsed keys are written side by side (each put a round trip on S3);
      // the commit file goes only after all of them are in place, so a crash in between compacts again.
      const writes = Object.entries(commit.days).map(([day, staged]) => () => this.writeDayEntry(day, commit.batch, staged, staged.inputs.map((i) => commit.objects[i]!)));
      await allEnded([...writes, () => this.writeParsed(commit.batch, commit.objects.map((o) => o.key))], STORE_CALLS_AT_ONCE);
      await this.store.delete(`${INTENTS}${commit.batch}.json`);
      await this.store.delete(batchKey(commit.batch));
      this.pending.shift();
      for (const o of commit.objects) this.pendingKeys.delete(o.key);
      compacted++;
    }
    return compacted;
  }

  /** A batch's part of a day: its inputs' list first, then the entry that names it. */
  private async writeDayEntry(day: string, batch: string, staged: StagedDay, objects: InputObject[]): Promise<void> {
    const list = await writeObjectList(this.store, day, batch, objects);
    const entry: DayEntry = { batch, staged: { ...staged, inputs: objects.map((_, i) => i) }, objectCount: objects.length, ...list };
    await this.store.put(`${dayEntriesPrefix(day)}${batch}.json`, Buffer.from(JSON.stringify(entry)));
    this.dayEntries.delete(day);
  }

  /** A batch's parsed keys: one file a delivery day, a section a slice. */
  private async writeParsed(batch: string, keys: string[]): Promise<void> {
    // A file a delivery day, put side by side.
    await allEnded([...byDaySlice(keys, this.rules)].map(([day, slices]) => async () => {
      const key = await putParsedFile(this.store, day, batch, slices);
      this.parsedDays.get(day)?.push({ key, head: null });
      for (const [slice, inSlice] of slices) {
        const cached = this.parsedSlices.get(`${day}/${slice}`);
        if (cached) for (const k of inSlice) cached.add(k);
      }
    }), STORE_CALLS_AT_ONCE);
  }

  /**
   * Drops `inputs`' part of `day`: for each batch in turn, its staged files of the day, then its entry
   * and list of inputs (`dayEntriesPrefix(day)`, `<batch>.*`). The adjustments stage asks for it once
   * the closes account the batches as too late (their day's staged data expired): nothing counts them
   * again, so an entry that a run killed in between leaves behind names files no one reads. The entries
   * this ledger read of the day before stay as they were read.
   */
  async dropDayInputs(day: string, inputs: readonly DayInput[]): Promise<void> {
    const entries = await this.store.list(dayEntriesPrefix(day));
    for (const input of inputs) {
      for (const key of stagedKeysOf(input)) await this.store.delete(key);
      for (const key of entries.filter((k) => k.startsWith(`${dayEntriesPrefix(day)}${input.id}.`))) await this.store.delete(key);
    }
  }

  /**
   * Drops everything the ledger keeps of `day` to count it again (retention, state/retention.ts):
   * every batch's staged files of the day (and their folders, where the store has folders), then the
   * day's entries. What was published is not the ledger's and stays. How many files went.
   */
  async dropExpiredDay(day: string): Promise<number> {
    let files = 0;
    for (const input of await this.inputsFor(day)) {
      const keys = stagedKeysOf(input);
      for (const key of keys) {
        await this.store.delete(key);
        files++;
      }
      for (const folder of new Set(keys.map((k) => k.slice(0, k.lastIndexOf('/') + 1)))) await this.store.prune(folder);
    }
    return files + (await removeUnder(this.store, dayEntriesPrefix(day)));
  }

  /** Drops the keys parsed on delivery day `day` (retention, once no day it can hold records of is counted again). How many files went. */
  async dropParsedDay(day: string): Promise<number> {
    const files = await removeUnder(this.store, `${PARSED}${day}/`);
    this.parsedDays.delete(day);
    for (const at of [...this.parsedSlices.keys()]) if (at.startsWith(`${day}/`)) this.parsedSlices.delete(at);
    return files;
  }

  /** Commits a table's read (or a part of it), then removes the reads a complete reading replaced (files and all). */
  async commitScan(scan: TableScanCommit): Promise<void> {
    await this.store.put(scanKey(scan), Buffer.from(JSON.stringify(scan)));
    await this.store.delete(`${INTENTS}${scan.scan}.json`);
    const { current, old } = reading([...(this.scans.get(scan.table) ?? []), scan]);
    this.scans.set(scan.table, [...(this.scans.get(scan.table) ?? []), scan].filter((r) => !old.includes(r)));
    if (current) this.superseded.push(...old);
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

/**
 * A table's latest complete reading among its reads, and the reads it makes useless. Reads are
 * grouped by division: a whole read is complete alone; reads of one division (same `of`, same export
 * or none) make a reading when some of them cover every part exactly once (two reads of one part
 * would count its items twice). In each division the reading is taken newest first: the newest reads
 * that do not overlap, or if those leave a part uncovered, the same from the reads before the newest,
 * and so on. The current reading is the complete one whose oldest read is the latest. Useless: every
 * read older than the current reading's oldest that is not in it (a read newer than that is kept: it
 * may belong to a reading still being made, by shards still running).
 */
export function reading(reads: TableScanCommit[]): { current: TableScanCommit[] | undefined; old: TableScanCommit[] } {
  const divisions = new Map<string, TableScanCommit[]>();
  for (const r of [...reads].sort((a, b) => (readTime(a) < readTime(b) ? 1 : -1))) {
    const key = r.part ? `${r.export ?? 'scan'} ${r.part.of}` : `whole ${r.scan}`;
    divisions.set(key, [...(divisions.get(key) ?? []), r]);
  }
  let current: TableScanCommit[] | undefined;
  for (const newestFirst of divisions.values()) {
    const picture = cover(newestFirst);
    if (picture && (!current || oldest(picture) > oldest(current))) current = picture;
  }
  if (!current) return { current, old: [] };
  const since = oldest(current);
  return { current, old: reads.filter((r) => !current!.includes(r) && readTime(r) < since) };
}

/** What orders a table's reads: when each was committed (its scan id breaks ties, and stands in for reads from before parts). */
function readTime(r: TableScanCommit): string {
  return `${r.committedAt ?? r.scannedAt} ${r.scan}`;
}

/** The newest reads of one division (newest first) that cover each of its parts exactly once, or none. */
function cover(newestFirst: TableScanCommit[]): TableScanCommit[] | undefined {
  const of = newestFirst[0]!.part?.of ?? 1;
  for (let start = 0; start < newestFirst.length; start++) {
    const covered = new Set<number>();
    const picked: TableScanCommit[] = [];
    for (const r of newestFirst.slice(start)) {
      const parts = r.part?.parts ?? [0];
      if (parts.some((p) => covered.has(p))) continue;
      for (const p of parts) covered.add(p);
      picked.push(r);
      if (covered.size === of) return picked;
    }
  }
  return undefined;
}

function oldest(reads: TableScanCommit[]): string {
  return reads.map(readTime).sort()[0]!;
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

/** A batch's inputs for a day as JSON lines, gzip, beside its days entry; nothing for none. */
async function writeObjectList(store: ObjectStore, day: string, batch: string, objects: InputObject[]): Promise<{ objectsKey: string | null; objectsSha256: string | null }> {
  if (objects.length === 0) return { objectsKey: null, objectsSha256: null };
  const objectsKey = `${dayEntriesPrefix(day)}${batch}.objects.gz`;
  const body = await gzipAsync(objects.map((o) => JSON.stringify({ key: o.key, size: o.size, etag: o.etag, records: o.records })).join('\n'));
  await store.put(objectsKey, body);
  return { objectsKey, objectsSha256: createHash('sha256').update(body).digest('hex') };
}

/**
 * A batch's parsed keys of one delivery day, in one file: PARSED `<day>/<batch>.<slices>.keys`,
 * where `<slices>` is a 256-bit map (64 hex digits) of the slices it holds, so that a reader knows
 * from the day's listing which files hold a slice. The file is a header (its length as 4 bytes,
 * big-endian, then JSON: each slice's offset and length) and a gzip section a slice (its keys, sorted,
 * one a line): a reader fetches the header and the sections it needs (ranged reads), never the day.
 * One file a day, not one a slice: a batch of a whole day wrote 144 files, 0.26 s on the job bench's
 * day against 3 files before slices.
 */
async function putParsedFile(store: ObjectStore, day: string, batch: string, slices: Map<string, string[]>): Promise<string> {
  const sections: Buffer[] = [];
  const where: Record<string, [number, number]> = {};
  // 256 bits, or 512 when the file holds parts of an event-time day (indexes 256 on: `sliceIndex`).
  const map = Buffer.alloc([...slices.keys()].some((slice) => sliceIndex(slice) >= 256) ? 64 : 32);
  let at = 0;
  for (const [slice, keys] of [...slices].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    // In this thread: 144 small sections through the thread pool cost a day's batch ~50 ms of waiting.
    const body = gzipSync(encodeKeys(keys.sort()));
    where[slice] = [at, body.length];
    at += body.length;
    sections.push(body);
    const i = sliceIndex(slice);
    map[i >> 3]! |= 1 << (i & 7);
  }
  const header = Buffer.from(JSON.stringify({ slices: where }));
  const head = Buffer.alloc(4);
  head.writeUInt32BE(header.length);
  const key = `${PARSED}${day}/${batch}.${map.toString('hex')}${PARSED_SUFFIX}`;
  // Offsets in the header count from the end of the header.
  await store.put(key, Buffer.concat([head, header, ...sections]));
  return key;
}

const PARSED_SUFFIX = '.keys';
/** Bytes read first from a parsed-index file: the header of a file of 144 slices is ~3.5 KB. */
const HEADER_READ = 8192;

/** A parsed-index file of a day, and its header once read (every slice of the file asks for it). */
interface ParsedFile {
  key: string;
  head: Promise<ParsedHead | null> | null;
}

/** A file's header: where its sections start, each slice's section, and its first bytes as read. */
interface ParsedHead { dataStart: number; slices: Record<string, [number, number]>; first: Buffer }

/** The keys of one slice's section of a parsed-index file: the header read once, then the section (from the first read, for a small file). */
async function readSection(store: ObjectStore, file: ParsedFile, slice: string): Promise<string[]> {
  file.head ??= readHead(store, file.key);
  const head = await file.head;
  const section = head?.slices[slice];
  if (!head || !section) return [];
  const start = head.dataStart + section[0], end = start + section[1];
  const body = end <= head.first.length ? head.first.subarray(start, end) : await store.getRange(file.key, start, end);
  return body ? decodeKeys(gunzipSync(body).toString('utf8')) : [];
}

async function readHead(store: ObjectStore, key: string): Promise<ParsedHead | null> {
  let first = await store.getRange(key, 0, HEADER_READ);
  if (!first || first.length < 4) return null;
  const length = first.readUInt32BE(0);
  if (first.length < 4 + length) first = (await store.getRange(key, 0, 4 + length)) ?? first;
  const { slices } = JSON.parse(first.subarray(4, 4 + length).toString('utf8')) as { slices: Record<string, [number, number]> };
  return { dataStart: 4 + length, slices, first };
}

/** A slice's place in a day's map: `hh-m0` is hh * 6 + m; an undated `uXX` is XX; a part `00-00-00-XX` of an event-time day, 256 + XX. */
function sliceIndex(slice: string): number {
  if (slice.startsWith('u')) return parseInt(slice.slice(1), 16);
  if (slice.length === PART_SLICE_CHARS) return 256 + parseInt(slice.slice(9), 16);
  return Number(slice.slice(0, 2)) * 6 + Number(slice[3]);
}

/** `00-00-00-XX`: a part's slice name (ingest/listing/slices.ts). */
const PART_SLICE_CHARS = 11;

/** Whether a parsed-index file's name says it holds the slice at `index` (its map: 64 hex digits, or 128 with parts). */
function holdsSlice(file: string, index: number): boolean {
  const m = PARSED_NAME.exec(file);
  if (!m || index >= m[1]!.length * 4) return false;
  return (parseInt(m[1]!.slice((index >> 3) * 2, (index >> 3) * 2 + 2), 16) & (1 << (index & 7))) !== 0;
}

/** A parsed-index file's name: its batch, then its map of slices. */
const PARSED_NAME = /\.((?:[0-9a-f]{64}){1,2})\.keys$/;

/** Keys grouped by delivery day, then slice. */
function byDaySlice(keys: string[], rules: ListerRules): Map<string, Map<string, string[]>> {
  const out = new Map<string, Map<string, string[]>>();
  for (const key of keys) {
    const { day, slice } = rules.sliceOf(key);
    let slices = out.get(day);
    if (!slices) out.set(day, (slices = new Map()));
    const list = slices.get(slice);
    if (list) list.push(key);
    else slices.set(slice, [key]);
  }
  return out;
}

/** Format 1's parsed keys, a JSON file a delivery day and batch: PARSED `<day>/<batch>.json`. */
const PARSED_V1 = new RegExp(String.raw`^${PARSED}[^/]+/[^/.]+\.json$`);
/** A days entry, DAYS `dt=<day>/<batch>.json`: its day and batch. */
const DAY_ENTRY = new RegExp(String.raw`^${DAYS}dt=([^/]+)/([^/]+)\.json$`);
/** A parsed-index file of 256 slices, PARSED `<day>/<batch>.<64 hex digits>.keys`: its day and batch. */
const PARSED_FILE = new RegExp(String.raw`^${PARSED}([^/]+)/([^/.]+)\.[0-9a-f]{64}\.keys$`);

/**
 * Brings an output of an earlier format to this one, once.
 *
 * Format 1 to slices: each PARSED `<day>/<batch>.json` becomes its days' sliced `.keys` files,
 * and each days entry with its inputs inline gets its `.objects.gz`. Listing states of shards are
 * dropped (shards own keys by slice now): each shard lists in full once.
 *
 * Format 2 to parts: format 2 kept an event-time day's names (`.../YYYY/MM/DD/YYYY-MM-DD-00-00-00-*`)
 * in its 00:00 slice, where this format keeps them in parts (ingest/listing/slices.ts). Each parsed-index file
 * that holds a 00:00 slice is read (one GET: at most a batch's keys), and rewritten by part when that
 * slice holds such names; every other file stays as it is (a delivery-time day's, but for the names
 * delivered at 00:00:00 exactly). The 00:00 slice's seal no longer matches what a listing sees of it,
 * so it is read once more and sealed anew; parts have no seal until a listing seals them.
 *
 * The new files are written before the old go, so a run killed midway leaves both and the next run
 * does it again (same names, same bytes); shards starting at once may both do it, to the same end (a
 * file another has rewritten is gone, and passed over). Reads the history of the indexes, once; every
 * later run reads one GET here.
 */
export async function migrate(store: ObjectStore, rules: ListerRules): Promise<boolean> {
  const format = await formatOf(store);
  if (format >= FORMAT) return false;
  let migrated = false;
  if (format < 2) {
    for (const file of await store.list(PARSED)) {
      if (!PARSED_V1.test(file)) continue;
      const entry = await readJson<{ batch: string; keys: string[] }>(store, file);
      if (entry) for (const [day, slices] of byDaySlice(entry.keys, rules)) await putParsedFile(store, day, entry.batch, slices);
      await store.delete(file);
      migrated = true;
    }
    for (const file of await store.list(DAYS)) {
      const m = DAY_ENTRY.exec(file);
      if (!m) continue;
      const old = await readJson<DayEntryV1 | DayEntry>(store, file);
      if (!old || !('objects' in old) || !Array.isArray(old.objects)) continue;
      const list = await writeObjectList(store, m[1]!, old.batch, old.objects);
      await store.put(file, Buffer.from(JSON.stringify({ batch: old.batch, staged: old.staged, objectCount: old.objects.length, ...list } satisfies DayEntry)));
      migrated = true;
    }
    if (migrated) await rules.forgetShardListings(store);
  }
  if (await splitEventTimeSlices(store, rules)) migrated = true;
  await store.put(FORMAT_KEY, Buffer.from(JSON.stringify({ format: FORMAT, since: new Date().toISOString() }) + '\n'));
  return migrated;
}

/** Format 2 to parts (`migrate`): rewrites the parsed-index files whose 00:00 slice holds event-time names; how many. */
async function splitEventTimeSlices(store: ObjectStore, rules: ListerRules): Promise<number> {
  let rewritten = 0;
  for (const file of await store.list(PARSED)) {
    const m = PARSED_FILE.exec(file);
    if (!m || !holdsSlice(file, 0)) continue;
    const body = await store.get(file);
    if (!body || body.length < 4) continue;
    const length = body.readUInt32BE(0);
    const { slices } = JSON.parse(body.subarray(4, 4 + length).toString('utf8')) as { slices: Record<string, [number, number]> };
    const keysOf = (slice: string): string[] => {
      const [at, n] = slices[slice]!;
      return decodeKeys(gunzipSync(body.subarray(4 + length + at, 4 + length + at + n)).toString('utf8'));
    };
    const midnight = slices['00-00'] ? keysOf('00-00') : [];
    if (!midnight.some((k) => rules.sliceOf(k).part !== null)) continue;
    const bySlice = new Map<string, string[]>();
    for (const slice of Object.keys(slices)) {
      for (const key of slice === '00-00' ? midnight : keysOf(slice)) {
        const s = slice === '00-00' ? rules.sliceOf(key).slice : slice;
        const list = bySlice.get(s);
        if (list) list.push(key);
        else bySlice.set(s, [key]);
      }
    }
    await putParsedFile(store, m[1]!, m[2]!, bySlice);
    await store.delete(file);
    rewritten++;
  }
  return rewritten;
}

/** The files an input staged of its day: its pings and its rejects. */
function stagedKeysOf(input: DayInput): string[] {
  return [...(input.staged.pings ?? []), ...(input.staged.rejects ? [input.staged.rejects] : [])];
}

/**
 * A parsed-key list as stored: sorted keys, one a line. A key holding a line break or starting with
 * `%` is written `%` + its percent-encoding, so that every key, whatever its bytes, reads back as it was.
 */
function encodeKeys(keys: readonly string[]): string {
  return keys.map((k) => (/[\n\r]/.test(k) || k.startsWith('%') ? `%${encodeURIComponent(k)}` : k)).join('\n');
}

function decodeKeys(text: string): string[] {
  if (text === '') return [];
  return text.split('\n').map((l) => (l.startsWith('%') ? decodeURIComponent(l.slice(1)) : l));
}
