/**
 * The ping-id window's check in the DuckDB engine (contract §4, rollup/ping-window.ts): which of the
 * day's survivors (`day_ids`) a counted survivor of another day holds the id of, within W by event
 * time. Their row ids go to `repeat_rows`.
 *
 * - **Ids that are UUIDs** (ping-keys.ts): a merge of sorted 128-bit keys. The day's keys, sorted by
 *   DuckDB and streamed a batch at a time (at most `passIds` held), are merged against each other
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
import { queryRows, sqlString } from '../../../lib/duckdb-engine.js';
import { DAY_MS } from '../../../lib/utc-day.js';
import { dayKeyBatches, KeysFile, keysOfParquet } from './ping-keys.js';
import { MergeThreads } from './keys-merge.js';

/** A day's ping ids as the check reads them: its Parquet file, and its keys file (null: none kept; made from the Parquet file). */
export interface WindowFile { parquet: string; keys: string | null }

/** Where the other days' ids lie against the day's, and which of their survivors are close enough (`within`). */
interface Side { files: readonly WindowFile[]; from: number; to: number; after: boolean }

/**
 * Checks the day's ids in `day_ids` (rowid, ping_id, event_ms, u: the id's key, NULL when it is not a
 * UUID) against the other days' files; the repeats' row ids go to `repeat_rows`. Returns the passes.
 */
export async function checkWindow(db: DuckDBConnection, o: { dayStart: number; W: number; history: readonly WindowFile[]; closedAfter: readonly WindowFile[]; passIds: number; dir: string }): Promise<number> {
  const { dayStart, W } = o;
  const sides: Side[] = [
    ...(o.history.length ? [{ files: o.history, from: dayStart - W, to: dayStart, after: false }] : []),
    ...(o.closedAfter.length ? [{ files: o.closedAfter, from: dayStart + DAY_MS, to: dayStart + DAY_MS + W, after: true }] : []),
  ];
  if (sides.length === 0) return 0;
  // Each other day's keys: kept beside its Parquet file, or made from it here (a day kept before keys
  // were, one the Redshift engine rolled up, or what adjustments count).
  const made: string[] = [];
  const opened: KeysFile[] = [];
  const keysOf = new Map<WindowFile, KeysFile>();
  try {
    for (const s of sides) {
      for (const f of s.files) {
        let path = f.keys;
        if (path === null) {
          path = join(o.dir, `window-keys-${made.length}.keys`);
          made.push(path);
          await keysOfParquet(db, f.parquet, path);
        }
        const k = new KeysFile(path);
        opened.push(k);
        keysOf.set(f, k);
      }
    }
    const counts = (await queryRows<{ keyed: bigint; text: bigint }>(db,
      'SELECT count(u) AS keyed, count(*) - count(u) AS text FROM day_ids'))[0]!;
    let passes = 0;
    passes += await checkKeys(db, o, sides, keysOf, Number(counts.keyed));
    if (Number(counts.text) > 0) passes += await checkText(db, o, sides, keysOf);
    return passes;
  } finally {
    for (const k of opened) k.close();
    // The keys made here go with the check (a day's are as large as its ids).
    for (const path of made) await rm(path, { force: true });
  }
}

async function checkKeys(db: DuckDBConnection, o: { dayStart: number; W: number; passIds: number; dir: string }, sides: readonly Side[], keysOf: Map<WindowFile, KeysFile>, n: number): Promise<number> {
  if (n === 0) return 0;
  const { dayStart, W, dir } = o;
  const files = sides.flatMap((side) => side.files.map((f) => ({ path: keysOf.get(f)!.path, from: side.from, to: side.to, after: side.after })));
  const threads = new MergeThreads();
  let passes = 0;
  // The repeats' row ids go to a file while the day's keys stream (a query on the connection would
  // end the stream), and into repeat_rows after: nothing sized by the day is held.
  const found = join(dir, 'window-repeats.csv');
  const out = openSync(found, 'w');
  try {
    // The day's keys sorted once by DuckDB, and streamed a batch (a pass) at a time: on the busy day
    // one sort of its 45M keys took 8.9 s, where 24 passes each sorting its range took 48 s.
    for await (const day of dayKeyBatches(db, 'SELECT u, event_ms, rowid FROM day_ids WHERE u IS NOT NULL ORDER BY u', o.passIds)) {
      passes++;
      const halves = await threads.merge({ keys: day.keys, events: day.events, files, dayStart, dayMs: DAY_MS, W }, day.n);
      const lines: string[] = [];
      for (const half of halves) for (const d of half) lines.push(String(day.rowids[d]!));
      if (lines.length) writeSync(out, lines.join('\n') + '\n');
    }
  } finally {
    closeSync(out);
    await threads.close();
  }
  await db.run(`INSERT INTO repeat_rows SELECT rowid FROM read_csv(${sqlString(found)}, header = false, columns = {'rowid': 'BIGINT'})`);
  await rm(found, { force: true });
  return passes;
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
    await db.run(`INSERT INTO repeat_rows
      SELECT d.rowid FROM (SELECT rowid, ping_id, event_ms FROM day_ids WHERE u IS NULL) d
      JOIN (SELECT ping_id, event_ms FROM window_text WHERE side = ${k} AND event_ms >= ${s.from} AND event_ms < ${s.to}) h
      ON h.ping_id = d.ping_id AND ${s.after ? `h.event_ms - d.event_ms <= ${o.W}` : `d.event_ms - h.event_ms <= ${o.W}`}`);
  }
  await db.run('DROP TABLE window_text');
  return 1;
}
