import type { Verdict } from '../ping-record.js';
import { PingRules } from './ping-rules.js';
import { RecordSpans } from './record-scanner.js';

/**
 * One record's verdict from one line: the scanner, then the ping rules. Keeps its scratch state, so
 * one reader serves a whole stream; not for sharing between concurrent streams.
 */
export class AccessLogReader {
  readonly spans = new RecordSpans();
  lastScanError = 0;

  constructor(readonly rules: PingRules = new PingRules()) {}

  read(b: Buffer, start: number, end: number): Verdict {
    this.lastScanError = this.spans.scan(b, start, end);
    return this.rules.classify(b, this.spans, this.lastScanError);
  }
}
