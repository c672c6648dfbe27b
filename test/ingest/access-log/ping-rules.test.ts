import { describe, expect, it } from 'vitest';
import { outcomeName } from '../../../ingest/access-log/outcome-codes.js';
import { AccessLogRecordReader } from '../../../ingest/access-log/record-reader.js';
import { parseOne, scanOne } from '../../support/parse-helpers.js';
import { parseStagedRow } from '../../../ingest/staged-ping.js';
import { PingRules } from './reference/ping-rules.js';

const OWNER = '79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be';
/** A 27-field record for the ping key, with what a test wants to vary. */
function rec(o: { uri?: string; op?: string; key?: string; status?: string; requester?: string; time?: string; agent?: string; tail?: string; requestId?: string } = {}): string {
  const uri = o.uri ?? '"GET /p.gif?x-series=s1&x-episode=e1&x-session=abc HTTP/1.1"';
  return `${OWNER} media [${o.time ?? '01/Nov/2026:10:20:30 +0000'}] 192.0.2.3 ${o.requester ?? '-'} ${o.requestId ?? '3E57427F3EXAMPLE'} ${o.op ?? 'REST.GET.OBJECT'} ${o.key ?? 'p.gif'} ${uri} ${o.status ?? '200'} - 43 43 7 2 "-" ${o.agent ?? '"Mozilla/5.0"'}${o.tail ?? ' - s9lzHYrFp76ZVxRcpX9= SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader media.s3.us-east-1.amazonaws.com TLSv1.2 - - us-east-1'}`;
}
const q = (query: string): string => `"GET /p.gif?${query} HTTP/1.1"`;

describe('which records are pings (contract §3)', () => {
  it('takes a ping-key GET with a full query as a ping, with its event time and natural key', () => {
    const out = parseOne(rec());
    expect(out.outcome).toBe('ping');
    expect(out.ping).toEqual({ series: 's1', episode: 'e1', session: 'abc', user: null, ping_id: null, event_time: '2026-11-01T10:20:30Z' });
  });
  it.each([['200'], ['204'], ['206'], ['304']])('counts status %s', (status) => {
    expect(parseOne(rec({ status })).outcome).toBe('ping');
  });
  it.each([['403'], ['404'], ['503'], ['-']])('calls status %s an http_error', (status) => {
    expect(parseOne(rec({ status })).outcome).toBe('http_error');
  });
  it('accepts the website endpoint and nothing but GET.OBJECT', () => {
    expect(parseOne(rec({ op: 'WEBSITE.GET.OBJECT' })).outcome).toBe('ping');
    expect(parseOne(rec({ op: 'REST.HEAD.OBJECT' })).outcome).toBe('not_ping');
    expect(parseOne(rec({ op: 'REST.PUT.OBJECT' })).outcome).toBe('not_ping');
  });
  it('matches the ping key after URL-decoding it, once or twice, and only configured keys', () => {
    expect(parseOne(rec({ key: 'video/seg.ts' })).outcome).toBe('not_ping');
    expect(parseOne(rec({ key: 'beacon%2520one.gif' }), ['beacon one.gif']).outcome).toBe('ping');
    expect(parseOne(rec({ key: 'beacon%20one.gif' }), ['beacon one.gif']).outcome).toBe('ping');
    expect(parseOne(rec({ key: 'tracking/p.gif' }), ['p.gif', '/tracking/p.gif']).outcome).toBe('ping');
  });
  it('keeps the malformed reason, and gives no fields for a malformed record', () => {
    const out = parseOne(rec({ status: 'OK' }));
    expect(out.outcome).toBe('malformed');
    expect(out.fields).toBeNull();
    expect(out.reason).toMatch(/status/);
  });
  it('calls a would-be ping without a time malformed: it belongs to no minute', () => {
    const out = parseOne(rec({ time: '-' }));
    expect(out.outcome).toBe('malformed');
    expect(out.reason).toBe('ping without a time');
  });
});

