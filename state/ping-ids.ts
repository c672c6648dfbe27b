/**
 * The ping-id window's state (contract §4, rollup/ping-window.ts): each rolled-up day's ping ids, a
 * Parquet file the day's manifest names, and the published days that another day's publication made
 * stale because ping ids they hold were counted otherwise since.
 *
 * A day's ping ids are put (`save`) before its manifest names them, under a name of the run's own:
 * a run killed before the manifest leaves a file no manifest names, which the day's next publication
 * removes (`keepOnly`). A stale mark is put before the publication that causes it, and removed once
 * the day is published again (`clearStale`): a run killed between the two leaves a mark, whose
 * rollup gives what the day would have anyway.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PING_IDS, WINDOW_STALE } from '../datasets/layout.js';
import { ClearingMap, keptUntilFailed } from '../lib/clearing-map.js';
import { addDays } from '../lib/utc-day.js';
import { zoneSlug } from '../lib/time-zone.js';
import type { ObjectStore } from './object-store/object-store.js';

/** Why a published day is stale: the day whose publication changed the counting of ping ids it holds. */
export interface WindowStaleMark { by: string; run: string; at: string; ids: number }

/**
 * A name no other put of the day's ping ids has had, even the same run's again: what is under a key
 * never changes, so a key names its content (the Redshift engine's window table keeps a day's rows by
 * the key they came from: rollup/engines/redshift/window-table.ts).
 */
function pingIdsKey(day: string, run: string): string {
  return `${PING_IDS}dt=${day}/${run}.${randomBytes(4).toString('hex')}.parquet`;
}

/**
 * Where the DuckDB engine keeps a day's ping ids as sorted keys (rollup/engines/duckdb/ping-keys.ts):
 * beside its ping-ids file, `.keys` for `.parquet`. Another engine keeps none.
 */
export function keysKeyOf(pingIdsKey: string): string {
  return pingIdsKey.replace(/\.parquet$/, '') + '.keys';
}

/** Which adjustments counted them: the closed day, its close's month and zone, and the month they are reported on (state/adjustments.ts PieceOf). */
export interface AdjustedOf { reported: string; month: string; tz: string; day: string }

const ADJUSTED = `${PING_IDS}adjusted/`;

function adjustedKey(p: AdjustedOf): string {
  return `${ADJUSTED}dt=${p.day}/${p.reported}.${p.month}.${zoneSlug(p.tz)}.parquet`;
}

