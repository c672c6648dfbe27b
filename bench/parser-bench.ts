/**
 * `make bench` (parser part): the access-log scanner on a generated day of at least 1M records,
 * beside two baselines measured in the same run over the same bytes:
 *  - a raw newline scan (the floor: reading the file and finding line ends, nothing else);
 *  - the regex AWS documents for Athena, over the same lines.
 * Every reader reads the file the same way, in ingest's READ_BYTES with a synchronous read into
 * memory it reuses (see readFile). Passes are interleaved; ratios are taken within a pass, then the
 * median.
 * Ratios, not seconds, are the result: this machine is noisy.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { defaultConfig } from '../infra/config.js';
import { AccessLogRecordReader, READ_BYTES, type ReaderOptions, type ScannedRecord } from '../ingest/access-log/record-reader.js';
import { PingRules } from '../test/ingest/access-log/reference/ping-rules.js';
import { ATHENA_REGEX } from './athena-regex.js';
import { LineSplitter } from './line-splitter.js';
import { RecordSpans } from '../test/ingest/access-log/reference/record-scanner.js';
import { median } from './cold-run.js';
import { benchLogFile } from './bench-data.js';

interface Pass { seconds: number; lines: number; unparsed: number }
type Runner = (path: string) => Promise<Pass>;

async function timed(fn: () => Promise<Omit<Pass, 'seconds'>>): Promise<Pass> {
  const t0 = process.hrtime.bigint();
  const r = await fn();
  return { ...r, seconds: Number(process.hrtime.bigint() - t0) / 1e9 };
}

/**
 * Every reader reads the file this way: synchronous reads of READ_BYTES (ingest's read size, 256 KiB;
 * the newline scan is as fast with it as with 1 MiB reads) into memory it reuses (`into` says where
 * the next read goes), each handed to `onRead`. Synchronous, as ingest's ObjectParser reads a local
 * file too: an asynchronous read copies on a libuv worker thread, which for one stream makes every
 * reader fetch each cache line from the other core (measured: the newline scan ~2x, the scanner and
 * the regex 1.1-1.5x slower that way). The floor should be the cheapest way to the bytes.
 */
function readFile(path: string, into: () => Uint8Array, onRead: (n: number) => void): void {
  const fd = openSync(path, 'r');
  try {
    for (let n; (n = readSync(fd, into())) > 0;) onRead(n);
  } finally {
    closeSync(fd);
  }
}

export const newlineScan: Runner = (path) => timed(async (): Promise<{ lines: number; unparsed: number }> => {
  let lines = 0;
  const buf = Buffer.allocUnsafe(READ_BYTES);
  readFile(path, () => buf, (n) => {
    const chunk = buf.subarray(0, n);
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines++;
  });
  return { lines, unparsed: 0 };
});

function overLines(path: string, onLine: (b: Buffer, s: number, e: number) => boolean): Promise<Pass> {
  return timed(async () => {
    let lines = 0, unparsed = 0;
    const splitter = new LineSplitter((b, s, e) => {
      lines++;
      if (!onLine(b, s, e)) unparsed++;
    });
    // The splitter copies a partial last line, so the buffer can be read into again.
    const buf = Buffer.allocUnsafe(READ_BYTES);
    readFile(path, () => buf, (n) => splitter.push(buf.subarray(0, n)));
    splitter.end();
    return { lines, unparsed };
  });
}

export const athenaRegex: Runner = (path) => overLines(path, (b, s, e) => ATHENA_REGEX.exec(b.toString('utf8', s, e)) !== null);

/** The production scanner, reading the file straight into its memory as ingest does, handing each record to `onRecord`. */
function overRecords(path: string, options: ReaderOptions, onRecord: (r: ScannedRecord) => boolean): Promise<Pass> {
  return timed(async () => {
    let lines = 0, unparsed = 0;
    const reader = new AccessLogRecordReader((r) => {
      lines++;
      if (!onRecord(r)) unparsed++;
    }, options);
    readFile(path, () => reader.inputSpace(READ_BYTES), (n) => reader.scanRead(n));
    reader.finish();
    return { lines, unparsed };
  });
}

/** As ingest runs it: fields after the user agent checked for stray quotes but left whole. */
export const scanner: Runner = (path) => overRecords(path, {}, (r) => r.error === 0);

/** Every field split, as `pingroll parse` prints them. */
export const scannerAllFields: Runner = (path) => overRecords(path, { trailing: true }, (r) => r.error === 0);

/** The scanner and the ping rules, both WebAssembly, staged rows made: what ingest does per record. */
export const scannerAndRules: Runner = (path) => overRecords(path, { pingKeys: defaultConfig().pingKeys }, (r) => r.error === 0);

/** The scanner and the TypeScript reference ping rules (JavaScript objects and strings per ping), for scale. */
export const scannerAndReferenceRules: Runner = (path) => {
  const rules = new PingRules();
  return overRecords(path, {}, (r) => rules.classify(r) !== null && r.error === 0);
};

/** The TypeScript reference scanner (readable, not fast), for scale. */
export const referenceScanner: Runner = (path) => {
  const spans = new RecordSpans(false);
  return overLines(path, (b, s, e) => spans.scan(b, s, e) === 0);
};


async function main(): Promise<void> {
  const { path, records } = await benchLogFile(1_000_000);
  const bytes = (await stat(path)).size;
  const readers = [
    ['raw newline scan (floor)', newlineScan],
    ['Athena regex (AWS docs), V8 irregexp', athenaRegex],
    ['pingroll scanner (WebAssembly SIMD), ingest mode', scanner],
    ['pingroll scanner, all 27 fields split', scannerAllFields],
    ['pingroll scanner + ping rules, staged rows (ingest)', scannerAndRules],
    ['pingroll scanner + TypeScript reference ping rules', scannerAndReferenceRules],
    ['TypeScript reference scanner', referenceScanner],
  ] as const;
  const passes = Number(process.env.BENCH_PASSES ?? 5);
  // Interleaved: every pass runs each reader once, so drift on a shared machine hits all alike, and
  // ratios are taken within a pass before the median is.
  const runs: Pass[][] = readers.map(() => []);
  for (const [, run] of readers) await run(path); // warm-up: page cache and JIT
  for (let pass = 0; pass < passes; pass++) {
    for (let i = 0; i < readers.length; i++) runs[i]!.push(await readers[i]![1](path));
    process.stderr.write(`pass ${pass + 1}/${passes}\n`);
  }
  const seconds = runs.map((r) => median(r.map((p) => p.seconds)));
  const vsFloor = runs.map((r) => median(r.map((p, k) => p.seconds / runs[0]![k]!.seconds)));
  const regexOverScanner = median(runs[2]!.map((p, k) => runs[1]![k]!.seconds / p.seconds));
  const out = [
    `parser bench: ${records.toLocaleString('en')} records, ${(bytes / 1e6).toFixed(0)} MB, node ${process.version}, ${passes} interleaved passes, medians`,
    '',
    '| reader | records/s | MB/s | time vs newline scan | unparsed records |',
    '|---|---:|---:|---:|---:|',
    ...readers.map(([name], i) => `| ${name} | ${Math.round(records / seconds[i]!).toLocaleString('en')} | ${(bytes / 1e6 / seconds[i]!).toFixed(0)} | ${vsFloor[i]!.toFixed(2)}x | ${runs[i]![0]!.unparsed} |`),
    '',
    `scanner: ${regexOverScanner.toFixed(2)}x faster than the Athena regex, ${vsFloor[2]!.toFixed(2)}x the time of the newline scan`,
  ];
  process.stdout.write(out.join('\n') + '\n');
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
