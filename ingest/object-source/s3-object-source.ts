import { GetObjectCommand, ListObjectsV2Command, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { checkBucket } from '../../lib/s3-bucket.js';
import type { ListPlan, ObjectRef, ObjectSource } from './object-source.js';
import { firstDateFolder, isAccountFolder, nameStamp } from '../listing/listing-window.js';
import { eventPrefix, ownedParts, ownedSlices, PARTITION_LATE_DAYS, partOf, partRange, reachOf, SLICE_MS, SLICE_PREFIX_CHARS, sliceOwner, type Shard } from '../listing/slices.js';
import { addDays, DAY_MS, dayName, dayStartMs } from '../../lib/utc-day.js';
import { LeanGet, sdkListPage, watch, type ListInput, type ListPage } from './s3-lean-get.js';
import { inOrderAhead } from '../../lib/in-order-ahead.js';

/** `YYYY/MM/DD`: a PartitionedPrefix date folder. */
function dateFolder(day: string): string {
  return day.replace(/-/g, '/');
}

/** What `discover` finds under a prefix: folders (relative, `` for the top) that hold SimplePrefix names, and PartitionedPrefix account folders. */
interface Layout { simple: string[]; accounts: string[] }

/** Folders below the prefix that discovery follows; deeper ones are listed whole. */
const MAX_DEPTH = 6;

/**
 * A plan's listings started at once (lib/in-order-ahead.ts): the one read and the next three, each
 * waiting at its first page. A listing's pages follow one another (each names the next), but the
 * window's and each delivery day's are apart: their round trips overlap, and at most four pages
 * (about 1 MB of answers) are held.
 */
export const LISTINGS_AHEAD = 4;

/** `YYYY-MM-DD-hh-m`: the key prefix of slice `n`'s objects (ingest/listing/slices.ts). */
function slicePrefix(n: number): string {
  return nameStamp(n * SLICE_MS).slice(0, SLICE_PREFIX_CHARS);
}

/** Slices a day. */
const DAY_SLICES = DAY_MS / SLICE_MS;

/**
 * One ListObjectsV2 listing's Prefix (and where it starts), relative to the source's prefix; for a
 * part of an event-time day, which part, and where its day's names start (`head`, ending in
 * `YYYY-MM-DD-00-00-00-`): the listing keeps that part's names only (ingest/listing/slices.ts, `partRange`).
 */
interface Range { prefix: string; startAfter?: string; part?: { head: string; part: number } }

/** The day of a date folder `.../YYYY/MM/DD/` (relative, ending in `/`), or null for another folder. */
function folderDay(folder: string): string | null {
  const m = /(?:^|\/)(\d{4})\/(\d{2})\/(\d{2})\/$/.exec(folder);
  return m ? `${m[1]}-${m[2]}-${m[3]}` : null;
}

/**
 * What a shard lists of slice `n` in `folder`: the slice's Prefix when it owns it, and, for a day's
 * 00:00 slice in that day's date folder, each part of the event-time names it owns (every name under
 * `YYYY-MM-DD-00-00-00-`, ingest/listing/slices.ts). The 00:00 slice's own listing then starts after the
 * parts' names (StartAfter `YYYY-MM-DD-00-00-00.`, `.` the character after `-`): its owner does not
 * list an event-time day. (The names it passes over, `YYYY-MM-DD-00-00-00.` itself and those before
 * that are not a part's, are strays: the folder's walk lists them, `strays`.)
 */
function shardRanges(folder: string, n: number, shard: Shard): Range[] {
  const out: Range[] = [];
  const day = dayName(Math.floor(n / DAY_SLICES));
  const parted = n % DAY_SLICES === 0 && folderDay(folder) === day;
  if (sliceOwner(n, shard.count) === shard.index) out.push({ prefix: folder + slicePrefix(n), ...(parted ? { startAfter: `${folder}${day}-00-00-00.` } : {}) });
  if (parted) out.push(...partRanges(folder, day, ownedParts(n, shard.index, shard.count)));
  return out;
}

/** The listings of `parts` of an event-time day in its date folder `folder`: a key range each (ingest/listing/slices.ts, `partRange`). */
function partRanges(folder: string, day: string, parts: readonly number[]): Range[] {
  const head = folder + eventPrefix(day);
  return parts.map((part) => {
    const r = partRange(part);
    // A part listed by its two digits' Prefix holds exactly what it lists; a range also reaches names
    // of the parts around it, which are passed over (`part`).
    const exact = r.startAfter === null && r.prefix.length === 2;
    return { prefix: head + r.prefix, ...(r.startAfter !== null ? { startAfter: head + r.startAfter } : {}), ...(exact ? {} : { part: { head, part } }) };
  });
}

/** Whether a shard walks the date folders of `day` for strays (ingest/listing/slices.ts, `reachOf`): the owner of the day's 00:00 slice. */
function walker(day: string, shard: Shard): boolean {
  return sliceOwner(dayStartMs(day) / SLICE_MS, shard.count) === shard.index;
}

/** The slices a shard lists something of from `fromMs` to `toMs`: those it owns, and each day's 00:00 slice (its parts). */
function shardSlices(fromMs: number, toMs: number, shard: Shard): number[] {
  const out = new Set(ownedSlices(fromMs, toMs, shard.index, shard.count));
  for (let d = Math.ceil(fromMs / DAY_MS); d * DAY_MS <= toMs; d++) out.add(d * DAY_SLICES);
  return [...out].sort((a, b) => a - b);
}

/**
 * An S3 source as plain data: the client's settings (credentials and region come from the
 * environment), bucket, prefix, and how objects are listed and read: `lean` (s3-lean-get.ts, the
 * default) or through the SDK's ListObjectsV2Command and GetObjectCommand (`PINGROLL_S3_GET=sdk`).
 */
export interface S3SourceSpec { client: S3ClientConfig; bucket: string; prefix: string; get?: 'lean' | 'sdk' }

/**
 * Log objects under `s3://bucket/prefix/`: listed page by page (ListObjectsV2 returns keys in order,
 * 1000 at a time, so the listing is never held whole), read as streams.
 */
export class S3ObjectSource implements ObjectSource {
  /** What a plan reads, never the whole history under the prefix. */
  readonly listing = 'planned';
  /** Fetched over the network. */
  readonly local = false;
  /** How to make this source again in another thread, when it was made from plain settings (`from`). */
  spec?: S3SourceSpec;

  /** The lean getter once the SDK's first request to the bucket showed the endpoint (`learnFrom`); null: the SDK lists and reads everything. */
  private lean: LeanGet | null | undefined;
  private learning: Promise<LeanGet | null | undefined> | undefined;

  /**
   * @param pageSize keys per ListObjectsV2 page (S3's own maximum is 1000).
   * @param get `lean` lists and reads objects with s3-lean-get.ts after the first request of each;
   *   `sdk` with ListObjectsV2Command and GetObjectCommand.
   */
  constructor(private readonly s3: S3Client, private readonly bucket: string, private readonly prefix: string,
    private readonly pageSize = 1000, get: 'lean' | 'sdk' = 'lean') {
    if (get === 'sdk') this.lean = null;
    // The lean getter learns the endpoint from the client's first request to the bucket: watched from now on.
    else watch(s3);
  }

  /** A source from plain settings, which a parsing thread can make again (`spec`). */
  static from(spec: S3SourceSpec): S3ObjectSource {
    const source = new S3ObjectSource(new S3Client(spec.client), spec.bucket, spec.prefix, 1000, spec.get);
    source.spec = spec;
    return source;
  }

  /**
   * The bucket answers (one HeadBucket, lib/s3-bucket.ts), once a process: a run checks its logs as it
   * makes its backends and again as it starts. The first HeadBucket shows the lean path the endpoint,
   * so that every listing and read after it is lean.
   */
  async check(): Promise<void> {
    if (this.checked) return;
    const head = (): Promise<void> => checkBucket(this.s3, this.bucket, this.url, 'PINGROLL_LOGS');
    if (this.lean === undefined && !this.learning) await this.learnFrom(LeanGet.learnRoot(this.s3, this.bucket, head));
    else await head();
    this.checked = true;
  }

  /** Whether `check` found the bucket answering. */
  private checked = false;

  /**
   * `learn` (an SDK request that shows the lean path the endpoint) as the source's learning: requests
   * that start meanwhile wait for it; its lean getter is the source's from then on (null: the SDK
   * reads everything), and a failed one leaves the next request to learn again.
   */
  private async learnFrom<T>(learn: Promise<{ lean: LeanGet | null; out: T }>): Promise<T> {
    const mine = learn.then((l) => l.lean, () => undefined);
    this.learning = mine;
    try {
      const { lean, out } = await learn;
      this.lean = lean;
      return out;
    } finally {
      if (this.learning === mine) this.learning = undefined;
    }
  }

  get url(): string {
    return `s3://${this.bucket}/${this.prefix}`;
  }

  /** Every log object under the prefix, page by page. */
  async *list(): AsyncIterable<ObjectRef> {
    yield* this.pages({ Prefix: this.prefix });
  }

  /**
   * What a plan reads (listing-window.ts), each key once: the keys of no delivery-time shape, found
   * by discovering the prefix's layout (`discover`); the incremental window; and each delivery day of
   * `plan.days`, what the window does not list of it. A shard lists only the slices it owns, each by
   * its prefix, so N shards list the plan once between them. The requests follow the window and the
   * days, not the history under the prefix.
   */
  async *listPlanned(plan: ListPlan): AsyncIterable<ObjectRef> {
    const layout: Layout = { simple: [], accounts: [] };
    yield* this.discover('', 0, layout);
    const buckets: string[] = [];
    for (const account of layout.accounts) for (const region of await this.folders(account)) buckets.push(...await this.folders(region));
    // The plan's listings, in the order they are read; each is one listing's pages or more (a
    // shard's ranges), and the next ones start while one is read (LISTINGS_AHEAD).
    const parts: Array<() => AsyncIterable<ObjectRef>> = [];
    const { sinceMs, shard } = plan;
    if (sinceMs !== null) {
      const stamp = nameStamp(sinceMs);
      const slices = shard ? shardSlices(sinceMs, plan.untilMs, shard) : [];
      for (const f of layout.simple) {
        if (shard) for (const n of slices) parts.push(() => this.ranges(shardRanges(f, n, shard)));
        else parts.push(() => this.named(this.pages({ Prefix: this.prefix + f, Delimiter: '/', StartAfter: this.prefix + f + stamp }), f));
      }
      const first = firstDateFolder(sinceMs);
      for (const b of buckets) {
        if (shard) {
          parts.push(() => this.bucketSlices(b, slices, shard));
          // The date folders one process lists whole before the window's first midnight: records of
          // their event days still arrive, all of them in parts (ingest/listing/slices.ts). Their ten-minute
          // slices are the window's to list, as for one process's delivery-time names.
          for (let day = first; dayStartMs(day) < sinceMs; day = addDays(day, 1)) {
            const n = dayStartMs(day) / SLICE_MS;
            parts.push(() => this.ranges(partRanges(`${b}${dateFolder(day)}/`, day, ownedParts(n, shard.index, shard.count))));
          }
        } else parts.push(() => this.pages({ Prefix: this.prefix + b, StartAfter: `${this.prefix}${b}${dateFolder(addDays(first, -1))}/~` }));
      }
    }
    for (const day of plan.days) {
      const before = sinceMs ?? Infinity;
      const start = dayStartMs(day);
      const slices = shard ? shardSlices(start, Math.min(start + DAY_MS, before) - 1, shard) : [];
      for (const f of layout.simple) {
        if (shard) for (const n of slices) parts.push(() => this.ranges(shardRanges(f, n, shard)));
        else parts.push(() => this.until(this.pages({ Prefix: `${this.prefix}${f}${day}-` }), sinceMs === null ? null : f + nameStamp(sinceMs)));
      }
      // A date folder the window lists whole is not listed again; a shard's window lists slices, not strays.
      const windowed = sinceMs !== null && day >= firstDateFolder(sinceMs);
      for (const b of buckets) {
        const folder = `${b}${dateFolder(day)}/`;
        if (shard) {
          if (walker(day, shard)) parts.push(() => this.strays(folder, day));
          if (!windowed) for (const n of slices) parts.push(() => this.ranges(shardRanges(folder, n, shard)));
        } else if (!windowed) parts.push(() => this.pages({ Prefix: this.prefix + folder }));
      }
    }
    yield* inOrderAhead(parts, LISTINGS_AHEAD);
  }

  /**
   * The layout under `folder` (relative): folders that hold SimplePrefix names (`YYYY-...`), and
   * PartitionedPrefix account folders (`123456789012/`); every other key found on the way is yielded
   * (a key of no delivery-time shape, which no window or day can hold). A run of names that start with
   * a year is passed over with one request a year (`StartAfter` `YYYY-~`), so that finding the layout
   * costs requests for the years and folders under the prefix, not for its objects. Folders are
   * followed MAX_DEPTH deep; below that a folder is listed whole.
   */
  private async *discover(folder: string, depth: number, layout: Layout): AsyncIterable<ObjectRef> {
    if (depth > MAX_DEPTH) {
      yield* this.pages({ Prefix: this.prefix + folder });
      return;
    }
    const base = this.prefix + folder;
    let startAfter: string | undefined;
    let token: string | undefined;
    for (;;) {
      const page = await this.listPage({ Prefix: base, Delimiter: '/', MaxKeys: this.pageSize, ...(token ? { ContinuationToken: token } : startAfter ? { StartAfter: startAfter } : {}) });
      // Keys and folders in key order; a year's run of names is jumped over from its first.
      const items = [...(page.Contents ?? []).map((o) => ({ key: o.Key ?? '', object: o })), ...(page.CommonPrefixes ?? []).map((p) => ({ key: p.Prefix ?? '', object: null }))]
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      let jump: string | null = null;
      for (const { key, object } of items) {
        const name = key.slice(base.length);
        const year = /^\d{4}-/.exec(name);
        if (year) {
          if (!layout.simple.includes(folder)) layout.simple.push(folder);
          jump = `${base}${year[0]}~`;
          break;
        }
        if (object === null) {
          if (isAccountFolder(folder + name)) layout.accounts.push(folder + name);
          else yield* this.discover(folder + name, depth + 1, layout);
        } else if (!key.endsWith('/')) {
          yield { key: key.slice(this.prefix.length), size: object.Size ?? 0, etag: (object.ETag ?? '').replace(/"/g, '') };
        }
      }
      if (jump !== null) {
        startAfter = jump;
        token = undefined;
        continue;
      }
      if (!page.IsTruncated) return;
      token = page.NextContinuationToken;
    }
  }

  /** The keys of a folder's listing that start with a year (`YYYY-`): the rest are found by `discover`. */
  private async *named(refs: AsyncIterable<ObjectRef>, folder: string): AsyncIterable<ObjectRef> {
    for await (const ref of refs) if (/^\d{4}-/.test(ref.key.slice(folder.length))) yield ref;
  }

  /** The keys of a listing before `stop` (relative); all of them with null. The listing stops there. */
  private async *until(refs: AsyncIterable<ObjectRef>, stop: string | null): AsyncIterable<ObjectRef> {
    for await (const ref of refs) {
      if (stop !== null && ref.key >= stop) return;
      yield ref;
    }
  }

  /** Slices of a PartitionedPrefix source bucket: each in the date folders that can hold it. */
  private async *bucketSlices(bucket: string, slices: number[], shard: Shard): AsyncIterable<ObjectRef> {
    for (const n of slices) {
      const day = Math.floor((n * SLICE_MS) / DAY_MS);
      for (let d = day - PARTITION_LATE_DAYS; d <= day; d++) yield* this.ranges(shardRanges(`${bucket}${dateFolder(dayName(d))}/`, n, shard));
    }
  }

  /**
   * The objects of each range (relative to the prefix), one listing each. A part's listing passes
   * over the names of the part before it holds (after its StartAfter, before the part's first), and
   * ends at the first name of a part after: no page past it is asked for.
   */
  private async *ranges(ranges: readonly Range[]): AsyncIterable<ObjectRef> {
    for (const r of ranges) {
      const refs = this.pages({ Prefix: this.prefix + r.prefix, ...(r.startAfter ? { StartAfter: this.prefix + r.startAfter } : {}) });
      if (!r.part) {
        yield* refs;
        continue;
      }
      const { head, part } = r.part;
      for await (const ref of refs) {
        const p = partOf(ref.key.slice(head.length));
        if (p > part) break;
        if (p === part) yield ref;
      }
    }
  }

  /**
   * A date folder's strays (ingest/listing/slices.ts, `reachOf`): the keys no slice's or part's listing of it
   * reaches. Found with the Delimiter `-`, a run of names at a time: a run that holds names a listing
   * reaches (`2026-`, `2026-11-`, `2026-11-01-`, `2026-11-01-13-`, of the folder's day and the
   * PARTITION_LATE_DAYS after it) is gone into; one that a listing reaches whole (`2026-11-01-13-2x-`,
   * `2026-11-01-00-00-00-`) is passed over; any other (`README-`, `2026-11-09-`) is listed whole.
   * About 6 requests for an event-time folder, 29 for a delivery-time one (one for each hour of its day), whatever it holds, and one for each page of strays.
   */
  private async *strays(folder: string, day: string): AsyncIterable<ObjectRef> {
    const runs = new Set<string>([`${day}-00-00-`]);
    for (let i = 0; i <= PARTITION_LATE_DAYS; i++) {
      const d = addDays(day, i);
      runs.add(`${d.slice(0, 5)}`).add(`${d.slice(0, 8)}`).add(`${d}-`);
      for (let h = 0; h < 24; h++) runs.add(`${d}-${String(h).padStart(2, '0')}-`);
    }
    const stray = (key: string): boolean => reachOf(key)?.stray === true;
    const walk = async function* (this: S3ObjectSource, run: string): AsyncIterable<ObjectRef> {
      let token: string | undefined;
      do {
        const page = await this.listPage({ Prefix: this.prefix + run, Delimiter: '-', ...(token !== undefined ? { ContinuationToken: token } : {}), MaxKeys: this.pageSize });
        for (const o of page.Contents ?? []) {
          const key = (o.Key ?? '').slice(this.prefix.length);
          if (key && !key.endsWith('/') && stray(key)) yield { key, size: o.Size ?? 0, etag: (o.ETag ?? '').replace(/"/g, '') };
        }
        for (const p of page.CommonPrefixes ?? []) {
          const next = (p.Prefix ?? '').slice(this.prefix.length);
          if (runs.has(next.slice(folder.length))) yield* walk.call(this, next);
          else if (stray(next)) for await (const ref of this.pages({ Prefix: this.prefix + next })) if (stray(ref.key)) yield ref;
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    };
    yield* walk.call(this, folder);
  }

  /** The sub-folders of a folder, relative to the prefix (ending in `/`). */
  private async folders(folder: string): Promise<string[]> {
    const found = new Set<string>();
    for await (const _ of this.pages({ Prefix: this.prefix + folder, Delimiter: '/' }, found));
    return [...found].sort();
  }

  /** The objects of a listing, page by page; folders it collapses are added to `folders` (relative to the prefix). */
  private async *pages(request: { Prefix: string; Delimiter?: string; StartAfter?: string }, folders?: Set<string>): AsyncIterable<ObjectRef> {
    let token: string | undefined;
    do {
      const page = await this.listPage({ ...request, ...(token !== undefined ? { ContinuationToken: token } : {}), MaxKeys: this.pageSize });
      for (const o of page.Contents ?? []) {
        if (!o.Key || o.Key.endsWith('/')) continue;
        yield { key: o.Key.slice(this.prefix.length), size: o.Size ?? 0, etag: (o.ETag ?? '').replace(/"/g, '') };
      }
      for (const p of page.CommonPrefixes ?? []) if (p.Prefix) folders?.add(p.Prefix.slice(this.prefix.length));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** No object is a local file. */
  localFile(_ref: ObjectRef): null {
    return null;
  }

  /** S3 lists objects only: nothing is passed over. */
  passedOver(): { named: Array<{ key: string; reason: string }>; count: number } {
    return { named: [], count: 0 };
  }

  /**
   * One ListObjectsV2 page: through the lean path (s3-lean-get.ts) once the endpoint is known, and the
   * first through the SDK, which shows it (reads that start meanwhile wait for it, as `open`'s do).
   */
  private listPage(input: ListInput): Promise<ListPage> {
    const sdk = async (): Promise<ListPage> => sdkListPage(await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, ...input })));
    return this.request((lean) => lean.list(input), sdk, () => LeanGet.learnRoot(this.s3, this.bucket, sdk));
  }

  open(ref: ObjectRef): Promise<AsyncIterable<Uint8Array>> {
    const key = this.prefix + ref.key;
    const sdk = async (): Promise<AsyncIterable<Uint8Array>> => (await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }))).Body as AsyncIterable<Uint8Array>;
    // With nothing learned yet (a source whose bucket was not checked nor listed), the first read goes
    // through the SDK, which shows the lean getter the endpoint.
    return this.request((lean) => lean.get(key), sdk, () => LeanGet.learn(this.s3, this.bucket, key));
  }

  /**
   * A request through the lean path once it is known (after the learning in flight, if any); through
   * the SDK (`sdk`) when it is not to be used; else the SDK's, watched to learn it (`learn`).
   */
  private async request<T>(lean: (l: LeanGet) => Promise<T>, sdk: () => Promise<T>, learn: () => Promise<{ lean: LeanGet | null; out: T }>): Promise<T> {
    if (this.lean === undefined && this.learning) this.lean = await this.learning;
    if (this.lean) return lean(this.lean);
    if (this.lean === null) return sdk();
    return this.learnFrom(learn());
  }
}
