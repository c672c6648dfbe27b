/**
 * The daily job end to end through a directory: generated days with retries, duplicates, late
 * objects and noise, checked against the oracle; re-runs, late arrivals and crashes.
 */
import { BATCHES, DAYS, INTENTS, PARSED, PUBLISH_PREFIX, SEALS, STAGING } from '../../datasets/layout.js';
import { Ledger } from '../../state/ledger.js';
import { removeLeftovers } from '../../state/leftovers.js';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { availableParallelism, hostname } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSample, sampleEpisodeCatalog, sampleEpisodes, type LogObject, type Sample } from '../../tools/sample/access-log-generator.js';
import { EpisodeCatalogError } from '../../rollup/episode-catalog.js';
import { sliceOf } from '../../ingest/listing/slices.js';
import { memoryLog } from '../../lib/log.js';
import type { Backends } from '../../infra/backends.js';
import type { Config } from '../../infra/config.js';
import { withRun } from '../../jobs/run.js';
import { withStage } from '../../jobs/stages/stage.js';
import { DirectoryObjectStore } from '../../state/object-store/directory-object-store.js';
import { acquireLock, LockHeldError, lockKey } from '../../state/run-lock.js';
import { catalogDurations, expectedCompletion, expectedCountries, expectedDay, expectedDevices, expectedHourly, expectedInvalid, expectedPeaks, expectedPlatforms, expectedSeriesMinutes } from '../support/oracle.js';
import { crashingStore, dirConfig, onBackends, runReconcileDays, query, readDay, rm, runDay, runDays, tempDir, tempRoots, writeObjects } from '../support/job-fixture.js';
import { LISTER_RULES } from '../../ingest/listing/lister.js';

const DAY = '2026-11-01';
let sample: Sample;
const root = tempRoots();

