/**
 * The adjustments stage (contract §9): the days of closed months that batches staged records for
 * since they were last looked at (LATE, marked before each such commit), each made into a
 * piece of the adjustments of the month it is reported on; then the `statement_adjustments` of each
 * month whose pieces changed, published whole. What a run reads follows the late records: only the
 * days they came for are read again (whole: their pings are deduplicated against everything staged).
 *
 * A piece is one closed day's adjustments on the month they are reported on, kept by
 * state/adjustments.ts with the pending batches it was made from; a close of the reported month
 * freezes them (jobs/close.ts) and clears its pieces.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { OutputFile } from '../../rollup/output-file.js';
import type { StagedFile } from '../../rollup/engine.js';
import { accounted, pendingInputs, type Close } from '../../state/closes.js';
import { REJECTS_TAGS, TOO_LATE } from '../../datasets/layout.js';
import type { PieceOf } from '../../state/adjustments.js';
import { stat, writeFile } from 'node:fs/promises';
import type { Stage } from './stage.js';
import { windowAround } from './window.js';

/** What the stage did: the months whose adjustments it published, the closed days it read again, and the records it found too late. */
export interface Adjusted { months: string[]; days: string[]; tooLate: number }

/** Makes the pieces of the marked days, then publishes each reported month whose pieces changed. */
export async function adjust(stage: Stage): Promise<Adjusted> {
  const { run } = stage;
  const marked = await run.state.closes.lateDays();
  const dirty = new Set<string>();
  let tooLate = 0;
  for (const day of marked) {
    // A day whose staged data expired cannot deduplicate anything: what came for it is too late.
    if (run.state.closes.covering(day).some((c) => c.days[day]!.expired)) {
      tooLate += await tooLateDay(stage, day);
      continue;
    }
    for (const close of run.state.closes.covering(day)) {
      const reported = run.state.closes.reportedIn(close.month, close.tz);
      if (await makePiece(stage, close, reported, day)) dirty.add(reported);
    }
  }
  const months = [...dirty].sort();
  for (const month of months) await publishAdjustments(stage, month);
  // Only once every piece they asked for is made and published.
  for (const day of marked) await run.state.closes.clearLate(day);
  if (marked.length) run.log.info('adjustments.done', { run: run.id, days: marked, reportedMonths: months, tooLateRecords: tooLate });
  return { months, days: marked, tooLate };
}

/**
 * The pending batches of an expired day: their records are `too_late` (contract §9), counted nowhere
 * but here: kept as rejects with their reason (`dt=<day>/<batch>.jsonl.gz` in TOO_LATE, beside the
 * counts of the run that found them, `.json`), accounted in each close of the day, and their staging
 * removed. How many pings were too late.
 */
async function tooLateDay({ backends, run, db }: Stage, day: string): Promise<number> {
  const { store } = backends;
  const closes = run.state.closes.covering(day);
  const counted = new Set(closes.flatMap((c) => [...accounted(c.days[day]!)]));
  const pending = (await run.state.ledger.inputsFor(day)).filter((i) => i.table === null && !counted.has(i.id));
  let pings = 0;
  const engine = backends.rollup(db);
  for (const input of pending) {
    await run.work.withFolder(`too-late-${day}`, async (dir) => {
      // Every staged ping of the batch's day is too late: how many, by source, is what its commit counted.
      const bySource = Object.fromEntries(Object.entries(input.staged.outcomes).flatMap(([source, o]) => (o?.ping ? [[source, o.ping]] : [])));
      const records = Object.fromEntries(Object.entries(bySource).map(([source, n]) => [source, { too_late: n }]));
      pings += Object.values(bySource).reduce((n, m) => n + m, 0);
      // The gzip members (the too-late pings, the batch's rejects) joined in one file, a gzip stream
      // still: on disk, as large as they are, never in memory.
      const joined = join(dir, 'joined.jsonl.gz');
      await writeFile(joined, '');
      const append = async (file: string): Promise<void> => pipeline(createReadStream(file), createWriteStream(joined, { flags: 'a' }));
      if (input.staged.pings?.length) {
        // Fetched only for an engine that reads them here (Redshift's COPYs them where they are).
        const staged: StagedFile[] = [];
        for (const [k, key] of input.staged.pings.entries()) {
          const local = engine.readsLocalFiles ? join(dir, `pings-${k}.parquet`) : null;
          if (local) await store.download(key, local);
          staged.push({ key, size: local ? (await stat(local)).size : ((await store.size(key)) ?? 0), local });
        }
        const out = join(dir, 'too-late.jsonl.gz');
        const reason = `too late: ${day} belongs to a closed month whose staged data expired (PINGROLL_RETENTION_DAYS); it can no longer be deduplicated, so it is counted nowhere`;
        await engine.tooLate({ batch: input.id, day, staged, reason, dir, out }, run.context);
        await append(out);
      }
      // The batch's other records of the day (not pings) are its rejects, as staged.
      const rejects = input.staged.rejects;
      if (rejects) {
        await store.download(rejects, join(dir, 'rejects.gz'));
        await append(join(dir, 'rejects.gz'));
      }
      const key = `${TOO_LATE}dt=${day}/${input.id}`;
      await store.put(`${key}.jsonl.gz`, { file: joined, move: true }, REJECTS_TAGS);
      await store.put(`${key}.json`, Buffer.from(JSON.stringify({ run: run.id, day, batch: input.id, at: new Date().toISOString(), records, otherOutcomes: input.staged.outcomes }, null, 2) + '\n'));
    });
  }
  if (pending.length === 0) return 0;
  const ids = pending.map((i) => i.id);
  await run.state.closes.recordTooLate(day, ids);
  await run.state.ledger.dropDayInputs(day, pending);
  run.log.warn('records.too_late', { run: run.id, day, batches: ids, pings, reason: 'their day belongs to a closed month whose staged data expired: kept as rejects, counted nowhere', rejects: `${store.url}${TOO_LATE}dt=${day}/` });
  return pings;
}

