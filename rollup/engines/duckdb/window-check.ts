/**
 * The ping-id window's check in the DuckDB engine (contract §4, rollup/ping-window.ts): which of the
 * day's survivors with an id (`day_ids`, `day_text_ids`) a counted survivor of another day holds the
 * id of, within W by event time. Their row ids go to `repeat_rows`.
 *
 * - **Ids that are UUIDs** (ping-keys.ts): a merge of sorted 128-bit keys. The day's keys, streamed
 *   from DuckDB in no order and sorted here a batch at a time (key-sort.ts: at most `passIds` held,
 *   the rest spilled by range to files under `dir`), are merged against each other
 *   day's keys file, of which only the keys in the batch's range are read (keys-merge.ts, on two
 *   threads); an event time is read only for a key both hold, and only from a day where the window's
 *   boundary can fall.
 * - **Other ids** (rare: players send UUIDs): DuckDB's join of their text against the other days',
 *   kept after their keys.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../../../lib/duckdb-engine.js';
import { DAY_MS } from '../../../lib/utc-day.js';
import { dayKeyBatches, KeysFile, keysOfParquet, KeysWriter, WRITING_BLOCKS } from './ping-keys.js';
import { MergeThreads, type MergeFile } from './keys-merge.js';

/**
 * The database of the engine's own (an in-memory one, attached) that holds the check's tables: the
 * check runs on a connection of its own (day-rollup.ts), which sees no other connection's TEMP tables.
 */
export const SHARED = 'rollup_shared';
/** The day's survivors whose ids are UUIDs, as keys (key_hi, key_lo, event_ms, rowid). */
export const DAY_IDS = `${SHARED}.day_ids`;
/** Its survivors whose ids are not UUIDs (rowid, event_ms, text_id). */
export const DAY_TEXT_IDS = `${SHARED}.day_text_ids`;
/** The repeats' row ids, as the check finds them (rowid). */
export const REPEAT_ROWS = `${SHARED}.repeat_rows`;

/** A day's ping ids as the check reads them: its keys file, or when none was kept its Parquet file (the keys made from it). */
export type WindowFile = { parquet: null; keys: string } | { parquet: string; keys: null };

/** Where the other days' ids lie against the day's, and which of their survivors are close enough (`within`). */
interface Side { files: readonly WindowFile[]; from: number; to: number; after: boolean }

/**
 * Checks the day's ids against the other days' files: those that are UUIDs in `day_ids` (key_hi,
 * key_lo: the key as staged, ping-keys.ts stagedKeysSql; event_ms, rowid), the others in
 * `day_text_ids` (rowid, event_ms, text_id); the repeats' row ids go to `repeat_rows`. The day's keys
 * are read sorted once, for the check and for keeping: those that are not repeats go to the keys file
 * `keptPath` as they stream (with no other day, all of them), which `keepKeys` (ping-keys.ts) makes
 * the day's once the day knows which it counts. Returns the passes and the day's keys.
 */
export async function checkWindow(db: DuckDBConnection, o: { dayStart: number; W: number; history: readonly WindowFile[]; closedAfter: readonly WindowFile[]; passIds: number; dir: string; keptPath: string }): Promise<{ passes: number; keys: number }> {
  const { dayStart, W } = o;
  const sides: Side[] = [
    ...(o.history.length ? [{ files: o.history, from: dayStart - W, to: dayStart, after: false }] : []),
    ...(o.closedAfter.length ? [{ files: o.closedAfter, from: dayStart + DAY_MS, to: dayStart + DAY_MS + W, after: true }] : []),
  ];
  // Each other day's keys: kept beside its Parquet file, or made from it here (a day kept before keys
  // were, one the Redshift engine rolled up, or what adjustments count).
  const made: string[] = [];
  const opened: KeysFile[] = [];
  const keysOf = new Map<WindowFile, KeysFile>();
  const kept = new KeysWriter(o.keptPath);
  try {
    for (const s of sides) {
      for (const f of s.files) {
        let path: string;
        if (f.keys !== null) path = f.keys;
        else {
          path = join(o.dir, `window-keys-${made.length}.keys`);
          made.push(path);
          await keysOfParquet(db, f.parquet, path);
        }
        const k = new KeysFile(path);
        opened.push(k);
        keysOf.set(f, k);
      }
    }
    const files = sides.flatMap((side) => side.files.map((f) => ({ path: keysOf.get(f)!.path, from: side.from, to: side.to, after: side.after })));
    const checked = await checkKeys(db, o, files, kept);
    // The ids that are not UUIDs: none to check when no other day holds any; else a join.
    const textPasses = await checkText(db, o, sides, keysOf);
    await kept.finish(db, null);
    return { passes: checked.passes + textPasses, keys: checked.keys };
  } finally {
    await kept.close();
    for (const k of opened) k.close();
    // The keys made here go with the check (a day's are as large as its ids).
    for (const path of made) await rm(path, { force: true });
  }
}

