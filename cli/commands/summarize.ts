import { O_PING, outcomeName } from '../../ingest/access-log/outcome-codes.js';
import { parseStagedRow } from '../../ingest/staged-ping.js';
import { AccessLogRecordReader } from '../../ingest/access-log/record-reader.js';
import { DirectoryObjectSource } from '../../ingest/object-source/directory-object-source.js';
import { gunzipIfNeeded } from '../../ingest/object-source/gzip.js';
import { OUTCOMES, type Outcome } from '../../ingest/ping-record.js';

/**
 * `pingroll summarize DIR`: what the parser makes of a directory of logs: outcome counts and the
 * episodes with the most pings (before duplicates are removed). A quick look, not the rollup.
 */
export async function summarizeCommand(dir: string, pingKeys: readonly string[]): Promise<string> {
  const source = new DirectoryObjectSource(dir);
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  const episodes = new Map<string, number>();
  let objects = 0;
  for await (const ref of source.list()) {
    objects++;
    const reader = new AccessLogRecordReader((r) => {
      outcomes[outcomeName(r)]++;
      if (r.outcome === O_PING) {
        const p = parseStagedRow(r.b, r.rowStart, r.rowEnd);
        const k = `${p.series}\t${p.episode}`;
        episodes.set(k, (episodes.get(k) ?? 0) + 1);
      }
    }, { pingKeys, onOverlong: () => { outcomes.malformed++; } });
    for await (const chunk of gunzipIfNeeded(await source.open(ref))) reader.push(chunk);
    reader.finish();
  }
  const records = Object.values(outcomes).reduce((a, b) => a + b, 0);
  const top = [...episodes].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 10);
  const lines = [`${records} records in ${objects} objects`];
  for (const o of OUTCOMES) if (o !== 'bad_item') lines.push(`  ${o.padEnd(11)} ${String(outcomes[o]).padStart(9)}`);
  lines.push('top episodes by pings (before dedupe):');
  for (const [k, n] of top) {
    const [series, episode] = k.split('\t');
    lines.push(`  ${String(n).padStart(7)}  ${series} / ${episode}`);
  }
  return lines.join('\n') + '\n';
}
