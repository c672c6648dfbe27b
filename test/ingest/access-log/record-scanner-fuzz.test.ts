/**
 * Property-based tests of the scanner and the query decoder. Time is asserted through a work
 * counter (bytes examined), not a clock: deterministic on a noisy machine.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
// The WHATWG reference implementation. Node 20's own URLSearchParams reads raw non-ASCII characters
// next to %-escapes as Latin-1 (`a=%C3¡` gives "á", where the standard gives "\uFFFD¡").
import { URLSearchParams as WhatwgSearchParams } from 'whatwg-url';
import { OUTCOMES } from '../../../ingest/ping-record.js';
import { KNOWN_FIELDS } from '../../../ingest/access-log/record-layout.js';
import { RecordSpans } from './reference/record-scanner.js';
import { generateSample } from '../../../tools/sample/access-log-generator.js';
import { parseOne, scanOne, scannerWork } from '../../support/parse-helpers.js';
import { MAX_RECORD_BYTES } from '../../../ingest/access-log/record-reader.js';

/** Characters that matter to the format, often, and anything else sometimes. */
const nasty = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(' ', '"', '-', '[', ']', '0', '2', '5', 'A', 'x', '.', '%', '+', '=', '&', '?') },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
);
/**
 * Blank lines (spaces, tabs, CR) are skipped, not records (contract §3): the properties are about the
 * rest. A lone CR ends a record as LF does (contract §2), so a line holds neither.
 */
const nastyLine = fc.array(nasty, { maxLength: 400 }).map((cs) => cs.join('').replace(/\n|\r/g, ' ')).filter((l) => !/^[ \t\r]*$/.test(l));

const BASE = '79a5 media [01/Nov/2026:10:20:30 +0000] 192.0.2.3';
const REAL = `${BASE} - 3E57427F3EXAMPLE REST.GET.OBJECT p.gif "GET /p.gif?x-series=s&x-episode=e&x-session=x HTTP/1.1" 200 - 43 43 7 2 "-" "Mozilla/5.0" - hostid SigV4 cipher AuthHeader host TLSv1.2 - - -`;

function work(line: string): number {
  const before = scannerWork();
  scanOne(line, () => 0);
  return scannerWork() - before;
}

/** Bytes examined per byte of input, at most: a constant, whatever the line. */
const WORK_PER_BYTE = 80;

describe('the scanner under random input', () => {
  it('never throws, and always gives one of the outcomes', () => {
    fc.assert(fc.property(nastyLine, (line) => {
      const out = parseOne(line);
      expect(OUTCOMES).toContain(out.outcome);
      if (out.outcome === 'malformed') expect(out.fields).toBeNull();
    }), { numRuns: 3000 });
  });

  it('never throws on a real record with random mutations', () => {
    const mutated = fc.tuple(fc.nat(REAL.length), fc.nat(40), nastyLine).map(([at, cut, ins]) => REAL.slice(0, at) + ins + REAL.slice(at + cut));
    fc.assert(fc.property(mutated, (line) => {
      expect(OUTCOMES).toContain(parseOne(line).outcome);
    }), { numRuns: 3000 });
  });

  it('examines a bounded number of bytes per input byte (linear time)', () => {
    fc.assert(fc.property(nastyLine, (line) => {
      expect(work(line)).toBeLessThanOrEqual(WORK_PER_BYTE * (Buffer.byteLength(line) + 1) + 200);
    }), { numRuns: 3000 });
  });

  it.each([
    ['quote-space runs in the request-URI', (k: number) => `${BASE} - R REST.GET.OBJECT p.gif "` + '" 200 - 1 1 1 1 '.repeat(k)],
    ['quote-space runs everywhere', (k: number) => `${BASE} - R REST.GET.OBJECT p.gif "` + '" '.repeat(k)],
    ['a long spaced requester', (k: number) => `${BASE} ` + 'a '.repeat(k) + 'R OP k "GET / HTTP/1.1" 200'],
    ['quoted trailing fields', (k: number) => `${BASE} - R REST.GET.OBJECT p.gif "GET / HTTP/1.1" 200 - 1 1 1 1 "-" "ua` + '" "x'.repeat(k)],
    ['stray quotes after the user agent', (k: number) => `${BASE} - R REST.GET.OBJECT p.gif "GET / HTTP/1.1" 200 - 1 1 1 1 "-" "ua` + '" x"'.repeat(k)],
  ])('stays linear on adversarial lines: %s', (_name, make) => {
    for (const k of [10, 100, 1000, 10000]) {
      // Up to the longest record (a longer line is rejected unread: record-reader.test.ts).
      let line = make(k);
      for (let j = k; Buffer.byteLength(line) > MAX_RECORD_BYTES; j = Math.floor(j * 0.95)) line = make(j);
      expect(work(line), `k=${k}`).toBeLessThanOrEqual(WORK_PER_BYTE * Buffer.byteLength(line) + 200);
    }
  });
});

