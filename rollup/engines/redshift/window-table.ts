/**
 * The ping-id window inside Redshift (contract §4, rollup/ping-window.ts; issue #56's "past one
 * machine"): the published days' ping ids kept in a permanent table of the warehouse's schema,
 * `window_ping_ids`, distributed by the id and sorted by day, so that a day's rollup joins against the
 * window where it lies instead of COPYing the W days' files into a temporary table every night.
 *
 * Each row carries its day and the ping-ids file it came from (`file`: the key the day's manifest
 * names, which never names other content: state/ping-ids.ts). A day's rollup:
 *   1. asks what the table holds of the window's days: rows by day and file (`stateSql`);
 *   2. plans (`planWindow`): a published day's file is read where the table holds that file's rows,
 *      as many as its manifest says, and nothing else of the day; any other day of the window is
 *      replaced: its rows deleted, its file COPYed (so a new day, a republished one, a table dropped
 *      or emptied by hand, all come right at the next rollup);
 *   3. with its inputs (`windowStatements`, the inputs' transaction, last): locks the table, replaces
 *      those days, drops the days before the window;
 *   4. first in the transaction that reads it: checks that the table holds the plan (day, file and
 *      rows of every file read) before any figure is made. A plan made stale by another transaction
 *      in between (a run taken over while its statements still ran) fails the rollup on that check,
 *      with what to do: it is never read as it stands.
 * So each published day's ids are COPYed once, at the first rollup whose window holds it, and every
 * byte of the window is read where it lies: in the cluster, spread over its slices by the id.
 *
 * What adjustments of closed days count (state/ping-ids.ts saveAdjusted) is rewritten under one name
 * until its month is reported, so it is not kept here: those few files are COPYed each time into a
 * temporary table, as they always were. The month's close and a closed day's adjustments read their
 * windows as before (rarer, and a month's ids once a month).
 */
import { DAY_MS, addDays, dayStartMs } from '../../../lib/utc-day.js';
import { sqlString } from '../../../lib/duckdb-engine.js';
import type { PingIdsFile } from '../../engine.js';
import { PING_IDS_TABLE_COLUMNS } from './day-rollup-sql.js';

/** The permanent table of the window's ping ids, in the warehouse's schema (pingroll's own: analysts have no use for it). */
export const WINDOW_TABLE = 'window_ping_ids';

/** The temporary table whose one NOT NULL column the plan's check fills: a NULL there (the plan does not hold) fails the transaction. */
export const WINDOW_CHECK = 'window_ids_as_planned';

/** A ping-ids file of the window (PingIdsFile: with `own`, a published day's own), wherever it lies. */
export type WindowFile = Pick<PingIdsFile, 'key' | 'size' | 'own'>;

/** What the table holds of a day: each file's rows (`stateSql`'s rows). */
export interface WindowState { day: string; file: string; n: number }

export interface WindowPlan {
  /** The published days' own files the rollup reads from the table, with their rows (none of a file of no rows). */
  read: Array<{ day: string; key: string; rows: number }>;
  /** Days whose rows go first: the window's days the table does not hold as planned. */
  replace: string[];
  /** Files COPYed into the table (a day replaced, with rows). */
  load: Array<{ day: string; key: string; size: number }>;
  /** What adjustments count: COPYed into a temporary table. */
  adjusted: Array<{ key: string; size: number }>;
}

