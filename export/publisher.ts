/**
 * The publisher: puts what it is handed where readers find it, whole or not at all
 * (publish-journal.ts): a day's tables, rejects and manifest, and the warehouse's rows of them; a
 * day's state alone; a month. It rolls nothing up and reads no staged data: the jobs hand it files
 * made by a rollup engine (rollup/engine.ts) and a manifest made by `dayManifest`.
 */
import { dayManifestKey, dayRejectsKey, REJECTS_TAGS, UNSETTLED } from '../datasets/layout.js';
import type { Log } from '../lib/log.js';
import { UTC, zoneSlug } from '../lib/time-zone.js';
import type { ObjectStore } from '../state/object-store/object-store.js';
import type { OutputFile } from '../rollup/output-file.js';
import { TABLES } from '../rollup/rules.js';
import type { PartitionCatalog } from './catalog/glue-partitions.js';
import { dayRejects } from './day-rejects.js';
import { Manifests, type DayManifest } from './manifest.js';
import { publishWhole, recoverPublishes, type LoadWarehouse } from './publish-journal.js';
import { expireRejects } from './rejects-retention.js';
import type { Warehouse } from './warehouse/warehouse.js';

/** The marker of a day published not yet complete (provisional or incomplete), until the day is published complete. */
export function unsettledKey(day: string): string {
  return `${UNSETTLED}dt=${day}`;
}

export interface PublisherOptions {
  run: string;
  store: ObjectStore;
  warehouse: Warehouse | null;
  /** A local folder for what the publisher fetches (a killed publication's files, to load again). */
  workDir: string;
  log: Log;
  /** Called before anything of a day is replaced; throws when the run may no longer publish. */
  fence?: () => Promise<void>;
  /** Where each published day's partitions are registered (PINGROLL_GLUE_DATABASE); none without. */
  catalog?: PartitionCatalog | null;
}

/** A rolled-up day, as the publisher is handed it. */
export interface DayToPublish {
  day: string;
  /** Every table of the day as a local Parquet file (`daily_runs` among them). */
  outputs: OutputFile[];
  /** The rollup loaded the warehouse itself: it is not loaded again. */
  loaded: boolean;
  /** The day's rejects as one local gzip file; null: none (the old ones go). */
  rejects: { file: string; bytes: number } | null;
  manifest: DayManifest;
}

export class DayPublisher {
  /** Warehouse loads one at a time: one connection, one transaction at a time. */
  private warehouseQueue: Promise<unknown> = Promise.resolve();

  /** The days' manifests as published. */
  readonly manifests: Manifests;

  constructor(private readonly opts: PublisherOptions) {
    this.manifests = new Manifests(opts.store);
  }

  /** Loads a day into the warehouse, one load at a time; null without a warehouse. */
  private get loadWarehouse(): LoadWarehouse {
    const { warehouse } = this.opts;
    if (!warehouse) return null;
    return (day: string, files: OutputFile[]) => {
      // A load makes the tables it needs itself: the embedded warehouse in the same change (one copy
      // of its file, not two: 40 ms a run), Redshift once a run.
      const load = this.warehouseQueue.then(() => warehouse.loadDay(day, files));
      this.warehouseQueue = load.catch(() => {});
      return load;
    };
  }

  /** Completes the publication of days that runs killed while publishing left behind. */
  async recover(): Promise<string[]> {
    try {
      return await recoverPublishes(this.opts.store, this.loadWarehouse, this.opts.workDir, this.opts.log);
    } finally {
      this.manifests.forget();
    }
  }

  /** The day's rejects, from the staged rejects files `staged` and then `rolledUp`, as one local gzip file to publish with it (day-rejects.ts); null: none. */
  dayRejects(staged: readonly string[], dir: string, rolledUp: string | null): Promise<{ file: string; bytes: number } | null> {
    return dayRejects(this.opts.store, staged, dir, rolledUp);
  }

  /** Removes the rejects published more than `days` days before `now` (rejects-retention.ts); how many went. */
  expireRejects(days: number, now: Date): Promise<number> {
    return expireRejects(this.opts.store, days, now, this.opts.log);
  }

  /** Registers a published day's partitions again (a day skipped as unchanged, whose registration may have failed before); nothing without a catalog. */
  async registerPartitions(day: string): Promise<void> {
    await this.opts.catalog?.register([...TABLES, 'daily_runs'].map((table) => ({ table, dt: day })));
  }