/**
 * The day's keys, sorted, a batch at a time: each merged against the other days' `files` (none: no
 * check), its repeats' row ids to `repeat_rows`, its other keys to `kept`. Returns the passes and
 * the day's keys.
 */
async function checkKeys(db: DuckDBConnection, o: { dayStart: number; W: number; passIds: number; dir: string }, files: readonly MergeFile[], kept: KeysWriter): Promise<{ passes: number; keys: number }> {
  const { dayStart, W, dir } = o;
  const threads = files.length > 0 ? new MergeThreads() : null;
  let passes = 0;
  // The repeats' row ids go to a file while the day's keys stream (a query on the connection would
  // end the stream), and into repeat_rows after: nothing sized by the day is held.
  const found = join(dir, 'window-repeats.csv');
  const out = openSync(found, 'w');
  let repeats = 0, keys = 0;
  try {
    // The day's keys streamed once in no order and sorted here, a batch (a pass) at a time (key-sort.ts).
    let repeat = new Uint8Array(0);
    for await (const day of dayKeyBatches(db, `SELECT key_hi, key_lo, event_ms, rowid FROM ${DAY_IDS}`, o.passIds, dir)) {
      keys += day.n;
      if (repeat.length < day.n) repeat = new Uint8Array(day.keys.length / 4);
      repeat.fill(0, 0, day.n);
      if (threads) {
        passes++;
        // A key may be found in more than one file: it is one repeat.
        for (const half of await threads.merge({ keys: day.keys, events: day.events, files, dayStart, dayMs: DAY_MS, W }, day.n)) for (const d of half) repeat[d] = 1;
      }
      // The keys between two repeats kept as a run.
      const lines: string[] = [];
      let run = 0;
      for (let d = repeat.indexOf(1); d !== -1 && d < day.n; d = repeat.indexOf(1, d + 1)) {
        lines.push(String(day.rowids[d]!));
        kept.addRange(day.keys, day.events, run, d);
        run = d + 1;
      }
      kept.addRange(day.keys, day.events, run, day.n);
      // The batch's keys are written while the next is streamed and merged; the batch before must be.
      await kept.settle(WRITING_BLOCKS);
      if (lines.length) writeSync(out, lines.join('\n') + '\n');
      repeats += lines.length;
    }
  } finally {
    closeSync(out);
    await threads?.close();
  }
  if (repeats > 0) await db.run(`INSERT INTO ${REPEAT_ROWS} SELECT rowid FROM read_csv(${sqlString(found)}, header = false, columns = {'rowid': 'BIGINT'})`);
  await rm(found, { force: true });
  return { passes, keys };
}

/**
 * The day's ids that are not UUIDs, joined as text against those of the other days (after their keys
 * in their keys files: rare, so they are loaded into a table, a block at a time, and DuckDB joins).
 */
async function checkText(db: DuckDBConnection, o: { W: number }, sides: readonly Side[], keysOf: Map<WindowFile, KeysFile>): Promise<number> {
  const withText = sides.map((s) => ({ ...s, files: s.files.filter((f) => keysOf.get(f)!.textIds > 0) })).filter((s) => s.files.length > 0);
  if (withText.length === 0) return 0;
  await db.run('CREATE OR REPLACE TEMP TABLE window_text (side INTEGER, ping_id VARCHAR, event_ms BIGINT)');
  const app = await db.createAppender('window_text', 'main', 'temp');
  try {
    for (const [k, s] of withText.entries()) {
      for (const f of s.files) {
        for (const block of keysOf.get(f)!.texts()) {
          for (const t of block) {
            app.appendInteger(k);
            app.appendVarchar(t.id);
            app.appendBigInt(t.event);
            app.endRow();
          }
        }
      }
    }
  } finally {
    app.closeSync();
  }
  for (const [k, s] of withText.entries()) {
    await db.run(`INSERT INTO ${REPEAT_ROWS}
      SELECT d.rowid FROM (SELECT rowid, text_id AS ping_id, event_ms FROM ${DAY_TEXT_IDS}) d
      JOIN (SELECT ping_id, event_ms FROM window_text WHERE side = ${k} AND event_ms >= ${s.from} AND event_ms < ${s.to}) h
      ON h.ping_id = d.ping_id AND ${s.after ? `h.event_ms - d.event_ms <= ${o.W}` : `d.event_ms - h.event_ms <= ${o.W}`}`);
  }
  await db.run('DROP TABLE window_text');
  return 1;
}
