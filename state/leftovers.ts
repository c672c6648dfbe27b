/**
 * What dead runs left behind, removed by the next run that holds the lock (so that no other run is
 * writing): staged files no commit names (a run killed before its batch commit), temporary files of
 * writes killed midway, and local work folders of processes that are gone. (Files staged for a day's
 * publication are the publish journal's to clean: export/publish-journal.ts.)
 */
import { removeDeadWorkDirs } from '../lib/work-dir.js';
import { BATCHES, SCANS, STAGING, type Ledger } from './ledger.js';
import type { ObjectStore } from './object-store/object-store.js';

export interface Leftovers { staged: number; temporaries: number; workDirs: number }

export async function removeLeftovers(store: ObjectStore, ledger: Ledger): Promise<Leftovers> {
  const named = ledger.stagedKeys();
  let staged = 0;
  for (const key of await store.list(STAGING)) {
    if (named.has(key)) continue;
    await store.delete(key);
    staged++;
  }
  // Not _state/lock/: this run's own lease renewals write there as it goes.
  const temporaries = (await store.removeTemporaries?.([STAGING, BATCHES, SCANS])) ?? 0;
  return { staged, temporaries, workDirs: await removeDeadWorkDirs() };
}