  /**
   * Publishes a day whole: its tables, rejects and manifest (last), and its warehouse rows unless the
   * rollup loaded them. A day not yet complete is marked first, so that no crash can leave it
   * unmarked (and never settled); the mark goes once a publication says complete.
   */
  async publishDay(d: DayToPublish): Promise<void> {
    const { store, run } = this.opts;
    const complete = d.manifest.state === 'complete';
    if (!complete) await store.putMarker(unsettledKey(d.day));
    this.manifests.forget(d.day);
    try {
      await publishWhole(store, {
        run, day: d.day, tables: d.outputs,
        others: [{ key: dayRejectsKey(d.day), body: d.rejects && { file: d.rejects.file }, tags: REJECTS_TAGS }, { key: dayManifestKey(d.day), body: manifestBody(d.manifest) }],
      }, d.loaded ? null : this.loadWarehouse, this.opts.fence);
    } finally {
      // Read again from the store: a publication that failed may or may not have put the manifest in place.
      this.manifests.forget(d.day);
    }
    if (complete) await store.delete(unsettledKey(d.day));
    await this.opts.catalog?.register(d.outputs.map((o) => ({ table: o.table, dt: d.day })));
  }

  /** Publishes a day's state alone, its data unchanged: its `daily_runs` row and its manifest. */
  async publishState(day: string, runs: OutputFile, manifest: DayManifest): Promise<void> {
    const { store, run } = this.opts;
    // A state that is not complete (an object quarantined since) is marked first, as publishDay does.
    if (manifest.state !== 'complete') await store.putMarker(unsettledKey(day));
    this.manifests.forget(day);
    try {
      await publishWhole(store, { run, day, tables: [runs], others: [{ key: dayManifestKey(day), body: manifestBody(manifest) }] }, this.loadWarehouse, this.opts.fence);
    } finally {
      this.manifests.forget(day);
    }
    if (manifest.state === 'complete') await store.delete(unsettledKey(day));
  }

  /** The days published not yet complete, by their markers. */
  async unsettledDays(): Promise<string[]> {
    return (await this.opts.store.list(UNSETTLED)).map((key) => key.slice(UNSETTLED.length).replace(/^dt=/, ''));
  }

  /** Drops a day's marker (a day with no manifest: never published whole). */
  async forgetUnsettled(day: string): Promise<void> {
    await this.opts.store.delete(unsettledKey(day));
  }

  /**
   * Publishes a close (jobs/stages/close.ts) whole: its tables (the month's figures, its statements,
   * the adjustments it freezes), then the close records (`others`, the month's own last).
   */
  async publishClose(name: string, tables: OutputFile[], others: Array<{ key: string; body: Buffer }>): Promise<void> {
    const first = tables[0]!.key.match(/dt=(\d{4}-\d{2}-\d{2})/)![1]!;
    await publishWhole(this.opts.store, { run: this.opts.run, day: first, journal: `close=${name}`, tables, others }, this.loadWarehouse, this.opts.fence);
    await this.opts.catalog?.register(tables.map((t) => ({ table: t.table, dt: t.key.match(/dt=(\d{4}-\d{2}-\d{2})/)![1]! })));
  }

  /** Publishes the adjustments reported on a month's statement (`statement_adjustments`), replacing the month's. */
  async publishAdjustments(month: string, file: OutputFile): Promise<void> {
    const first = `${month}-01`;
    await publishWhole(this.opts.store, { run: this.opts.run, day: first, journal: `adjust=${month}`, tables: [file], others: [] }, this.loadWarehouse, this.opts.fence);
    await this.opts.catalog?.register([{ table: file.table, dt: first }]);
  }

  /**
   * Publishes a month (`monthly_series_stats`) whole like a day: its Parquet at
   * `monthly_series_stats/dt=<month>-01/`, and its rows in the warehouse, in one transaction (unless
   * the rollup loaded them: `loaded`).
   */
  async publishMonth(month: string, file: OutputFile, loaded = false): Promise<void> {
    const first = `${month}-01`;
    const journal = `month=${month}${file.zone && file.zone !== UTC ? `.${zoneSlug(file.zone)}` : ''}`;
    await publishWhole(this.opts.store, { run: this.opts.run, day: first, journal, tables: [file], others: [] }, loaded ? null : this.loadWarehouse, this.opts.fence);
    await this.opts.catalog?.register([{ table: file.table, dt: first }]);
  }
}

function manifestBody(manifest: DayManifest): Buffer {
  return Buffer.from(JSON.stringify(manifest, null, 2) + '\n');
}
