/**
 * The ping-id window's check in the DuckDB engine (contract §4, rollup/ping-window.ts): which of the
 * day's survivors (`day_ids`) a counted survivor of another day holds the id of, within W by event
 * time. Their row ids go to `repeat_rows`.
 *
 * - **Ids that are UUIDs** (ping-keys.ts): a merge of sorted 128-bit keys. The day's keys, a range at
 *   a time (at most `passIds` held), are merged against each other day's keys file, of which only the
 *   keys in the range are read; an event time is read only for a key both hold, and only from a day
 *   where the window's boundary can fall.
 * - **Other ids**: DuckDB's join of their text against the ping-ids Parquet of the days that hold
 *   any, in ranges of the id as well.
 */
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { queryRows, sqlString } from '../../../lib/duckdb-engine.js';
import { DAY_MS } from '../../../lib/utc-day.js';
import { dayKeys, KeysFile, keysOfParquet, uuidKeySql } from './ping-keys.js';
import { MergeThreads, type MergeFile } from './keys-merge.js';

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
  let made = 0;
  const opened: KeysFile[] = [];
  const keysOf = new Map<WindowFile, KeysFile>();
  try {
    for (const s of sides) {
      for (const f of s.files) {
        let path = f.keys;
        if (path === null) {
          path = join(o.dir, `window-keys-${made++}.keys`);
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
    if (Number(counts.text) > 0) passes += await checkText(db, o, sides, keysOf, Number(counts.text));

    return passes;
  } finally {
    for (const k of opened) k.close();
  }
}

/**
 * Range bounds cutting `n` of the day's values of `column` (where `where`) into passes of at most
 * about `passIds`, at a sample of them: [null, cut..., null].
 */
async function cuts(db: DuckDBConnection, column: string, where: string, n: number, passIds: number): Promise<Array<string | null>> {
  const passes = Math.max(1, Math.ceil(n / passIds));
  if (passes === 1) return [null, null];
  const got = (await queryRows<{ v: string }>(db, `
    SELECT v FROM (SELECT v, row_number() OVER (ORDER BY v) AS k FROM (SELECT ${column}::VARCHAR AS v FROM day_ids WHERE ${where} USING SAMPLE reservoir(${passes * 64} ROWS) REPEATABLE (7)))
    WHERE k % 64 = 0 ORDER BY v`)).map((r) => r.v);
  return [null, ...new Set(got), null];
}

function rangeSql(column: string, lo: string | null, hi: string | null, cast: string): string {
  return [lo === null ? null : `${column} >= ${sqlString(lo)}${cast}`, hi === null ? null : `${column} < ${sqlString(hi)}${cast}`].filter(Boolean).join(' AND ') || 'true';
}

async function checkKeys(db: DuckDBConnection, o: { dayStart: number; W: number; passIds: number }, sides: readonly Side[], keysOf: Map<WindowFile, KeysFile>, n: number): Promise<number> {
  if (n === 0) return 0;
  const { dayStart, W } = o;
  // Cut at the sample's UUIDs as text: a canonical UUID's text sorts as the UUID does.
  const bounds = await cuts(db, 'u', 'u IS NOT NULL', n, o.passIds);
  const files = sides.flatMap((side) => side.files.map((f) => ({ path: keysOf.get(f)!.path, from: side.from, to: side.to, after: side.after })));
  const threads = new MergeThreads();
  try {
    return await keyPasses(db, bounds, files, threads, dayStart, W);
  } finally {
    await threads.close();
  }
}

async function keyPasses(db: DuckDBConnection, bounds: ReadonlyArray<string | null>, files: readonly MergeFile[], threads: MergeThreads, dayStart: number, W: number): Promise<number> {
  let passes = 0;
  for (let i = 0; i + 1 < bounds.length; i++) {
    const range = `u IS NOT NULL AND ${rangeSql('u', bounds[i]!, bounds[i + 1]!, '::UUID')}`;
    const m = Number((await queryRows<{ n: bigint }>(db, `SELECT count(*) AS n FROM day_ids WHERE ${range}`))[0]!.n);
    if (m === 0) continue;
    passes++;
    const day = await dayKeys(db, `SELECT u, event_ms, rowid FROM day_ids WHERE ${range} ORDER BY u`, m);
    const found = await threads.merge({ keys: day.keys, events: day.events, files, dayStart, dayMs: DAY_MS, W }, day.n);
    const repeats: bigint[] = [];
    for (const half of found) for (const d of half) repeats.push(day.rowids[d]!);
    await appendRowids(db, repeats);
  }
  return passes;
}

/** Row ids into `repeat_rows`. */
async function appendRowids(db: DuckDBConnection, rowids: readonly bigint[]): Promise<void> {
  if (rowids.length === 0) return;
  const app = await db.createAppender('repeat_rows', 'main', 'temp');
  for (const r of rowids) {
    app.appendBigInt(r);
    app.endRow();
  }
  app.closeSync();
}

/** The day's ids that are not UUIDs, joined as text against the files that hold any (their keys files say). */
async function checkText(db: DuckDBConnection, o: { W: number; passIds: number }, sides: readonly Side[], keysOf: Map<WindowFile, KeysFile>, n: number): Promise<number> {
  const withText = sides.map((s) => ({ ...s, files: s.files.filter((f) => keysOf.get(f)!.textIds > 0) })).filter((s) => s.files.length > 0);
  if (withText.length === 0) return 0;
  const bounds = await cuts(db, 'ping_id', 'u IS NULL', n, o.passIds);
  for (let i = 0; i + 1 < bounds.length; i++) {
    const range = rangeSql('ping_id', bounds[i]!, bounds[i + 1]!, '');
    for (const s of withText) {
      await db.run(`INSERT INTO repeat_rows
        SELECT d.rowid FROM (SELECT rowid, ping_id, event_ms FROM day_ids WHERE u IS NULL AND ${range}) d
        JOIN (SELECT ping_id, event_ms FROM read_parquet([${s.files.map((f) => sqlString(f.parquet)).join(', ')}])
              WHERE ${range} AND counted AND ${uuidKeySql('ping_id')} IS NULL AND event_ms >= ${s.from} AND event_ms < ${s.to}) h
        ON h.ping_id = d.ping_id AND ${s.after ? `h.event_ms - d.event_ms <= ${o.W}` : `d.event_ms - h.event_ms <= ${o.W}`}`);
    }
  }
  return bounds.length - 1;
}
