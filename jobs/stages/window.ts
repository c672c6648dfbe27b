/**
 * The ping-id window in a run (contract §4, rollup/ping-window.ts): what a day's rollup reads of the
 * days before it, and what its publication says to the published days after it.
 *
 *   history: the ping ids of the published days of the W before the day → the engine's rollup
 *   → the day's ping ids put (state/ping-ids.ts), the later days they change marked stale
 *   → the day published, its manifest naming them → its other ping-ids files and its stale mark gone
 */
import type { DayManifest } from '../../export/manifest.js';
import { allEnded, STORE_CALLS_AT_ONCE } from '../../lib/all-ended.js';
import { queryRows, sqlString } from '../../lib/duckdb-engine.js';
import type { PingIdsFile, StagedFile } from '../../rollup/engine.js';
import { historyDays, laterDays } from '../../rollup/ping-window.js';
import type { Stage } from './stage.js';

/**
 * A published day's ping ids as the run's rollup engine reads them: fetched into `dir` for an engine
 * that reads local files, where they are for one that reads them in the warehouse (Redshift COPYs them).
 */
export async function pingIdsFile({ run, backends, db }: Stage, ids: Pick<NonNullable<DayManifest['pingIds']>, 'key' | 'bytes'>, dir: string): Promise<StagedFile> {
  return backends.rollup(db).readsLocalFiles ? run.state.pingIds.local(ids.key, dir) : { key: ids.key, size: ids.bytes, local: null };
}

/**
 * A published day's ping ids as the window check reads them: for an engine that reads local files,
 * the keys kept beside them alone when they were kept (the check reads nothing else: fetching the
 * Parquet file too doubled the bytes a check read from S3), else pingIdsFile (the engine makes keys of it).
 */
async function windowIdsFile(stage: Stage, ids: Pick<NonNullable<DayManifest['pingIds']>, 'key' | 'bytes'>, dir: string): Promise<PingIdsFile> {
  if (stage.backends.rollup(stage.db).readsLocalFiles) {
    const keys = await stage.run.state.pingIds.localKeys(ids.key);
    if (keys !== null) return { key: ids.key, size: ids.bytes, local: null, keys };
  }
  return { ...(await pingIdsFile(stage, ids, dir)), keys: null };
}

/**
 * The ping ids that adjustments of `day` count, when a close covers it (state/ping-ids.ts
 * saveAdjusted): counted for good, as the closed day's own are, so read wherever its own are.
 */
async function adjustedIds(stage: Stage, day: string, dir: string): Promise<StagedFile[]> {
  const { run } = stage;
  if (run.state.closes.covering(day).length === 0) return [];
  const out: StagedFile[] = [];
  for (const ids of await run.state.pingIds.adjusted(day)) out.push(await pingIdsFile(stage, ids, dir));
  return out;
}

/**
 * The ping-ids files of the published days of the W before `day`, and of the days of closed months
 * among the W after it, with what those days' adjustments count (fetched into `dir` when the engine
 * reads local files). A day published before ping ids were kept (an older version) has none: it is
 * named in the log, and its next rollup (a backfill rolls up again what another version made) keeps them.
 */
export async function windowHistory(stage: Stage, day: string, dir: string): Promise<{ history: PingIdsFile[]; closedAfter: PingIdsFile[] }> {
  const { config, run } = stage;
  const out = { history: [] as PingIdsFile[], closedAfter: [] as PingIdsFile[] };
  if (config.dedupeDays === 0) return out;
  // The keys files fetched for earlier days that this one can read are read again where they are.
  await run.state.pingIds.near(day, config.dedupeDays);
  const fetched = { ...run.state.pingIds.fetches };
  const without: string[] = [];
  const ids = async (d: string): Promise<PingIdsFile[]> => {
    const files = await adjustedIds(stage, d, dir);
    const m = await run.publisher.manifests.read(d);
    if (!m || (await gone(stage, d, m))) return files;
    if (!m.pingIds) {
      if (m.pings > 0) without.push(d);
      return files;
    }
    return [...files, { ...(await windowIdsFile(stage, m.pingIds, dir)), own: { day: d, rows: m.pingIds.rows } }];
  };
  // What a closed month's day counts stays counted (contract §9): an earlier open day's record is the repeat.
  const before = historyDays(day, config.dedupeDays);
  const after = laterDays(day, config.dedupeDays).filter((d) => run.state.closes.holding(d));
  // The days' manifests and files asked for STORE_CALLS_AT_ONCE at a time: on S3, 30 round trips one
  // after another were seconds of a small day's rollup.
  const got = await allEnded([...before, ...after].map((d) => () => ids(d)), STORE_CALLS_AT_ONCE);
  out.history.push(...got.slice(0, before.length).flat());
  out.closedAfter.push(...got.slice(before.length).flat());
  const { files, bytes } = run.state.pingIds.fetches;
  if (files > fetched.files) run.log.info('window.fetched', { day, files: files - fetched.files, bytes: bytes - fetched.bytes });
  without.sort();
  if (without.length) {
    run.log.warn('window.unkept', { day, days: without, hint: `these days were published before their ping ids were kept: a resend of one of their pings is counted again on ${day}; make backfill FROM=${without[0]} TO=${without[without.length - 1]} rolls them up with the window` });
  }
  return out;
}

