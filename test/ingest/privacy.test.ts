/**
 * PINGROLL_PRIVACY=mask: what the rejects keep of the people behind the records. A rejected line keeps
 * its fields but the client IP (cut to its network) and the requester (dropped), a spaced requester
 * ARN included; a malformed line and an overlong one keep no text, only length and SHA-256; neither
 * the address nor the ARN is anywhere in the output afterwards, in the run's own thread or a parsing
 * thread. With `keep` (the default) the rejects keep the lines as read.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { maskedItem, truncateIp } from '../../ingest/privacy.js';
import { memoryLog } from '../../lib/log.js';
import { dirConfig, runDay, tempRoots } from '../support/job-fixture.js';

const DAY = '2026-11-01';
const root = tempRoots();
const IP = '203.0.113.77';
const ARN = 'arn:aws:iam::cloudfront:user/CloudFront Origin Access Identity E1ABCDEXAMPLE';

function line(ip: string, requester: string, query: string, time = '01/Nov/2026:10:20:30 +0000'): string {
  return `79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be pings [${time}] ${ip} ${requester} 3E57427F3EXAMPLE REST.GET.OBJECT p.gif "GET /p.gif?${query} HTTP/1.1" 200 - 43 43 7 3 "-" "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36" - hostid SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader pings.s3.amazonaws.com TLSv1.2 - -`;
}

const badQuery = line(IP, ARN, 'x-series=&x-episode=e1&x-session=abc');
const badQueryV6 = line('2001:db8:1:2::5', '-', 'x-episode=e1&x-session=def');
const malformed = `this is not an access-log line from ${IP} by ${ARN}`;
const overlong = `${IP} ${'x'.repeat(70_000)}`;
const ping = line('198.51.100.9', '-', 'x-series=s1&x-episode=e1&x-session=s&x-ping=p1');

async function rejectsOf(extra: Record<string, string>, parseThreads = '0'): Promise<{ rejects: Array<Record<string, unknown>>; out: string }> {
  const r = root();
  await mkdir(join(r, 'logs'), { recursive: true });
  await writeFile(join(r, 'logs', `${DAY}-10-30-00-0123456789ABCDEF`), [ping, badQuery, badQueryV6, malformed, overlong, ''].join('\n'));
  const summary = await runDay({ ...dirConfig(r, { ...extra, PINGROLL_WAREHOUSE: 'none' }), parseThreads: Number(parseThreads) }, { day: DAY, log: memoryLog() });
  expect(summary.pings).toBe(1);
  const text = gunzipSync(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'rejects.jsonl.gz'))).toString();
  return { rejects: text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>), out: join(r, 'out') };
}

/** Every file under `dir`, as bytes (gzip inflated), for a search. */
async function everything(dir: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (const e of await readdir(dir, { recursive: true })) {
    const p = join(dir, e);
    if (!(await stat(p)).isFile()) continue;
    const b = await readFile(p);
    parts.push(b[0] === 0x1f && b[1] === 0x8b ? gunzipSync(b) : b);
  }
  return Buffer.concat(parts);
}