beforeAll(() => {
  sample = generateSample({ date: DAY, sessions: 400, seed: 11, truth: true, recordsPerObject: 500, lateShare: 0.2, bursts: 4 });
});
describe('the daily job over a directory', () => {
  it('with an episode catalog, counts how far sessions got into each episode exactly (positions past the duration, or not staged, ignored; episodes it lacks NULL); a bad catalog stops the run before any work', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    const csv = sampleEpisodeCatalog();
    await writeFile(join(r, 'episodes.csv'), csv);
    // A bad catalog: refused, naming the row, before anything is read or published.
    for (const [body, why] of [
      ['series_id,episode_id\ns1000,e1\n', /has no column duration_seconds/],
      ['series_id,episode_id,duration_seconds\ns1000,e1,1320\ns1000,e2,22m\n', /series_id 's1000', episode_id 'e2'.* has duration_seconds '22m', not a whole number of seconds/],
      ['series_id,episode_id,duration_seconds\ns1000,e1,1320\ns1000,e1,1321\n', /series_id 's1000', episode_id 'e1'.* is given twice, with 1320 and 1321 seconds/],
      ['series_id,episode_id,duration_seconds\ns1000,,60\n', /has an empty id/],
      ['series_id,episode_id,duration_seconds\ns1000,e1,0\n', /not a whole number of seconds from 1/],
      ['series_id, episode_id, duration_seconds\ns1000, e1, 60\n', /episode_id ' e1'.* has an id beginning or ending in a blank \(a space after a comma\?\)/],
      ['my catalog\nseries_id,episode_id,duration_seconds\ns1000,e1,60\n', /not a readable CSV|has no column/],
      ['series_id,episode_id,duration_seconds,duration_seconds\ns1000,e1,60,61\n', /names duration_seconds 2 times/],
      ['series_id,episode_id,duration_seconds\n', /it lists no episode/],
      ['series_id,episode_id,duration_seconds\ns1000,e1\u00a0,60\n', /has an id beginning or ending in a blank/],
    ] as const) {
      await writeFile(join(r, 'bad.csv'), body);
      const run = runDay(dirConfig(r, { PINGROLL_EPISODE_CATALOG: join(r, 'bad.csv') }), { day: DAY, log: memoryLog() });
      await expect(run).rejects.toThrow(why);
      // A configuration error: exit 2.
      await expect(run).rejects.toBeInstanceOf(EpisodeCatalogError);
    }
    await expect(runDay(dirConfig(r, { PINGROLL_EPISODE_CATALOG: join(r, 'none.csv') }), { day: DAY, log: memoryLog() })).rejects.toThrow(/PINGROLL_EPISODE_CATALOG=.*none\.csv cannot be read: ENOENT; point it at the catalog CSV, or unset it/);
    // So do a dry run, a backfill and a --stale one, each before any work.
    const bad = dirConfig(r, { PINGROLL_EPISODE_CATALOG: join(r, 'bad.csv') });
    await expect(runDay(bad, { day: DAY, log: memoryLog(), dryRun: true })).rejects.toBeInstanceOf(EpisodeCatalogError);
    await expect(runDays(bad, { from: DAY, to: DAY, log: memoryLog() })).rejects.toBeInstanceOf(EpisodeCatalogError);
    await expect(runDays(bad, { stale: true, log: memoryLog(), now: new Date('2026-11-20T00:00:00Z') })).rejects.toBeInstanceOf(EpisodeCatalogError);
    // Nothing parsed, staged or published: only the run's state (its lock, let go).
    expect((await readdir(join(r, 'out')).catch(() => [])).filter((d) => d !== '_state' && d !== '.tmp')).toEqual([]);
    expect(await new DirectoryObjectStore(join(r, 'out')).list(STAGING)).toEqual([]);
    expect(await new DirectoryObjectStore(join(r, 'out')).list(PARSED)).toEqual([]);

    const summary = await runDay(dirConfig(r, { PINGROLL_EPISODE_CATALOG: join(r, 'episodes.csv') }), { day: DAY, log: memoryLog() });
    expect(summary.pings).toBeGreaterThan(0);
    const want = expectedCompletion(sample.truth, DAY, catalogDurations(sampleEpisodes()));
    // The fixture covers what the test claims: episodes the catalog lacks, sessions starting part-way,
    // positions past the end or not staged, and every threshold reached by some and not others.
    expect(want.some((w) => w.duration_seconds === null)).toBe(true);
    expect(sample.truth.some((t) => t.outcome === 'ping' && t.pos === null)).toBe(true);
    expect(sample.truth.some((t) => t.outcome === 'ping' && (t.pos ?? 0) > 90_000)).toBe(true);
    for (const k of ['reached_25', 'reached_50', 'reached_75', 'reached_95'] as const) {
      expect(want.some((w) => w[k]! > 0), k).toBe(true);
      expect(want.some((w) => w[k] !== null && w[k]! < w.sessions_with_position!), k).toBe(true);
    }
    const sql = (from: string): string => `SELECT day::VARCHAR AS day, * EXCLUDE (day) FROM ${from} ORDER BY series_id, episode_id`;
    expect(await query(sql(`read_parquet('${join(r, 'out', 'daily_episode_completion', `dt=${DAY}`, 'part-00000.parquet')}', hive_partitioning = false)`))).toEqual(want);
    expect(await query(sql('daily_episode_completion'), join(r, 'wh.duckdb'))).toEqual(want);
    const manifest = JSON.parse(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json'), 'utf8'));
    expect(manifest.episodeCatalog).toEqual({ url: join(r, 'episodes.csv'), sha256: createHash('sha256').update(csv).digest('hex'), episodes: 40 * 11 });

    // A range backfill redoes a day made with another catalog (its bytes changed), and only then;
    // one without a catalog, or --stale, leaves it alone.
    const backfill = (extra: Record<string, string>, o: { stale?: boolean } = {}) => runDays(dirConfig(r, extra), { ...(o.stale ? { stale: true, now: new Date('2026-11-20T00:00:00Z') } : { from: DAY, to: DAY }), log: memoryLog() });
    const withCatalog = { PINGROLL_EPISODE_CATALOG: join(r, 'episodes.csv') };
    expect((await backfill(withCatalog)).skipped).toEqual([DAY]);
    expect((await backfill({})).skipped).toEqual([DAY]);
    // The one rule (jobs/stages/day.ts): another setting this run sets (the platforms counted by name) rolls the day up again.
    expect((await backfill({ ...withCatalog, PINGROLL_PLATFORMS: 'web,ios' })).done).toEqual([DAY]);
    expect((await backfill({ ...withCatalog, PINGROLL_PLATFORMS: 'web,ios' })).skipped).toEqual([DAY]);
    await writeFile(join(r, 'episodes.csv'), csv.replace(/^(s1000,.*,e1,)\d+$/m, '$1' + '60'));
    expect((await backfill(withCatalog, { stale: true })).done).toEqual([]);
    expect((await backfill(withCatalog)).done).toEqual([DAY]);
    const e1 = await query<{ duration_seconds: number }>(`SELECT duration_seconds FROM daily_episode_completion WHERE series_id = 's1000' AND episode_id = 'e1'`, join(r, 'wh.duckdb'));
    expect(e1).toEqual([{ duration_seconds: 60 }]);

    // PINGROLL_CATALOG_ONLY=episodes: a range backfill redoes the day (kept to the catalog now), and
    // the pings of episodes the catalog does not list are invalid_traffic, rule not_in_catalog, each
    // in the rejects; what is left is exactly the listed episodes' rows of before.
    const listed = new Set(sampleEpisodes().map((e) => `${e.series}\u0000${e.episode}`));
    const before = await query<{ series_id: string; episode_id: string; pings: number }>(`SELECT series_id, episode_id, pings FROM daily_episode_stats ORDER BY ALL`, join(r, 'wh.duckdb'));
    expect(before.some((e) => !listed.has(`${e.series_id}\u0000${e.episode_id}`))).toBe(true);
    expect((await backfill({ ...withCatalog, PINGROLL_CATALOG_ONLY: 'episodes' })).done).toEqual([DAY]);
    const after = await query<{ series_id: string; episode_id: string; pings: number }>(`SELECT series_id, episode_id, pings FROM daily_episode_stats ORDER BY ALL`, join(r, 'wh.duckdb'));
    expect(after).toEqual(before.filter((e) => listed.has(`${e.series_id}\u0000${e.episode_id}`)));
    const audit = await query<{ outcome: string; records: number }>(`SELECT outcome, records FROM daily_ingest_audit WHERE day = '${DAY}' ORDER BY outcome`, join(r, 'wh.duckdb'));
    const notListed = await query<{ records: number }>(`SELECT sum(records)::INTEGER AS records FROM daily_invalid_traffic WHERE rule = 'not_in_catalog'`, join(r, 'wh.duckdb'));
    expect(notListed[0]!.records).toBeGreaterThan(0);
    const lines = gunzipSync(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'rejects.jsonl.gz'))).toString().trim().split('\n').map((l) => JSON.parse(l) as { rule?: string; series?: string; episode?: string });
    const caught = lines.filter((l) => l.rule === 'not_in_catalog');
    expect(caught).toHaveLength(notListed[0]!.records);
    expect(caught.every((l) => !listed.has(`${l.series}\u0000${l.episode}`))).toBe(true);
    expect(audit.find((a) => a.outcome === 'invalid_traffic')!.records).toBe(lines.filter((l) => l.rule).length);
    const m = JSON.parse(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json'), 'utf8'));
    expect(m.episodeCatalog.only).toBe('episodes');
    // Set without a catalog: a configuration error.
    expect(() => dirConfig(r, { PINGROLL_CATALOG_ONLY: 'episodes' })).toThrow(/PINGROLL_CATALOG_ONLY=episodes keeps pings to the episode catalog, and PINGROLL_EPISODE_CATALOG names none/);
    expect(() => dirConfig(r, { ...withCatalog, PINGROLL_CATALOG_ONLY: 'yes' })).toThrow(/PINGROLL_CATALOG_ONLY=yes is not one of series, episodes/);
  });

  it('counts each country and device exactly when viewers come as real traffic: an address of each session\'s own, IPv4 and IPv6, and hundreds of user agents', async () => {
    const r = root();
    const traffic = generateSample({ date: DAY, sessions: 600, seed: 57, truth: true, recordsPerObject: 500, audience: 'traffic' });
    const pings = traffic.truth.filter((t) => t.day === DAY && t.outcome === 'ping');
    const sessions = new Set(pings.map((t) => t.session));
    // The fixture is what the test claims: about an address a session, both families, many countries and agents.
    const addresses = new Set(traffic.objects.flatMap((o) => [...o.text.matchAll(/\] (\S+) /g)].map((m) => m[1]!)));
    expect(addresses.size).toBeGreaterThan(sessions.size * 0.9);
    expect([...addresses].some((a) => a.includes(':'))).toBe(true);
    expect(new Set(pings.map((t) => t.country)).size).toBeGreaterThan(20);
    expect(new Set(traffic.objects.flatMap((o) => [...o.text.matchAll(/"([^"]*(?:Chrome|iPhone|ExoPlayer|Roku|AppleCoreMedia)[^"]*)"/g)].map((m) => m[1]!))).size).toBeGreaterThan(100);
    await writeObjects(join(r, 'logs'), traffic.objects);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const file = (t: string): string => `read_parquet('${join(r, 'out', t, `dt=${DAY}`, 'part-00000.parquet')}', hive_partitioning = false)`;
    expect(await query(`SELECT day::VARCHAR AS day, series_id, country, pings, sessions, viewers, minutes_watched FROM ${file('daily_country_stats')} ORDER BY series_id, country`)).toEqual(expectedCountries(traffic.truth, DAY));
    expect(await query(`SELECT day::VARCHAR AS day, series_id, os, device_type, browser, pings, sessions, viewers, minutes_watched FROM ${file('daily_device_stats')} ORDER BY series_id, os, device_type, browser`)).toEqual(expectedDevices(traffic.truth, DAY));
    expect((await readDay(join(r, 'out'), DAY)).episodes).toEqual(expectedDay(traffic.truth, DAY).episodes);
  });

  it('produces exactly the rollups of the contract in Parquet and in the warehouse', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    const summary = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const want = expectedDay(sample.truth, DAY);
    const got = await readDay(join(r, 'out'), DAY);
    expect(got.episodes).toEqual(want.episodes);
    expect(got.series).toEqual(want.series);
    expect(got.audit).toEqual(want.audit);
    expect(summary.pings).toBe(want.episodes.reduce((n, e) => n + e.pings, 0));
    // Sanity of the fixture itself: it has what the test claims to cover.
    const outcomes = Object.fromEntries(want.audit.map((a) => [a.outcome, a.records]));
    expect(outcomes.duplicate).toBeGreaterThan(0);
    expect(outcomes.malformed).toBeGreaterThan(0);
    expect(outcomes.bad_query).toBeGreaterThan(0);
    expect(outcomes.http_error).toBeGreaterThan(0);

    // The warehouse holds the same rows.
    const wh = join(r, 'wh.duckdb');
    const whEpisodes = await query(`SELECT day::VARCHAR AS day, * EXCLUDE (day, first_ping_at, last_ping_at), first_ping_at::VARCHAR AS first_ping_at, last_ping_at::VARCHAR AS last_ping_at FROM daily_episode_stats ORDER BY series_id, episode_id`, wh);
    expect(whEpisodes).toEqual(want.episodes);
    expect(await query(`SELECT day::VARCHAR AS day, source, outcome, records FROM daily_ingest_audit ORDER BY outcome`, wh)).toEqual(want.audit);

    // Rejects: every malformed and bad_query record of the day, with where it came from and why.
    const rejects = gunzipSync(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'rejects.jsonl.gz'))).toString().trim().split('\n').map((l) => JSON.parse(l));
    // And every ping left out as automated traffic (contract §10), each with the rule that caught it:
    // exactly the generator's automated records, by natural key.
    expect(rejects).toHaveLength((outcomes.malformed ?? 0) + (outcomes.bad_query ?? 0) + (outcomes.invalid_traffic ?? 0));
    expect(rejects[0]).toMatchObject({ source: 's3', input: expect.any(String), at: expect.any(Number), reason: expect.any(String), record: expect.any(String) });
    const left = rejects.filter((x) => x.outcome === 'invalid_traffic') as Array<{ natural_key: string; rule: string; reason: string }>;
    const bots = sample.truth.filter((t) => t.day === DAY && t.outcome === 'invalid_traffic');
    expect(left.map((x) => `${x.natural_key} ${x.rule}`).sort()).toEqual(bots.map((t) => `${t.naturalKey} ${t.rule}`).sort());
    expect(new Set(left.map((x) => x.rule))).toEqual(new Set(['bot_list', 'session_rate']));
    expect(left.every((x) => x.reason.length > 20)).toBe(true);
    // Bursts inside normal viewing, decided minute by minute (more pings than minutes + 5 in a block,
    // fewer than 5 a minute watched): one minute of 6 is caught, 3 a minute is not.
    const bursts = sample.truth.filter((t) => t.day === DAY && t.session?.startsWith('burst-'));
    expect(new Set(bursts.map((t) => `${Number(t.session!.split('-')[2]) % 2 === 0 ? 'caught' : 'held'} ${t.outcome}`))).toEqual(new Set(['caught invalid_traffic', 'held ping']));

    const file = (t: string): string => `read_parquet('${join(r, 'out', t, `dt=${DAY}`, 'part-00000.parquet')}', hive_partitioning = false)`;
    // The manifest names inputs, counts and outputs.
    const manifest = JSON.parse(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ day: DAY, pings: summary.pings, outcomes: { s3: { ping: outcomes.ping } } });
    expect(manifest.outputs.map((o: { table: string; rows: number }) => [o.table, o.rows])).toEqual([
      ['daily_episode_stats', want.episodes.length], ['daily_series_stats', want.series.length], ['daily_ingest_audit', want.audit.length], ['daily_hourly_stats', expectedHourly(sample.truth, DAY).length],
      ['daily_peaks', expectedPeaks(sample.truth, DAY).length], ['daily_series_minutes', expectedSeriesMinutes(sample.truth, DAY).length],
      // No PINGROLL_VIEWER_KEY: the viewer datasets are published, with no rows.
      ['daily_series_viewers', 0], ['daily_episode_viewers', 0], ['daily_platform_stats', expectedPlatforms(sample.truth, DAY).length],
      ['daily_country_stats', expectedCountries(sample.truth, DAY).length], ['daily_device_stats', expectedDevices(sample.truth, DAY).length],
      ['daily_invalid_traffic', expectedInvalid(sample.truth, DAY).length],
      ['daily_episode_completion', want.episodes.length], ['daily_runs', 1]]);
    // No PINGROLL_EPISODE_CATALOG: a completion row per episode, its figures NULL.
    expect(await query(`SELECT count(*)::INT AS n FROM ${file('daily_episode_completion')} WHERE duration_seconds IS NOT NULL OR reached_25 IS NOT NULL OR avg_share_watched IS NOT NULL`)).toEqual([{ n: 0 }]);
    expect(manifest.episodeCatalog).toBeNull();

    // Concurrency: each series' minutes and the peaks, in Parquet and in the warehouse.
    const peaksSql = (from: string): string => `SELECT day::VARCHAR AS day, series_id, episode_id, peak_sessions, peak_minute::VARCHAR AS peak_minute FROM ${from} ORDER BY series_id, episode_id NULLS FIRST`;
    const peaks = expectedPeaks(sample.truth, DAY);
    expect(peaks.some((p) => p.peak_sessions > 1)).toBe(true);
    expect(await query(peaksSql(file('daily_peaks')))).toEqual(peaks);
    expect(await query(peaksSql('daily_peaks'), wh)).toEqual(peaks);
    const minutesSql = (from: string): string => `SELECT day::VARCHAR AS day, series_id, minute::VARCHAR AS minute, sessions FROM ${from} ORDER BY series_id, minute`;
    expect(await query(minutesSql(file('daily_series_minutes')))).toEqual(expectedSeriesMinutes(sample.truth, DAY));
    expect(await query(minutesSql('daily_series_minutes'), wh)).toEqual(expectedSeriesMinutes(sample.truth, DAY));

    // By platform: the configured ones by name (one sent as 'Android TV' among them), the rest unknown.
    const platforms = expectedPlatforms(sample.truth, DAY);
    expect(new Set(platforms.map((p) => p.platform))).toEqual(new Set(['web', 'ios', 'android', 'roku', 'tvos', 'firetv', 'androidtv', 'unknown']));
    const platformSql = (from: string): string => `SELECT day::VARCHAR AS day, series_id, platform, pings, sessions, viewers, minutes_watched FROM ${from} ORDER BY series_id, platform`;
    expect(await query(platformSql(file('daily_platform_stats')))).toEqual(platforms);
    expect(await query(platformSql('daily_platform_stats'), wh)).toEqual(platforms);

    // By country and by device (contract §10): each session's address and user agent as the generator meant them.
    const countries = expectedCountries(sample.truth, DAY);
    expect(new Set(countries.map((c) => c.country))).toEqual(new Set(['GB', 'NL', 'US', 'JP', 'BR', 'ZA', 'ZZ']));
    const countrySql = (from: string): string => `SELECT day::VARCHAR AS day, series_id, country, pings, sessions, viewers, minutes_watched FROM ${from} ORDER BY series_id, country`;
    expect(await query(countrySql(file('daily_country_stats')))).toEqual(countries);
    expect(await query(countrySql('daily_country_stats'), wh)).toEqual(countries);
    const devices = expectedDevices(sample.truth, DAY);
    expect(new Set(devices.map((d) => d.device_type))).toEqual(new Set(['desktop', 'mobile', 'tablet', 'smarttv', 'unknown']));
    const deviceSql = (from: string): string => `SELECT day::VARCHAR AS day, series_id, os, device_type, browser, pings, sessions, viewers, minutes_watched FROM ${from} ORDER BY series_id, os, device_type, browser`;
    expect(await query(deviceSql(file('daily_device_stats')))).toEqual(devices);
    expect(await query(deviceSql('daily_device_stats'), wh)).toEqual(devices);
    // Automated traffic: every bot session left out, by its rule, and every viewing session kept (the tables above).
    const invalid = expectedInvalid(sample.truth, DAY);
    expect(new Set(invalid.map((i) => i.rule))).toEqual(new Set(['bot_list', 'session_rate']));
    const invalidSql = (from: string): string => `SELECT day::VARCHAR AS day, series_id, rule, records, sessions, minutes_watched FROM ${from} ORDER BY series_id, rule`;
    expect(await query(invalidSql(file('daily_invalid_traffic')))).toEqual(invalid);
    expect(await query(invalidSql('daily_invalid_traffic'), wh)).toEqual(invalid);
    expect(outcomes.invalid_traffic).toBe(invalid.reduce((n, i) => n + i.records, 0));

    // By hour: distinct session-minutes within each hour, and they add up to the day's minutes.
    const hourly = await query(`SELECT day::VARCHAR AS day, hour, minutes_watched FROM read_parquet('${join(r, 'out', 'daily_hourly_stats', `dt=${DAY}`, 'part-00000.parquet')}', hive_partitioning = false) ORDER BY hour`);
    expect(hourly).toEqual(expectedHourly(sample.truth, DAY));
    expect(await query(`SELECT day::VARCHAR AS day, hour, minutes_watched FROM daily_hourly_stats ORDER BY hour`, wh)).toEqual(hourly);
    // The manifest does not enumerate the inputs: it names each batch's list, its count and digest.
    expect(manifest.inputs.objects).toBeUndefined();
    expect(manifest.inputs.objectCount).toBeGreaterThan(0);
    let listed = 0;
    for (const list of manifest.inputs.objectLists as Array<{ key: string; objects: number; sha256: string }>) {
      const body = await readFile(join(r, 'out', list.key));
      expect(createHash('sha256').update(body).digest('hex')).toBe(list.sha256);
      const lines = gunzipSync(body).toString('utf8').split('\n').map((l) => JSON.parse(l) as { key: string; records: number });
      expect(lines).toHaveLength(list.objects);
      listed += lines.length;
    }
    expect(listed).toBe(manifest.inputs.objectCount);
    expect(manifest.inputs.staged.length).toBeGreaterThan(0);

    // daily_runs: the day as it was published, in Parquet and in the warehouse alike.
    const run = { day: DAY, run: summary.run, code_version: manifest.version, objects_read: manifest.inputs.objectCount, tables_read: 0, quarantined_objects: 0, state: 'complete' };
    const runsFile = `read_parquet('${join(r, 'out', 'daily_runs', `dt=${DAY}`, 'part-00000.parquet')}', hive_partitioning = false)`;
    expect(await query(`SELECT day::VARCHAR AS day, * EXCLUDE (day, published_at) FROM ${runsFile}`)).toEqual([run]);
    expect(await query(`SELECT day::VARCHAR AS day, * EXCLUDE (day, published_at) FROM daily_runs`, wh)).toEqual([run]);
  });

  it('stages a large batch in parts, made Parquet while parsing goes on, with the same result', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog(), stagingPartBytes: 64 * 1024 });
    const want = expectedDay(sample.truth, DAY);
    const got = await readDay(join(r, 'out'), DAY);
    expect(got).toMatchObject({ episodes: want.episodes, series: want.series, audit: want.audit });
    const store = new DirectoryObjectStore(join(r, 'out'));
    const staged = (await store.list(STAGING)).filter((f) => f.includes(`/dt=${DAY}/`) && f.endsWith('.parquet'));
    // Converted more than once: parts while parsing went on, those that came meanwhile together.
    expect(staged.length).toBeGreaterThan(1);
    // In a local directory the staged pings are uncompressed (lib/parquet-codec.ts stagedCodec).
    const codecs = await query<{ compression: string }>(`SELECT DISTINCT compression FROM parquet_metadata([${staged.map((f) => `'${store.localFile(f)}'`).join(', ')}])`);
    expect(codecs.map((c) => c.compression)).toEqual(['UNCOMPRESSED']);
  });

  it('parses in threads with the same result as in the run\'s own thread', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    // DuckDB on two threads too (the suite's runs are on one unless they say: job-fixture.ts suiteConfig).
    const summary = await runDay({ ...dirConfig(r), parseThreads: 2, threads: 2 }, { day: DAY, log: memoryLog(), stagingPartBytes: 64 * 1024 });
    expect(summary.parsedObjects).toBe(sample.objects.length);
    const want = expectedDay(sample.truth, DAY);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(want);
    // Each thread wrote parts of its own, all staged.
    const store = new DirectoryObjectStore(join(r, 'out'));
    expect((await store.list(STAGING)).filter((f) => f.includes(`/dt=${DAY}/`) && f.endsWith('.parquet')).length).toBeGreaterThan(1);
  });

  it('commits a run\'s new objects in batches of at most batchObjects, each as it is done; a run killed after some is finished by the next', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    const want = expectedDay(sample.truth, DAY);
    const size = Math.ceil(sample.objects.length / 3);
    let commits = 0;
    await expect(runDay(dirConfig(r), { day: DAY, log: memoryLog(), batchObjects: size },
      (b) => ({ ...b, store: crashingStore(b.store, (op, key) => op === 'put' && key.startsWith(BATCHES) && ++commits === 3) }))).rejects.toThrow('simulated crash');
    // Two batches were committed before the kill: the next run parses only the rest, and the day is exact.
    const rerun = await runDay(dirConfig(r), { day: DAY, log: memoryLog(), batchObjects: size });
    expect(rerun.parsedObjects).toBe(sample.objects.length - 2 * size);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(want);
    const lists = (await new DirectoryObjectStore(join(r, 'out')).list(`${DAYS}dt=${DAY}/`)).filter((k) => k.endsWith('.json'));
    expect(lists).toHaveLength(3);
  });

  it('changes nothing when run again', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const first = await readDay(join(r, 'out'), DAY);
    const manifest = await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json'), 'utf8');
    // The run state as each file was last written (the lock and the check records aside: those change).
    const written = async (): Promise<string[]> => (await Promise.all((await readdir(join(r, 'out', '_state'), { recursive: true }))
      .filter((f) => !/^(lock|checks)(\/|$)/.test(f)).sort()
      .map(async (f) => { const st = await stat(join(r, 'out', '_state', f)); return st.isFile() ? `${f} ${st.mtimeMs}` : ''; }))).filter(Boolean);
    const before = await written();
    expect(before.filter((f) => f.startsWith('seals/')).length).toBeGreaterThan(0);
    const log = memoryLog();
    const again = await runDay(dirConfig(r), { day: DAY, log });
    expect(again.parsedObjects).toBe(0);
    // Nothing written again: no seal, no listing state.
    expect(await written()).toEqual(before);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(first);
    const wh = join(r, 'wh.duckdb');
    expect(await query(`SELECT count(*) AS n FROM daily_episode_stats`, wh)).toEqual([{ n: first.episodes.length }]);
    // Nothing new: nothing published again (the manifest is the first run's, byte for byte), and the
    // check said: by the run, and by status, whose day was checked after it was published.
    expect(again.pings).toBe((first.episodes as Array<{ pings: number }>).reduce((n, e) => n + e.pings, 0));
    expect(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json'), 'utf8')).toBe(manifest);
    expect(log.events.map((e) => e.event)).toContain('day.unchanged');
    expect(log.events.map((e) => e.event)).not.toContain('day.done');
    const { statusCommand } = await import('../../cli/commands/status.js');
    const [status] = (await statusCommand(dirConfig(r), { from: DAY, to: DAY, json: true })).text.trim().split('\n').map((l) => JSON.parse(l) as { publishedAt: string; checkedAt: string });
    expect(status!.checkedAt > status!.publishedAt).toBe(true);
    // A setting the figures depend on, changed: the day is rolled up again (a viewer key: its viewers).
    const keyed = memoryLog();
    await runDay(dirConfig(r, { PINGROLL_VIEWER_KEY: 'another-viewer-key-0123456789' }), { day: DAY, log: keyed });
    expect(keyed.events.map((e) => e.event)).toContain('day.done');
    expect((await readDay(join(r, 'out'), DAY)).episodes).toEqual(first.episodes);
  });

  it('stops with what to do when a staged file a commit names is gone', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const store = new DirectoryObjectStore(join(r, 'out'));
    const parquet = (await store.list(STAGING)).find((f) => f.includes(`/dt=${DAY}/`) && f.endsWith('.parquet'))!;
    const batch = parquet.split('/')[1]!;
    await store.delete(parquet);
    // A run with nothing new leaves the day as published, and reads no staged file: one that rolls
    // the day up again (here: another setting) needs them all.
    expect((await runDay(dirConfig(r), { day: DAY, log: memoryLog() })).pings).toBe(expectedDay(sample.truth, DAY).episodes.reduce((n, e) => n + e.pings, 0));
    const failure = await runDay(dirConfig(r, { PINGROLL_PLATFORMS: 'web,ios' }), { day: DAY, log: memoryLog() }).then(() => null, (err: Error) => err.message);
    expect(failure).toMatch(new RegExp(`staged pings .*${parquet.replace(/\./g, '\\.')} are missing.*delete _state/days/dt=\\*/${batch}\\.\\*, _state/parsed/\\*/${batch}\\.\\*\\.keys and _state/seals/, then run pingroll reconcile --from (\\S+) --to (\\S+), which parses`));
    // Doing what it says repairs the day.
    const [, from, to] = /reconcile --from (\S+) --to (\S+),/.exec(failure!)!;
    for (const key of [...await store.list('_state/days/'), ...await store.list('_state/parsed/')]) if (key.includes(batch)) await store.delete(key);
    for (const key of await store.list('_state/seals/')) await store.delete(key);
    const reconciled = await runReconcileDays(dirConfig(r), { from: from!, to: to!, log: memoryLog(), shard: null });
    expect(reconciled.parsedObjects).toBe(sample.objects.length);
    expect(reconciled.stale).toEqual([DAY]);
    const again = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(again.parsedObjects).toBe(0);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(sample.truth, DAY));
  });

  it('reads batch commits written before staging came in parts (one file per day, not a list)', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const first = await readDay(join(r, 'out'), DAY);
    const batches = join(r, 'out', '_state', 'batches');
    for (const f of await readdir(batches)) {
      const commit = JSON.parse(await readFile(join(batches, f), 'utf8'));
      for (const d of Object.values(commit.days) as Array<{ pings: string[] | string | null }>) {
        if (Array.isArray(d.pings)) {
          expect(d.pings).toHaveLength(1);
          d.pings = d.pings[0]!;
        }
      }
      await writeFile(join(batches, f), JSON.stringify(commit));
    }
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(await readDay(join(r, 'out'), DAY)).toEqual(first);
  });

  it('picks up objects that arrive after a run of the day at the next run', async () => {
    const r = root();
    const sorted = [...sample.objects].sort((a, b) => a.deliveredMs - b.deliveredMs);
    const early = sorted.slice(0, Math.floor(sorted.length * 0.7));
    const late = sorted.slice(early.length);
    await writeObjects(join(r, 'logs'), early);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const partial = await readDay(join(r, 'out'), DAY);
    expect(partial.episodes).toEqual(expectedDay(early.flatMap((o) => o.truth), DAY).episodes);
    await writeObjects(join(r, 'logs'), late);
    const second = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(second.parsedObjects).toBe(late.length);
    const want = expectedDay(sample.truth, DAY);
    const got = await readDay(join(r, 'out'), DAY);
    expect(got).toEqual(want);
    // The warehouse holds the new day, once.
    expect(await query(`SELECT sum(pings)::BIGINT AS n FROM daily_episode_stats`, join(r, 'wh.duckdb'))).toEqual([{ n: want.episodes.reduce((n, e) => n + e.pings, 0) }]);
  });

  it.each([
    // The batch was committed before the crash: the re-run parses nothing.
    ['between ingest and export', 'put', (key: string) => key.startsWith(PUBLISH_PREFIX), 0],
    // Nothing was committed: the re-run parses every object again, and orphaned staging is ignored.
    ['before the batch commit', 'put', (key: string) => key.startsWith(BATCHES), -1],
    // Committed, not compacted (or compacted halfway): the next run compacts it and parses nothing.
    ['between the batch commit and its compaction', 'put', (key: string) => key.startsWith(DAYS), 0],
    ['halfway through the compaction', 'put', (key: string) => key.startsWith(PARSED), 0],
    // The day's journal was written, one table moved into place: the next run completes the publication first.
    ['inside the publish step', 'move', (key: string) => key.startsWith('daily_series_stats/'), 0],
    // Committed; the seals, written while the day is rolled up, failed: the next run seals and lists again.
    ['while sealing', 'put', (key: string) => key.startsWith(SEALS), 0],
  ] as const)('gives the result of one clean run after a crash %s', async (_when, op, crashAt, reparsed) => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    await expect(runDay(dirConfig(r), { day: DAY, log: memoryLog() }, (b) => ({ ...b, store: crashingStore(b.store, (o, key) => o === op && crashAt(key)) })))
      .rejects.toThrow('simulated crash');
    const rerun = await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(rerun.parsedObjects).toBe(reparsed < 0 ? sample.objects.length : reparsed);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(sample.truth, DAY));
  });

  it('writes the seals while the day is rolled up: a failed seal fails the run once the day is published, its lock let go after every seal ended; the next run seals', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    let sealing = 0, sealsEnded = 0;
    const slow = (b: Backends): Backends => {
      const inner = b.store;
      const store = Object.assign(Object.create(inner) as typeof inner, {
        putMarker: async (key: string) => {
          const n = ++sealing;
          // A turn of the event loop: the seal stays in flight while the day is rolled up.
          await new Promise((resolve) => setImmediate(resolve));
          sealsEnded++;
          if (n === 5) throw new Error('seal failed');
          return inner.putMarker(key);
        },
      });
      return { ...b, store };
    };
    const log = memoryLog();
    await expect(runDay(dirConfig(r), { day: DAY, log }, slow)).rejects.toThrow('seal failed');
    // Every seal had ended before the run ended (and so before its lock was let go); the day was published.
    expect(sealing).toBeGreaterThan(5);
    expect(sealsEnded).toBe(sealing);
    expect(log.events.some((e) => e.event === 'day.done')).toBe(true);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(sample.truth, DAY));
    // The listing state was not saved (it follows the seals); the next run takes the lock, parses nothing and seals.
    const store = new DirectoryObjectStore(join(r, 'out'));
    expect(await store.get('_state/listing.json')).toBeNull();
    const again = memoryLog();
    expect((await runDay(dirConfig(r), { day: DAY, log: again })).parsedObjects).toBe(0);
    expect(again.events.find((e) => e.event === 'ingest.sealed')?.fields.slicesSealed).toBe(1);
    expect(await store.get('_state/listing.json')).not.toBeNull();
    expect((await store.list(SEALS)).length).toBe(sealing);
  });

  it('reads only what can be new: a no-op run after three days reads no earlier day of the ledger (a directory is listed whole, and its sealed slices are not read)', async () => {
    const r = root();
    const days = ['2026-11-01', '2026-11-02', '2026-11-03'];
    const samples = days.map((date, i) => generateSample({ date, sessions: 60, seed: 40 + i, truth: true, recordsPerObject: 300 }));
    for (const [i, day] of days.entries()) {
      await writeObjects(join(r, 'logs'), samples[i]!.objects);
      await runDay(dirConfig(r), { day, log: memoryLog() });
    }
    const seen: string[] = [];
    const log = memoryLog();
    const again = await runDay(dirConfig(r), { day: '2026-11-03', log }, (b) => ({ ...b, store: crashingStore(b.store, (op, key) => (seen.push(`${op} ${key}`), false)) }));
    expect(again.parsedObjects).toBe(0);
    // Every slice it listed is as its seal says: no parsed key of any day was read.
    const listed = log.events.find((e) => e.event === 'ingest.done')!.fields;
    expect(listed).toMatchObject({ listed: samples.flatMap((s) => s.objects).length, parsedSlicesRead: 0, sealedSlicesUnchanged: new Set(samples.flatMap((s) => s.objects).map((o) => { const s = sliceOf(o.key); return `${s.day}/${s.slice}`; })).size });
    const ledgerReads = seen.filter((s) => /^(get|list) _state\/(parsed|days|batches)\//.test(s));
    expect(ledgerReads.length).toBeGreaterThan(0);
    expect(ledgerReads.filter((s) => s.includes('2026-11-01'))).toEqual([]);
  });

  it('finds an object that appeared long after the time in its name at the next run, reading the parsed keys of its slice only (a directory is listed whole)', async () => {
    const r = root();
    // Objects small enough that slices hold several; the earliest that shares its slice, delivered last.
    const many = generateSample({ date: DAY, sessions: 400, seed: 11, truth: true, recordsPerObject: 60, lateShare: 0.2 });
    const sorted = [...many.objects].sort((a, b) => a.deliveredMs - b.deliveredMs);
    const sliceName = (o: LogObject): string => { const s = sliceOf(o.key); return `${s.day}/${s.slice}`; };
    const straggler = sorted.find((o) => sorted.filter((p) => sliceName(p) === sliceName(o)).length > 1)!;
    const rest = sorted.filter((o) => o !== straggler);
    await writeObjects(join(r, 'logs'), rest);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    // Every slice the listing saw is sealed with what it saw of it.
    const store = new DirectoryObjectStore(join(r, 'out'));
    const seals = await store.list(SEALS);
    const inSlice = (objects: LogObject[], day: string, slice: string): number => objects.filter((o) => { const s = sliceOf(o.key); return s.day === day && s.slice === slice; }).length;
    const sealed = seals.map((k) => /^_state\/seals\/(\d{4}-\d{2}-\d{2})\/([\d-]+)\.(\d+)\.[0-9a-f]{64}$/.exec(k)!).map((m) => ({ day: m[1]!, slice: m[2]!, count: Number(m[3]) }));
    expect(sealed.length).toBe(new Set(rest.map(sliceName)).size);
    for (const s of sealed) expect(s.count).toBe(inSlice(rest, s.day, s.slice));
    // The next run finds it, and reads the parsed keys of the one slice that changed.
    await writeObjects(join(r, 'logs'), [straggler]);
    const log = memoryLog();
    const next = await runDay(dirConfig(r), { day: DAY, log });
    expect(next.parsedObjects).toBe(1);
    expect(log.events.find((e) => e.event === 'ingest.done')?.fields).toMatchObject({ sealedSlicesUnchanged: sealed.length - 1, parsedSlicesRead: 1 });
    const straggling = sliceOf(straggler.key);
    expect((await store.list(SEALS)).find((k) => k.startsWith(`${SEALS}${straggling.day}/${straggling.slice}.`))).toContain(`.${inSlice(many.objects, straggling.day, straggling.slice)}.`);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(many.truth, DAY));
  });

  it('completes a day a killed run left half published, whatever day the next run is for', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    await expect(runDay(dirConfig(r), { day: DAY, log: memoryLog() },
      (b) => ({ ...b, store: crashingStore(b.store, (op, key) => op === 'move' && key.startsWith('daily_series_stats/')) }))).rejects.toThrow('simulated crash');
    const store = new DirectoryObjectStore(join(r, 'out'));
    expect(await store.list(PUBLISH_PREFIX)).toContain(`${PUBLISH_PREFIX}dt=${DAY}.json`);
    const log = memoryLog();
    await runDay(dirConfig(r), { day: '2026-11-02', log });
    expect(log.events.find((e) => e.event === 'publish.recover')?.fields).toMatchObject({ day: DAY });
    expect(await store.list(PUBLISH_PREFIX)).toEqual([]);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(sample.truth, DAY));
    expect(await query(`SELECT count(*)::INT AS n FROM daily_series_stats WHERE day = DATE '${DAY}'`, join(r, 'wh.duckdb'))).toEqual([{ n: expectedDay(sample.truth, DAY).series.length }]);
  });

  it('removes what killed runs left: staging of a batch that never committed, a commit not compacted, half-written files, work folders of dead processes, a rollup in the warehouse\'s files (the viewer key\'s secret among them)', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const store = new DirectoryObjectStore(join(r, 'out'));
    const committed = (await store.list(STAGING)).sort();
    // A run killed before its batch commit (its intent and a staged part), a write killed midway
    // (by a process that is gone), a dead process's work folder.
    const dead = 2 ** 22 + 4321;
    await store.put(`${INTENTS}20261101T000000Z-deadbeef.json`, Buffer.from(JSON.stringify({ id: '20261101T000000Z-deadbeef', commit: `${BATCHES}20261101T000000Z-deadbeef.json` })));
    await store.put(`${STAGING}20261101T000000Z-deadbeef/dt=${DAY}/part-0.parquet`, Buffer.from('PAR1'));
    await writeFile(join(r, 'out', '.tmp', `${dead}-0123456789ab`), 'half');
    const { mkdir } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const deadDir = join(tmpdir(), `pingroll-run-${dead}-leftover`);
    await mkdir(join(deadDir, 'spill'), { recursive: true });
    // A run killed while Redshift rolled its day up: its manifests, its secret file, an UNLOADed file.
    const rolling = `_warehouse-rollup/20261101T000000Z-deadbeef/dt=${DAY}/`;
    for (const f of ['staged.manifest', 'viewer-secret.parquet', 'daily_series_stats/0000_part_00.parquet']) await store.put(`${rolling}${f}`, Buffer.from('x'));
    const log = memoryLog();
    await runDay(dirConfig(r), { day: DAY, log });
    // (Other dead processes' folders in TMPDIR may go too.)
    expect(log.events.find((e) => e.event === 'leftovers.removed')?.fields).toEqual({ staged: 1, compacted: 0, temporaries: 1, workDirs: expect.any(Number), warehouseRollup: 3 });
    expect(await store.list('_warehouse-rollup/')).toEqual([]);
    // A shard (which runs beside others, one of which may be rolling up) leaves that prefix alone.
    await store.put(`${rolling}staged.manifest`, Buffer.from('x'));
    expect((await removeLeftovers(store, await Ledger.load(store, LISTER_RULES), '0/2')).warehouseRollup).toBe(0);
    expect(await store.list('_warehouse-rollup/')).toEqual([`${rolling}staged.manifest`]);
    await store.delete(`${rolling}staged.manifest`);
    expect((await store.list(STAGING)).sort()).toEqual(committed);
    expect(await store.list(INTENTS)).toEqual([]);
    expect(await readdir(join(r, 'out', '.tmp'))).toEqual([]);
    const { existsSync } = await import('node:fs');
    expect(existsSync(deadDir)).toBe(false);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(sample.truth, DAY));
  });

  it('leaves the day as it was when the disk fills while publishing, and publishes it whole at the next run', async () => {
    const r = root();
    const sorted = [...sample.objects].sort((a, b) => a.deliveredMs - b.deliveredMs);
    const early = sorted.slice(0, Math.ceil(sorted.length / 2));
    await writeObjects(join(r, 'logs'), early);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const before = await readDay(join(r, 'out'), DAY);
    const manifest = await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json'), 'utf8');
    const warehouse = await query(`SELECT sum(pings)::BIGINT AS n FROM daily_episode_stats`, join(r, 'wh.duckdb'));
    await writeObjects(join(r, 'logs'), sorted.slice(early.length));
    // The disk fills as the second table's Parquet is staged.
    const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    await expect(runDay(dirConfig(r), { day: DAY, log: memoryLog() },
      (b) => ({ ...b, store: crashingStore(b.store, (op, key) => op === 'put' && key.startsWith(PUBLISH_PREFIX) && key.includes('daily_series_stats'), enospc) }))).rejects.toThrow(/ENOSPC/);
    expect(await readDay(join(r, 'out'), DAY)).toEqual(before);
    expect(await readFile(join(r, 'out', '_runs', `dt=${DAY}`, 'manifest.json'), 'utf8')).toBe(manifest);
    expect(await query(`SELECT sum(pings)::BIGINT AS n FROM daily_episode_stats`, join(r, 'wh.duckdb'))).toEqual(warehouse);
    // Nothing staged for publishing is left behind, and the next run publishes the whole new day.
    expect(await new DirectoryObjectStore(join(r, 'out')).list(PUBLISH_PREFIX)).toEqual([]);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    expect(await readDay(join(r, 'out'), DAY)).toEqual(expectedDay(sample.truth, DAY));
  });

  it('rolls up the next day from what the same batch staged, records spilling past midnight included', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    await runDay(dirConfig(r), { day: DAY, log: memoryLog() });
    const next = await runDay(dirConfig(r), { day: '2026-11-02', log: memoryLog() });
    expect(next.parsedObjects).toBe(0);
    expect(await readDay(join(r, 'out'), '2026-11-02')).toEqual(expectedDay(sample.truth, '2026-11-02'));
  });

  it('runs each of its DuckDB engines on PINGROLL_THREADS threads; unset, one per core', async () => {
    const r = root();
    await mkdir(join(r, 'logs'), { recursive: true });
    const threadsOf = async (config: Config): Promise<number> => onBackends(config, memoryLog(), (b) => b, (backends) =>
      withRun(backends, { id: 'threads-test', command: 'test', kind: 'test', log: memoryLog(), start: ['test.start', {}] }, (run) =>
        withStage({ config, backends, run }, 'test', async ({ db }) => Number((await db.runAndReadAll("SELECT current_setting('threads') AS n")).getRowObjects()[0]!.n))));
    expect(await threadsOf(dirConfig(r, { PINGROLL_THREADS: '3' }))).toBe(3);
    expect(await threadsOf(dirConfig(r))).toBe(availableParallelism());
    expect(() => dirConfig(r, { PINGROLL_THREADS: '0' })).toThrow(/^PINGROLL_THREADS=0 must be a whole number from 1 to 1024$/);
  });

  it('reports what it would do on --dry-run, and writes nothing', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects);
    const log = memoryLog();
    await runDay(dirConfig(r), { day: DAY, log, dryRun: true });
    expect(log.events.find((e) => e.event === 'dry-run')?.fields).toMatchObject({ objectsToParse: sample.objects.length, batchesStagedForDay: 0 });
    expect(await new DirectoryObjectStore(join(r, 'out')).list('')).toEqual([]);
  });

  it('fails at once, saying who holds it, when another run holds the lock', async () => {
    const r = root();
    await writeObjects(join(r, 'logs'), sample.objects.slice(0, 1));
    const store = new DirectoryObjectStore(join(r, 'out'));
    // A live process on this host (our parent) holds the lock.
    await store.putIfAbsent(lockKey(1), Buffer.from(JSON.stringify({ run: 'other-run', host: hostname(), pid: process.ppid, pidStart: null, since: 'now', command: 'rollup 2026-11-01', expiresAt: Date.now() + 600_000 })));
    await expect(runDay(dirConfig(r), { day: DAY, log: memoryLog() })).rejects.toThrow(/locked by run other-run .*pid/);
    await expect(runDay(dirConfig(r), { day: DAY, log: memoryLog() })).rejects.toBeInstanceOf(LockHeldError);
    await store.delete(lockKey(1));
    // A lock left by a dead process is taken over.
    await store.putIfAbsent(lockKey(1), Buffer.from(JSON.stringify({ run: 'dead', host: hostname(), pid: 2 ** 22 + 12345, pidStart: null, since: 'then', command: 'rollup', expiresAt: Date.now() + 600_000 })));
    const lock = await acquireLock(store, 'mine', 'test');
    expect(lock.key).toBe(lockKey(2));
    await lock.release();
    expect(JSON.parse((await store.get(lockKey(2)))!.toString())).toMatchObject({ run: 'mine', released: true });
    expect(await store.get(lockKey(1))).toBeNull();
  });
});

