/**
 * Records of no day (contract §5): those without a time that can be trusted, in log objects whose
 * names hold no date (a README, a binary dropped among the logs). A batch stages and counts them under
 * UNDATED as it does a day's, in the same commit; here each such batch's are published once, after
 * its commit: its rejects at `<batch>.jsonl.gz` in UNDATED_REJECTS (moved from its staging: one copy of
 * the raw records, under the rejects' retention) and, last, its counts of them by source and outcome
 * and the objects that held them at `<batch>.json` there, which says the batch is published. Every
 * run that ingests publishes what a run killed before that left (one listing of the day's index when
 * none is waiting), and says what it published in one line: once a run, not once a day. A shard of a
 * sharded ingest publishes only the batches it committed: its fellow shards publish theirs at once.
 */
import { join } from 'node:path';
import { UNDATED } from '../../ingest/ping-record.js';
import { REJECTS_TAGS, UNDATED_REJECTS } from '../../datasets/layout.js';
import type { OutcomeCounts, Source } from '../../state/ledger.js';
import type { Run } from '../run.js';

/** What one batch's records of no day were: published at `<batch>.json` in UNDATED_REJECTS. */
export interface UndatedBatch {
  batch: string;
  /** The records, by source and outcome (malformed above all). */
  records: Partial<Record<Source, OutcomeCounts>>;
  /** The log objects that held them. */
  objects: string[];
  /** Its rejects (`<batch>.jsonl.gz` in UNDATED_REJECTS), or null when none of the records is one. */
  rejects: string | null;
}

/** Publishes every committed batch's records of no day not yet published (`only`: of these batches); what it published. */
export async function publishUndated(run: Run, only: ReadonlySet<string> | null = null): Promise<UndatedBatch[]> {
  const { store, ledger } = run.state;
  const staged = (await ledger.batchesFor(UNDATED)).filter((b) => only === null || only.has(b));
  if (staged.length === 0) return [];
  const published = new Set((await store.list(UNDATED_REJECTS)).filter((k) => k.endsWith('.json')).map((k) => k.slice(UNDATED_REJECTS.length, -'.json'.length)));
  const waiting = new Set(staged.filter((b) => !published.has(b)));
  if (waiting.size === 0) return [];
  const out: UndatedBatch[] = [];
  for (const input of (await ledger.inputsFor(UNDATED)).filter((i) => waiting.has(i.id))) {
    const objects = (await ledger.objectsOf(input, UNDATED)).map((o) => o.key);
    const rejects = input.staged.rejects ? `${UNDATED_REJECTS}${input.id}.jsonl.gz` : null;
    // Moved, not copied: a run killed midway finds the staged file gone and its copy in place, and goes on.
    if (input.staged.rejects && (await store.size(input.staged.rejects)) !== null) {
      await run.work.withFolder('undated', async (dir) => {
        const local = join(dir, 'rejects.jsonl.gz');
        await store.download(input.staged.rejects!, local);
        await store.put(rejects!, { file: local, move: true }, REJECTS_TAGS);
      });
      await store.delete(input.staged.rejects);
    }
    const batch: UndatedBatch = { batch: input.id, records: input.staged.outcomes, objects, rejects };
    await store.put(`${UNDATED_REJECTS}${input.id}.json`, Buffer.from(JSON.stringify({ run: run.id, at: new Date().toISOString(), ...batch }, null, 2) + '\n'));
    out.push(batch);
  }
  return out;
}

/** The objects a run names in its one line, at most. */
const NAMED = 20;

/** Says, in one line, what `publishUndated` published (nothing when it published nothing). */
export function sayUndated(run: Run, batches: UndatedBatch[]): void {
  if (batches.length === 0) return;
  const objects = [...new Set(batches.flatMap((b) => b.objects))].sort();
  let records = 0;
  for (const b of batches) for (const bySource of Object.values(b.records)) for (const n of Object.values(bySource)) records += n;
  run.log.warn('records.undated', {
    run: run.id, records, objectCount: objects.length, objects: objects.slice(0, NAMED), batches: batches.map((b) => b.batch), rejects: `${run.state.store.url}${UNDATED_REJECTS}`,
    reason: `log objects whose names hold no date had records with no time that can be trusted (files that are not access logs?): they belong to no day, and are rejected under ${UNDATED_REJECTS}, counted in each batch's .json there, in no day's audit`,
    hint: 'remove files that are not access logs from the log location (each object is parsed once: they are not read again)',
  });
}
