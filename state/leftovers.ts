/**
 * What dead runs left behind, removed by the next run that holds the lock (so that no other run is
 * writing): batch commits not compacted yet, staging of batches and scans that never committed
 * (Ledger.tidy), temporary files of writes killed midway, what a rollup inside the warehouse left
 * under WAREHOUSE_ROLLUP (the COPY manifests, the UNLOADed files, the viewer key's secret), and
 * local work folders of processes that are gone. (Files staged for a day's publication are the
 * publish journal's to clean: export/publish-journal.ts.) What it reads follows what crashed, not the
 * history.
 */
import { WAREHOUSE_ROLLUP } from '../datasets/layout.js';
import { removeDeadWorkDirs } from '../lib/work-dir.js';
import type { Ledger } from './ledger.js';
import type { ObjectStore } from './object-store/object-store.js';

export interface Leftovers { staged: number; compacted: number; temporaries: number; workDirs: number; warehouseRollup: number }

/** `shard`: the run is that shard of a sharded ingest, and removes only its own dead batches (see Ledger.tidy). */
export async function removeLeftovers(store: ObjectStore, ledger: Ledger, shard?: string): Promise<Leftovers> {
  const { staged, compacted } = await ledger.tidy(shard);
  const temporaries = await store.removeTemporaries();
  // Only a run that holds the output alone: a shard runs beside others, one of which may be rolling up.
  let warehouseRollup = 0;
  if (shard === undefined) {
    for (const key of await store.list(WAREHOUSE_ROLLUP)) {
      await store.delete(key);
      warehouseRollup++;
    }
  }
  return { staged, compacted, temporaries, workDirs: await removeDeadWorkDirs(), warehouseRollup };
}
