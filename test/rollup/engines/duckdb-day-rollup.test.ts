/**
 * Contract §4-§5 on hand-made staged records: which duplicate survives, what each metric counts, and
 * which ids the ping-id window keeps as counted.
 */
import { defaultConfig, loadConfig } from '../../../infra/config.js';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DuckDBInstance, openEngine, queryRows, sibling, sqlString } from '../../../lib/duckdb-engine.js';
import { rollupDay, type DayWindow } from '../../../rollup/engines/duckdb/day-rollup.js';
import { KeysFile } from '../../../rollup/engines/duckdb/ping-keys.js';
import { STAGED_COLUMN_NAMES, stagedIdKey } from '../../../ingest/staged-ping.js';
import { DEFAULT_PLATFORMS } from '../../../ingest/ping-record.js';
import { rm, tempDir } from '../../support/job-fixture.js';
import { mkdtemp, readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { writeInvalidRejects } from '../../../rollup/engines/duckdb/invalid-rejects.js';
import type { CatalogOnly } from '../../../rollup/rules.js';

const DAY = '2026-11-01';
const T0 = Date.parse(`${DAY}T10:00:00Z`);
const dir = tempDir();
afterAll(() => rm(dir, { recursive: true, force: true }));

interface Staged { source?: 's3' | 'dynamodb'; series?: string; episode?: string; session?: string; user?: string | null; ping?: string | null; t: number; key: string; platform?: string | null;
  country?: string | null; os?: string | null; device?: string | null; browser?: string | null; agentRule?: string | null }

/** Rolls up hand-made staged records; returns the three tables' rows. */
async function rollup(records: Staged[], platforms?: string[], catalog?: { only: CatalogOnly; episodes: Array<[string, string]> }, window: DayWindow | null = null) {
  const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: defaultConfig().memoryLimitMb });
  try {
    const file = join(dir, `staged-${Math.random().toString(36).slice(2)}.parquet`);
    const v = (x: string | null | undefined): string => (x == null ? 'NULL::VARCHAR' : sqlString(x));
    const values = records.map((r) => `(${v(r.source ?? 's3')}, ${v(r.series ?? 's1')}, ${v(r.episode ?? 'e1')}, ${v(r.session ?? 'sA')}, ${v(r.user ?? null)}, ${v(r.ping ?? null)}, ${r.t}::BIGINT, ${v(r.key)}, ${v(r.platform ?? null)}, NULL::BIGINT, ${v(r.country ?? null)}, ${v(r.os ?? null)}, ${v(r.device ?? null)}, ${v(r.browser ?? null)}, ${v(r.agentRule ?? null)})`);
    await engine.run(`COPY (SELECT * FROM (VALUES ${values.join(', ')}) t(${STAGED_COLUMN_NAMES.join(', ')})) TO ${sqlString(file)} (FORMAT parquet)`);
    const outcomes: Record<string, Record<string, number>> = {};
    for (const r of records.filter((x) => x.t >= Date.parse(DAY) && x.t < Date.parse(DAY) + 86_400_000)) {
      const o = (outcomes[r.source ?? 's3'] ??= {});
      o.ping = (o.ping ?? 0) + 1;
    }
    let catalogFile: string | null = null;
    if (catalog) {
      catalogFile = join(dir, `catalog-${Math.random().toString(36).slice(2)}.parquet`);
      await engine.run(`COPY (SELECT * FROM (VALUES ${catalog.episodes.map(([se, ep]) => `(${sqlString(se)}, ${sqlString(ep)}, 600::BIGINT)`).join(', ')}) t(series_id, episode_id, duration_seconds)) TO ${sqlString(catalogFile)} (FORMAT parquet)`);
    }
    const out = await rollupDay(engine, DAY, [file], outcomes, { platforms, catalogOnly: catalog?.only ?? null, catalogFile, window });
    const rejectsDir = await mkdtemp(join(dir, 'rejects-'));
    const rejects = gunzipSync(await readFile(await writeInvalidRejects(engine, out.excluded, rejectsDir))).toString().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const read = async (t: string) => (await queryRows<Record<string, unknown>>(engine, `SELECT * FROM ${t}`)).map((r) =>
      Object.fromEntries(Object.entries(r).map(([k, x]) => [k, typeof x === 'bigint' ? Number(x) : x === null || typeof x !== 'object' ? x : String(x)])));
    return { episodes: await read(out.tables.daily_episode_stats), series: await read(out.tables.daily_series_stats), audit: await read(out.tables.daily_ingest_audit), duplicates: out.duplicates,
      peaks: await read(out.tables.daily_peaks), seriesMinutes: await read(out.tables.daily_series_minutes), platforms: await read(out.tables.daily_platform_stats),
      countries: await read(out.tables.daily_country_stats), devices: await read(out.tables.daily_device_stats), invalid: await read(out.tables.daily_invalid_traffic), rejects };
  } finally {
    engine.closeSync();
  }
}