/** Content a quoted field can hold and still be read back: anything but a quote-space run that would
 * make the following fields fit elsewhere (the contract's rule: the reading under which fields keep their shape). */
const fieldText = (forbid: RegExp) => fc.array(nasty, { minLength: 1, maxLength: 80 })
  .map((cs) => cs.join('').replace(/[\n\r]/g, '_'))
  .filter((s) => !forbid.test(s) && s !== '-' && s.trim() === s && !s.includes('  '));

describe('a valid record survives random content in its quoted fields', () => {
  it('keeps request-URI, referer and user agent intact, and every field after them', () => {
    fc.assert(fc.property(
      fieldText(/" *[\d-]/), // a quote then a status-shaped token would end the URI early
      fieldText(/" *["-]/), // a quote then a field opening would end the referer early
      fieldText(/^$/),
      (uri, referer, agent) => {
        const line = `${BASE} - R1 REST.GET.OBJECT p.gif "GET /${uri} HTTP/1.1" 200 - 43 43 7 2 "${referer}" "${agent}" - hostid SigV4 cipher AuthHeader host TLSv1.2 - - us-east-1`;
        const out = parseOne(line);
        expect(out.outcome).not.toBe('malformed');
        expect(out.fields).toMatchObject({
          request_uri: `GET /${uri} HTTP/1.1`, referer, user_agent: agent, http_status: 200, bytes_sent: 43,
          version_id: null, host_id: 'hostid', signature_version: 'SigV4', source_region: 'us-east-1',
        });
      },
    ), { numRuns: 3000 });
  });
});

describe('query decoding is WHATWG URLSearchParams', () => {
  const names = fc.constantFrom('x-series', 'series', 'x-episode', 'episode', 'x-session', 'session', 'x-user', 'user', 'x-ping', 'ping', 'x%2Dseries', 'cb', 'x-', '');
  const valueChar = fc.oneof(
    fc.constantFrom('%', '+', '%2', '%41', '%E2%9C%93', '%FF', '%C3', '%28', 'a', 'Z', '9', '=', '~', '%20', '%00'),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 2 }).filter((c) => !/[\s&#"]/.test(c)),
  );
  const value = fc.array(valueChar, { maxLength: 8 }).map((cs) => cs.join(''));
  const query = fc.array(fc.tuple(names, fc.option(value, { nil: undefined })), { maxLength: 12 })
    .map((pairs) => pairs.map(([n, v]) => (v === undefined ? n : `${n}=${v}`)).join('&'));

  it('gives the same values, precedence and outcome', () => {
    fc.assert(fc.property(query, (qs) => {
      const params = new WhatwgSearchParams(qs);
      const pick = (name: string): string | null => params.get(`x-${name}`) ?? params.get(name);
      const out = parseOne(`${BASE} - R1 REST.GET.OBJECT p.gif "GET /p.gif?${qs} HTTP/1.1" 200 - 43 43 7 2 "-" "ua" -`);
      const series = pick('series'), episode = pick('episode'), session = pick('session');
      const valid = [series, episode, session].every((v) => v !== null && v !== '' && [...v].length <= 256);
      expect(out.outcome).toBe(valid ? 'ping' : 'bad_query');
      if (valid) {
        expect(out.ping).toMatchObject({ series, episode, session, user: pick('user') || null, ping_id: pick('ping') || null });
      }
    }), { numRuns: 5000 });
  });
});

/** What a scanner made of a line, offsets relative to the line. */
interface Reading { error: number; timeMs: number; count: number; spans: Array<[number, number] | null> }

