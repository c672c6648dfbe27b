/**
 * The WebAssembly ping rules (what ingest runs) against the readable TypeScript reference
 * (`test/ingest/access-log/reference/ping-rules.ts`): identical outcome, reason and ping values on random records,
 * raw bytes included (invalid UTF-8, Latin-1 request ids, quotes and commas), and on every corpus
 * line; and every staged row the module writes is the one
 * `stagedRow` (ingest/staged-ping.ts) makes of the reference's ping, byte for byte.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { O_PING, outcomeName, rejectReason } from '../../../ingest/access-log/outcome-codes.js';
import { parseStagedRow, stagedIdKey, stagedRow } from '../../../ingest/staged-ping.js';
import type { ScannedRecord } from '../../../ingest/access-log/record-reader.js';
import { CORPUS, scanOne } from '../../support/parse-helpers.js';
import { PingRules } from './reference/ping-rules.js';

interface Decided { outcome: string; reason?: string; ping?: object; row?: string }

function bothWays(line: Buffer, keys: string[]): { wasm: Decided; reference: Decided } {
  const rules = new PingRules(keys);
  return scanOne(line, (r: ScannedRecord) => {
    const v = rules.classify(r);
    const reference: Decided = v.outcome === 'ping'
      // The row the reference's ping makes by the staged row's one definition.
      ? { outcome: 'ping', ping: v.ping, row: stagedRow(v.ping).toString('hex') }
      : { outcome: v.outcome, reason: v.reason };
    const wasm: Decided = r.outcome === O_PING
      // The row the module wrote, byte for byte, and what reads back from it.
      ? { outcome: 'ping', ping: parseStagedRow(r.b, r.rowStart, r.rowEnd), row: r.b.toString('hex', r.rowStart, r.rowEnd) }
      : { outcome: outcomeName(r), reason: rejectReason(r) };
    return { wasm, reference };
  }, false, keys);
}

const byte = (lo: number, hi: number): fc.Arbitrary<number[]> => fc.integer({ min: lo, max: hi }).map((b) => [b]);
/** Pieces of a query value or name, as bytes: escapes, UTF-8 (valid and not), CSV's special characters. */
const piece = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('a', 'Z', '9', '-', '_', '.', '~', '=', '+', '%', '%2', '%41', '%2B', '%25', '%22', '%2C', '%0A', '%0D', '%00',
    '%E2%9C%93', '%E2%9C', '%FF', '%C3', '%C3%A9', '%ED%A0%80', '%F0%9F%98%80', '%F4%90%80%80', '"', ',', '\r', 'é', '😀',
    // Platforms: letters to lowercase, and runs that take a value past its 32 characters.
    'Android', 'TV', 'abcdefghijklmnop', 'QRSTUVWXYZ012345',
    // Playheads: digits, a point, more than nine digits, a sign.
    '0', '7', '12', '754', '123456789', '.', '.25', '-', 'e3').map((s) => [...Buffer.from(s, 'utf8')]) },
  { weight: 1, arbitrary: byte(0x80, 0xff) },
  { weight: 1, arbitrary: fc.tuple(byte(0xc0, 0xf7), byte(0x80, 0xbf)).map(([a, b]) => [...a, ...b]) },
);
const text = (max: number): fc.Arbitrary<number[]> => fc.array(piece, { maxLength: max }).map((ps) => ps.flat());
const name = fc.oneof(
  fc.constantFrom('x-series', 'series', 'x-episode', 'episode', 'x-session', 'session', 'x-user', 'user', 'x-ping', 'ping',
    'x-platform', 'platform', 'x%2Dplatform', 'x-platfor%6D', 'x-platforms', 'x-pos', 'pos', 'x%2Dpos', 'x-po', 'x-posx',
    'x%2Dseries', 'x-seri%65s', 'x+series', 'cb', 'x-', '').map((s) => [...Buffer.from(s)]),
  text(4),
);
const query = fc.array(fc.tuple(name, fc.option(text(10), { nil: undefined })), { maxLength: 10 })
  .map((pairs) => pairs.map(([n, v]) => (v === undefined ? n : [...n, 0x3d, ...v])).reduce<number[]>((a, p, i) => (i ? [...a, 0x26, ...p] : p), []));
/**
 * Ping ids near a canonical UUID (whose key the row carries: staged format 4): canonical ones across
 * the top bits of both halves; spellings that decode to one (a dash or the first digit escaped); and
 * ways of missing it by one character (upper case, a dash moved, a character too many or too few, a
 * letter past f).
 */
const uuidId = fc.tuple(fc.uuid({ version: 4 }), fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 15 }),
  fc.constantFrom('canonical', 'canonical', 'canonical', 'upper', 'dash', 'escaped', 'long', 'short', 'g', 'percent-hex'))
  .map(([u, a, b, how]) => {
    const id = `${a.toString(16)}${u.slice(1, 19)}${b.toString(16)}${u.slice(20)}`;
    const at = 1 + (a % 30);
    const spelled = how === 'upper' ? id.toUpperCase() : how === 'dash' ? `${id.slice(0, 8)}${id.slice(9, 10)}-${id.slice(10)}`
      : how === 'escaped' ? id.replace('-', '%2D') : how === 'long' ? `${id}0` : how === 'short' ? id.slice(0, 35)
      : how === 'g' ? `${id.slice(0, at)}${id[at] === '-' ? '-' : 'g'}${id.slice(at + 1)}` : how === 'percent-hex' ? `%${id.charCodeAt(0).toString(16)}${id.slice(1)}` : id;
    return [...Buffer.from(`&x-ping=${spelled}`)];
  });