describe('which duplicate survives (contract §4)', () => {
  it('an S3 record over a DynamoDB one with the same ping id, even a later one', async () => {
    const r = await rollup([
      { source: 'dynamodb', ping: 'p1', t: T0, key: 'k:a|sA', episode: 'from-dynamodb' },
      { source: 's3', ping: 'p1', t: T0 + 5000, key: 'r:B', episode: 'from-s3' },
    ]);
    expect(r.episodes).toMatchObject([{ episode_id: 'from-s3', pings: 1, s3_pings: 1, dynamodb_pings: 0 }]);
    expect(r.audit).toEqual([
      { day: expect.anything(), source: 'dynamodb', outcome: 'duplicate', records: 1 },
      { day: expect.anything(), source: 'dynamodb', outcome: 'ping', records: 1 },
      { day: expect.anything(), source: 's3', outcome: 'ping', records: 1 },
    ]);
  });
  it('then the earliest event time, then the smallest natural key; the survivor supplies every value', async () => {
    const r = await rollup([
      { ping: 'p1', t: T0 + 2000, key: 'r:A', episode: 'late' },
      { ping: 'p1', t: T0, key: 'r:C', episode: 'early' },
      { ping: 'p2', t: T0, key: 'r:Z', episode: 'tieZ', session: 'sB' },
      { ping: 'p2', t: T0, key: 'r:Y', episode: 'tieY', session: 'sB' },
    ]);
    expect(r.episodes.map((e) => e.episode_id)).toEqual(['early', 'tieY']);
    expect(r.duplicates).toEqual({ s3: 2 });
  });
  it('keys records without a ping id by their natural key: a retry without one counts twice', async () => {
    const r = await rollup([
      { t: T0, key: 'r:A' }, { t: T0 + 1000, key: 'r:B' }, // an old client's retry: two requests
      { t: T0, key: 'r:A' }, // the same record delivered twice by S3
    ]);
    expect(r.episodes).toMatchObject([{ pings: 2 }]);
    expect(r.duplicates).toEqual({ s3: 1 });
  });
  it('keeps to the day: a staged record of another day is not counted', async () => {
    const r = await rollup([{ t: T0, key: 'r:A' }, { t: Date.parse('2026-11-02T00:00:00Z'), key: 'r:B' }]);
    expect(r.episodes).toMatchObject([{ pings: 1 }]);
  });
});

