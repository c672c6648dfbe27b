/**
 * Fuzzed object shapes: the same records, whatever shape their object takes (line ends LF, CRLF or a
 * lone CR, blank lines between, the last line ended or not, gzip or not, read from a file or fetched
 * bytes), give the same outcome counts, record for record; nothing is lost or counted twice.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ObjectParser, type ParsedObject } from '../../../ingest/batch/object-parser.js';
import { generateSample } from '../../../tools/sample/access-log-generator.js';
import { OUTCOMES, UNDATED } from '../../../ingest/ping-record.js';
import { rm, tempDir } from '../../support/job-fixture.js';

const DAY = '2026-11-01';
const dir = tempDir();
afterAll(() => rm(dir, { recursive: true, force: true }));
mkdirSync(join(dir, 'parts'), { recursive: true });

const sample = generateSample({ date: DAY, sessions: 20, seed: 17, recordsPerObject: 400 });
const LINES = sample.objects.flatMap((o) => o.text.split('\n').filter(Boolean)).slice(0, 400);
// A few records that are not pings or not records at all, so that rejects are among them.
const JUNK = ['garbage', '\u0000\u0001binary\u00ff', 'a "quoted" thing [01/Nov/2026:10:00:00 +0000]'];

const parser = new ObjectParser({ pingKeys: ['p.gif'], dir: join(dir, 'parts'), name: 'shapes', partBytes: 1 << 30, onPart: () => {} });
let n = 0;

/** Outcome counts of one object, summed over its days. */
function counts(p: ParsedObject): number[] {
  const out = new Array<number>(p.counts[0]?.[1].length ?? 0).fill(0);
  for (const [, c] of p.counts) c.forEach((k, i) => { out[i] = (out[i] ?? 0) + k; });
  return out;
}

function parse(body: Buffer, asFile: boolean): ParsedObject {
  const key = `${DAY}-10-00-00-SHAPE${n++}`;
  if (!asFile) return parser.parse({ index: 0, key, day: DAY, bytes: new Uint8Array(body) });
  const file = join(dir, key);
  writeFileSync(file, body);
  return parser.parse({ index: 0, key, day: DAY, file, size: body.length });
}

describe('an object\'s shape', () => {
  it('never changes what its records count for', () => {
    const record = fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...LINES) }, { weight: 1, arbitrary: fc.constantFrom(...JUNK) });
    const shaped = fc.record({
      records: fc.array(fc.record({ text: record, end: fc.constantFrom('\n', '\r\n', '\r'), blanks: fc.constantFrom('', '', '\n', '\r\n', ' \t\n') }), { minLength: 1, maxLength: 60 }),
      lastEnded: fc.boolean(), gzip: fc.boolean(), asFile: fc.boolean(),
    });
    fc.assert(fc.property(shaped, ({ records, lastEnded, gzip, asFile }) => {
      const plain = Buffer.from(records.map((r) => `${r.text}\n`).join(''));
      const want = counts(parse(plain, false));
      const text = records.map((r, i) => (i === records.length - 1 && !lastEnded ? r.text : `${r.text}${r.end}${r.blanks}`)).join('');
      const body = gzip ? gzipSync(text) : Buffer.from(text);
      const got = parse(body, asFile);
      expect(got.unreadable).toBeUndefined();
      expect(counts(got)).toEqual(want);
      expect(got.records).toBe(records.length);
    }), { numRuns: 300 });
  });
});

describe('an object whose bytes make the parser fail', () => {
  it('is quarantined with the reason instead of stopping the run, and the next object parses with a fresh reader', () => {
    const p = new ObjectParser({ pingKeys: ['p.gif'], dir: join(dir, 'parts'), name: 'failing', partBytes: 1 << 30, onPart: () => {} });
    const body = Buffer.from(`${LINES.slice(0, 20).join('\n')}\n`);
    const want = counts(p.parse({ index: 0, key: `${DAY}-10-00-00-A`, day: DAY, bytes: new Uint8Array(body) }));
    // As a WebAssembly memory that cannot grow would fail.
    (p as unknown as { reader: { push: () => void } }).reader.push = () => { throw new RangeError('WebAssembly.Memory.grow(): Maximum memory size exceeded'); };
    const failed = p.parse({ index: 1, key: `${DAY}-10-00-00-B`, day: DAY, bytes: new Uint8Array(body) });
    expect(failed).toMatchObject({ records: 0, counts: [], rejects: null });
    expect(failed.unreadable).toBe('could not be parsed (WebAssembly.Memory.grow(): Maximum memory size exceeded): a bug in pingroll; please report it with this object');
    expect(counts(p.parse({ index: 2, key: `${DAY}-10-00-00-C`, day: DAY, bytes: new Uint8Array(body) }))).toEqual(want);
  });
});

describe('an object whose name holds no date (day null)', () => {
  it('gives its records with a time their days, and those without one (a time of -, a malformed line) UNDATED, whichever code counts them', () => {
    const notPing = LINES.find((l) => !l.includes(' p.gif '))!;
    const ping = LINES.find((l) => / REST\.GET\.OBJECT p\.gif "GET \/p\.gif\?x-series=\w+&x-episode=\w+&x-session=[^& ]+[^"]*" 200 /.test(l))!;
    const body = Buffer.from([ping, notPing, notPing.replace(/\[[^\]]+\]/, '-'), 'not a record'].join('\n') + '\n');
    const byDay = (day: string | null) => {
      const got = parser.parse({ index: 0, key: `notes/README-${n++}`, day, bytes: new Uint8Array(body) });
      return Object.fromEntries(got.counts.map(([d, c]) => [d, Object.fromEntries(OUTCOMES.flatMap((o, i) => (c[i] ? [[o, c[i]]] : [])))]));
    };
    expect(byDay(null)).toEqual({ [DAY]: { ping: 1, not_ping: 1 }, [UNDATED]: { not_ping: 1, malformed: 1 } });
    // With a day in its name, they are that day's (contract §5).
    expect(byDay(DAY)).toEqual({ [DAY]: { ping: 1, not_ping: 2, malformed: 1 } });
  });
});
