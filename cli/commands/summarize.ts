import { join } from 'node:path';
import { O_PING, outcomeName } from '../../ingest/access-log/outcome-codes.js';
import { parseStagedRow } from '../../ingest/staged-ping.js';
import { AccessLogRecordReader } from '../../ingest/access-log/record-reader.js';
import { DirectoryObjectSource } from '../../ingest/object-source/directory-object-source.js';
import { gunzipIfNeeded } from '../../ingest/object-source/gzip.js';
import { OUTCOMES, type Outcome } from '../../ingest/ping-record.js';

/** What summarize read: the summary, and the objects it could not read (not counted in it). */
export interface Summary {
  text: string;
  unreadable: Array<{ path: string; reason: string }>;
}

/**
 * `pingroll summarize DIR`: what the parser makes of a directory of logs: outcome counts and the
 * episodes with the most pings (before duplicates are removed). A quick look, not the rollup. An
 * object that cannot be read (a corrupt or truncated gzip, a file it may not open) counts for
 * nothing, as in a run, and is named with why: the rest is summarized.
 */
export async function summarizeCommand(dir: string, pingKeys: readonly string[]): Promise<Summary> {
  const source = new DirectoryObjectSource(dir);
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  const episodes = new Map<string, number>();
  const unreadable: Summary['unreadable'] = [];
  let objects = 0;
  for await (const ref of source.list()) {
    // One object's counts, added to the summary once it has been read to its end.
    const own = { outcomes: new Map<Outcome, number>(), episodes: new Map<string, number>() };
    const reader = new AccessLogRecordReader((r) => {
      const o = outcomeName(r);
      own.outcomes.set(o, (own.outcomes.get(o) ?? 0) + 1);
      if (r.outcome === O_PING) {
        const p = parseStagedRow(r.b, r.rowStart, r.rowEnd);
        const k = `${p.series}\t${p.episode}`;
        own.episodes.set(k, (own.episodes.get(k) ?? 0) + 1);
      }
    }, { pingKeys, onOverlong: () => { own.outcomes.set('malformed', (own.outcomes.get('malformed') ?? 0) + 1); } });
    try {
      for await (const chunk of gunzipIfNeeded(await source.open(ref))) reader.push(chunk);
      reader.finish();
    } catch (err) {
      unreadable.push({ path: join(dir, ref.key), reason: unreadableReason(err) });
      continue;
    }
    objects++;
    for (const [o, n] of own.outcomes) outcomes[o] += n;
    for (const [k, n] of own.episodes) episodes.set(k, (episodes.get(k) ?? 0) + n);
  }
  const records = Object.values(outcomes).reduce((a, b) => a + b, 0);
  const top = [...episodes].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 10);
  const lines = [`${records} records in ${objects} objects${unreadable.length ? ` (and ${unreadable.length} that could not be read, not counted)` : ''}`];
  for (const o of OUTCOMES) if (o !== 'bad_item') lines.push(`  ${o.padEnd(11)} ${String(outcomes[o]).padStart(9)}`);
  lines.push('top episodes by pings (before dedupe):');
  for (const [k, n] of top) {
    const [series, episode] = k.split('\t');
    lines.push(`  ${String(n).padStart(7)}  ${series} / ${episode}`);
  }
  return { text: lines.join('\n') + '\n', unreadable };
}

/** Why an object could not be read, in words: zlib's own message names no file and no cause. */
function unreadableReason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const first = String(e?.message ?? err).split('\n')[0]!;
  return typeof e?.code === 'string' && e.code.startsWith('Z_') ? `${first}: a corrupt or truncated gzip` : first;
}

/** The one line for objects summarize could not read: which, why, and what to do. */
export function unreadableLine(unreadable: Summary['unreadable']): string {
  const first = unreadable[0]!;
  return `${unreadable.length} log object${unreadable.length > 1 ? 's' : ''} could not be read and ${unreadable.length > 1 ? 'are' : 'is'} not counted above (first: ${first.path}: ${first.reason}); `
    + 're-deliver or fix it (a whole copy from the bucket), or move it out of the directory, and run again';
}
