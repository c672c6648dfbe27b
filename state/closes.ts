/**
 * Closed months (contract §9): which months are closed in which zone, at which version, and, for
 * each UTC day a close covers, which staged inputs its figures counted. A statement, once issued,
 * does not change: what arrives later for a closed day is an adjustment, reported on the first month
 * after it that is not closed, or `too_late` once the day's staged data has expired.
 *
 * `<month>.<zone>.json` in CLOSES, one file per (month, zone), made and rewritten here only. A close
 * or reopen writes it as part of a publication (`recordFile`, put by export/publish-journal.ts): a
 * close is in place whole, with its statement, or not at all. Two operations rewrite a record in place
 * later, changing no statement: retention marks its days expired (`recordExpired`), and the
 * adjustments stage accounts the batches it found too late (`recordTooLate`). So are the marks of
 * late days (LATE): `Closes.markLate`, `lateDays`, `clearLate`.
 *
 * The inputs of a covered day are accounted in exactly one place: `closed` (counted by the figures
 * the month was closed with), `reported[R]` (counted as adjustments on the closed statement of month
 * R), or `tooLate` (expired before they could be counted). A day's other S3 batches are pending:
 * the adjustments of the first month after it that is not closed (in the close's zone). Table reads
 * are never pending: the legacy tables are closed (read for the last time) before their month can
 * be. Only a UTC close freezes a day's daily rows (`freezing`); a zone's close freezes its statement
 * alone.
 */
import { CLOSES, LATE } from '../datasets/layout.js';
import { addMonths } from '../lib/utc-day.js';
import { UTC, utcDaysOfLocalMonth, zoneSlug } from '../lib/time-zone.js';
import { daysFrom } from '../lib/utc-day.js';
import type { DayInput } from './ledger.js';
import type { ObjectStore } from './object-store/object-store.js';

/** A close refused: days of the month are not complete (exit 5, naming them). */
export class CloseRefusedError extends Error {}

/** A close asked of a month that is closed, a reopen of one that is not, or of a month not over (exit 2). */
export class CloseUsageError extends Error {}

/** The mark of a day of a closed month that a batch staged records for since its adjustments were last made: empty. */
function lateKey(day: string): string {
  return `${LATE}dt=${day}`;
}

/** One version of a statement: when it was issued, why (a reopen), and what changed from the one before. */
export interface StatementVersion {
  version: number;
  closedAt: string;
  /** The reason a reopen gave; null for the first close. */
  reason: string | null;
  /** Per series, the figures that differ from the version before (a reopen). */
  changed?: Array<{ series_id: string; field: string; from: number | null; to: number | null }>;
  /** The code version that issued it (`pingroll --version`'s first line); absent from records written before it was kept. */
  codeVersion?: string;
}

export interface CoveredDay {
  /** The batches and table reads the figures counted. */
  closed: string[];
  /** Batches counted as adjustments on the closed statement of each month (`YYYY-MM`). */
  reported: Record<string, string[]>;
  /** Batches that arrived after the day's staged data expired: counted nowhere but the audit of late records (`too_late`). */
  tooLate: string[];
  /** When retention deleted what the day was counted from (state/retention.ts): a ping for it now is `too_late`. */
  expired?: string;
}

export interface Close {
  month: string;
  tz: string;
  version: number;
  closedAt: string;
  versions: StatementVersion[];
  days: Record<string, CoveredDay>;
}

export function closeKey(month: string, tz: string): string {
  return `${CLOSES}${month}.${zoneSlug(tz)}.json`;
}

/** A close's record, as a publication puts it (the publication journal writes it, last, with its statement). */
export function recordFile(c: Close): { key: string; body: Buffer } {
  return { key: closeKey(c.month, c.tz), body: Buffer.from(JSON.stringify(c, null, 2) + '\n') };
}

/**
 * Every close of the output, read once a run (a file a month and zone). What it records itself
 * (recordExpired, recordTooLate) it holds at once; a close published whole (jobs/stages/close.ts,
 * through the publication journal) is read again with `reload`. One object a run: every holder sees
 * the same closes.
 */
export class Closes {
  private constructor(private readonly store: ObjectStore, private all: Close[]) {}

  static async load(store: ObjectStore): Promise<Closes> {
    return new Closes(store, await readAll(store));
  }

  /** Marks `day` late: a batch is about to commit records for it, and a close covers it (state/batch-writer.ts, before the commit). */
  async markLate(day: string): Promise<void> {
    await this.store.put(lateKey(day), Buffer.alloc(0));
  }