describe('privacy', () => {
  it('cuts an IPv4 address to its /24 and an IPv6 one to its /48; anything else is not kept', () => {
    expect(truncateIp('203.0.113.77')).toBe('203.0.113.0');
    expect(truncateIp('2001:db8:1:2::5')).toBe('2001:db8:1::');
    expect(truncateIp('2001:0db8:0001:0002:0003:0004:0005:0006')).toBe('2001:0db8:0001::');
    expect(truncateIp('::1')).toBe('::');
    expect(truncateIp('-')).toBe('-');
    expect(truncateIp('not-an-ip')).toBe('-');
    expect(maskedItem({ ts_shard: { S: 'x' }, series: { S: 's' }, ip: { S: IP }, note: { S: 'n' } })).toEqual({ ts_shard: { S: 'x' }, series: { S: 's' } });
  });

  it.each([['the run\'s own thread', '0'], ['a parsing thread', '1']])('masks what the rejects keep (%s), and the address and ARN are nowhere in the output', async (_name, threads) => {
    const { rejects, out } = await rejectsOf({ PINGROLL_PRIVACY: 'mask' }, threads);
    const byReason = (re: RegExp): Record<string, unknown> => rejects.find((x) => re.test(String(x.reason)))!;
    expect(byReason(/empty x-series/)).toMatchObject({ outcome: 'bad_query', masked: true, record: line('203.0.113.0', '-', 'x-series=&x-episode=e1&x-session=abc') });
    expect(byReason(/missing x-series/)).toMatchObject({ outcome: 'bad_query', masked: true, record: line('2001:db8:1::', '-', 'x-episode=e1&x-session=def') });
    const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
    expect(rejects.filter((x) => x.outcome === 'malformed').map((x) => [x.record, x.recordBytes, x.recordSha256, x.masked]).sort()).toEqual(
      [['', malformed.length, sha(malformed), true], ['', overlong.length, sha(overlong), true]].sort());
    const all = await everything(out);
    expect(all.includes(IP)).toBe(false);
    expect(all.includes('Origin Access Identity')).toBe(false);
  });

  it('removes the rejects of days past PINGROLL_REJECTS_RETENTION_DAYS at each rollup, and no other file', async () => {
    const r = root();
    await mkdir(join(r, 'logs'), { recursive: true });
    await writeFile(join(r, 'logs', '2026-10-01-10-30-00-0123456789ABCDEF'), [line(IP, '-', 'x-series=s1&x-episode=e1&x-session=s&x-ping=p0', '01/Oct/2026:10:20:30 +0000'), line(IP, '-', 'x-episode=e1', '01/Oct/2026:10:20:31 +0000'), ''].join('\n'));
    await writeFile(join(r, 'logs', `${DAY}-10-30-00-0123456789ABCDEF`), [ping, badQuery, ''].join('\n'));
    const config = dirConfig(r, { PINGROLL_WAREHOUSE: 'none', PINGROLL_REJECTS_RETENTION_DAYS: '30' });
    await runDay(config, { day: '2026-10-01', log: memoryLog(), now: new Date('2026-10-02T06:00:00Z') });
    const runs = join(r, 'out', '_runs');
    expect((await readdir(join(runs, 'dt=2026-10-01'))).sort()).toEqual(['manifest.json', 'rejects.jsonl.gz']);
    // The rejects of no day (jobs/stages/undated.ts), by when their batch was made: one old, one recent; their counts stay.
    await mkdir(join(runs, 'undated'), { recursive: true });
    for (const batch of ['20261001T103000Z-0a0a0a0a', '20261101T103000Z-0b0b0b0b']) for (const ext of ['json', 'jsonl.gz']) await writeFile(join(runs, 'undated', `${batch}.${ext}`), '');
    const log = memoryLog();
    await runDay(config, { day: DAY, log, now: new Date('2026-11-02T06:00:00Z') });
    expect(await readdir(join(runs, 'dt=2026-10-01'))).toEqual(['manifest.json']);
    expect((await readdir(join(runs, `dt=${DAY}`))).sort()).toEqual(['manifest.json', 'rejects.jsonl.gz']);
    expect((await readdir(join(runs, 'undated'))).sort()).toEqual(['20261001T103000Z-0a0a0a0a.json', '20261101T103000Z-0b0b0b0b.json', '20261101T103000Z-0b0b0b0b.jsonl.gz']);
    expect(log.events.find((e) => e.event === 'rejects.expired')?.fields).toEqual({ files: 2, before: '2026-10-03', retentionDays: 30 });
  });

  it('keeps the records as read by default', async () => {
    const { rejects } = await rejectsOf({});
    expect(rejects.map((x) => x.record)).toContain(badQuery);
    expect(rejects.some((x) => 'masked' in x)).toBe(false);
  });
});