/** The piece of one closed day; whether it changed (made, or removed for want of pending batches). */
async function makePiece(stage: Stage, close: Close, reported: string, day: string): Promise<boolean> {
  const { backends, run, db } = stage;
  const at: PieceOf = { reported, month: close.month, tz: close.tz, day };
  const inputs = await run.state.ledger.inputsFor(day);
  const pending = pendingInputs(close.days[day]!, inputs);
  const ids = pending.map((i) => i.id).sort();
  if (ids.length === 0) {
    await run.state.pingIds.saveAdjusted(at, null);
    return run.state.adjustments.remove(at);
  }
  const digest = createHash('sha256').update(ids.join('\n')).digest('hex');
  if ((await run.state.adjustments.digest(at)) === digest) return false;
  return run.work.withFolder(`adjust-${day}`, async (dir) => {
    const engine = backends.rollup(db);
    // Fetched only for an engine that reads them here (Redshift's COPYs them where they are).
    const all = await run.state.gatherDay(day, engine.readsLocalFiles ? dir : null);
    // The staged files of each input, as gatherDay found them.
    const fileOf = new Map(all.staged.map((f) => [f.key, f]));
    const filesOf = (picked: typeof inputs): StagedFile[] => picked.flatMap((i) => (i.staged.pings ?? []).map((k) => fileOf.get(k)!));
    const countedInputs = inputs.filter((i) => !ids.includes(i.id));
    const window = await windowAround(stage, day, dir);
    const piece = await engine.adjust({ reportedMonth: reported, closedMonth: close.month, tz: close.tz, day, counted: filesOf(countedInputs), pending: filesOf(pending), window }, dir, await run.work.episodeCatalog(db), run.context);
    // The ids its pings count, before the piece's record says it is made: later days' windows read
    // them (a resend of one is a repeat). A run killed between the two makes both again.
    await run.state.pingIds.saveAdjusted(at, piece.pingIds?.rows ? piece.pingIds.file : null);
    await run.state.adjustments.put(at, piece.local, { sha256: digest, batches: ids, rows: piece.rows });
    return true;
  });
}

/** The month's statement_adjustments: every piece reported on it, published whole. */
export async function publishAdjustments(stage: Stage, month: string): Promise<OutputFile> {
  const { run } = stage;
  const { store } = stage.backends;
  return run.work.withFolder(`adjustments-${month}`, async (dir) => {
    const file = await adjustmentsFile(stage, { month, dir });
    await run.publisher.publishAdjustments(month, file);
    run.log.info('adjustments.published', { run: run.id, reportedMonth: month, rows: file.rows, key: `${store.url}${file.key}` });
    return file;
  });
}

/** The month's statement_adjustments as a local Parquet file, made by the engine from its pieces (fetched when it reads local files). */
export async function adjustmentsFile({ backends, run, db }: Stage, at: { month: string; dir: string }): Promise<OutputFile> {
  const { store } = backends;
  const engine = backends.rollup(db);
  const pieces: StagedFile[] = [];
  for (const [i, key] of (await run.state.adjustments.files(at.month)).entries()) {
    const local = engine.readsLocalFiles ? join(at.dir, `piece-${i}.parquet`) : null;
    if (local) await store.download(key, local);
    // (Asked of the store only for a piece that stays there: a fetched one's is on this disk.)
    pieces.push({ key, size: local ? (await stat(local)).size : ((await store.size(key)) ?? 0), local });
  }
  return engine.adjustments(at.month, pieces, at.dir, run.context);
}