/**
 * Whether a day's ping ids went with retention (state/retention.ts: once no day that can read them can
 * be counted again; a wider window set since cannot bring them back): a day of a closed month whose
 * staged data expired, its ping ids no longer kept, is taken as holding none.
 */
async function gone({ run }: Stage, day: string, m: DayManifest): Promise<boolean> {
  if (!m.pingIds || !run.state.closes.covering(day).some((c) => c.days[day]?.expired !== undefined)) return false;
  return !(await run.state.pingIds.kept(m.pingIds.key));
}

/**
 * What a closed day's adjustments dedupe against (contract §4, §9): the ping ids of the published days
 * at most W before and after it (with what their adjustments count), and its own as it was closed (fetched into `dir` when the engine
 * reads local files).
 */
export async function windowAround(stage: Stage, day: string, dir: string): Promise<{ days: number; around: StagedFile[]; own: StagedFile | null }> {
  const { config, run } = stage;
  const file = async (d: string): Promise<StagedFile | null> => {
    const m = await run.publisher.manifests.read(d);
    return m?.pingIds && !(await gone(stage, d, m)) ? pingIdsFile(stage, m.pingIds, dir) : null;
  };
  const days = config.dedupeDays > 0 ? [...historyDays(day, config.dedupeDays), ...laterDays(day, config.dedupeDays)] : [];
  const around = (await allEnded(days.map((d) => async () => {
    const f = await file(d);
    return [...(f ? [f] : []), ...(await adjustedIds(stage, d, dir))];
  }), STORE_CALLS_AT_ONCE)).flat();
  return { days: config.dedupeDays, around, own: await file(day) };
}

/**
 * Before `day` is published with the ping ids in `ids.file` (local): the ids whose counting changed
 * from its last publication (`ids.before`; none: every id it counts now) are looked for in the
 * published days of the W after it, and each day that holds one is marked stale, saying why. Marked
 * before the publication: a run killed between the two leaves a mark, whose rollup gives the day as
 * it is. `dir`: where ping ids of other days are fetched.
 */
export async function markLaterDays({ config, run, db }: Stage, day: string, ids: { file: string; before: DayManifest | null }, dir: string): Promise<string[]> {
  const { file, before } = ids;
  if (config.dedupeDays === 0) return [];
  // A closed month's day keeps its figures (contract §9): this day's rollup took its counted ids as given.
  const open = laterDays(day, config.dedupeDays).filter((d) => !run.state.closes.holding(d));
  const manifests = await allEnded(open.map((d) => () => run.publisher.manifests.read(d)), STORE_CALLS_AT_ONCE);
  const later = open.flatMap((d, i) => (manifests[i]?.pingIds ? [{ day: d, key: manifests[i].pingIds.key }] : []));
  if (later.length === 0) return [];
  const counted = (f: string): string => `SELECT ping_id FROM read_parquet(${sqlString(f)}) WHERE counted`;
  const was = before?.pingIds ? (await run.state.pingIds.local(before.pingIds.key, dir)).local : null;
  await db.run(`CREATE OR REPLACE TEMP TABLE window_changed AS ${was
    ? `(${counted(file)} EXCEPT ${counted(was)}) UNION ALL (${counted(was)} EXCEPT ${counted(file)})`
    : counted(file)}`);
  const changed = Number((await queryRows<{ n: bigint }>(db, 'SELECT count(*) AS n FROM window_changed'))[0]!.n);
  const marked: string[] = [];
  if (changed > 0) {
    for (const l of later) {
      const ids = await run.state.pingIds.local(l.key, dir);
      const n = Number((await queryRows<{ n: bigint }>(db, `SELECT count(*) AS n FROM read_parquet(${sqlString(ids.local)}) SEMI JOIN window_changed USING (ping_id)`))[0]!.n);
      if (n === 0) continue;
      await run.state.pingIds.markStale(l.day, { by: day, run: run.id, at: new Date().toISOString(), ids: n });
      marked.push(l.day);
    }
  }
  await db.run('DROP TABLE IF EXISTS window_changed');
  if (marked.length) run.log.info('window.stale', { run: run.id, day, changedIds: changed, stale: marked, hint: 'make rollup-stale publishes them again' });
  return marked;
}
