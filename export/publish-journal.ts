/**
 * A day is published whole, or not at all (contract §6).
 *
 * 1. Every new file of the day (the tables' Parquet, the rejects, the manifest) is written first under
 *    `dt=<day>/<run>/` in PUBLISH_PREFIX, where no reader looks, several at once. A failure here (a full disk, S3) changes
 *    nothing anyone sees; a later run removes what it left.
 * 2. The journal `dt=<day>.json` in PUBLISH_PREFIX names each staged file and where it goes.
 * 3. The warehouse loads the day from the staged files, in one transaction. If it fails, the journal
 *    and the staged files are removed: nothing of the day was replaced, and the run fails.
 * 4. Each staged file is moved into place (a rename on a filesystem, a copy on S3), several at once,
 *    the manifest last, alone, once every other is; then the journal is removed.
 * A run killed after step 2 leaves the journal: the next run, before anything else, does steps 3 and 4
 * again from the staged files (loading the warehouse again is harmless: it replaces the day).
 *
 * What readers see: the warehouse switches from the old day to the new in one transaction. Each
 * Parquet file switches whole; the tables switch within moments of one another (step 4), and the
 * manifest after them, so a manifest always describes files that are in place.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PUBLISH_PREFIX } from '../datasets/layout.js';
import type { Log } from '../lib/log.js';
import { removeUnder, type LocalFile, type ObjectStore } from '../state/object-store/object-store.js';
import type { OutputFile, OutputTable } from '../rollup/output-file.js';
import { allEnded, STORE_CALLS_AT_ONCE } from '../lib/all-ended.js';

interface Journal {
  run: string;
  day: string;
  /** The journal's own name (`dt=<day>` or `month=YYYY-MM`); older journals have none. */
  name?: string;
  createdAt: string;
  /** Staged files and where they go, in order: the tables, the rejects, the manifest last. */
  moves: Array<{ from: string; to: string }>;
  /** Keys to remove (the day's old rejects, when it has none now). */
  deletes: string[];
  /** The tables' files, as the warehouse loads them. */
  tables: Array<{ table: OutputTable; key: string; stagedKey: string; rows: number; bytes: number; dateColumn?: OutputFile['dateColumn']; zone?: string }>;
}

/** A journal's key, and a staged file's: `dt=<day>`, or another publication's name (`month=YYYY-MM[.zone]`, `close=...`, `adjust=...`). */
const JOURNAL = new RegExp(String.raw`^${PUBLISH_PREFIX}(dt=\d{4}-\d{2}-\d{2}|(?:month|close|adjust)=[\w.+-]+)\.json$`);
const STAGED = new RegExp(String.raw`^${PUBLISH_PREFIX}(dt=\d{4}-\d{2}-\d{2}|(?:month|close|adjust)=[\w.+-]+)/[^/]+/`);

/** The journal of a publication: `dt=<day>` for a day, `month=YYYY-MM` for a month (`.zone` in a zone), `close=`/`adjust=` for a statement and adjustments. */
export function journalKey(name: string): string {
  return `${PUBLISH_PREFIX}${/^\d{4}-\d{2}-\d{2}$/.test(name) ? `dt=${name}` : name}.json`;
}

function stagedPrefix(name: string, run: string): string {
  return `${PUBLISH_PREFIX}${/^\d{4}-\d{2}-\d{2}$/.test(name) ? `dt=${name}` : name}/${run}/`;
}

const nameOf = (j: Pick<Journal, 'day' | 'name'>): string => j.name ?? j.day;

/** Loads a day into the warehouse (in one transaction); null when there is no warehouse. */
export type LoadWarehouse = ((day: string, files: OutputFile[]) => Promise<void>) | null;

export interface DayFiles {
  run: string;
  day: string;
  /** The journal's name, when not the day's (`dt=<day>`): `month=YYYY-MM` for a month. */
  journal?: string;
  /** The tables' Parquet, written locally. */
  tables: OutputFile[];
  /** Other files, their bytes or a local file (the rejects, the manifest last); a null body removes the key. */
  others: Array<{ key: string; body: Buffer | LocalFile | null; tags?: Record<string, string> }>;
}

