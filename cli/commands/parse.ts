import { createReadStream } from 'node:fs';
import { describeRecord } from '../../ingest/access-log/parse-output.js';
import { AccessLogRecordReader, MAX_RECORD_BYTES } from '../../ingest/access-log/record-reader.js';
import { gunzipIfNeeded } from '../../ingest/object-source/gzip.js';

/** `pingroll parse [FILE]`: one JSON object per non-blank line, for asking why a line counted or not. */
export async function parseCommand(file: string | undefined, pingKeys: readonly string[], withReason: boolean,
  out: NodeJS.WritableStream = process.stdout): Promise<void> {
  let pending: string[] = [];
  const reader = new AccessLogRecordReader((r) => {
    pending.push(JSON.stringify(describeRecord(r, withReason)) + '\n');
  }, {
    trailing: true, pingKeys,
    onOverlong: (o) => {
      pending.push(JSON.stringify({ line: o.lineNo, outcome: 'malformed', fields: null, ping: null, ...(withReason ? { reason: `record longer than ${MAX_RECORD_BYTES} bytes` } : {}) }) + '\n');
    },
  });
  const write = async (): Promise<void> => {
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    if (!out.write(text)) await new Promise((r) => out.once('drain', r));
  };
  const input = file && file !== '-' ? createReadStream(file) : process.stdin;
  for await (const chunk of gunzipIfNeeded(input)) {
    reader.push(chunk);
    await write();
  }
  reader.finish();
  await write();
}
