/**
 * The durable state a run loaded as its lock was taken, each piece behind its owner's whole
 * operations: the ledger, the quarantine, the closes (and their late days), the checks, the reopens,
 * the adjustments, the days' ping ids, what a day is rolled up from, retention and leftovers. The store is handed here
 * once; a job asks the owners, and never builds a key of the state itself (datasets/layout.ts).
 */
import { join } from 'node:path';
import { Adjustments } from './adjustments.js';
import { BatchWriter } from './batch-writer.js';
import { Checks } from './checks.js';
import { Closes } from './closes.js';
import { gatherDay, type DayInputs } from './day-inputs.js';
import { Ledger, type ListerRules } from './ledger.js';
import { PingIds } from './ping-ids.js';
import { removeLeftovers, type Leftovers } from './leftovers.js';
import type { ObjectStore } from './object-store/object-store.js';
import { Quarantine } from './quarantine.js';
import { Reopens } from './reopens.js';
import { doneExpiring, expireDays, type Expiring } from './retention.js';

export class RunState {
  readonly checks: Checks;
  readonly reopens: Reopens;
  readonly adjustments: Adjustments;
  /** The days' ping ids and the days the window made stale (contract §4). */
  readonly pingIds: PingIds;

  private constructor(
    /** Where state and outputs are kept (PINGROLL_OUTPUT). */
    readonly store: ObjectStore,
    readonly ledger: Ledger,
    readonly quarantine: Quarantine,
    /** The closed months: one object a run, which keeps itself as they are (closes.ts). */
    readonly closes: Closes,
    workDir: string | null,
  ) {
    this.checks = new Checks(store);
    this.reopens = new Reopens(store);
    this.adjustments = new Adjustments(store);
    this.pingIds = new PingIds(store, workDir === null ? null : join(workDir, 'ping-ids'));
  }

  /**
   * `migrate`: a ledger of an older format is migrated (a run that holds the lock); without, it is read
   * as it is (a dry run, status). `workDir`: the run's work folder, where it keeps the ping ids it
   * fetches (none: it fetches none).
   */
  static async load(store: ObjectStore, rules: ListerRules, opts: { migrate?: boolean; workDir?: string } = {}): Promise<RunState> {
    const ledger = await Ledger.load(store, rules, opts);
    return new RunState(store, ledger, await Quarantine.load(store), await Closes.load(store), opts.workDir ?? null);
  }

  /** What `day` is rolled up from, each staged file checked (and fetched into `fetchTo`, unless null): day-inputs.ts. */
  gatherDay(day: string, fetchTo: string | null): Promise<DayInputs> {
    return gatherDay(this.store, this.ledger, day, fetchTo);
  }

  /** Retention's first step (retention.ts): the days of closed months that old are expired; their marks stay until `doneExpiring`. */
  expireDays(ask: { today: string; retentionDays: number; lateDays: number; dedupeDays: number }): Promise<Expiring> {
    return expireDays(this.store, this.ledger, this.closes, this.pingIds, ask);
  }

  doneExpiring(days: readonly string[]): Promise<void> {
    return doneExpiring(this.store, days);
  }

  /** What dead runs left (leftovers.ts); `shard`: only that shard's own dead batches. */
  removeLeftovers(shard?: string): Promise<Leftovers> {
    return removeLeftovers(this.store, this.ledger, shard);
  }

  /** How this run stages and commits batches and table reads, `fence` before each commit; `owner`: the shard that writes them. */
  writer(fence: () => Promise<void>, owner?: string): BatchWriter {
    return new BatchWriter(this.store, this.ledger, fence, owner, this.closes);
  }
}