/** Publishes a day's files and warehouse rows whole (steps 1-4 above). */
export async function publishWhole(store: ObjectStore, files: DayFiles, loadWarehouse: LoadWarehouse, fence?: () => Promise<void>): Promise<void> {
  const name = files.journal ?? files.day;
  const prefix = stagedPrefix(name, files.run);
  const journal: Journal = { run: files.run, day: files.day, name, createdAt: new Date().toISOString(), moves: [], deletes: [], tables: [] };
  try {
    const puts: Array<() => Promise<void>> = [];
    for (const f of files.tables) {
      const stagedKey = (f.stagedKey = prefix + f.key);
      puts.push(() => store.put(stagedKey, { file: f.local }));
      journal.moves.push({ from: stagedKey, to: f.key });
      journal.tables.push({ table: f.table, key: f.key, stagedKey, rows: f.rows, bytes: f.bytes, ...(f.dateColumn ? { dateColumn: f.dateColumn } : {}), ...(f.zone ? { zone: f.zone } : {}) });
    }
    for (const o of files.others) {
      if (o.body === null) {
        journal.deletes.push(o.key);
        continue;
      }
      const body = o.body;
      puts.push(() => store.put(prefix + o.key, body, o.tags));
      journal.moves.push({ from: prefix + o.key, to: o.key });
    }
    // Staged side by side (a round trip each on S3), all of them before the journal names them.
    await allEnded(puts, STORE_CALLS_AT_ONCE);
    await fence?.();
    await store.put(journalKey(name), Buffer.from(JSON.stringify(journal, null, 2)));
  } catch (err) {
    await removeUnder(store, prefix);
    throw err;
  }
  try {
    await loadWarehouse?.(files.day, files.tables);
  } catch (err) {
    // Nothing of the day was replaced: take the publication back.
    await store.delete(journalKey(name));
    await removeUnder(store, prefix);
    throw err;
  }
  await finish(store, journal, false);
}

/**
 * Completes what runs killed while publishing left (steps 3 and 4 from the staged files), and removes
 * staged files no journal names. Runs before anything else, under the run lock.
 */
export async function recoverPublishes(store: ObjectStore, loadWarehouse: LoadWarehouse, workDir: string, log: Log): Promise<string[]> {
  const keys = await store.list(PUBLISH_PREFIX);
  const journals = keys.filter((k) => JOURNAL.test(k));
  const repaired: string[] = [];
  const named = new Set<string>();
  for (const key of journals) {
    const body = await store.get(key);
    if (!body) continue;
    const journal = JSON.parse(body.toString('utf8')) as Journal;
    named.add(stagedPrefix(nameOf(journal), journal.run));
    log.warn('publish.recover', { day: journal.day, run: journal.run, hint: 'a run was stopped while publishing this day; completing it from the files it staged' });
    if (loadWarehouse) {
      const dir = await mkdtemp(join(workDir, `recover-${journal.day}-`));
      try {
        const files: OutputFile[] = [];
        for (const t of journal.tables) {
          const local = join(dir, `${t.table}.parquet`);
          // Staged files are moved away only after the load: if one is gone, the load already happened.
          if ((await store.size(t.stagedKey)) === null) break;
          await store.download(t.stagedKey, local);
          files.push({ table: t.table, key: t.key, rows: t.rows, bytes: t.bytes, local, stagedKey: t.stagedKey, ...(t.dateColumn ? { dateColumn: t.dateColumn } : {}), ...(t.zone ? { zone: t.zone } : {}) });
        }
        if (files.length === journal.tables.length) await loadWarehouse(journal.day, files);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
    await finish(store, journal, true);
    repaired.push(journal.day);
  }
  // Files staged by runs stopped before they wrote their journal: nothing refers to them.
  for (const key of keys) {
    if (journals.includes(key)) continue;
    const m = STAGED.exec(key);
    if (m && !named.has(m[0])) await store.delete(key);
  }
  // What publications left of their folders (a directory output), so that this listing stays as short as what is pending.
  await store.prune(PUBLISH_PREFIX);
  return repaired;
}

/**
 * Step 4: each staged file into place, then the journal goes. Completing a killed run's publication
 * (`recovering`), files it had moved already are passed over; publishing, every staged file is there.
 */
async function finish(store: ObjectStore, journal: Journal, recovering: boolean): Promise<void> {
  const move = async ({ from, to }: Journal['moves'][number]): Promise<void> => {
    if (!recovering || (await store.size(from)) !== null) await store.move(from, to);
  };
  // The files side by side (on S3 a move is a copy and a delete), and the last of them, the
  // manifest, only once every other is in place: a day with a manifest is a day published whole.
  const last = journal.moves.at(-1);
  await allEnded(journal.moves.slice(0, -1).map((m) => () => move(m)), STORE_CALLS_AT_ONCE);
  if (last) await move(last);
  for (const key of journal.deletes) await store.delete(key);
  await store.delete(journalKey(nameOf(journal)));
  await removeUnder(store, stagedPrefix(nameOf(journal), journal.run));
}