describe('what each metric counts (contract §5)', () => {
  const records: Staged[] = [
    // session sA, logged in as u1: minutes 10:00 (twice) and 10:01
    { session: 'sA', user: 'u1', t: T0, key: 'r:1' },
    { session: 'sA', user: 'u1', t: T0 + 30_000, key: 'r:2' },
    { session: 'sA', user: 'u1', t: T0 + 60_000, key: 'r:3' },
    // session sB, the same viewer u1 on another device
    { session: 'sB', user: 'u1', t: T0, key: 'r:4' },
    // session sC, not logged in: viewer session:sC
    { session: 'sC', user: null, t: T0 + 120_000, key: 'r:5' },
    // another episode of the series, watched in session sA
    { session: 'sA', user: 'u1', episode: 'e2', t: T0 + 600_000, key: 'r:6' },
  ];
  it('per episode: pings, sessions, viewers, minutes, first and last', async () => {
    const r = await rollup(records);
    expect(r.episodes).toEqual([
      { day: expect.anything(), series_id: 's1', episode_id: 'e1', pings: 5, sessions: 3, viewers: 2, minutes_watched: 4,
        first_ping_at: expect.stringContaining('10:00:00'), last_ping_at: expect.stringContaining('10:02:00'), s3_pings: 5, dynamodb_pings: 0 },
      { day: expect.anything(), series_id: 's1', episode_id: 'e2', pings: 1, sessions: 1, viewers: 1, minutes_watched: 1,
        first_ping_at: expect.stringContaining('10:10:00'), last_ping_at: expect.stringContaining('10:10:00'), s3_pings: 1, dynamodb_pings: 0 },
    ]);
  });
  it('per series: distinct over the series, not sums of episode rows', async () => {
    const r = await rollup(records);
    // sessions: sA, sB, sC = 3 (episode rows sum to 4); viewers: u1, session:sC = 2 (sum 3); minutes: 5 (sum 5).
    expect(r.series).toEqual([{ day: expect.anything(), series_id: 's1', episodes: 2, pings: 6, sessions: 3, viewers: 2,
      minutes_watched: 5, first_ping_at: expect.stringContaining('10:00:00'), last_ping_at: expect.stringContaining('10:10:00') }]);
  });
  it('minutes: distinct minutes of the day, exact across 64-minute blocks, at both ends of the day and across episodes', async () => {
    const at = (hhmmss: string): number => Date.parse(`${DAY}T${hhmmss}Z`);
    const r = await rollup([
      { session: 'sZ', t: at('00:00:00'), key: 'r:1' }, // minute 0
      { session: 'sZ', t: at('00:32:00'), key: 'r:10' }, // 32: the same block, another bit
      { session: 'sZ', t: at('01:03:59'), key: 'r:2' }, // 63, the last of the first block
      { session: 'sZ', t: at('01:04:00'), key: 'r:3' }, // 64, the first of the second
      { session: 'sZ', t: at('01:04:30'), key: 'r:4' }, // 64 again
      { session: 'sZ', t: at('02:07:00'), key: 'r:5' }, // 127
      { session: 'sZ', t: at('02:08:00'), key: 'r:6' }, // 128
      { session: 'sZ', t: at('23:59:59'), key: 'r:7' }, // 1439, the day's last
      { session: 'sZ', episode: 'e2', t: at('01:04:10'), key: 'r:8' }, // 64 in another episode of the series
      { session: 'sY', t: at('01:04:00'), key: 'r:9' }, // 64 in another session
    ]);
    expect(r.episodes.map((e) => [e.episode_id, e.sessions, e.minutes_watched])).toEqual([['e1', 2, 8], ['e2', 1, 1]]);
    // The series counts sZ's minute 64 once, though two episodes have it.
    expect(r.series).toMatchObject([{ sessions: 2, minutes_watched: 8, pings: 10 }]);
  });
  it('concurrency: distinct sessions a minute; a session in two episodes in one minute is one session of the series; the earliest minute of a tie; the day\'s last minute; blocks', async () => {
    const at = (hhmmss: string): number => Date.parse(`${DAY}T${hhmmss}Z`);
    const r = await rollup([
      // 01:03 (minute 63, the first block's last): sA and sB in e1 (2), sC in e2: the series 3.
      { session: 'sA', t: at('01:03:00'), key: 'r:1' },
      { session: 'sB', t: at('01:03:30'), key: 'r:2' },
      { session: 'sB', t: at('01:03:50'), key: 'r:3' }, // sB twice in the minute: once
      { session: 'sC', episode: 'e2', t: at('01:03:10'), key: 'r:4' },
      // 01:04 (minute 64, the second block's first): sA in e1 and in e2, sC in e2: e1 1, e2 2, the series 2 (sA once).
      { session: 'sA', t: at('01:04:00'), key: 'r:5' },
      { session: 'sA', episode: 'e2', t: at('01:04:20'), key: 'r:6' },
      { session: 'sC', episode: 'e2', t: at('01:04:40'), key: 'r:7' },
      // 23:59 (minute 1439): sA, sB, sC in e1: e1's 3, the series' 3 again, later: 01:03 stays its peak.
      { session: 'sA', t: at('23:59:00'), key: 'r:8' },
      { session: 'sB', t: at('23:59:01'), key: 'r:9' },
      { session: 'sC', t: at('23:59:59'), key: 'r:10' },
      // A duplicate of sA's 23:59 ping (the same ping id) and another series' session: neither counts here.
      { session: 'sA', ping: 'p-dup', t: at('23:59:02'), key: 'r:11' },
      { session: 'sA', ping: 'p-dup', t: at('23:59:03'), key: 'r:12' },
      { series: 's2', session: 'sX', t: at('01:03:00'), key: 'r:13' },
    ]);
    const peak = (episode: string | null) => r.peaks.filter((p) => p.series_id === 's1' && p.episode_id === episode).map((p) => [p.peak_sessions, p.peak_minute]);
    expect(peak(null)).toEqual([[3, expect.stringContaining('01:03:00')]]);
    expect(peak('e1')).toEqual([[3, expect.stringContaining('23:59:00')]]);
    expect(peak('e2')).toEqual([[2, expect.stringContaining('01:04:00')]]);
    expect(r.peaks.filter((p) => p.series_id === 's2').map((p) => [p.episode_id, p.peak_sessions])).toEqual([[null, 1], ['e1', 1]]);
    expect(r.seriesMinutes.filter((m) => m.series_id === 's1').map((m) => [String(m.minute).slice(11, 16), m.sessions])).toEqual([['01:03', 3], ['01:04', 2], ['23:59', 3]]);
  });
  it('platforms: the configured ones by name, every other and none as unknown; sessions, viewers and minutes per series and platform', async () => {
    const at = (hhmm: string): number => Date.parse(`${DAY}T${hhmm}:00Z`);
    const records: Staged[] = [
      { session: 'sA', user: 'u1', platform: 'web', t: at('10:00'), key: 'r:1' },
      { session: 'sA', user: 'u1', platform: 'web', t: at('10:01'), key: 'r:2' },
      { session: 'sB', user: 'u1', platform: 'ios', t: at('10:00'), key: 'r:3' }, // u1 again, on another platform
      { session: 'sC', platform: 'smartfridge', t: at('10:00'), key: 'r:4' }, // not configured: unknown
      { session: 'sD', platform: null, t: at('10:05'), key: 'r:5' }, // none: unknown
      { session: 'sD', platform: null, t: at('10:05'), key: 'r:6', ping: 'p1' },
      { session: 'sD', platform: null, t: at('10:05'), key: 'r:7', ping: 'p1' }, // a duplicate: not counted
      { series: 's2', session: 'sE', platform: 'web', t: at('11:00'), key: 'r:8' },
      // The same ping from both collectors, their platforms differing: the survivor's (S3's) counts.
      { series: 's3', session: 'sF', platform: 'web', ping: 'p9', t: at('12:00'), key: 'r:9' },
      { series: 's3', session: 'sF', platform: 'ios', ping: 'p9', t: at('11:59'), key: 'k:9', source: 'dynamodb' },
    ];
    const rows = (r: Awaited<ReturnType<typeof rollup>>) => r.platforms.map((p) => [p.series_id, p.platform, p.pings, p.sessions, p.viewers, p.minutes_watched]);
    expect(rows(await rollup(records))).toEqual([
      ['s1', 'ios', 1, 1, 1, 1], ['s1', 'unknown', 3, 2, 2, 2], ['s1', 'web', 2, 1, 1, 2], ['s2', 'web', 1, 1, 1, 1], ['s3', 'web', 1, 1, 1, 1]]);
    // Another list: smartfridge by name, web no longer.
    expect(rows(await rollup(records, ['smartfridge', 'ios']))).toEqual([
      ['s1', 'ios', 1, 1, 1, 1], ['s1', 'smartfridge', 1, 1, 1, 1], ['s1', 'unknown', 4, 2, 2, 3], ['s2', 'unknown', 1, 1, 1, 1], ['s3', 'unknown', 1, 1, 1, 1]]);
    // PINGROLL_PLATFORMS: normalised as pings are, duplicates once; a name that is none, or no name, refused.
    expect(loadConfig({}).platforms).toEqual(DEFAULT_PLATFORMS);
    expect(loadConfig({ PINGROLL_PLATFORMS: ' Smart-Fridge, iOS ,ios' }).platforms).toEqual(['smartfridge', 'ios']);
    for (const bad of [',', 'web,--', 'web,unknown', 'a'.repeat(33)]) expect(() => loadConfig({ PINGROLL_PLATFORMS: bad }), bad).toThrow(/PINGROLL_PLATFORMS/);
  });
  it('a day with records but no staged ping: empty tables, and the audit of what was read', async () => {
    const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: defaultConfig().memoryLimitMb });
    try {
      const out = await rollupDay(engine, DAY, [], { s3: { not_ping: 3, http_error: 1 } });
      expect(out.pings).toBe(0);
      expect(await queryRows(engine, `SELECT * FROM ${out.tables.daily_episode_stats}`)).toEqual([]);
      expect(await queryRows(engine, `SELECT * FROM ${out.tables.daily_series_stats}`)).toEqual([]);
      expect((await queryRows<{ outcome: string; records: bigint }>(engine, `SELECT outcome, records FROM ${out.tables.daily_ingest_audit}`))
        .map((a) => [a.outcome, Number(a.records)])).toEqual([['http_error', 1], ['not_ping', 3]]);
    } finally {
      engine.closeSync();
    }
  });
  it('audit: ping minus duplicate is the day\'s pings', async () => {
    const r = await rollup([...records, { session: 'sA', user: 'u1', t: T0, key: 'r:1' }]);
    const audit = Object.fromEntries(r.audit.map((a) => [a.outcome, a.records]));
    expect((audit.ping as number) - (audit.duplicate as number)).toBe(r.episodes.reduce((n, e) => n + (e.pings as number), 0));
  });
});

