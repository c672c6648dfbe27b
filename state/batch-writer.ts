/**
 * How new data becomes part of the ledger: one protocol for a batch of parsed log objects and for a
 * table's read. The intent first (should the run die before its commit, the next run removes the
 * staging it names: Ledger.tidy), then the staging, then the fence (the run still holds its lock),
 * the commit, and the batch folded into the day indexes (Ledger.compact). A commit that fails takes
 * its staging back at once, so that retries never pile it up.
 */
import { stagedFiles, type BatchCommit, type InputObject, type Ledger, type StagedDay, type TableScanCommit } from './ledger.js';
import type { ObjectStore } from './object-store/object-store.js';
import type { Closes } from './closes.js';

export class BatchWriter {
  /**
   * @param fence throws when the run may no longer commit (it lost its lock)
   * @param owner the shard of a sharded ingest that writes the batches (Ledger.tidy removes only its own)
   */
  constructor(private readonly store: ObjectStore, private readonly ledger: Ledger, private readonly fence: () => Promise<void>, private readonly owner?: string,
    private readonly closes?: Closes) {}

  /**
   * Days of closed months the batch staged records for are marked first (Closes.markLate), so
   * that their adjustments are made even if the run dies right after its commit; a batch that never
   * commits leaves a mark that finds nothing.
   */
  private async markLate(days: Record<string, StagedDay>): Promise<void> {
    for (const day of Object.keys(days)) if (this.closes?.covering(day).length) await this.closes.markLate(day);
  }

  /**
   * Begins a batch or a table's read (`id`), to be committed as `commitKey`: its intent is written,
   * and nothing of it may be staged before that resolves (the batch's last part is made meanwhile).
   */
  begin(id: string, commitKey: string): Promise<void> {
    return this.ledger.intend(id, commitKey, this.owner);
  }

  /** Commits a batch of parsed log objects whose staging (`days`) is done, then folds it into the indexes. */
  async commitBatch(batch: string, objects: InputObject[], days: Record<string, StagedDay>): Promise<BatchCommit> {
    const commit: BatchCommit = { batch, committedAt: new Date().toISOString(), objects, days };
    try {
      await this.markLate(days);
      await this.fence();
      await this.ledger.commit(commit);
    } catch (err) {
      // Uncommitted, the staged files are nobody's.
      for (const key of stagedFiles(days)) await this.store.delete(key).catch(() => {});
      throw err;
    }
    await this.ledger.compact();
    return commit;
  }

  /** Commits a table's read whose staging is done as the table's latest. */
  async commitScan(commit: TableScanCommit): Promise<TableScanCommit> {
    await this.fence();
    commit.committedAt = new Date().toISOString();
    await this.ledger.commitScan(commit);
    return commit;
  }
}
