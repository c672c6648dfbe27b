import { describeRecord, type ParsedLine } from '../../ingest/access-log/parse-output.js';
import { AccessLogRecordReader, type ScannedRecord } from '../../ingest/access-log/record-reader.js';

export const CORPUS = new URL('../fixtures/s3-access-logs/', import.meta.url);

/** Scans one line with the production (WebAssembly) scanner; `look` sees the record during the call. */
export function scanOne<T>(line: string | Buffer, look: (r: ScannedRecord) => T, trailing = true, pingKeys?: readonly string[]): T {
  const reader = pingKeys ? rulesReader(pingKeys) : trailing ? fullReader : ingestReader;
  let out: { v: T } | undefined;
  target = (r) => { out = { v: look(r) }; };
  reader.reset();
  reader.push(typeof line === 'string' ? Buffer.from(line, 'utf8') : line);
  reader.finish();
  if (!out) throw new Error('a blank line makes no record');
  return out.v;
}

let target: (r: ScannedRecord) => void = () => {};
// One reader each, reused: a WebAssembly instance per line would make the fuzz tests crawl.
const fullReader = new AccessLogRecordReader((r) => target(r), { trailing: true });
const ingestReader = new AccessLogRecordReader((r) => target(r), { trailing: false });
const rulesReaders = new Map<string, AccessLogRecordReader>();
/** A reader with the ping rules for these keys, all fields split (as `pingroll parse` reads). */
function rulesReader(pingKeys: readonly string[]): AccessLogRecordReader {
  const k = JSON.stringify(pingKeys);
  let r = rulesReaders.get(k);
  if (!r) rulesReaders.set(k, r = new AccessLogRecordReader((x) => target(x), { trailing: true, pingKeys }));
  return r;
}

/** Bytes the shared scanner has examined (linear-time property test). */
export const scannerWork = (): number => fullReader.work();

/** `pingroll parse` output for one line. */
export function parseOne(line: string, pingKeys: string[] = ['p.gif']): ParsedLine {
  return scanOne(line, (r) => describeRecord(r, true), true, pingKeys);
}
