/**
 * Everything staged for a day, as its rollup and its manifest need it: the staged ping files (each
 * checked to be there, with its size; fetched to this machine when the engine reads local files), the
 * record counts by source and outcome, the staged rejects, and the record of what the day is made of
 * (batches, table reads, the lists of log objects) that its manifest names.
 */
import { join } from 'node:path';
import { allEnded, STORE_CALLS_AT_ONCE } from '../lib/all-ended.js';
import type { Ledger, TablePart } from './ledger.js';
import type { ObjectStore } from './object-store/object-store.js';

/** What a day was made from, as its manifest names it (contract §6). */
export interface DaySources {
  /** Log objects that held records of the day. */
  objectCount: number;
  /**
   * Where they are listed, a list per batch (JSON lines of key, size, etag, records; gzip), with its
   * count and the SHA-256 of its bytes. A list is never rewritten once its batch is committed.
   */
  objectLists: Array<{ batch: string; key: string | null; objects: number; sha256: string | null }>;
  /** The staged ping files the day was rolled up from (under STAGING, datasets/layout.ts), with their sizes. */
  staged: Array<{ key: string; size: number }>;
  /** The table reads: a sharded ingest's are parts (`part`: of how many, which), together the whole table. */
  tables: Array<{ table: string; scan: string; items: number; consumedCapacity: number; part?: TablePart }>;
  /** The ids of the batches and table scans the day was rolled up from. */
  batches: string[];
}

export interface DayInputs {
  day: string;
  /** The staged ping files: output-relative key, size, and the local path (null: not fetched). */
  staged: Array<{ key: string; size: number; local: string | null }>;
  /** Records of the day by source and outcome. */
  outcomes: Record<string, Record<string, number>>;
  /** The staged rejects' keys, a file per batch that had some. */
  rejects: string[];
  sources: DaySources;
}

/**
 * Gathers `day`: each staged file asked for (that it is there, and its size, which the manifest and
 * Redshift's COPY manifests name) and, with `fetchTo`, fetched into that folder (a local store's are
 * read where they are: staged files never change once committed), STORE_CALLS_AT_ONCE at a time: one
 * after another, a busy day's thousands of staged files on S3 cost a round trip each. The manifest
 * names each batch's list of log objects, with its count and digest: it does not copy them (a busy
 * day has millions; one string of them all cannot be made).
 */
export async function gatherDay(store: ObjectStore, ledger: Ledger, day: string, fetchTo: string | null): Promise<DayInputs> {
  const inputs = await ledger.inputsFor(day);
  const sources: DaySources = { objectCount: 0, objectLists: [], staged: [], tables: [], batches: inputs.map((s) => s.id) };
  const wanted = inputs.flatMap(({ id, staged: s, table }, i) => (s.pings ?? []).map((key, k) => ({ id, table, i, k, key })));
  const staged = await allEnded(wanted.map(({ id, table, i, k, key }) => async () => {
    const size = await store.size(key);
    if (size === null) {
      throw new Error(`the staged pings ${store.url}${key} are missing, though ${table ? `the scan of ${table.name}` : `batch ${id}`} names them: `
        + (table ? `run again with --rescan, which reads the table anew` : await ledger.reparseHint(id)));
    }
    if (fetchTo === null) return { key, size, local: null };
    let local = store.localFile(key);
    if (!local) {
      local = join(fetchTo, `staged-${day}-${i}-${k}.parquet`);
      await store.download(key, local);
    }
    return { key, size, local };
  }), STORE_CALLS_AT_ONCE);
  sources.staged = staged.map(({ key, size }) => ({ key, size }));
  const outcomes: DayInputs['outcomes'] = {};
  const rejects: string[] = [];
  for (const { id, staged: s, objectCount, objectsKey, objectsSha256, table } of inputs) {
    for (const [src, counts] of Object.entries(s.outcomes)) {
      const into = (outcomes[src] ??= {});
      for (const [o, n] of Object.entries(counts)) into[o] = (into[o] ?? 0) + (n ?? 0);
    }
    if (s.rejects) rejects.push(s.rejects);
    sources.objectCount += objectCount;
    if (objectCount > 0) sources.objectLists.push({ batch: id, key: objectsKey, objects: objectCount, sha256: objectsSha256 });
    if (table) sources.tables.push({ table: table.name, scan: table.scan, items: table.items, consumedCapacity: table.consumedCapacity, ...(table.part ? { part: table.part } : {}) });
  }
  return { day, staged, outcomes, rejects, sources };
}
