/**
 * The adjustments stage (contract §9): the days of closed months that batches staged records for
 * since they were last looked at (`_state/late/`, marked before each such commit), each made into a
 * piece of the adjustments of the month it is reported on; then the `statement_adjustments` of each
 * month whose pieces changed, published whole. What a run reads follows the late records: only the
 * days they came for are read again (whole: their pings are deduplicated against everything staged).
 *
 * A piece is `_state/adjustments/<reported month>/<closed month>.<zone>/dt=<day>.parquet`, with the
 * pending batches it was made from beside it (`.json`); a close of the reported month freezes them
 * (jobs/close.ts) and removes its pieces.
 */
import { createHash } from 'node:crypto';
import type { DuckDBConnection } from '@duckdb/node-api';
import { join } from 'node:path';
import { sqlString } from '../../lib/duckdb-engine.js';
import { zoneSlug } from '../../lib/time-zone.js';
import { emptyOf, writeParquet, type OutputFile } from '../../rollup/output-file.js';
import { LATE, lateKey, pendingInputs, type Close } from '../../state/closes.js';
import { gatherDay } from '../../state/day-inputs.js';
import type { Backends } from '../../infra/backends.js';
import type { Run } from '../run.js';

export const ADJUSTMENTS = '_state/adjustments/';

function pieceKey(reported: string, close: Pick<Close, 'month' | 'tz'>, day: string): string {
  return `${ADJUSTMENTS}${reported}/${close.month}.${zoneSlug(close.tz)}/dt=${day}`;
}

/** What the stage did: the months whose adjustments it published, and the closed days it read again. */
export interface Adjusted { months: string[]; days: string[] }

/** Makes the pieces of the marked days, then publishes each reported month whose pieces changed. */
export async function adjust(backends: Backends, run: Run, db: DuckDBConnection): Promise<Adjusted> {
  const { store } = backends;
  const marked = (await store.list(LATE)).map((k) => k.slice(LATE.length).replace(/^dt=/, '')).sort();
  const dirty = new Set<string>();
  for (const day of marked) {
    for (const close of run.closes.covering(day)) {
      const reported = run.closes.reportedIn(close.month, close.tz);
      if (await makePiece(backends, run, db, close, reported, day)) dirty.add(reported);
    }
  }
  const months = [...dirty].sort();
  for (const month of months) await publishAdjustments(backends, run, db, month);
  // Only once every piece they asked for is made and published.
  for (const day of marked) await store.delete(lateKey(day));
  if (marked.length) run.log.info('adjustments.done', { run: run.id, days: marked, reportedMonths: months });
  return { months, days: marked };
}

/** The piece of one closed day; whether it changed (made, or removed for want of pending batches). */
async function makePiece(backends: Backends, run: Run, db: DuckDBConnection, close: Close, reported: string, day: string): Promise<boolean> {
  const { store } = backends;
  const key = pieceKey(reported, close, day);
  const inputs = await run.ledger.inputsFor(day);
  const pending = pendingInputs(close.days[day]!, inputs);
  const ids = pending.map((i) => i.id).sort();
  const was = await store.get(`${key}.json`);
  if (ids.length === 0) {
    if (!was) return false;
    await store.delete(`${key}.parquet`);
    await store.delete(`${key}.json`);
    return true;
  }
  const digest = createHash('sha256').update(ids.join('\n')).digest('hex');
  if (was && (JSON.parse(was.toString('utf8')) as { sha256: string }).sha256 === digest) return false;
  return run.withFolder(`adjust-${day}`, async (dir) => {
    const all = await gatherDay(store, run.ledger, day, dir);
    const local = (f: { local: string | null }): string => f.local!;
    // The staged files of each input, in the order gatherDay made them.
    const fileOf = new Map(all.staged.map((f) => [f.key, f]));
    const filesOf = (picked: typeof inputs): string[] => picked.flatMap((i) => (i.staged.pings ?? []).map((k) => local(fileOf.get(k)!)));
    const countedInputs = inputs.filter((i) => !ids.includes(i.id));
    const piece = await backends.rollup.adjust(db, reported, [{ reportedMonth: reported, closedMonth: close.month, tz: close.tz, day, counted: filesOf(countedInputs), pending: filesOf(pending) }], dir);
    await store.put(`${key}.parquet`, { file: piece.local });
    await store.put(`${key}.json`, Buffer.from(JSON.stringify({ sha256: digest, batches: ids, rows: piece.rows })));
    return true;
  });
}

/** The month's statement_adjustments: every piece reported on it, published whole. */
export async function publishAdjustments(backends: Backends, run: Run, db: DuckDBConnection, month: string): Promise<OutputFile> {
  const { store } = backends;
  return run.withFolder(`adjustments-${month}`, async (dir) => {
    const file = await adjustmentsFile(backends, db, month, dir);
    await run.publisher.publishAdjustments(month, file);
    run.log.info('adjustments.published', { run: run.id, reportedMonth: month, rows: file.rows, key: `${store.url}${file.key}` });
    return file;
  });
}

/** The month's statement_adjustments as a local Parquet file, from its pieces. */
export async function adjustmentsFile(backends: Backends, db: DuckDBConnection, month: string, dir: string): Promise<OutputFile> {
  const { store } = backends;
  const pieces = (await store.list(`${ADJUSTMENTS}${month}/`)).filter((k) => k.endsWith('.parquet'));
  const local: string[] = [];
  for (const [i, key] of pieces.entries()) {
    const at = join(dir, `piece-${i}.parquet`);
    await store.download(key, at);
    local.push(at);
  }
  const rows = local.length
    ? `SELECT * FROM read_parquet([${local.map(sqlString).join(', ')}]) ORDER BY closed_month, tz, day, series_id, episode_id`
    : emptyOf('statement_adjustments');
  return writeParquet(db, rows, 'statement_adjustments', `${month}-01`, dir, 'reported_month');
}
