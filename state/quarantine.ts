/**
 * Log objects that could not be read (a corrupt or truncated gzip, a file that cannot be opened, an
 * object gone between list and get): QUARANTINE_KEY. One such object never stops the
 * pipeline: the batch goes on without it, the object is recorded here with its key, etag and reason,
 * and since no batch commits it, every later run tries it again, taking it in as soon as it reads.
 * Until then the runs exit 4 and the manifests of the days it may hold name it. An operator who knows
 * it is lost accepts it (`pingroll quarantine accept`): runs then skip it and exit 0, and the
 * manifests say it was accepted as lost.
 *
 * A shard of a sharded ingest keeps the objects it owns in its own file,
 * `<I>-of-<N>.json` in QUARANTINE_SHARDS, so that shards running at once never overwrite each
 * other's; loading reads them all, and the next run that holds the output alone (a rollup) folds them
 * into QUARANTINE_KEY.
 */
import { QUARANTINE_KEY, QUARANTINE_SHARDS } from '../datasets/layout.js';
import { addDays } from '../lib/utc-day.js';
import type { Ledger } from './ledger.js';
import type { ObjectStore } from './object-store/object-store.js';

/** Records are delivered up to two days late (more than that is rare, 0.001%): an object names its delivery day. */
const DAYS_LATE = 2;

export interface QuarantinedObject {
  key: string;
  etag: string;
  size: number;
  reason: string;
  firstFailedAt: string;
  lastFailedAt: string;
  attempts: number;
  /** The days its records may belong to (from the day in its name), or null: any day. */
  days: string[] | null;
  /** When an operator accepted it as lost; runs skip it from then on. */
  acceptedLostAt?: string;
}

/** The unreadable objects that may hold records of a day: still retried, and accepted as lost. */
export interface HeldObjects { quarantined: QuarantinedObject[]; acceptedLost: QuarantinedObject[] }

export class Quarantine {
  /** Whether anything changed since it was loaded (or saved): a run that changed nothing writes nothing. */
  changed = false;

  private constructor(private readonly store: ObjectStore, private readonly objects: Map<string, QuarantinedObject>, private readonly shardFiles: string[]) {}

  /**
   * Whether `save` has something to write: a change; or, for a run that holds the output alone,
   * shards' files to fold in (a shard leaves those to such a run).
   */
  mustSave(asShard: boolean): boolean {
    return this.changed || (!asShard && this.shardFiles.length > 0);
  }

  /**
   * An unreadable file (it is written whole, but disks fail) is started afresh rather than stopping
   * every run: its objects are retried anyway, since no batch commits them; only acceptances are lost.
   */
  static async load(store: ObjectStore): Promise<Quarantine> {
    const objects = new Map<string, QuarantinedObject>();
    const shardFiles = (await store.list(QUARANTINE_SHARDS)).filter((k) => k.endsWith('.json')).sort();
    for (const key of [QUARANTINE_KEY, ...shardFiles]) {
      // One object in two files (a shard tried one the main file has): the later failure, and any acceptance.
      for (const o of await readObjects(store, key)) {
        const was = objects.get(o.key);
        const later = !was || o.lastFailedAt > was.lastFailedAt ? o : was;
        const acceptedLostAt = was?.acceptedLostAt ?? o.acceptedLostAt;
        objects.set(o.key, acceptedLostAt ? { ...later, acceptedLostAt } : later);
      }
    }
    return new Quarantine(store, objects, shardFiles);
  }

  /**
   * Drops what a committed batch parsed (a run killed between its commit and the quarantine's save;
   * another shard's object), and saves the quarantine if anything changed: a shard its own file.
   */
  async settle(ledger: Pick<Ledger, 'hasParsed'>, shard?: { name: string; owns: (key: string) => boolean }): Promise<void> {
    for (const o of this.all()) if (await ledger.hasParsed(o.key)) this.parsed(o.key);
    if (this.mustSave(shard !== undefined)) await this.save(shard);
  }

  /**
   * Writes the quarantine. A run that holds the output alone writes QUARANTINE_KEY and
   * removes the shards' files it folded in; a shard (`shard`: its name and the keys it owns) writes
   * its own file, with the objects it owns.
   */
  async save(shard?: { name: string; owns: (key: string) => boolean }): Promise<void> {
    if (shard) {
      const objects = this.all().filter((o) => shard.owns(o.key));
      await this.store.put(`${QUARANTINE_SHARDS}${shard.name}.json`, Buffer.from(JSON.stringify({ objects }, null, 2) + '\n'));
    } else {
      await this.store.put(QUARANTINE_KEY, Buffer.from(JSON.stringify({ objects: this.all() }, null, 2) + '\n'));
      for (const key of this.shardFiles.splice(0)) await this.store.delete(key);
    }
    this.changed = false;
  }

  all(): QuarantinedObject[] {
    return [...this.objects.values()].sort((a, b) => a.key.localeCompare(b.key));
  }

  /** Objects still failing, not accepted as lost. */
  pending(): QuarantinedObject[] {
    return this.all().filter((o) => !o.acceptedLostAt);
  }

  isAcceptedLost(key: string): boolean {
    return Boolean(this.objects.get(key)?.acceptedLostAt);
  }

  /** An object failed to read (again). `day` is the day in its name, if any. */
  failed(ref: { key: string; etag: string; size: number }, reason: string, day: string | null, now = new Date()): void {
    const at = now.toISOString();
    const was = this.objects.get(ref.key);
    this.changed = true;
    this.objects.set(ref.key, {
      key: ref.key, etag: ref.etag, size: ref.size, reason, firstFailedAt: was?.firstFailedAt ?? at, lastFailedAt: at,
      attempts: (was?.attempts ?? 0) + 1, days: day ? Array.from({ length: DAYS_LATE + 1 }, (_, i) => addDays(day, i - DAYS_LATE)) : null,
    });
  }

  /** The object read at last (or was parsed by a committed batch): it leaves the quarantine. */
  parsed(key: string): boolean {
    const removed = this.objects.delete(key);
    this.changed ||= removed;
    return removed;
  }

  /** Accepts objects as lost: the one named, or every pending one with `key` null. Returns those accepted. */
  accept(key: string | null, now = new Date()): QuarantinedObject[] {
    const chosen = key === null ? this.pending() : [this.objects.get(key)].filter((o): o is QuarantinedObject => Boolean(o && !o.acceptedLostAt));
    for (const o of chosen) o.acceptedLostAt = now.toISOString();
    this.changed ||= chosen.length > 0;
    return chosen;
  }

  /** The objects that may hold records of `day`: still failing, and accepted as lost. */
  forDay(day: string): HeldObjects {
    const mayHold = this.all().filter((o) => o.days === null || o.days.includes(day));
    return { quarantined: mayHold.filter((o) => !o.acceptedLostAt), acceptedLost: mayHold.filter((o) => o.acceptedLostAt) };
  }
}

async function readObjects(store: ObjectStore, key: string): Promise<QuarantinedObject[]> {
  const body = await store.get(key);
  try {
    return body ? (JSON.parse(body.toString('utf8')) as { objects: QuarantinedObject[] }).objects ?? [] : [];
  } catch {
    return [];
  }
}
