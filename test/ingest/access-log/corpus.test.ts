/**
 * The parser against real S3 access-log lines and the values public test suites assert for them
 * (`test/fixtures/s3-access-logs`, with its SOURCES.md). Each suite names fields its own way and writes `-` as null, 0 or
 * "-": the mappings below translate, they do not copy.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CORPUS, parseOne } from '../../support/parse-helpers.js';
import type { ParsedLine } from '../../../ingest/access-log/parse-output.js';
import { FIELD_NAMES } from '../../../ingest/access-log/record-layout.js';

const read = (name: string): string[] => readFileSync(new URL(name, CORPUS), 'utf8').split('\n').filter((l) => l.trim() !== '');
const lines = read('lines.txt');
const synthetic = read('synthetic.txt');
const expected = read('expected.jsonl').map((l) => JSON.parse(l) as { source: string; line: string; fields: Record<string, unknown>; note?: string });

type Fields = NonNullable<ParsedLine['fields']>;
/** One asserted value, as our fields say it. */
type Mapper = (ours: Fields, expectedValue: unknown) => [unknown, unknown];

const dash = (v: unknown): unknown => (v === '-' || v === '"-"' ? null : v);
const unquote = (v: unknown): unknown => (typeof v === 'string' && v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v);
const num = (v: unknown): unknown => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v);
/** Suites that write "-" as 0 in numeric fields. */
const zeroIsDash = (v: unknown): unknown => (v === 0 ? null : v);
const iso = (v: unknown): unknown => {
  if (v === null || v === undefined) return null;
  const s = String(v);
  const m = /^(\d{2})\/(\w{3})\/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-]\d{4})$/.exec(s);
  const ms = m ? Date.parse(`${m[2]} ${m[1]} ${m[3]} ${m[4]}:${m[5]}:${m[6]} GMT${m[7]}`) : Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(s) ? s : s + 'Z');
  return new Date(ms).toISOString().slice(0, 19) + 'Z';
};
const field = (name: keyof Fields, norm: (v: unknown) => unknown = (v) => v): Mapper => (ours, v) => [ours[name], norm(v)];
const uriPart = (part: 'method' | 'target' | 'path' | 'query' | 'version' | 'versionNumber'): Mapper => (ours, v) => {
  const uri = ours.request_uri as string | null;
  const m = uri ? /^(\S+) (.*) (HTTP\/(\d\.\d))$/.exec(uri) : null;
  const target = m?.[2] ?? null;
  const got = {
    method: m?.[1] ?? null, target, version: m?.[3] ?? null, versionNumber: m?.[4] ?? null,
    path: target === null ? null : target.split('?')[0], query: target === null || !target.includes('?') ? null : target.slice(target.indexOf('?') + 1),
  }[part];
  return [got, dash(v)];
};
const timeOf: Mapper = (ours, v) => [ours.time, iso(v)];

/** Per-suite names. Names not listed are our own names. */
const ALIASES: Record<string, Mapper> = {
  '@timestamp': timeOf, timestamp: timeOf, time: timeOf, timeUnixNano: (o, v) => [o.time, new Date(Number(BigInt(String(v)) / 1_000_000n)).toISOString().slice(0, 19) + 'Z'],
  owner: field('bucket_owner'), bucketOwner: field('bucket_owner'), 'aws.s3access.bucket_owner': field('bucket_owner'), 'aws.s3.owner': field('bucket_owner'),
  bucket_name: field('bucket'), 'aws.s3access.bucket': field('bucket'), 'aws.s3.bucket': field('bucket'),
  clientip: field('remote_ip'), 'client.ip': field('remote_ip'), remoteIp: field('remote_ip'), 'source.address': field('remote_ip'), ip_address: field('remote_ip'),
  requester: field('requester', dash), requester_id: field('requester', dash), 'client.user.id': field('requester'), 'user.id': field('requester'),
  request_id: field('request_id'), s3_request_id: field('request_id'), requestId: field('request_id'), 'aws.s3access.request_id': field('request_id'), 'aws.request_id': field('request_id'),
  operation: field('operation'), 'aws.s3access.operation': field('operation'), 'rpc.method': field('operation'),
  key: field('key', dash), s3_key: field('key'),
  // DANDI truncates zarr keys to zarr/<uuid> by its own logic: compare that prefix.
  object_key: (o, v) => [String(v).startsWith('zarr/') ? String(o.key).slice(0, String(v).length) : o.key, v],
  request_uri: field('request_uri', dash), requestUri: field('request_uri'), 'aws.s3access.request_uri': field('request_uri'), request_first_line: field('request_uri'),
  verb: uriPart('method'), request_method: uriPart('method'), httpMethod: uriPart('method'), 'http.request.method': uriPart('method'),
  request: uriPart('target'), 'url.original': uriPart('target'), pathname: uriPart('path'), 'url.path': uriPart('path'),
  queryString: uriPart('query'), 'url.query': uriPart('query'), httpVersion: uriPart('version'),
  httpversion: uriPart('versionNumber'), 'http.version': uriPart('versionNumber'), request_http_ver: uriPart('versionNumber'), 'network.protocol.version': uriPart('versionNumber'),
  'network.protocol.name': (o, v) => [o.request_uri === null ? null : 'http', v],
  http_status: field('http_status', num), response: field('http_status', num), status: field('http_status', num), status_code: field('http_status', num), httpStatus: field('http_status'),
  'http.response.status_code': field('http_status'),
  error_code: field('error_code', dash), error: field('error_code', dash), errorCode: field('error_code'), 'aws.s3access.error_code': field('error_code'),
  bytes_sent: field('bytes_sent', num), bytes: field('bytes_sent', num), bytesSent: field('bytes_sent'), 'aws.s3access.bytes_sent': field('bytes_sent'), 'http.response.body.size': field('bytes_sent'),
  object_size: (o, v) => [o.object_size, zeroIsDash(num(v))], total_bytes: field('object_size', num), objectSize: field('object_size'),
  total_time: field('total_time', num), request_time_ms: field('total_time'), totalTime: field('total_time'), 'aws.s3access.total_time': field('total_time'), duration: field('total_time'),
  turn_around_time: (o, v) => [o.turn_around_time, zeroIsDash(num(v))], turnaround_time_ms: field('turn_around_time'), turnaround_time: field('turn_around_time', num),
  turnAroundTime: field('turn_around_time'), 'aws.s3access.turn_around_time': field('turn_around_time'),
  referer: field('referer', dash), referrer: field('referer', (v) => dash(unquote(v))), request_header_referer: field('referer', dash),
  user_agent: field('user_agent'), agent: field('user_agent', unquote), userAgent: field('user_agent'), request_header_user_agent: field('user_agent'), 'user_agent.original': field('user_agent'),
  version_id: field('version_id', dash), versionId: field('version_id'),
  host_id: field('host_id'), 'aws.s3access.host_id': field('host_id'), 'aws.extended_request_id': field('host_id'),
  signature_version: field('signature_version', dash), 'aws.s3access.signature_version': field('signature_version'), 'aws.signature.version': field('signature_version'),
  cipher_suite: field('cipher_suite', dash), 'tls.cipher': field('cipher_suite'),
  authentication_type: field('authentication_type', dash), 'aws.s3access.authentication_type': field('authentication_type'), 'aws.s3.auth_type': field('authentication_type'),
  host_header: field('host_header'), 'aws.s3access.host_header': field('host_header'), 'http.request.header.host': field('host_header'),
  tls_version: field('tls_version'), 'aws.s3access.tls_version': field('tls_version'),
  'tls.protocol.version': (o, v) => [typeof o.tls_version === 'string' ? o.tls_version.replace(/^TLSv/i, '') : null, v],
  access_point_arn: field('access_point_arn'), 'aws.s3.access_point.arn': field('access_point_arn'),
  acl_required: field('acl_required'), 'aws.s3.acl_required': (o, v) => [o.acl_required === 'Yes', v],
  'aws.s3.source_region': field('source_region'),
  // One suite keeps every field after the version ID as one string.
  trailing_fields: (o, v) => {
    const after = (['host_id', 'signature_version', 'cipher_suite', 'authentication_type', 'host_header', 'tls_version', 'access_point_arn', 'acl_required', 'source_region'] as const)
      .map((k) => o[k]).filter((x) => x !== null);
    return [after.length ? after.join(' ') : null, v];
  },
};

