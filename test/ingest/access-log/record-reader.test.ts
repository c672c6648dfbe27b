/**
 * Records longer than MAX_RECORD_BYTES (a binary object, an object with no newline): one record each,
 * handed over with their first bytes, length and SHA-256, never scanned, whether they end inside a
 * read or many reads later; the records around them read as they would alone; the work stays linear.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AccessLogRecordReader, MAX_RECORD_BYTES, OVERLONG_KEEP_BYTES, READ_BYTES, type Overlong } from '../../../ingest/access-log/record-reader.js';

const REAL = readFileSync('test/fixtures/s3-access-logs/lines.txt', 'utf8').split('\n').filter((l) => l.trim()).slice(0, 5);

/** What a reader hands over for `input` pushed in `chunk`-byte pieces: each record's line and outcome, and each too-long record. */
function read(input: Buffer, chunk: number | number[], via: 'push' | 'scanRead' = 'push'): { records: Array<[number, number]>; overlong: Overlong[]; work: number } {
  const records: Array<[number, number]> = [];
  const overlong: Overlong[] = [];
  const reader = new AccessLogRecordReader((r) => records.push([r.lineNo, r.lineEnd - r.lineStart]), { pingKeys: ['p.gif'], onOverlong: (o) => overlong.push(o) });
  const before = reader.work();
  // A file's reads land in the reader's own memory (inputSpace, then scanRead); other streams are pushed.
  const push = (piece: Buffer): void => {
    if (via === 'push') return reader.push(piece);
    reader.inputSpace(piece.length).set(piece);
    reader.scanRead(piece.length);
  };
  // A size: reads of that many bytes; a list: reads of 4 KiB up to the first offset, then cut at each.
  const cuts = typeof chunk === 'number' ? [] : chunk;
  const size = typeof chunk === 'number' ? chunk : 4096;
  let at = 0;
  for (const cut of cuts) {
    for (; at < cut; at = Math.min(cut, at + size)) push(input.subarray(at, Math.min(cut, at + size)));
  }
  for (; at < input.length; at += size) push(input.subarray(at, at + size));
  reader.finish();
  return { records, overlong, work: reader.work() - before };
}

