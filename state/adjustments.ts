/**
 * The pieces of adjustments (contract §9): what the adjustments stage made of each day of a closed
 * month that late batches came for, kept until the month they are reported on is closed. A piece is
 * `<reported month>/<closed month>.<zone>/dt=<day>.parquet` in ADJUSTMENTS, with a record beside it
 * (`.json`: a digest of the pending batches it was made from, their ids, its rows). Written and
 * removed here only: the adjustments stage makes and removes pieces, and a close of the reported
 * month (jobs/stages/close.ts) clears them once its statement holds them.
 */
import { ADJUSTMENTS } from '../datasets/layout.js';
import { zoneSlug } from '../lib/time-zone.js';
import type { ObjectStore } from './object-store/object-store.js';

/** Which piece: the day of the closed month (in its zone) and the month it is reported on. */
export interface PieceOf { reported: string; month: string; tz: string; day: string }

/** What a piece's record says: the digest of the batches it was made from, their ids, its rows. */
export interface PieceRecord { sha256: string; batches: string[]; rows: number }

function pieceKey(p: PieceOf): string {
  return `${ADJUSTMENTS}${p.reported}/${p.month}.${zoneSlug(p.tz)}/dt=${p.day}`;
}

/** The pieces of adjustments, in ADJUSTMENTS of the store they were loaded with (RunState). */
export class Adjustments {
  constructor(private readonly store: ObjectStore) {}

  /** The digest of the batches a piece was made from, or null when it has not been made. */
  async digest(p: PieceOf): Promise<string | null> {
    const was = await this.store.get(`${pieceKey(p)}.json`);
    return was ? (JSON.parse(was.toString('utf8')) as { sha256: string }).sha256 : null;
  }

  /**
   * Puts a piece: the Parquet file `local` first, then its record, which says it is made. A run killed
   * in between leaves no record (or the one before), and the next run makes the piece again.
   */
  async put(p: PieceOf, local: string, record: PieceRecord): Promise<void> {
    await this.store.put(`${pieceKey(p)}.parquet`, { file: local });
    await this.store.put(`${pieceKey(p)}.json`, Buffer.from(JSON.stringify(record)));
  }

  /** Removes a piece that was made (its Parquet, then its record); whether there was one. */
  async remove(p: PieceOf): Promise<boolean> {
    if (!(await this.store.get(`${pieceKey(p)}.json`))) return false;
    await this.store.delete(`${pieceKey(p)}.parquet`);
    await this.store.delete(`${pieceKey(p)}.json`);
    return true;
  }

  /** The Parquet pieces reported on `month`: what its statement_adjustments are made of. */
  async files(month: string): Promise<string[]> {
    return (await this.store.list(`${ADJUSTMENTS}${month}/`)).filter((k) => k.endsWith('.parquet'));
  }

  /** Removes every piece reported on `month`: its close has frozen them in its statement. */
  async clear(month: string): Promise<void> {
    for (const key of await this.store.list(`${ADJUSTMENTS}${month}/`)) await this.store.delete(key);
  }

  /**
   * Removes the pieces of `month` closed in `tz` that are reported on `reported` (a reopen of `month`
   * counts every batch its days have now); how many files went.
   */
  async clearClosedMonth(reported: string, month: string, tz: string): Promise<number> {
    const stale = await this.store.list(`${ADJUSTMENTS}${reported}/${month}.${zoneSlug(tz)}/`);
    for (const key of stale) await this.store.delete(key);
    return stale.length;
  }
}
