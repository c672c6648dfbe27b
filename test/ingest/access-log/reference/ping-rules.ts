/**
 * Which access-log records are pings (contract §1a, §3), in plain TypeScript: the readable reference for
 * the WebAssembly rules ingest runs (`ingest/access-log/wasm/ping-rules.as.ts`). The differential
 * fuzz tests hold the two to identical verdicts and values. Pure: bytes and spans in, a verdict out.
 */
import { MAX_ID_LENGTH, normalizePlatform, normalizePos, type PingRecord, type Verdict } from '../../../../ingest/ping-record.js';
import { defaultConfig } from '../../../../infra/config.js';
import { F, SCAN_ERRORS } from '../../../../ingest/access-log/record-layout.js';
import { MAX_AGENT_BYTES, MAX_IP_BYTES } from '../../../../ingest/access-log/wasm-abi.js';
import { describeAgent } from '../../../../ingest/audience/agent-lookup.js';
import { geoLookup } from '../../../../ingest/audience/geo-lookup.js';
import { fieldNumber } from '../../../../ingest/access-log/record-fields.js';
import type { ScannedRecord } from '../../../../ingest/access-log/record-reader.js';
import { PingParamReader, type PingParams } from './query-params.js';

const PING_OPERATIONS = ['REST.GET.OBJECT', 'WEBSITE.GET.OBJECT'].map((o) => Buffer.from(o, 'latin1'));
const OK_STATUSES = new Set([200, 204, 206, 304]);
/** Most records of a busy bucket: one verdict for all, not an object each. */
const NOT_PING: Verdict = Object.freeze({ outcome: 'not_ping', reason: 'not a ping-key GET' });

export class PingRules {
  private readonly keyBytes: Buffer[];
  private readonly keys: Set<string>;
  private readonly params = new PingParamReader();

  constructor(pingKeys: readonly string[] = defaultConfig().pingKeys) {
    this.keys = new Set(pingKeys.map((k) => k.replace(/^\/+/, '')));
    this.keyBytes = [...this.keys].map((k) => Buffer.from(k, 'utf8'));
  }

  /** The outcome of a scanned record. */
  classify(r: ScannedRecord): Verdict {
    if (r.error !== 0) return { outcome: 'malformed', reason: SCAN_ERRORS[r.error] ?? 'malformed' };
    const b = r.b;
    if (!this.isPingOperation(r) || !this.isPingKey(r)) return NOT_PING;
    const status = fieldNumber(r, F.httpStatus);
    if (status === null || !OK_STATUSES.has(status)) return { outcome: 'http_error', reason: `status ${status ?? '-'}` };
    const [qs, qe] = queryRange(r);
    const p = this.params.read(b, qs, qe);
    const bad = requiredProblem(p);
    if (bad) return { outcome: 'bad_query', reason: bad };
    const timeMs = r.timeMs;
    if (Number.isNaN(timeMs)) return { outcome: 'malformed', reason: 'ping without a time' };
    const ip = clientText(r, F.remoteIp, MAX_IP_BYTES), agent = describeAgent(clientText(r, F.userAgent, MAX_AGENT_BYTES));
    const ping: PingRecord = {
      source: 's3',
      series: p.series!,
      episode: p.episode!,
      session: p.session!,
      user: p.user || null,
      pingId: p.ping || null,
      eventTimeMs: timeMs,
      naturalKey: 'r:' + b.toString('latin1', r.start(F.requestId), r.end(F.requestId)),
      platform: normalizePlatform(p.platform),
      pos: normalizePos(p.pos),
      // Contract §10: looked up here for every ping (the module remembers each value it has seen).
      country: ip === null ? 'ZZ' : geoLookup(null).country(ip),
      os: agent.os, deviceType: agent.deviceType, browser: agent.browser, agentRule: agent.rule,
    };
    return { outcome: 'ping', ping };
  }

  private isPingOperation(r: ScannedRecord): boolean {
    const s = r.start(F.operation), e = r.end(F.operation);
    return PING_OPERATIONS.some((op) => bytesEqual(r.b, s, e, op));
  }

  /** The key field is URL-encoded (twice for most REST operations); `/` stays literal. */
  private isPingKey(r: ScannedRecord): boolean {
    const b = r.b, s = r.start(F.key), e = r.end(F.key);
    if (s < 0) return false;
    let encoded = false;
    for (let i = s; i < e; i++) if (b[i] === 0x25) { encoded = true; break; }
    if (!encoded) return this.keyBytes.some((k) => bytesEqual(b, s, e, k));
    const once = safeDecode(b.toString('utf8', s, e));
    return this.keys.has(once) || this.keys.has(safeDecode(once));
  }
}

/** `b[s, e)` of the query string inside the request-URI (`GET /p.gif?x-series=1 HTTP/1.1`). */
function queryRange(r: ScannedRecord): [number, number] {
  const b = r.b, s = r.start(F.requestUri), e = r.end(F.requestUri);
  if (s < 0) return [0, 0];
  let q = s;
  while (q < e && b[q] !== 0x3f /* ? */) q++;
  if (q >= e) return [0, 0];
  // Drop the protocol: the last space-separated token when it is HTTP/x.
  let end = e;
  let sp = e - 1;
  while (sp > q && b[sp] !== 0x20) sp--;
  if (sp > q && b[sp + 1] === 0x48 && b[sp + 2] === 0x54 && b[sp + 3] === 0x54 && b[sp + 4] === 0x50) end = sp;
  return [q + 1, end];
}

function requiredProblem(p: PingParams): string | null {
  for (const name of ['series', 'episode', 'session'] as const) {
    const v = p[name];
    if (v === null) return `missing x-${name}`;
    if (v === '') return `empty x-${name}`;
    if (v.length > MAX_ID_LENGTH && codePoints(v) > MAX_ID_LENGTH) return `x-${name} longer than ${MAX_ID_LENGTH} characters`;
  }
  return null;
}

function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

function bytesEqual(b: Buffer, s: number, e: number, x: Uint8Array): boolean {
  if (s < 0 || e - s !== x.length) return false;
  for (let i = 0; i < x.length; i++) if (b[s + i] !== x[i]) return false;
  return true;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The client IP or user agent as the parser hands it over: null when absent, `-`, longer than `max` bytes or not all printable ASCII. */
function clientText(r: ScannedRecord, f: number, max: number): string | null {
  const s = r.start(f);
  if (s < 0) return null;
  const e = r.end(f);
  if (e - s > max || (e - s === 1 && r.b[s] === 0x2d)) return null;
  for (let i = s; i < e; i++) if (r.b[i]! < 0x20 || r.b[i]! > 0x7e) return null;
  return r.b.toString('latin1', s, e) || null;
}