describe('query parameters (contract §1a)', () => {
  it('reads all the ping fields, and ignores others', () => {
    const out = parseOne(rec({ uri: q('cb=1&x-series=s&x-episode=e&x-session=se&x-user=u&x-ping=p1&x-ts=1&x-pos=2&x-platform=web') }));
    expect(out.ping).toMatchObject({ series: 's', episode: 'e', session: 'se', user: 'u', ping_id: 'p1' });
  });
  it('stages the platform normalised and the playhead as whole seconds, or none, as the TypeScript rules do', () => {
    // What the WebAssembly rules staged, and what the TypeScript reference makes of the same record.
    const reference = new PingRules(['p.gif']);
    type Values = { platform: string | null; pos: number | null };
    const staged = (query: string): { wasm: Values; reference: Values } => scanOne(rec({ uri: q(`x-series=s&x-episode=e&x-session=se&${query}`) }), (r) => {
      const p = parseStagedRow(r.b, r.rowStart, r.rowEnd);
      const v = reference.classify(r);
      return { wasm: { platform: p.platform, pos: p.pos }, reference: v.outcome === 'ping' ? { platform: v.ping.platform, pos: v.ping.pos } : { platform: 'no ping', pos: null } };
    }, true, ['p.gif']);
    for (const [query, platform, pos] of [
      ['x-platform=web&x-pos=754', 'web', 754], ['platform=Android+TV&pos=754.25', 'androidtv', 754], ['x-platform=%41ndroid_TV&x-pos=0', 'androidtv', 0],
      ['x-platform=&platform=web&x-pos=&pos=5', null, null], ['x-platform=%E2%9C%93&x-pos=-5', null, null], ['x-platform=' + 'a'.repeat(32) + '&x-pos=123456789', 'a'.repeat(32), 123456789],
      ['x-platform=' + 'a'.repeat(33) + '&x-pos=1234567890', null, null], ['x-platform=iOS&x-platform=web&x-pos=1e3', 'ios', null], ['x-pos=12.&x-pos=3', null, 12],
    ] as const) {
      expect(staged(query), query).toEqual({ wasm: { platform, pos }, reference: { platform, pos } });
    }
  });
  it('accepts bare aliases from older clients', () => {
    expect(parseOne(rec({ uri: q('series=s&episode=e&session=se&user=u&ping=p') })).ping).toMatchObject({ series: 's', user: 'u', ping_id: 'p' });
  });
  it('lets the x- name win over the alias wherever it stands, and the first of repeats win', () => {
    const out = parseOne(rec({ uri: q('series=bare&x-series=x1&x-series=x2&episode=e1&episode=e2&x-session=s') }));
    expect(out.ping).toMatchObject({ series: 'x1', episode: 'e1' });
  });
  it('lets a present but empty x- name win: an empty optional counts as absent', () => {
    expect(parseOne(rec({ uri: q('x-series=s&x-episode=e&x-session=se&x-user=&user=bob') })).ping!.user).toBeNull();
    expect(parseOne(rec({ uri: q('x-series=s&x-episode=e&x-session=se&x-ping=') })).ping!.ping_id).toBeNull();
  });
  it('decodes as URLSearchParams: + is a space, %XX UTF-8, malformed % literal, encoded names', () => {
    const out = parseOne(rec({ uri: q('x-series=The+Crown%20S1&x-episode=%E2%9C%93&x-session=100%25&x-user=%zz%4') }));
    expect(out.ping).toMatchObject({ series: 'The Crown S1', episode: '✓', session: '100%', user: '%zz%4' });
    expect(parseOne(rec({ uri: q('x%2Dseries=enc&x-episode=e&x-session=s') })).ping!.series).toBe('enc');
    expect(parseOne(rec({ uri: q('x-series=%FF&x-episode=e&x-session=s') })).ping!.series).toBe('\uFFFD');
    // As the standard says, not as Node 20's URLSearchParams does ("á").
    expect(parseOne(rec({ uri: q('x-series=%C3¡&x-episode=e&x-session=s') })).ping!.series).toBe('\uFFFD¡');
  });
  it.each([
    ['x-episode=e&x-session=s', 'missing x-series'],
    ['x-series=&x-episode=e&x-session=s', 'empty x-series'],
    ['x-series=s&x-session=s', 'missing x-episode'],
    ['x-series=s&x-episode=e', 'missing x-session'],
    [`x-series=${'a'.repeat(257)}&x-episode=e&x-session=s`, 'x-series longer than 256 characters'],
  ])('rejects %s as bad_query (%s)', (query, reason) => {
    const out = parseOne(rec({ uri: q(query) }));
    expect(out.outcome).toBe('bad_query');
    expect(out.reason).toBe(reason);
  });
  it('measures the 256 limit in characters, not UTF-16 units or bytes', () => {
    const emoji = '%F0%9F%8E%AC'.repeat(256); // 256 characters, 512 UTF-16 units, 1024 bytes
    expect(parseOne(rec({ uri: q(`x-series=${emoji}&x-episode=e&x-session=s`) })).outcome).toBe('ping');
    expect(parseOne(rec({ uri: q(`x-series=${'a'.repeat(256)}&x-episode=e&x-session=s`) })).outcome).toBe('ping');
  });
  it('calls a ping-key GET with no query, or a bare - request-URI, a bad_query', () => {
    expect(parseOne(rec({ uri: '"GET /p.gif HTTP/1.1"' })).outcome).toBe('bad_query');
    expect(parseOne(rec({ uri: '-' })).outcome).toBe('bad_query');
  });
});

