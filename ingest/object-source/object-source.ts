/** Where access-log objects come from: an S3 prefix or a local directory. */
import { NAME_STAMP, type ListPlan } from '../listing/listing-window.js';

export type { ListPlan };

export interface ObjectRef {
  /** Key relative to the source's root (S3 key, or path below the directory). */
  key: string;
  size: number;
  /** S3 ETag; for files, size and modification time. Identifies one version of the object. */
  etag: string;
}

export interface ObjectSource {
  /** `s3://bucket/prefix/` or the directory, for logs and manifests. */
  readonly url: string;
  /** Throws LocationError when the location cannot serve at all (checked before a run changes anything). */
  check(): Promise<void>;
  /** Every log object below the root. Streams: never holds the whole listing. */
  list(): AsyncIterable<ObjectRef>;
  /**
   * `planned`: `listPlanned` lists only what a plan reads (an S3 prefix); `whole`: it lists every
   * object at every run, and the plan says only which days' objects are wanted (a directory).
   */
  readonly listing: 'planned' | 'whole';
  /**
   * What a plan reads (listing-window.ts): the incremental window, the delivery days listed in full,
   * a shard's own slices; a `whole` source lists everything.
   */
  listPlanned(plan: ListPlan): AsyncIterable<ObjectRef>;
  /**
   * A source whose `listPlanned` names its objects without their sizes (a directory: a name and its
   * type come from reading the folder; size and modification time cost a stat a file, and a run needs
   * them only of the objects it reads): `listPlanned` gives `size` 0 and `etag` '' (the same at every
   * run, so a seal of a slice is of its keys), and `describe` gives the objects a run is to read their
   * size and etag, leaving out any that is no longer a regular file (passed over, with why). Absent: a
   * listing's refs are whole (S3's LIST returns them).
   */
  describe?(refs: ObjectRef[]): ObjectRef[];
  /** The object's bytes as stored (gzip or not), streamed. */
  open(ref: ObjectRef): Promise<AsyncIterable<Uint8Array>>;
  /** Whether the objects are files on this machine (`localFile` gives their paths), read in place by a parser: no fetch, no copy. */
  readonly local: boolean;
  /** Where the object is a local file: its path; null for a remote source. */
  localFile(ref: ObjectRef): string | null;
  /** A local source's folder, its real path (links resolved): each file read must lie under it. */
  localRoot?(): string;
  /**
   * The entries the listings passed over without listing them, with why (a directory's links and
   * special files: the first ones named, all of them counted); none for S3, which lists objects only.
   */
  passedOver(): { named: Array<{ key: string; reason: string }>; count: number };
}

/**
 * An object's bytes as stored, in a buffer of its own (it can move to a parsing thread without a
 * copy): filled as the stream comes when the listed size is right, which it nearly always is. The
 * buffer is not zeroed first (every byte handed on is one the stream wrote: a short object is cut to
 * what came): zeroing a day's 600 MB only to overwrite it cost 3% of an S3 run.
 */
export async function fetchObject(source: ObjectSource, ref: ObjectRef, maxBytes = Infinity): Promise<Uint8Array> {
  let out = ownBuffer(ref.size);
  let at = 0;
  for await (const c of await source.open(ref)) {
    if (at + c.length > maxBytes) throw new TooLong(`it holds more than the ${maxBytes} bytes pingroll reads whole (it was listed at ${ref.size})`, maxBytes);
    if (at + c.length > out.length) {
      const grown = ownBuffer(Math.max(at + c.length, out.length * 2));
      grown.set(out.subarray(0, at));
      out = grown;
    }
    out.set(c, at);
    at += c.length;
  }
  return at === out.length ? out : out.slice(0, at);
}

/** An object streamed more than the bytes its fetch may bring (`maxBytes`): it stopped there. */
export class TooLong extends Error {
  constructor(message: string, readonly maxBytes: number) {
    super(message);
  }
}

/** `n` bytes, not zeroed, in an ArrayBuffer of their own (not a slice of Node's shared pool: it can be transferred). */
function ownBuffer(n: number): Uint8Array {
  const b = Buffer.allocUnsafeSlow(n);
  return new Uint8Array(b.buffer, b.byteOffset, n);
}


/**
 * The UTC day in a log object's name (contract §2): delivery time for SimplePrefix
 * (`<prefix>YYYY-MM-DD-hh-mm-ss-<unique>`), and the `/YYYY/MM/DD/` of PartitionedPrefix. Null when the
 * name holds no date.
 */
export function dayInObjectName(key: string): string | null {
  const m = NAME_STAMP.exec(key.slice(key.lastIndexOf('/') + 1));
  if (m) return `${m[1]}-${m[2]}-${m[3]}`;
  const p = /(?:^|\/)(\d{4})\/(\d{2})\/(\d{2})\//.exec(key);
  return p ? `${p[1]}-${p[2]}-${p[3]}` : null;
}