function reference(line: Buffer, trailing: boolean): Reading {
  const r = new RecordSpans(trailing);
  const error = r.scan(line, 0, line.length);
  const spans = Array.from({ length: KNOWN_FIELDS }, (_, i) => (r.start[i]! < 0 ? null : [r.start[i]!, r.end[i]!] as [number, number]));
  return { error, timeMs: r.timeMs, count: error === 0 ? r.count : 0, spans };
}

function production(line: Buffer, trailing: boolean): Reading {
  return scanOne(line, (r) => ({
    error: r.error, timeMs: r.timeMs, count: r.error === 0 ? r.count : 0,
    spans: Array.from({ length: KNOWN_FIELDS }, (_, i) => (r.start(i) < 0 ? null : [r.start(i) - r.lineStart, r.end(i) - r.lineStart] as [number, number])),
  }), trailing);
}

describe('the WebAssembly scanner reads exactly as the TypeScript reference', () => {
  const realish = fc.tuple(fc.nat(REAL.length), fc.nat(40), nastyLine).map(([at, cut, ins]) => REAL.slice(0, at) + ins + REAL.slice(at + cut));
  it.each([[true], [false]])('on random and mutated lines (trailing fields split: %s)', (trailing) => {
    fc.assert(fc.property(fc.oneof(nastyLine, realish), (line) => {
      const b = Buffer.from(line.replace(/\n/g, ' '), 'utf8');
      expect(production(b, trailing)).toEqual(reference(b, trailing));
    }), { numRuns: 5000 });
  });
  it('on every line of a generated day (spaced requesters, quotes inside user agents, pings, noise)', () => {
    const text = generateSample({ date: '2026-11-01', sessions: 60, seed: 5 }).objects.map((o) => o.text).join('');
    const lines = text.split('\n').filter((l) => l.trim());
    let read = 0;
    for (const line of lines) {
      const b = Buffer.from(line, 'utf8');
      for (const trailing of [true, false]) expect(production(b, trailing), line.slice(0, 80)).toEqual(reference(b, trailing));
      if (reference(b, false).error === 0) read++;
    }
    expect(lines.length).toBeGreaterThan(1000);
    expect(read / lines.length).toBeGreaterThan(0.95);
  });
  it.each([1, 2, 5, 8, 9, 12])('on a requester of %i tokens (8 at most)', (tokens) => {
    const requester = Array.from({ length: tokens }, (_, i) => `r${i}`).join(' ');
    const b = Buffer.from(`${BASE} ${requester} R1 REST.GET.OBJECT p.gif "GET /p.gif HTTP/1.1" 200 - 43 43 7 2 "-" "ua" -`, 'utf8');
    const ref = reference(b, true);
    expect(production(b, true)).toEqual(ref);
    expect(ref.error === 0).toBe(tokens <= 8);
  });
  it('on long tokens at every alignment', () => {
    for (let shift = 0; shift < 8; shift++) {
      for (const len of [55, 56, 57, 58, 63, 64, 65, 71, 72, 120, 121, 130]) {
        const t = 'a'.repeat(len);
        for (const line of [
          `${'o'.repeat(60 + shift)} ${t} [01/Nov/2026:10:20:30 +0000] 192.0.2.3 ${t} ${t} REST.GET.OBJECT ${t} "GET /${t} HTTP/1.1" 200 - 43 43 7 2 "${t}" "${t}" ${t}`,
          `${t}${'b'.repeat(shift)} media [01/Nov/2026:10:20:30 +0000] 192.0.2.3 - R1 REST.GET.OBJECT k "-" 200 - 43 43 7 2 "-" "-"`,
        ]) {
          const b = Buffer.from(line, 'utf8');
          const ref = reference(b, true);
          expect(ref.error).toBe(0);
          expect(production(b, true), `${len}/${shift}`).toEqual(ref);
        }
      }
    }
  });
  it('on every corpus line', async () => {
    const { readFileSync } = await import('node:fs');
    const { CORPUS } = await import('../../support/parse-helpers.js');
    for (const name of ['lines.txt', 'synthetic.txt', 'nonaws.txt']) {
      for (const line of readFileSync(new URL(name, CORPUS), 'utf8').split('\n').filter((l) => l.trim())) {
        const b = Buffer.from(line, 'utf8');
        expect(production(b, true), `${name}: ${line.slice(0, 60)}`).toEqual(reference(b, true));
      }
    }
  });
});