describe('hard records (contract §2)', () => {
  it('survives unescaped quotes in the request-URI and the user agent', () => {
    const out = parseOne(rec({ uri: '"GET /p.gif?x-series=a"b&x-episode=e&x-session=s" HTTP/1.1"', agent: '"Mozilla "x" 5.0"' }));
    expect(out.outcome).toBe('ping');
    expect(out.fields!.user_agent).toBe('Mozilla "x" 5.0');
    expect(out.fields!.request_uri).toBe('GET /p.gif?x-series=a"b&x-episode=e&x-session=s" HTTP/1.1');
    expect(out.fields!.version_id).toBeNull();
    expect(out.fields!.source_region).toBe('us-east-1');
  });
  it('reads a requester with spaces', () => {
    const out = parseOne(rec({ requester: 'arn:aws:iam::cloudfront:user/CloudFront Origin Access Identity E2EXAMPLEID' }));
    expect(out.outcome).toBe('ping');
    expect(out.fields!.requester).toBe('arn:aws:iam::cloudfront:user/CloudFront Origin Access Identity E2EXAMPLEID');
    expect(out.fields!.request_id).toBe('3E57427F3EXAMPLE');
  });
  it('reads a spaced requester even when the request-URI is a bare -', () => {
    const out = parseOne(rec({ requester: 'arn:aws:iam::cloudfront:user/CloudFront Origin Access Identity E2', uri: '-', key: '-' }));
    expect(out.fields!.requester).toBe('arn:aws:iam::cloudfront:user/CloudFront Origin Access Identity E2');
    expect(out.fields).toMatchObject({ key: null, request_uri: null, http_status: 200, bytes_sent: 43 });
  });
  it('takes 17 fields, and ignores fields past the 27th', () => {
    const short = parseOne(rec({ tail: '' }));
    expect(short.outcome).toBe('ping');
    expect(short.fields!.version_id).toBeNull();
    const long = parseOne(rec({ tail: ' - hostid SigV4 cipher AuthHeader host TLSv1.3 arn Yes eu-west-1 Extra "more" [x]' }));
    expect(long.outcome).toBe('ping');
    expect(long.fields).toMatchObject({ acl_required: 'Yes', source_region: 'eu-west-1' });
    expect(Object.keys(long.fields!)).toHaveLength(27);
  });
  it('tolerates a trailing space and CRLF', () => {
    expect(parseOne(rec() + ' ').outcome).toBe('ping');
    expect(parseOne(rec() + '\r').outcome).toBe('ping');
  });
  it('reads bare - for referer and user agent', () => {
    const line = rec().replace('"-" "Mozilla/5.0"', '- -');
    expect(parseOne(line).fields).toMatchObject({ referer: null, user_agent: null, version_id: null });
  });
  it('prints numbers as numbers beyond 32 bits', () => {
    const line = rec().replace(' 43 43 7 2 ', ' 43 422868123111 7 2 ');
    expect(parseOne(line).fields!.object_size).toBe(422868123111);
  });
});

describe('quotes in the user agent (contract §2)', () => {
  it('reads a user agent whose inner quote is followed by a plain word', () => {
    const out = parseOne(rec({ agent: '"Mozilla "x" 5.0 Safari"' }));
    expect(out.fields).toMatchObject({ user_agent: 'Mozilla "x" 5.0 Safari', version_id: null, signature_version: 'SigV4' });
  });
  it('keeps a user agent that opens or closes with a doubled quote', () => {
    expect(parseOne(rec({ agent: '""Mozilla/5.0"' })).fields!.user_agent).toBe('"Mozilla/5.0');
    expect(parseOne(rec({ agent: '"Mozilla/5.0""' })).fields!.user_agent).toBe('Mozilla/5.0"');
  });
});

describe('outcome counts kept inside the module while ingest reads an object', () => {
  it('counts pings, not_ping and http_error by day, and hands over the rest: rejects and days a month or more away', () => {
    const seen: string[] = [];
    const reader = new AccessLogRecordReader((r) => { seen.push(`${r.lineNo}:${outcomeName(r)}`); }, { pingKeys: ['p.gif'] });
    const lines = [
      rec(), // 1 ping, 2026-11-01
      rec({ time: '02/Nov/2026:00:00:01 +0000' }), // 2 ping, the next day
      rec({ time: '31/Oct/2026:23:59:59 +0000', status: '404' }), // 3 http_error, the day before
      rec({ op: 'REST.PUT.OBJECT' }), // 4 not_ping
      rec({ time: '-', op: 'REST.PUT.OBJECT' }), // 5 not_ping without a time: the object's day
      rec({ uri: q('x-series=s1') }), // 6 bad_query: handed over
      'not a log line', // 7 malformed: handed over
      rec({ time: '01/Jan/2027:10:00:00 +0000' }), // 8 ping two months on: handed over
      rec({ time: '01/Jan/1970:00:00:00 +0000', op: 'REST.PUT.OBJECT' }), // 9 long before: handed over
    ];
    reader.startTally('2026-11-01');
    reader.push(Buffer.from(lines.join('\n') + '\n'));
    reader.finish();
    expect(reader.endTally()).toEqual([
      { day: '2026-10-31', counts: [0, 0, 1] },
      { day: '2026-11-01', counts: [1, 2, 0] },
      { day: '2026-11-02', counts: [1, 0, 0] },
    ]);
    expect(seen).toEqual(['6:bad_query', '7:malformed', '8:ping', '9:not_ping']);
    // Not tallying (as `pingroll parse` reads), every record is handed over.
    seen.length = 0;
    reader.reset();
    reader.push(Buffer.from(lines.join('\n') + '\n'));
    reader.finish();
    expect(seen).toHaveLength(lines.length);
  });
});