describe('a record longer than the longest', () => {
  const long = Buffer.alloc(3 * MAX_RECORD_BYTES + 12345, 'x');
  const sha = createHash('sha256').update(long).digest('hex');
  const input = Buffer.from([REAL[0], REAL[1], long.toString(), REAL[2], long.toString(), REAL[3]].join('\n'));
  const alone = read(Buffer.from([REAL[0], REAL[1], REAL[2], REAL[3]].join('\n')), READ_BYTES);

  it.each([['in one read', input.length], ['across reads', READ_BYTES], ['in small pieces', 4096]])('is one record with its head, length and SHA-256 (%s); the others read as they would alone', (_name, chunk) => {
    const got = read(input, chunk);
    expect(got.overlong.map((o) => [o.lineNo, o.bytes, o.sha256, o.head.length])).toEqual([[3, long.length, sha, OVERLONG_KEEP_BYTES], [5, long.length, sha, OVERLONG_KEEP_BYTES]]);
    expect(got.overlong[0]!.head.toString()).toBe('x'.repeat(OVERLONG_KEEP_BYTES));
    // The same records, numbered around the long ones.
    expect(got.records.map(([, len]) => len)).toEqual(alone.records.map(([, len]) => len));
    expect(got.records.map(([n]) => n)).toEqual([1, 2, 4, 6]);
  });

  describe('ended by CRLF or a lone CR', () => {
    const crlf = Buffer.from([REAL[0], REAL[1], long.toString(), REAL[2], long.toString(), REAL[3]].join('\r\n') + '\r\n');
    const lone = Buffer.from([REAL[0], REAL[1], long.toString(), REAL[2], long.toString(), REAL[3]].join('\r') + '\r');
    // The first long line's CR, as the last byte of a read and as the first.
    const cr = REAL[0]!.length + 2 + REAL[1]!.length + 2 + long.length;
    it.each([
      ['CRLF, in one read', crlf, crlf.length], ['CRLF, across reads', crlf, READ_BYTES], ['CRLF, in small pieces', crlf, 4096],
      ['CRLF, a read ending at the CR', crlf, cr + 1], ['CRLF, a read starting at the CR', crlf, cr],
      ['CRLF, reads of 4 KiB and one ending at the CR', crlf, [cr - 4096, cr + 1]], ['lone CR, across reads', lone, READ_BYTES], ['lone CR, a read ending at the CR', lone, cr + 1],
    ].flatMap(([name, bytes, chunk]) => (['push', 'scanRead'] as const).map((via) => [`${name as string}, by ${via}`, bytes, chunk, via] as const)))('is the same record with the same numbers around it, whatever the reads (%s)', (_name, bytes, chunk, via) => {
      const got = read(bytes as Buffer, chunk as number | number[], via);
      expect(got.overlong.map((o) => [o.lineNo, o.bytes, o.sha256])).toEqual([[3, long.length, sha], [5, long.length, sha]]);
      // The records around them as they read alone, with the same line endings.
      const end = bytes === crlf ? '\r\n' : '\r';
      const without = read(Buffer.from([REAL[0], REAL[1], REAL[2], REAL[3]].join(end) + end), READ_BYTES);
      expect(got.records.map(([n, len]) => [n, len])).toEqual(without.records.map(([, len], i) => [[1, 2, 4, 6][i], len]));
    });
  });

  it.each(['push', 'scanRead'] as const)('is not a line of exactly MAX_RECORD_BYTES and its CR, when a read ends at the CR (by %s)', (via) => {
    const line = `${REAL[0]} ${'z'.repeat(MAX_RECORD_BYTES - REAL[0]!.length - 1)}`;
    for (const end of ['\r\n', '\r']) {
      const bytes = Buffer.from(`${REAL[1]}${end}${line}${end}${REAL[2]}${end}`);
      const cr = REAL[1]!.length + end.length + line.length;
      const got = read(bytes, [cr + 1], via);
      expect(got.overlong, JSON.stringify(end)).toEqual([]);
      expect(got.records.map(([n]) => n), JSON.stringify(end)).toEqual([1, 2, 3]);
    }
  });

  it('at the end of an object, with no newline, is one record too', () => {
    const got = read(Buffer.concat([Buffer.from(`${REAL[0]}\n`), long]), READ_BYTES);
    expect(got.overlong.map((o) => [o.lineNo, o.bytes, o.sha256])).toEqual([[2, long.length, sha]]);
    expect(got.records).toHaveLength(1);
  });

  it('costs the scanner nothing: the work does not grow with its length', () => {
    const small = read(Buffer.from([REAL[0], 'y'.repeat(MAX_RECORD_BYTES + 1), REAL[1]].join('\n')), READ_BYTES);
    const big = read(Buffer.from([REAL[0], 'y'.repeat(40 * MAX_RECORD_BYTES), REAL[1]].join('\n')), READ_BYTES);
    expect(big.overlong[0]!.bytes).toBe(40 * MAX_RECORD_BYTES);
    expect(big.work).toBeLessThan(small.work + 4 * READ_BYTES);
  });

  it('is not a record up to the longest: a line of exactly MAX_RECORD_BYTES is scanned', () => {
    const line = `${REAL[0]} ${'z'.repeat(MAX_RECORD_BYTES - REAL[0]!.length - 1)}`;
    const got = read(Buffer.from(`${line}\n${REAL[1]}\n`), READ_BYTES);
    expect(got.overlong).toEqual([]);
    expect(got.records.map(([n, len]) => [n, len])).toEqual([[1, MAX_RECORD_BYTES], [2, REAL[1]!.length]]);
  });
});