  /** The days marked late, sorted: those whose adjustments are to be made again. */
  async lateDays(): Promise<string[]> {
    return (await this.store.list(LATE)).map((k) => k.slice(LATE.length).replace(/^dt=/, '')).sort();
  }

  /** Lets go of `day`'s mark: only once every piece of adjustments it asked for is made and published. */
  async clearLate(day: string): Promise<void> {
    await this.store.delete(lateKey(day));
  }

  /** Reads every close again (after a close or reopen was published). */
  async reload(): Promise<void> {
    this.all = await readAll(this.store);
  }

  list(): readonly Close[] {
    return this.all;
  }

  get(month: string, tz = UTC): Close | null {
    return this.all.find((c) => c.month === month && c.tz === tz) ?? null;
  }

  /**
   * The closes whose statements count UTC `day`, in any zone: what arrives for it later is an
   * adjustment on each (of the minutes that fall in its month).
   */
  covering(day: string): Close[] {
    return this.all.filter((c) => c.days[day] !== undefined);
  }

  /**
   * The close that freezes UTC `day`'s daily rows: its UTC month's, or none. Daily tables are UTC days
   * (contract §9): a zone's close freezes its statement, never a UTC day's rows, so a ping for a day
   * that no UTC close covers reaches the day's rows (the day goes `stale` and is published again).
   */
  freezing(day: string): Close | null {
    return this.all.find((c) => c.tz === UTC && c.days[day] !== undefined) ?? null;
  }

  /**
   * The close that keeps UTC `day` from being rolled up again: one under which its staged data expired
   * (retention: nothing is left to count it from), else the one that freezes it; null: none does.
   */
  holding(day: string): Close | null {
    return this.covering(day).find((c) => c.days[day]?.expired) ?? this.freezing(day);
  }

  /**
   * Marks `days` expired at `at` in every close that covers one of them, each record rewritten whole
   * in place. Retention does it after marking the days in EXPIRING and before deleting any of their
   * files: a ping that arrives for a day after this is `too_late`.
   */
  async recordExpired(days: ReadonlySet<string>, at: string): Promise<void> {
    for (const [i, c] of this.all.entries()) {
      if (!Object.keys(c.days).some((d) => days.has(d))) continue;
      const next: Close = { ...c, days: Object.fromEntries(Object.entries(c.days).map(([d, v]) => [d, days.has(d) ? { ...v, expired: at } : v])) };
      await this.store.put(closeKey(c.month, c.tz), recordFile(next).body);
      this.all[i] = next;
    }
  }

  /**
   * Accounts the batches `ids` of UTC `day` as `too_late` in every close that covers it, each record
   * rewritten whole in place. The adjustments stage does it after their records are kept as rejects
   * and before their staging goes: a run killed before this finds them pending again and keeps them
   * again (same keys).
   */
  async recordTooLate(day: string, ids: readonly string[]): Promise<void> {
    for (const c of this.covering(day)) {
      const next: Close = { ...c, days: { ...c.days, [day]: { ...c.days[day]!, tooLate: [...c.days[day]!.tooLate, ...ids] } } };
      await this.store.put(closeKey(c.month, c.tz), recordFile(next).body);
      this.all[this.all.indexOf(c)] = next;
    }
  }

  /** The first month after `month` that is not closed in `tz`: where its adjustments are reported. */
  reportedIn(month: string, tz: string): string {
    let m = addMonths(`${month}-01`, 1).slice(0, 7);
    while (this.get(m, tz)) m = addMonths(`${m}-01`, 1).slice(0, 7);
    return m;
  }
}

async function readAll(store: ObjectStore): Promise<Close[]> {
  const closes: Close[] = [];
  for (const key of await store.list(CLOSES)) {
    if (!key.endsWith('.json')) continue;
    const body = await store.get(key);
    if (body) closes.push(JSON.parse(body.toString('utf8')) as Close);
  }
  return closes.sort((a, b) => a.month.localeCompare(b.month) || a.tz.localeCompare(b.tz));
}

/** The UTC days a close of `month` in `tz` covers. */
export function coveredDays(month: string, tz: string): string[] {
  const { from, to } = utcDaysOfLocalMonth(month, tz);
  return daysFrom(from, to);
}

/** The ids a covered day's figures and earlier statements have counted, or given up on. */
export function accounted(d: CoveredDay): Set<string> {
  return new Set([...d.closed, ...Object.values(d.reported).flat(), ...d.tooLate]);
}

/** A covered day's pending inputs: the S3 batches staged for it that nothing has counted yet. */
export function pendingInputs(d: CoveredDay, inputs: readonly DayInput[]): DayInput[] {
  const done = accounted(d);
  return inputs.filter((i) => i.table === null && !done.has(i.id));
}
