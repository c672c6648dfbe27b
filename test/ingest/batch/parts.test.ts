/**
 * Parts near a batch's end: the parser cuts them smaller as the log bytes still to come run out, so
 * that the part made Parquet after parsing ends is small; every row is in exactly one part either way.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stagedRowSpans } from '../../../ingest/staged-ping.js';
import { ObjectParser } from '../../../ingest/batch/object-parser.js';
import { OUTCOMES } from '../../../ingest/ping-record.js';
import { generateSample } from '../../../tools/sample/access-log-generator.js';
import { rm, tempDir } from '../../support/job-fixture.js';

const DAY = '2026-11-01';
const dir = tempDir();
afterAll(() => rm(dir, { recursive: true, force: true }));

const sample = generateSample({ date: DAY, sessions: 60, seed: 5, recordsPerObject: 50 });
const PART_BYTES = 32 << 10;
const TAIL_BYTES = 2 << 10;

/** Every object of the sample parsed in order, told (or not) the log bytes listed after each: the parts' sizes, and the pings counted. */
function parseAll(name: string, tellAfter: boolean): { parts: number[]; pings: number; rows: number } {
  const out = join(dir, name);
  mkdirSync(out, { recursive: true });
  const parts: number[] = [];
  let rows = 0;
  const parser = new ObjectParser({
    pingKeys: ['p.gif'], dir: out, name, partBytes: PART_BYTES, tailPartBytes: TAIL_BYTES,
    onPart: (path) => {
      const bytes = readFileSync(path);
      parts.push(bytes.length);
      rows += [...stagedRowSpans(bytes)].length;
    },
  });
  const bodies = sample.objects.map((o) => Buffer.from(o.text));
  let after = bodies.reduce((n, b) => n + b.length, 0);
  let pings = 0;
  bodies.forEach((body, index) => {
    after -= body.length;
    const file = join(out, `object-${index}`);
    writeFileSync(file, body);
    const parsed = parser.parse({ index, key: `${DAY}-10-00-00-${index}`, day: DAY, file, size: body.length, ...(tellAfter ? { after } : {}) });
    for (const [, counts] of parsed.counts) pings += counts[OUTCOMES.indexOf('ping')]!;
  });
  parser.flush();
  parser.close();
  return { parts, pings, rows };
}

describe('parts near the end of a batch', () => {
  const plain = parseAll('plain', false);
  const tail = parseAll('tail', true);

  it('hold every row once, told the bytes to come or not', () => {
    expect(plain.pings).toBeGreaterThan(1000);
    for (const run of [plain, tail]) expect(run.rows).toBe(run.pings);
    expect(tail.parts.reduce((a, b) => a + b, 0)).toBe(plain.parts.reduce((a, b) => a + b, 0));
  });

  it('are cut at the part size until the rows to come are fewer, then about halved down to the smallest', () => {
    // Without the bytes to come, every part but the last is full.
    expect(plain.parts.length).toBeGreaterThan(1);
    for (const size of plain.parts.slice(0, -1)) expect(size).toBeGreaterThanOrEqual(PART_BYTES);
    const full = tail.parts.findIndex((size) => size < PART_BYTES);
    expect(full).toBeGreaterThan(0);
    const shrinking = tail.parts.slice(full);
    // Several parts in the tail, each (but the last) smaller than the one before and no smaller than the floor.
    expect(shrinking.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < shrinking.length - 1; i++) expect(shrinking[i]!).toBeLessThan(shrinking[i - 1]!);
    for (const size of shrinking.slice(0, -1)) expect(size).toBeGreaterThanOrEqual(TAIL_BYTES);
    // The part left when parsing ends is small: within a few objects' rows of the floor.
    const objectRows = Math.max(...sample.objects.map((o) => o.text.length)) / 2;
    expect(tail.parts.at(-1)!).toBeLessThan(TAIL_BYTES + objectRows);
    expect(tail.parts.at(-1)!).toBeLessThan(PART_BYTES / 4);
  });
});