/** A ping-ids file's name on this machine, when fetched: its key under PING_IDS, one name (`dt=2026-11-01_<run>.parquet`). */
function localName(key: string): string {
  return key.slice(PING_IDS.length).replace(/\//g, '_');
}

function staleKey(day: string): string {
  return `${WINDOW_STALE}dt=${day}.json`;
}

/** Ping-ids files whose sizes, and days whose adjusted ids, a run keeps at most (a day's rollup asks about the 2W + 1 days around it). */
const KEPT = 8_192;

export class PingIds {
  /**
   * What the run found of ping-ids files: each one's size, null when it is not there. Only the run
   * that holds the run lock (state/run-lock.ts) writes them, through this object, which drops what
   * it knew of each key it writes or deletes: a file's key names its content (pingIdsKey), and the
   * one key put again (adjustedKey) is dropped when it is. A month's backfill asked about each day's
   * files once for each day whose window holds it, 50-60 requests a file.
   */
  private readonly sizes = new ClearingMap<string, number | null>(KEPT);
  /** Each day's adjusted ping-ids files (`adjusted`) as the run found them, dropped when it writes them. */
  private readonly adjustedOf = new ClearingMap<string, Array<{ key: string; bytes: number }>>(KEPT);

  /**
   * The keys files the run fetched (`localKeys`), each key's file in `fetchDir`, fetched once a run:
   * a backfill's days one after another read the same days' keys (a day's window is the W days before
   * it), and each fetched all W of them again: on S3 a month's backfill at the busy day's volume
   * fetched 30 files of 1.1 GB for every day. A key names its content (pingIdsKey), so a fetched file
   * stays right until the run deletes the key. `near` bounds them to the days a day can read.
   */
  private readonly fetched = new Map<string, Promise<string>>();
  /** What `localKeys` fetched so far this run: files and bytes. */
  readonly fetches = { files: 0, bytes: 0 };

  /** `fetchDir`: where the run keeps the keys files it fetches (in its work folder); null: a run that fetches none (status, a dry run). */
  constructor(private readonly store: ObjectStore, private readonly fetchDir: string | null = null) {}

  private async sizeOf(key: string): Promise<number | null> {
    const known = this.sizes.get(key);
    if (known !== undefined) return known;
    const size = await this.store.size(key);
    this.sizes.set(key, size);
    return size;
  }

  /**
   * Puts a day's ping ids (a local file, given up) under a name of the run's own (pingIdsKey): the key
   * its manifest names; and their keys (`keys`: a local file, given up; null: none), beside it, first.
   */
  async save(day: string, run: string, file: string, keys: string | null = null): Promise<string> {
    const key = pingIdsKey(day, run);
    this.sizes.delete(key);
    this.sizes.delete(keysKeyOf(key));
    if (keys) {
      // The keys the next days of a backfill read, kept for them where they would be fetched to (a
      // link: no copy); a store on this machine is read in place.
      if (this.fetchDir !== null && this.store.localFile(keysKeyOf(key)) === null) {
        const local = await this.fetchPath(keysKeyOf(key));
        if (await link(keys, local).then(() => true, () => false)) this.fetched.set(keysKeyOf(key), Promise.resolve(local));
      }
      await this.store.put(keysKeyOf(key), { file: keys, move: true });
    }
    await this.store.put(key, { file, move: true });
    return key;
  }

  /** Where a fetched key's file goes: its name in the run's fetch folder. */
  private async fetchPath(key: string): Promise<string> {
    if (this.fetchDir === null) throw new Error(`ping ids are fetched only by a run (${key})`);
    await mkdir(this.fetchDir, { recursive: true });
    return join(this.fetchDir, localName(key));
  }

  /** Drops the fetched files of `keys` (deleted from the store, or out of reach: `near`). */
  private async unfetch(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      const got = this.fetched.get(key);
      if (!got) continue;
      this.fetched.delete(key);
      const local = await got.catch(() => null);
      if (local) await rm(local, { force: true });
    }
  }

  /**
   * The fetched keys files a rollup of `day` can read no more are removed: those of days more than `w`
   * days from it (a day's window reads the w before it and the closed days among the w after it).
   * Days are rolled up one at a time with the window (jobs/backfill.ts), so none of them is being read.
   */
  async near(day: string, w: number): Promise<void> {
    const from = addDays(day, -w), to = addDays(day, w);
    const dayOf = (key: string): string => /dt=(\d{4}-\d{2}-\d{2})\//.exec(key)?.[1] ?? '';
    await this.unfetch([...this.fetched.keys()].filter((key) => dayOf(key) < from || dayOf(key) > to));
  }

  /**
   * The keys kept beside a day's ping ids as a file on this machine: where the store keeps it, or
   * fetched once this run into its fetch folder; null: none were kept (an older version's day, or
   * another engine's).
   */
  async localKeys(key: string): Promise<string | null> {
    const keys = keysKeyOf(key);
    const size = await this.sizeOf(keys);
    if (size === null) return null;
    const at = this.store.localFile(keys);
    if (at) return at;
    // A fetch that failed is not kept: the next asks again.
    return keptUntilFailed(this.fetched, keys, async () => {
      const local = await this.fetchPath(keys);
      await this.store.download(keys, local);
      this.fetches.files++;
      this.fetches.bytes += size;
      return local;
    });
  }

  /** A day's ping ids as a file on this machine: where the store keeps it, or fetched into `dir`. */
  async local(key: string, dir: string): Promise<{ key: string; size: number; local: string }> {
    const size = await this.sizeOf(key);
    if (size === null) throw new Error(`the ping ids ${this.store.url}${key} are missing, though a day's manifest names them: roll that day up again (make backfill FROM=<day> TO=<day> FORCE=1)`);
    const at = this.store.localFile(key);
    if (at) return { key, size, local: at };
    const local = join(dir, localName(key));
    await this.store.download(key, local);
    return { key, size, local };
  }

  /** Whether a day's ping ids are still kept (retention removes them: `expire`). */
  async kept(key: string): Promise<boolean> {
    return (await this.sizeOf(key)) !== null;
  }

  /** Removes the day's ping-ids files but `keep` (the one its manifest names now) and its keys. */
  async keepOnly(day: string, keep: string | null): Promise<void> {
    const kept = keep === null ? [] : [keep, keysKeyOf(keep)];
    for (const key of await this.store.list(`${PING_IDS}dt=${day}/`)) {
      if (kept.includes(key)) continue;
      this.sizes.delete(key);
      await this.unfetch([key]);
      await this.store.delete(key);
    }
  }

  /** Retention's (state/retention.ts): the day's ping ids, its adjustments' too, once no day that can read them can be counted again; how many files went. */
  async expire(day: string): Promise<number> {
    let n = 0;
    this.adjustedOf.delete(day);
    for (const prefix of [`${PING_IDS}dt=${day}/`, `${ADJUSTED}dt=${day}/`]) {
      this.sizes.clear((key) => key.startsWith(prefix));
      await this.unfetch([...this.fetched.keys()].filter((key) => key.startsWith(prefix)));
      const keys = await this.store.list(prefix);
      for (const key of keys) await this.store.delete(key);
      await this.store.prune(prefix);
      n += keys.length;
    }
    return n;
  }

  /**
   * Puts the ping ids a closed day's adjustments count (a local file, given up; null: they count none,
   * and any put before goes), one file for each month they are reported on and each zone's close.
   * Kept past the close of the month they are reported on (they are counted for good then), until
   * retention: later days' windows read them (jobs/stages/window.ts).
   */
  async saveAdjusted(p: AdjustedOf, file: string | null): Promise<void> {
    this.adjustedOf.delete(p.day);
    this.sizes.delete(adjustedKey(p));
    if (file) await this.store.put(adjustedKey(p), { file, move: true });
    else await this.store.delete(adjustedKey(p));
  }

  /** The ping ids adjustments of `day` count, each file's key and size (none: no adjustment of it counted a ping with an id). */
  async adjusted(day: string): Promise<Array<{ key: string; bytes: number }>> {
    const known = this.adjustedOf.get(day);
    if (known) return [...known];
    const out: Array<{ key: string; bytes: number }> = [];
    for (const key of await this.store.list(`${ADJUSTED}dt=${day}/`)) {
      const bytes = key.endsWith('.parquet') ? await this.sizeOf(key) : null;
      if (bytes !== null) out.push({ key, bytes });
    }
    this.adjustedOf.set(day, out);
    return [...out];
  }

  /** A reopen of `month` in `tz` counts what was pending for it: the ping ids its adjustments reported on `reported` counted go. */
  async clearAdjusted(reported: string, month: string, tz: string): Promise<void> {
    const name = `/${reported}.${month}.${zoneSlug(tz)}.parquet`;
    this.adjustedOf.clear();
    this.sizes.clear((key) => key.startsWith(ADJUSTED));
    for (const key of await this.store.list(ADJUSTED)) if (key.endsWith(name)) await this.store.delete(key);
  }

  /** Marks a published day stale: ping ids it holds are counted otherwise since `mark.by` was published. */
  async markStale(day: string, mark: WindowStaleMark): Promise<void> {
    await this.store.put(staleKey(day), Buffer.from(JSON.stringify(mark) + '\n'));
  }

  /** Why the day is stale by the window; null: it is not. */
  async staleMark(day: string): Promise<WindowStaleMark | null> {
    const body = await this.store.get(staleKey(day));
    if (!body) return null;
    try {
      return JSON.parse(body.toString()) as WindowStaleMark;
    } catch {
      // A mark is never rewritten in place: a damaged one still says the day is stale.
      return { by: 'unknown', run: 'unknown', at: new Date(0).toISOString(), ids: 0 };
    }
  }

  /** The day was published again: no longer stale by the window. */
  async clearStale(day: string): Promise<void> {
    await this.store.delete(staleKey(day));
  }
}
