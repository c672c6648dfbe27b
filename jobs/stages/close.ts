/**
 * Closing a month (contract §9): its figures frozen as a statement, version 1, that never changes.
 * A reopen (`--reopen --reason`) rolls its days and figures up again from everything staged now and
 * issues the next version, with what changed and why. Published whole (export/publish-journal.ts):
 * the month's `monthly_series_stats` in its zone, its `monthly_statements` (every version, every
 * zone), the adjustments reported on it that the close freezes, and the close itself, last; a run
 * killed in between is completed by the next one.
 */
import type { Stage } from './stage.js';
import { join } from 'node:path';
import { localMonthMs, UTC, zoneSlug } from '../../lib/time-zone.js';
import { outputKey, type OutputFile } from '../../rollup/output-file.js';
import type { IssuedStatement, StatementAsk } from '../../rollup/engine.js';
import { CloseRefusedError, CloseUsageError, coveredDays, pendingInputs, recordFile, type Close, type CoveredDay, type StatementVersion } from '../../state/closes.js';

export { CloseRefusedError, CloseUsageError };
import { versionLine } from '../../infra/version.js';
import { dayStatus } from '../day-status.js';
import { adjustmentsFile, publishAdjustments } from './adjust.js';
import { rollupMonth } from './rollup.js';
import { dayThrough } from './day.js';
import { listedDays } from './ingest.js';

export interface CloseAsk { month: string; tz: string; reopen?: string | null; now?: Date }

export interface Closed { month: string; tz: string; version: number; closedAt: string; series: number; changed: number; adjustments: number }

export async function closeMonth(stage: Stage, ask: CloseAsk): Promise<Closed> {
  const { run } = stage;
  const { month, tz } = ask;
  const now = ask.now ?? new Date();
  const was = run.state.closes.get(month, tz);
  const where = `${month}${tz === UTC ? '' : ` (${tz})`}`;
  if (was && !ask.reopen) throw new CloseUsageError(`${where} is closed: version ${was.version}, issued ${was.closedAt}; a statement does not change: to issue the next version, pingroll close --month ${month}${tz === UTC ? '' : ` --tz ${tz}`} --reopen --reason "..."`);
  if (!was && ask.reopen) throw new CloseUsageError(`${where} is not closed: there is nothing to reopen; close it with pingroll close --month ${month}${tz === UTC ? '' : ` --tz ${tz}`}`);
  if (localMonthMs(month, tz).endMs > now.getTime()) throw new CloseUsageError(`${where} is not over yet: a month is closed once its last day has ended`);
  const days = coveredDays(month, tz);
  const expired = days.filter((d) => was?.days[d]?.expired);
  if (expired.length) throw new CloseUsageError(`${where} cannot be reopened: what its days ${expired[0]}${expired.length > 1 ? ` to ${expired.at(-1)}` : ''} were counted from expired (PINGROLL_RETENTION_DAYS); its statement stays version ${was!.version}`);
  // The days to be complete: those no other close holds (a UTC month's close freezes its days: they
  // are final). A zone's close freezes its statement, never a UTC day's rows (contract §9).
  const checked = days.filter((d) => { const h = run.state.closes.holding(d); return h === null || h === was; });
  // The days a reopen rolls up again: exactly those whose rows this close freezes (a UTC close's own days).
  const frozen = days.filter((d) => was !== null && run.state.closes.freezing(d) === was);
  const listed = await listedDays(stage);
  const notReady: string[] = [];
  for (const day of checked) {
    const s = await dayStatus({ state: run.state, listed, manifests: run.publisher.manifests }, day, now);
    // A reopen rolls its days up again: what arrived since is welcome; what cannot be complete is not.
    const ok = s.state === 'complete' || (ask.reopen && (s.state === 'closed' || s.state === 'stale') && s.blocker === null);
    if (!ok) notReady.push(`${day} (${s.state}: ${s.blocker ?? s.reason})`);
  }
  if (notReady.length) {
    throw new CloseRefusedError(`${where} cannot be closed: not every day is complete: ${notReady.slice(0, 5).join('; ')}${notReady.length > 5 ? `; and ${notReady.length - 5} more` : ''}; see pingroll status`);
  }
  if (ask.reopen) {
    // Said first: a run killed while the days are published again (before the new version is) is
    // completed by the next run that holds the lock (resumeReopens), with the same reason.
    await run.state.reopens.begin({ month, tz, reason: ask.reopen, from: was!.version, at: now.toISOString() });
    // The days it froze again, from everything staged now, through the one rule (day.ts): a day
    // nothing arrived for since stays as published.
    for (const day of frozen) await dayThrough(stage, day, { ingest: { scanned: [], missingTables: [], listed } });
  }
  const closedAt = now.toISOString();
  const version = (was?.version ?? 0) + 1;
  return run.work.withFolder(`close-${month}`, async (dir) => {
    const monthly = (await rollupMonth(stage, dir, month, tz)).file;
    const { file: statement, changed } = await issueStatement(stage, { month, tz, version, closedAt, monthly, dir });
    // Each day's inputs as the figures counted them.
    const covered: Record<string, CoveredDay> = {};
    for (const day of days) {
      const ids = (await run.state.ledger.inputsFor(day)).map((i) => i.id);
      covered[day] = was?.days[day] ? { ...was.days[day]!, closed: ids.filter((id) => !Object.values(was.days[day]!.reported).flat().includes(id) && !was.days[day]!.tooLate.includes(id)) } : { closed: ids, reported: {}, tooLate: [] };
    }
    const close: Close = {
      month, tz, version, closedAt, days: covered,
      versions: [...(was?.versions ?? []), { version, closedAt, reason: ask.reopen ?? null, codeVersion: versionLine(), ...(was ? { changed } : {}) } satisfies StatementVersion],
    };
    // The adjustments reported on this month are frozen with it: each earlier close's pending batches, now reported here.
    const adjusted: Close[] = [];
    const tables: OutputFile[] = [monthly, statement];
    if (!was) {
      for (const earlier of run.state.closes.list()) {
        if (earlier.tz !== tz || earlier.month >= month || run.state.closes.reportedIn(earlier.month, tz) !== month) continue;
        const next: Close = { ...earlier, days: { ...earlier.days } };
        let any = false;
        for (const [day, d] of Object.entries(earlier.days)) {
          const pending = pendingInputs(d, await run.state.ledger.inputsFor(day)).map((i) => i.id);
          if (pending.length) {
            next.days[day] = { ...d, reported: { ...d.reported, [month]: pending } };
            any = true;
          }
        }
        if (any) adjusted.push(next);
      }
      tables.push(await adjustmentsFile(stage, { month, dir }));
    }
    await run.publisher.publishClose(`${month}.${zoneSlug(tz)}`, tables, [...adjusted.map((c) => recordFile(c)), recordFile(close)]);
    if (ask.reopen) await run.state.reopens.finish(month, tz);
    // The pieces of this month's adjustments are its statement's now.
    if (!was) await run.state.adjustments.clear(month);
    else {
      // A reopen counts every batch its days have now: what was pending for it is no adjustment any more.
      const reported = run.state.closes.reportedIn(month, tz);
      await run.state.pingIds.clearAdjusted(reported, month, tz);
      if ((await run.state.adjustments.clearClosedMonth(reported, month, tz)) > 0) await publishAdjustments(stage, reported);
    }
    // The run's closes as they are now, for every holder (the next month's adjustments are reported after this one).
    await run.state.closes.reload();
    // The statement's series: this version's rows (the file holds every version of every zone).
    run.log.info('month.closed', { run: run.id, month, tz, version, series: monthly.rows, changed: changed.length, reason: ask.reopen ?? null });
    return { month, tz, version, closedAt, series: monthly.rows, changed: changed.length, adjustments: adjusted.length };
  });
}