describe('corpus: lines.txt', () => {
  it.each(lines.map((l, i) => [i + 1, l] as const))('line %i parses', (_n, line) => {
    const out = parseOne(line);
    expect(out.outcome, (out as { reason?: string }).reason).not.toBe('malformed');
    expect(out.fields).not.toBeNull();
    expect(out.fields!.operation).toMatch(/^[A-Z0-9_.]+$/);
    expect(out.fields!.http_status === null || (out.fields!.http_status as number) >= 100).toBe(true);
  });
});

describe('corpus: expected.jsonl', () => {
  it.each(expected.map((e, i) => [i + 1, e] as const))('record %i agrees with its suite', (_n, e) => {
    const out = parseOne(e.line);
    const inLines = lines.includes(e.line);
    if ('__error__' in e.fields) {
      // Suites that reject lines with unescaped quotes disagree with contract §2, which says such lines are
      // real and must parse; lines.txt holds them. Synthetic negatives must fail as the suite expects.
      expect(out.outcome).toBe(inLines ? 'not_ping' : 'malformed');
      return;
    }
    expect(out.outcome, out.reason).not.toBe('malformed');
    if ('__excluded__' in e.fields) return;
    const fields = out.fields!;
    const keys = Object.keys(e.fields);
    // An all-dash record: the suite returns {}, we return every field null.
    if (keys.length === 0) expect(Object.values(fields).every((v) => v === null)).toBe(true);
    for (const k of keys) {
      const mapper = ALIASES[k] ?? ((FIELD_NAMES as readonly string[]).includes(k) ? field(k as keyof Fields, dash) : undefined);
      expect(mapper, `no mapping for ${k}`).toBeDefined();
      const [ours, theirs] = mapper!(fields, e.fields[k]);
      expect(ours, `${k}`).toEqual(theirs);
    }
  });
});

describe('corpus: synthetic.txt', () => {
  const outcome = (n: number): string => parseOne(synthetic[n - 1]!).outcome;
  it('keeps the variants that suites parse', () => {
    for (const n of [1, 2, 3, 4, 5, 6, 8, 9, 11, 12, 13, 14, 15, 16]) expect(outcome(n), `synthetic.txt:${n}`).toBe('not_ping');
  });
  it('rejects the truncated line, unbracketed time and non-numeric status', () => {
    for (const n of [10, 17, 18]) expect(outcome(n), `synthetic.txt:${n}`).toBe('malformed');
  });
  it('reads an all-dash record as a record of nulls, not as garbage', () => {
    const out = parseOne(synthetic[6]!);
    expect(out.outcome).toBe('not_ping');
    expect(Object.values(out.fields!).every((v) => v === null)).toBe(true);
  });
  it('honours a time zone offset', () => {
    expect(parseOne(synthetic[11]!).fields!.time).toBe('2016-04-27T02:58:01Z');
  });
});

describe('corpus: nonaws.txt', () => {
  it('parses an S3-compatible producer that splits its TLS version in two', () => {
    for (const l of read('nonaws.txt')) expect(parseOne(l).outcome).toBe('not_ping');
  });
});