/** A query of three valid ids and some extra, so that pings are common; a ping id like a UUID half the time. */
const pingQuery = fc.tuple(text(6), text(6), text(6), fc.option(uuidId, { nil: [] }), query).map(([s, e, x, id, rest]) => [
  ...Buffer.from('x-series=s'), ...s, ...Buffer.from('&x-episode=e'), ...e, ...Buffer.from('&x-session=x'), ...x, ...id, 0x26, ...rest]);
const often = <T>(usual: T, rest: fc.Arbitrary<T>): fc.Arbitrary<T> => fc.oneof({ weight: 3, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: rest });
const key = often('p.gif', fc.constantFrom( 'p%2Egif', 'p%252Egif', '%70.gif', 'p.gif%', '%zz', 'p.gi%66', 'P.gif', 'other.png', '%E2%9C%93', '%C3%28', 'a%2Fp.gif', '/p.gif', '-'));
const operation = often('REST.GET.OBJECT', fc.constantFrom('WEBSITE.GET.OBJECT', 'REST.HEAD.OBJECT', 'REST.PUT.OBJECT'));
const status = often('200', fc.constantFrom('204', '206', '304', '404', '500', '-'));
const time = often('[01/Nov/2026:10:20:30 +0000]', fc.constantFrom('[31/Dec/1969:23:59:59 -0130]', '[01/Jan/1900:00:00:00 +0000]', '[31/Dec/9999:23:59:59 +0000]', '-'));
const requestId = fc.oneof(fc.constantFrom('3E57427F3EXAMPLE', 'R,1', 'R"1'), text(3).filter((t) => t.length > 0 && !t.some((b) => b === 0x20 || b === 0x0a)));

const record = fc.tuple(time, requestId, operation, key, fc.oneof({ weight: 3, arbitrary: pingQuery }, { weight: 1, arbitrary: query }), status, fc.boolean())
  .map(([t, id, op, k, q, st, protocol]) => Buffer.concat([
    Buffer.from(`79a5 media ${t} 192.0.2.3 - `), Buffer.from(id), Buffer.from(` ${op} ${k} "GET /${k}?`),
    // A quote or newline inside the query would end the field or the line: those are the scanner's concern.
    Buffer.from(q.map((b) => (b === 0x22 || b === 0x0a ? 0x27 : b))), Buffer.from(`${protocol ? ' HTTP/1.1' : ''}" ${st} - 43 43 7 2 "-" "ua" -`),
  ]));

describe('the WebAssembly ping rules decide exactly as the TypeScript reference', () => {
  it('on random records, raw bytes included', () => {
    let pings = 0, keyed = 0;
    fc.assert(fc.property(record, fc.constantFrom<string[]>(['p.gif'], ['/p.gif', 'other.png'], ['✓']), (line, keys) => {
      const { wasm, reference } = bothWays(line, keys);
      expect(wasm).toEqual(reference);
      if (wasm.outcome === 'ping') pings++;
      if (wasm.row && !/,\n$/.test(Buffer.from(wasm.row, 'hex').toString('latin1'))) keyed++;
    }), { numRuns: 10_000 });
    // The generator must reach the interesting outcomes often, or the property proves little: pings,
    // and pings whose id is a canonical UUID (a key in the row's last two fields).
    expect(pings).toBeGreaterThan(1000);
    expect(keyed).toBeGreaterThan(300);
  });

  // The module reads a UUID's 32 digits 16 at a time: every position is checked, each character a
  // digit where a dash belongs, a dash where a digit does, or a neighbour of the digits' ranges.
  it('on ping ids one character off a canonical UUID, at every position', () => {
    const line = (id: string): Buffer => Buffer.from(`79a5 media [01/Nov/2026:10:20:30 +0000] 192.0.2.3 - R1 REST.GET.OBJECT p.gif "GET /p.gif?x-series=s&x-episode=e&x-session=x&x-ping=${id} HTTP/1.1" 200 - 43 43 7 2 "-" "ua" -`);
    const ids = ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '7fffffff-ffff-ffff-8000-000000000000', '0123abcd-4567-89ef-fedc-ba9876543210'];
    const base = ids[3]!;
    for (let at = 0; at < 36; at++) {
      for (const c of ['-', '0', '9', 'a', 'f', 'g', 'A', 'F', '/', ':', '`', '@', '~', 'é']) {
        if (c !== base[at]) ids.push(`${base.slice(0, at)}${c}${base.slice(at + 1)}`);
      }
    }
    let keyed = 0;
    for (const id of ids) {
      const { wasm, reference } = bothWays(line(id), ['p.gif']);
      expect(wasm, id).toEqual(reference);
      expect(wasm.outcome, id).toBe('ping');
      if (stagedIdKey(id) !== null) keyed++;
    }
    // The four canonical ones, and at each digit the other digits of the alphabet (0, 9, a, f): 32 x 3 or 4.
    expect(keyed).toBeGreaterThan(4 + 32 * 3);
  });

  it('on every corpus line', () => {
    for (const file of ['lines.txt', 'synthetic.txt', 'nonaws.txt']) {
      for (const line of readFileSync(new URL(file, CORPUS), 'utf8').split('\n').filter((l) => l.trim())) {
        const { wasm, reference } = bothWays(Buffer.from(line, 'utf8'), ['p.gif']);
        expect(wasm, `${file}: ${line.slice(0, 60)}`).toEqual(reference);
      }
    }
  });
});
