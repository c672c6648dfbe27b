import { AccessLogReader } from '../../ingest/access-log/access-log-reader.js';
import { describeLine, type ParsedLine } from '../../ingest/access-log/parse-output.js';
import { PingRules } from '../../ingest/access-log/ping-rules.js';

export const CORPUS = new URL('../../../shared/corpus/s3-access-logs/', import.meta.url);

/** `pingroll parse` output for one line. */
export function parseOne(line: string, pingKeys: string[] = ['p.gif']): ParsedLine {
  const reader = new AccessLogReader(new PingRules(pingKeys));
  const b = Buffer.from(line, 'utf8');
  return describeLine(reader, b, 0, b.length, 1, true);
}
