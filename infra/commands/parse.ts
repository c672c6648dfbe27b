import { createReadStream } from 'node:fs';
import { AccessLogReader } from '../../ingest/access-log/access-log-reader.js';
import { splitLines } from '../../ingest/access-log/line-splitter.js';
import { describeLine } from '../../ingest/access-log/parse-output.js';
import { PingRules } from '../../ingest/access-log/ping-rules.js';
import { gunzipIfNeeded } from '../../ingest/log-source/gzip.js';

/** `pingroll parse [FILE]`: one JSON object per non-blank line, for asking why a line counted or not. */
export async function parseCommand(file: string | undefined, pingKeys: readonly string[], withReason: boolean,
  out: NodeJS.WritableStream = process.stdout): Promise<void> {
  const reader = new AccessLogReader(new PingRules(pingKeys));
  const input = file && file !== '-' ? createReadStream(file) : process.stdin;
  let pending: string[] = [];
  const flush = async (): Promise<void> => {
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    if (!out.write(text)) await new Promise((r) => out.once('drain', r));
  };
  const chunks = gunzipIfNeeded(input);
  await splitLines(chunks, (b, s, e, lineNo) => {
    pending.push(JSON.stringify(describeLine(reader, b, s, e, lineNo, withReason)) + '\n');
  });
  await flush();
}