/**
 * Completes the reopens that runs killed midway left (their days published again, the new version
 * not yet): each is done again whole, with its reason. The months it completed.
 */
export async function resumeReopens(stage: Stage, now = new Date()): Promise<string[]> {
  const { run } = stage;
  const done: string[] = [];
  for (const r of await run.state.reopens.unfinished()) {
    const c = run.state.closes.get(r.month, r.tz);
    // Its version published already (killed after the publication, before the intent went): nothing left to do.
    if (!c || c.version > r.from) {
      await run.state.reopens.finish(r.month, r.tz);
      continue;
    }
    run.log.warn('close.resume', { month: r.month, tz: r.tz, reason: r.reason, hint: 'a reopen was stopped midway; completing it' });
    await closeMonth(stage, { month: r.month, tz: r.tz, reopen: r.reason, now });
    done.push(r.month);
  }
  return done;
}

/** The month's monthly_statements (the versions issued before, every zone, and this one's rows), made by the engine; and what this version changed. */
async function issueStatement({ backends, run, db }: Stage, ask: Omit<StatementAsk, 'before'>): Promise<IssuedStatement> {
  const engine = backends.rollup(db);
  const key = outputKey('monthly_statements', `${ask.month}-01`);
  const size = await backends.store.size(key);
  // Fetched only for an engine that reads it here (Redshift's COPYs it where it is).
  const local = size !== null && engine.readsLocalFiles ? join(ask.dir, 'statements-before.parquet') : null;
  if (local) await backends.store.download(key, local);
  return engine.statement({ ...ask, before: size === null ? null : { key, size, local } }, run.context);
}