export function windowTableDdl(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${schema}.${WINDOW_TABLE} (
  day DATE NOT NULL, file VARCHAR(1024) NOT NULL, ${PING_IDS_TABLE_COLUMNS}
) DISTSTYLE KEY DISTKEY (ping_id) SORTKEY (day)`;
}

/** The table's rows by day and file from `from` to `to` (UTC days, inclusive). */
export function stateSql(schema: string, from: string, to: string): string {
  return `SELECT TO_CHAR(day, 'YYYY-MM-DD') AS day, file, COUNT(*) AS n FROM ${schema}.${WINDOW_TABLE} WHERE day BETWEEN DATE '${from}' AND DATE '${to}' GROUP BY day, file`;
}

/** The days a rollup of `day` with W = `w` asks about: those its window can read (the W before it and the W after). */
export function windowRange(day: string, w: number): { from: string; to: string } {
  return { from: addDays(day, -w), to: addDays(day, w) };
}

export function planWindow(files: readonly WindowFile[], state: readonly WindowState[]): WindowPlan {
  const own = files.filter((f) => f.own);
  const held = new Map<string, WindowState[]>();
  for (const s of state) held.set(s.day, [...(held.get(s.day) ?? []), s]);
  const asPlanned = (f: WindowFile): boolean => {
    const rows = held.get(f.own!.day) ?? [];
    return f.own!.rows === 0 ? rows.length === 0 : rows.length === 1 && rows[0]!.file === f.key && rows[0]!.n === f.own!.rows;
  };
  const ownDays = new Set(own.map((f) => f.own!.day));
  if (ownDays.size !== own.length) throw new Error(`the window names two ping-ids files of one day: ${own.map((f) => f.key).join(', ')}`);
  const stale = own.filter((f) => !asPlanned(f));
  return {
    read: own.filter((f) => f.own!.rows > 0).map((f) => ({ day: f.own!.day, key: f.key, rows: f.own!.rows })),
    // Only the window's own days: what the table holds of other days is never read (the reads and the
    // check name their days), and a later day a reconcile of an earlier one passes over is tomorrow's.
    replace: stale.map((f) => f.own!.day).sort(),
    load: stale.filter((f) => f.own!.rows > 0).map((f) => ({ day: f.own!.day, key: f.key, size: f.size })),
    adjusted: files.filter((f) => !f.own).map((f) => ({ key: f.key, size: f.size })),
  };
}

/**
 * The window's statements for the rollup of `day` (W = `w`):
 * - `prepare`, last in the inputs' transaction: the table when missing, the files to load and the
 *   adjustments' COPYed into temporary tables (`loadManifest`, `adjustedManifest`: their COPY
 *   manifests' S3 URLs, quoted), the check's table; then the table locked, the days replaced, the
 *   days before the window dropped (the lock held from there to the commit, not through the COPYs);
 * - `rollup`, first in the rollup's transaction: the plan checked (a batch takes at most 40
 *   statements, and the rollup's takes 38 without it);
 * - `ids`: what the rollup SQL reads as the window's ping ids (PING_IDS_TABLE_COLUMNS), or null: none.
 */
export function windowStatements(schema: string, day: string, w: number, plan: WindowPlan, copy: { role: string; loadManifest: string | null; adjustedManifest: string | null }): { prepare: string[]; rollup: string[]; ids: string | null } {
  const table = `${schema}.${WINDOW_TABLE}`;
  const date = (d: string): string => `DATE '${d}'`;
  const columns = 'ping_id, event_ms, "repeat", counted';
  // A day's ping ids are its survivors, whose event times lie in the day: each loaded row's day and
  // file by its event time (NOT NULL: a row of no loaded day fails the load).
  const byDay = (value: (l: WindowPlan['load'][number]) => string): string =>
    `CASE ${plan.load.map((l) => `WHEN event_ms >= ${dayStartMs(l.day)} AND event_ms < ${dayStartMs(l.day) + DAY_MS} THEN ${value(l)}`).join(' ')} END`;
  // The plan as rows: each read file's day, key and rows.
  const planned = plan.read.map((r) => `SELECT ${date(r.day)} AS day, CAST(${sqlString(r.key)} AS VARCHAR(1024)) AS file, CAST(${r.rows} AS BIGINT) AS n`).join(' UNION ALL ');
  const days = plan.read.map((r) => date(r.day)).join(', ');
  const held = `(SELECT day, file, COUNT(*) AS n FROM ${table} WHERE day IN (${days}) GROUP BY day, file)`;
  // One row: NULL (which the column refuses) unless every (day, file, rows) the table holds of those
  // days is one the plan reads, and there are as many as it reads.
  const check = plan.read.length
    ? `INSERT INTO ${WINDOW_CHECK} SELECT CASE WHEN c.held = ${plan.read.length} AND c.planned = ${plan.read.length} THEN 1 END
       FROM (SELECT COUNT(*) AS held, SUM(CASE WHEN p.file IS NULL THEN 0 ELSE 1 END) AS planned
             FROM ${held} a LEFT JOIN (${planned}) p ON a.day = p.day AND a.file = p.file AND a.n = p.n) c`
    : null;
  const reads = [
    ...(plan.read.length ? [`SELECT ${columns} FROM ${table} WHERE day IN (${days})`] : []),
    ...(copy.adjustedManifest ? [`SELECT ${columns} FROM window_adjusted`] : []),
  ];
  return {
    prepare: [
      windowTableDdl(schema),
      ...(copy.loadManifest ? [`CREATE TEMP TABLE window_load (${PING_IDS_TABLE_COLUMNS})`, `COPY window_load FROM ${copy.loadManifest} ${copy.role} FORMAT AS PARQUET MANIFEST`] : []),
      ...(copy.adjustedManifest ? [`CREATE TEMP TABLE window_adjusted (${PING_IDS_TABLE_COLUMNS})`, `COPY window_adjusted FROM ${copy.adjustedManifest} ${copy.role} FORMAT AS PARQUET MANIFEST`] : []),
      ...(check ? [`CREATE TEMP TABLE ${WINDOW_CHECK} (${WINDOW_CHECK} INTEGER NOT NULL)`] : []),
      `LOCK ${table}`,
      // The days replaced, and what no rollup of this day or after it reads (a backfill of an earlier day loads its own again).
      `DELETE FROM ${table} WHERE ${plan.replace.length ? `day IN (${plan.replace.map(date).join(', ')}) OR ` : ''}day < ${date(addDays(day, -w))}`,
      ...(copy.loadManifest ? [`INSERT INTO ${table} (day, file, ${columns}) SELECT ${byDay((l) => date(l.day))}, ${byDay((l) => sqlString(l.key))}, ${columns} FROM window_load`] : []),
    ],
    rollup: check ? [check.replace(/\n\s+/g, ' ')] : [],
    ids: reads.length ? `(${reads.join(' UNION ALL ')}) w` : null,
  };
}
