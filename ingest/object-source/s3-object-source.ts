import { GetObjectCommand, ListObjectsV2Command, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { checkBucket } from '../../lib/s3-bucket.js';
import type { ObjectRef, ObjectSource } from './object-source.js';
import { isAccountFolder, partitionStartAfter, nameStamp, PARTITION_LATE_DAYS, type ListWindow } from './listing-window.js';
import { ownedSlices, SLICE_MS, SLICE_PREFIX_CHARS } from '../../state/slices.js';
import { DAY_MS, dayName } from '../../lib/utc-day.js';
import { LeanGet } from './s3-lean-get.js';

/** `YYYY-MM-DD-hh-m`: the key prefix of slice `n`'s objects (state/slices.ts). */
function slicePrefix(n: number): string {
  return nameStamp(n * SLICE_MS).slice(0, SLICE_PREFIX_CHARS);
}

/**
 * An S3 source as plain data: the client's settings (credentials and region come from the
 * environment), bucket, prefix, and how objects are read: `lean` (s3-lean-get.ts, the default) or
 * through the SDK's GetObjectCommand (`PINGROLL_S3_GET=sdk`).
 */
export interface S3SourceSpec { client: S3ClientConfig; bucket: string; prefix: string; get?: 'lean' | 'sdk' }

/**
 * Log objects under `s3://bucket/prefix/`: listed page by page (ListObjectsV2 returns keys in order,
 * 1000 at a time, so the listing is never held whole), read as streams.
 */
export class S3ObjectSource implements ObjectSource {
  /** How to make this source again in another thread, when it was made from plain settings (`from`). */
  spec?: S3SourceSpec;

  /** The lean getter once the SDK's first GetObject showed the endpoint; null: the SDK reads every object. */
  private lean: LeanGet | null | undefined;
  private learning: Promise<LeanGet | null | undefined> | undefined;

  /**
   * @param pageSize keys per ListObjectsV2 page (S3's own maximum is 1000).
   * @param get `lean` reads objects with s3-lean-get.ts after the first; `sdk` with GetObjectCommand.
   */
  constructor(private readonly s3: S3Client, private readonly bucket: string, private readonly prefix: string,
    private readonly pageSize = 1000, get: 'lean' | 'sdk' = 'lean') {
    if (get === 'sdk') this.lean = null;
  }

  /** A source from plain settings, which a parsing thread can make again (`spec`). */
  static from(spec: S3SourceSpec): S3ObjectSource {
    const source = new S3ObjectSource(new S3Client(spec.client), spec.bucket, spec.prefix, 1000, spec.get);
    source.spec = spec;
    return source;
  }

  check(): Promise<void> {
    return checkBucket(this.s3, this.bucket, this.url, 'PINGROLL_LOGS');
  }

  get url(): string {
    return `s3://${this.bucket}/${this.prefix}`;
  }

  /**
   * Every log object, or with a window only those that can be new (see listing-window.ts): the
   * SimplePrefix keys after the window's stamp, and each account folder's date folders from the
   * window's first one. The requests it takes follow the window, not how much history the prefix holds.
   */
  async *list(window?: ListWindow): AsyncIterable<ObjectRef> {
    if (!window) {
      yield* this.pages({ Prefix: this.prefix });
      return;
    }
    const stamp = nameStamp(window.sinceMs);
    const found = new Set<string>();
    // SimplePrefix keys after the stamp (with none seen at the top before, the top holds only
    // folders: all of them, in one request); folders collapse to one entry each.
    yield* this.pages({ Prefix: this.prefix, Delimiter: '/', ...(window.folders.includes('') ? { StartAfter: this.prefix + stamp } : {}) }, found);
    for (const folder of window.folders.filter((f) => f !== '')) {
      yield* this.pages({ Prefix: this.prefix + folder, Delimiter: '/', StartAfter: this.prefix + folder + stamp });
      found.delete(folder);
    }
    const startAfter = partitionStartAfter(window);
    yield* this.eachSourceBucket([...window.accounts, ...found], (bucket) => this.pages({ Prefix: this.prefix + bucket, StartAfter: this.prefix + bucket + startAfter }));
  }

  /**
   * A shard's own slices of the window (state/slices.ts), each by its prefix: `<folder>YYYY-MM-DD-hh-m`
   * in each folder that holds SimplePrefix names, and in each PartitionedPrefix source bucket's date
   * folders that can hold it (its delivery day and the PARTITION_LATE_DAYS before: the folder may be
   * the records' event day). Folders new since the last listing are found with one request that lists
   * the top's folders after the present's stamp (a new account folder, which sorts before it, is found
   * by the next full listing); a new folder of neither kind is listed whole.
   */
  async *listOwned(window: ListWindow, shard: { index: number; count: number }, untilMs: number): AsyncIterable<ObjectRef> {
    const found = new Set<string>();
    const slices = [...ownedSlices(window.sinceMs, untilMs, shard.index, shard.count)];
    yield* this.pages({ Prefix: this.prefix, Delimiter: '/', StartAfter: this.prefix + slicePrefix(Math.floor(untilMs / SLICE_MS) + 1) }, found);
    for (const folder of window.folders) {
      found.delete(folder);
      for (const n of slices) yield* this.pages({ Prefix: this.prefix + folder + slicePrefix(n) });
    }
    yield* this.eachSourceBucket([...window.accounts, ...found], (bucket) => this.bucketSlices(bucket, slices));
  }

  /** Slices of a PartitionedPrefix source bucket: each in the date folders that can hold it. */
  private async *bucketSlices(bucket: string, slices: number[]): AsyncIterable<ObjectRef> {
    for (const n of slices) {
      const day = Math.floor((n * SLICE_MS) / DAY_MS);
      for (let d = day - PARTITION_LATE_DAYS; d <= day; d++) yield* this.pages({ Prefix: `${this.prefix}${bucket}${dayName(d).replace(/-/g, '/')}/${slicePrefix(n)}` });
    }
  }

  /**
   * The listing of each PartitionedPrefix source bucket folder (`<account>/<region>/<bucket>/`) under
   * the account folders among `folders`, by `listBucket`. A folder of neither kind, new to the
   * listing, is listed whole: what it holds decides how the next listing goes.
   */
  private async *eachSourceBucket(folders: string[], listBucket: (bucket: string) => AsyncIterable<ObjectRef>): AsyncIterable<ObjectRef> {
    for (const folder of [...new Set(folders)].sort()) {
      if (!isAccountFolder(folder)) {
        yield* this.pages({ Prefix: this.prefix + folder });
        continue;
      }
      for (const region of await this.folders(folder)) {
        for (const bucket of await this.folders(region)) yield* listBucket(bucket);
      }
    }
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
      const page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, ...request, ContinuationToken: token, MaxKeys: this.pageSize }));
      for (const o of page.Contents ?? []) {
        if (!o.Key || o.Key.endsWith('/')) continue;
        yield { key: o.Key.slice(this.prefix.length), size: o.Size ?? 0, etag: (o.ETag ?? '').replace(/"/g, '') };
      }
      for (const p of page.CommonPrefixes ?? []) if (p.Prefix) folders?.add(p.Prefix.slice(this.prefix.length));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async open(ref: ObjectRef): Promise<AsyncIterable<Uint8Array>> {
    const key = this.prefix + ref.key;
    if (this.lean === undefined && this.learning) this.lean = await this.learning;
    if (this.lean) return this.lean.get(key);
    if (this.lean === null) {
      const r = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return r.Body as AsyncIterable<Uint8Array>;
    }
    // The first read goes through the SDK, which shows the lean getter the endpoint; reads that start
    // meanwhile wait for it (a failed first read leaves the next to learn again).
    const learned = LeanGet.learn(this.s3, this.bucket, key);
    const mine = learned.then((l) => l.lean, () => undefined);
    this.learning = mine;
    try {
      const { lean, body } = await learned;
      this.lean = lean;
      return body;
    } finally {
      if (this.learning === mine) this.learning = undefined;
    }
  }
}