describe('audience and automated traffic (contract §10)', () => {
  it('by country and by device: pings, sessions, viewers and minutes per series; staged formats 1 and 2 (no columns) as ZZ and unknown', async () => {
    const r = await rollup([
      { session: 'sA', user: 'u1', t: T0, key: 'r:1', country: 'GB', os: 'iOS', device: 'mobile', browser: 'Mobile Safari' },
      { session: 'sA', user: 'u1', t: T0 + 60_000, key: 'r:2', country: 'GB', os: 'iOS', device: 'mobile', browser: 'Mobile Safari' },
      { session: 'sB', user: 'u1', t: T0, key: 'r:3', country: 'GB', os: 'Windows', device: 'desktop', browser: 'Chrome' }, // u1 again, on a desktop
      { session: 'sC', t: T0 + 30_000, key: 'r:4', country: 'US', os: 'Windows', device: 'desktop', browser: 'Chrome' },
      { session: 'sC', t: T0 + 31_000, key: 'r:5', country: 'US', os: 'Windows', device: 'desktop', browser: 'Chrome' }, // same minute
      { source: 'dynamodb', session: 'sD', t: T0, key: 'k:1|sD' }, // an item: no IP, no user agent
    ]);
    expect(r.countries.map((c) => [c.series_id, c.country, c.pings, c.sessions, c.viewers, c.minutes_watched])).toEqual([
      ['s1', 'GB', 3, 2, 1, 3], ['s1', 'US', 2, 1, 1, 1], ['s1', 'ZZ', 1, 1, 1, 1]]);
    expect(r.devices.map((d) => [d.os, d.device_type, d.browser, d.pings, d.sessions, d.viewers, d.minutes_watched])).toEqual([
      ['Windows', 'desktop', 'Chrome', 3, 2, 2, 2], ['iOS', 'mobile', 'Mobile Safari', 2, 1, 1, 2], ['unknown', 'unknown', 'unknown', 1, 1, 1, 1]]);
    expect(r.invalid).toEqual([]);
  });

  it('a user agent on the bot list is left out of every table, counted as invalid_traffic with its rule, before duplicates', async () => {
    const r = await rollup([
      { session: 'sA', ping: 'p1', t: T0, key: 'r:1' },
      { session: 'bot', ping: 'b1', t: T0, key: 'r:2', agentRule: 'bot_list', series: 's1' },
      { session: 'bot', ping: 'b1', t: T0 + 1000, key: 'r:3', agentRule: 'bot_list', series: 's1' }, // its retry: invalid too, not a duplicate
      { session: 'bot', ping: 'b2', t: T0 + 60_000, key: 'r:4', agentRule: 'bot_list', series: 's1' },
    ]);
    expect(r.episodes).toMatchObject([{ series_id: 's1', pings: 1, sessions: 1 }]);
    expect(r.countries.map((c) => c.sessions)).toEqual([1]);
    expect(r.invalid).toEqual([{ day: expect.anything(), series_id: 's1', rule: 'bot_list', records: 3, sessions: 1, minutes_watched: 2 }]);
    expect(r.audit.map((a) => [a.outcome, a.records])).toEqual([['invalid_traffic', 3], ['ping', 1]]);
    // Each is kept as a rejects line, with its rule and why, and the record's staged columns.
    expect(r.rejects.map((x) => [x.outcome, x.rule, x.natural_key, x.ping_id, x.session])).toEqual([
      ['invalid_traffic', 'bot_list', 'r:2', 'b1', 'bot'], ['invalid_traffic', 'bot_list', 'r:3', 'b1', 'bot'], ['invalid_traffic', 'bot_list', 'r:4', 'b2', 'bot']]);
    expect(r.rejects[0]!.reason).toMatch(/bot list/);
    expect(r.rejects[0]).toMatchObject({ source: 's3', series: 's1', episode: 'e1', event_ms: T0 });
  });

  it.each([
    // (Rejects lines in time order.)
    ['series', [['s2', 'e1', 'not_in_catalog'], ['s2', 'e1', 'not_in_catalog'], ['s1', 'e1', 'bot_list']], [['s1', 'e1', 1], ['s1', 'e2', 1]]],
    ['episodes', [['s2', 'e1', 'not_in_catalog'], ['s2', 'e1', 'not_in_catalog'], ['s1', 'e1', 'bot_list'], ['s1', 'e2', 'not_in_catalog']], [['s1', 'e1', 1]]],
  ] as const)('PINGROLL_CATALOG_ONLY=%s: a ping the catalog does not list is left out before duplicates, as not_in_catalog, with its rejects line', async (only, left, kept) => {
    const r = await rollup([
      { session: 'sA', ping: 'p1', t: T0, key: 'r:1', series: 's1', episode: 'e1' },
      { session: 'sA', ping: 'p2', t: T0 + 60_000, key: 'r:2', series: 's1', episode: 'e2' }, // listed series, unlisted episode
      { session: 'sB', ping: 'p3', t: T0, key: 'r:3', series: 's2', episode: 'e1' }, // a series the catalog does not name
      { session: 'sB', ping: 'p3', t: T0 + 1000, key: 'r:4', series: 's2', episode: 'e1' }, // its retry: not_in_catalog too, not a duplicate
      { session: 'bot', ping: 'b1', t: T0 + 2000, key: 'r:5', series: 's1', episode: 'e1', agentRule: 'bot_list' }, // the bot list's rule comes first
    ], undefined, { only, episodes: [['s1', 'e1'], ['s9', 'e2']] });
    expect(r.episodes.map((e) => [e.series_id, e.episode_id, e.pings])).toEqual(kept);
    expect(r.rejects.map((x) => [x.series, x.episode, x.rule])).toEqual(left);
    expect(r.rejects.find((x) => x.rule === 'not_in_catalog')!.reason).toMatch(/PINGROLL_CATALOG_ONLY/);
    expect(r.audit.map((a) => [a.outcome, a.records])).toEqual([['invalid_traffic', left.length], ['ping', kept.length]]);
    expect(r.invalid.map((i) => [i.series_id, i.rule, i.records])).toEqual(only === 'series' ? [['s1', 'bot_list', 1], ['s2', 'not_in_catalog', 2]]
      : [['s1', 'bot_list', 1], ['s1', 'not_in_catalog', 1], ['s2', 'not_in_catalog', 2]]);
  });

  it('a session with more than 5 distinct pings in one minute is left out that day, all of it; 5, retries and two sessions together are not', async () => {
    const burst = (session: string, n: number, retries = 0): Staged[] => [
      ...Array.from({ length: n }, (_, i) => ({ session, ping: `${session}-${i}`, t: T0 + i * 1000, key: `r:${session}-${i}` })),
      ...Array.from({ length: retries }, (_, i) => ({ session, ping: `${session}-0`, t: T0 + 50_000 + i, key: `r:${session}-retry-${i}` })),
      { session, ping: `${session}-later`, t: T0 + 3_600_000, key: `r:${session}-later` }, // an hour later, one ping: left out too
    ];
    const r = await rollup([...burst('loop', 6), ...burst('five', 5, 4), ...burst('x', 3), ...burst('y', 3)]);
    expect(r.invalid).toEqual([{ day: expect.anything(), series_id: 's1', rule: 'session_rate', records: 7, sessions: 1, minutes_watched: 2 }]);
    expect(r.series).toMatchObject([{ pings: 6 + 4 + 4, sessions: 3 }]);
    expect(r.audit.map((a) => [a.outcome, a.records])).toEqual([['duplicate', 4], ['invalid_traffic', 7], ['ping', 10 + 4 + 4]]);
  });

  it('with the ping-id window on, a caught session\'s ids are kept as not counted, and its keys and text ids left out of the day\'s keys file', async () => {
    // Six pings in one minute (UUIDs and one other id) make `loop` caught; `fine` sends one a minute.
    const uuid = (session: string, i: number): string => `${session === 'loop' ? '0' : 'f'}0000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
    const sends = (session: string, every: number): Staged[] => Array.from({ length: 6 }, (_, i) => ({ session, ping: i === 5 ? `${session}-text` : uuid(session, i), t: T0 + i * every, key: `r:${session}-${i}` }));
    const wdir = await mkdtemp(join(dir, 'window-'));
    const window: DayWindow = { days: 30, history: [], closedAfter: [], out: join(wdir, 'ping-ids.parquet'), outKeys: join(wdir, 'ping-ids.keys'), dir: wdir };
    const r = await rollup([...sends('loop', 1000), ...sends('fine', 60_000)], undefined, undefined, window);
    expect(r.invalid.map((i) => [i.rule, i.records])).toEqual([['session_rate', 6]]);
    const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: defaultConfig().memoryLimitMb });
    try {
      const ids = await queryRows<{ ping_id: string; counted: boolean }>(engine, `SELECT ping_id, counted FROM read_parquet(${sqlString(window.out)}) ORDER BY ping_id`);
      expect(ids.filter((i) => i.counted).map((i) => i.ping_id)).toEqual([...Array.from({ length: 5 }, (_, i) => uuid('fine', i)), 'fine-text']);
      expect(ids.filter((i) => !i.counted).map((i) => i.ping_id)).toEqual([...Array.from({ length: 5 }, (_, i) => uuid('loop', i)), 'loop-text']);
    } finally {
      engine.closeSync();
    }
    const keys = new KeysFile(window.outKeys);
    try {
      expect([keys.n, keys.textIds]).toEqual([5, 1]);
      expect([...keys.texts()].flat().map((t) => t.id)).toEqual(['fine-text']);
    } finally {
      keys.close();
    }
  });
});

describe('the ping-id window across staged formats', () => {
  /** Stages `ids` (one session, a minute apart from `t0`) as one file: of format 4 (with each id's key columns, as the parser writes them) or of format 3 (none). */
  async function stage(engine: Awaited<ReturnType<typeof openEngine>>, ids: string[], t0: number, keyed: boolean): Promise<string> {
    const file = join(dir, `${keyed ? 'keyed' : 'staged'}-${Math.random().toString(36).slice(2)}.parquet`);
    const rows = ids.map((id, i) => {
      const k = keyed ? stagedIdKey(id) : null;
      return `('s3', 's1', 'e1', 'sA', NULL, ${sqlString(id)}, ${t0 + i * 60_000}::BIGINT, ${sqlString(`r:${t0}-${i}`)}, NULL, NULL, 'ZZ', 'unknown', 'unknown', 'unknown', NULL${keyed ? `, ${k ? `(${k.hi})::BIGINT, (${k.lo})::BIGINT` : 'NULL::BIGINT, NULL::BIGINT'}` : ''})`;
    });
    await engine.run(`COPY (SELECT * FROM (VALUES ${rows.join(', ')}) t(${[...STAGED_COLUMN_NAMES, ...(keyed ? ['key_hi', 'key_lo'] : [])].join(', ')})) TO ${sqlString(file)} (FORMAT parquet)`);
    return file;
  }

  // A resent UUID is found whichever format staged each of its two days: the key the parser stages and
  // the key made from the text are the same bytes (the nil UUID and the top bits' edges included).
  for (const [before, after] of [[false, true], [true, false], [true, true]] as const) {
    it(`finds the resends of a day staged ${before ? 'with' : 'without'} its ids' keys on a day staged ${after ? 'with' : 'without'} them`, async () => {
      const sent = ['00000000-0000-0000-0000-000000000000', '7fffffff-ffff-ffff-ffff-ffffffffffff', '80000000-0000-0000-0000-000000000000',
        'ffffffff-ffff-ffff-ffff-ffffffffffff', '0f8fad5b-d9cb-469f-a165-70867728950e', 'text-id'];
      const fresh = ['1f8fad5b-d9cb-469f-a165-70867728950e', 'ffffffff-ffff-ffff-ffff-fffffffffffe', 'other-text'];
      const engine = await openEngine({ tempDir: join(dir, 'spill'), memoryLimitMb: defaultConfig().memoryLimitMb });
      try {
        const wdir = await mkdtemp(join(dir, 'formats-'));
        const win = (name: string, history: DayWindow['history']): DayWindow => ({ days: 30, history, closedAfter: [], out: join(wdir, `${name}.parquet`), outKeys: join(wdir, `${name}.keys`), dir: wdir });
        const first = win('before', []);
        const prior = '2026-10-31';
        const a = await rollupDay(engine, prior, [await stage(engine, sent, Date.parse(`${prior}T10:00:00Z`), before)], { s3: { ping: sent.length } }, { window: first });
        expect(a.pingIdRows).toBe(sent.length);
        const second = win('day', [{ parquet: null, keys: first.outKeys }]);
        // The day resends every id of the day before, in another order, and sends three of its own.
        const ids = [...[...sent].reverse(), ...fresh];
        const b = await rollupDay(engine, DAY, [await stage(engine, ids, T0, after)], { s3: { ping: ids.length } }, { window: second });
        expect(b.repeats).toEqual({ s3: sent.length });
        expect(b.pings).toBe(fresh.length);
        const counted = await queryRows<{ ping_id: string; repeat: boolean }>(engine, `SELECT ping_id, "repeat" FROM read_parquet(${sqlString(second.out)}) ORDER BY ping_id`);
        expect(counted).toEqual(ids.map((ping_id) => ({ ping_id, repeat: sent.includes(ping_id) })).sort((x, y) => (x.ping_id < y.ping_id ? -1 : 1)));
      } finally {
        engine.closeSync();
      }
    });
  }

  // The check runs on a second connection while the survivors are grouped, and they are grouped again
  // when it finds repeats; on a connection that has no second (an engine not opened by openEngine),
  // the two run one after the other, with the same figures.
  it('finds the same resends on a connection with no second one to check on', async () => {
    const sent = ['0f8fad5b-d9cb-469f-a165-70867728950e', '2f8fad5b-d9cb-469f-a165-70867728950e', 'text-id'];
    const fresh = ['1f8fad5b-d9cb-469f-a165-70867728950e', 'other-text'];
    const instance = await DuckDBInstance.create(':memory:');
    const engine = await instance.connect();
    expect(await sibling(engine)).toBeNull();
    try {
      const wdir = await mkdtemp(join(dir, 'alone-'));
      const win = (name: string, history: DayWindow['history']): DayWindow => ({ days: 30, history, closedAfter: [], out: join(wdir, `${name}.parquet`), outKeys: join(wdir, `${name}.keys`), dir: wdir });
      const first = win('before', []);
      const prior = '2026-10-31';
      await rollupDay(engine, prior, [await stage(engine, sent, Date.parse(`${prior}T10:00:00Z`), true)], { s3: { ping: sent.length } }, { window: first });
      const ids = [...sent, ...fresh];
      const b = await rollupDay(engine, DAY, [await stage(engine, ids, T0, true)], { s3: { ping: ids.length } }, { window: win('day', [{ parquet: null, keys: first.outKeys }]) });
      expect([b.repeats, b.pings]).toEqual([{ s3: sent.length }, fresh.length]);
      const episodes = await queryRows<{ pings: bigint; minutes_watched: bigint }>(engine, `SELECT pings, minutes_watched FROM ${b.tables.daily_episode_stats}`);
      expect(episodes.map((e) => [Number(e.pings), Number(e.minutes_watched)])).toEqual([[fresh.length, fresh.length]]);
    } finally {
      engine.closeSync();
    }
  });
});
