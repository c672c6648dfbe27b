/**
 * The ping-id window (contract §4): a ping resent days later with its id is counted once, on the day
 * it was first counted, when the resend is at most PINGROLL_DEDUPE_DAYS (30) after it by event time;
 * a repeat is counted nowhere, and its day's audit says `repeat`. Held to the oracle extended with the
 * window (test/support/oracle.ts), for days run in order, in reverse order (each day made stale by the
 * one before it published later, then republished by rollup-stale), with the window off, and for a
 * late record of an earlier day that takes an id from a published later day.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { withBackends } from '../../infra/backends.js';
import { dayManifestKey, PING_IDS } from '../../datasets/layout.js';
import { statusCommand } from '../../cli/commands/status.js';
import { runMonthRollup } from '../../jobs/month.js';
import { memoryLog } from '../../lib/log.js';
import { RunFigures } from '../../infra/observe/run-figures.js';
import { addDays, DAY_MS, daysFrom, dayOf } from '../../lib/utc-day.js';
import { generateSample, logTime, objectKeyTime, type LogObject, type TruthRecord } from '../../tools/sample/access-log-generator.js';
import { expectedDay, expectedMonth, windowRepeats } from '../support/oracle.js';
import { dirConfig, query, readDay, runCloseMonth, runDay, runDays, tempRoots, writeObjects } from '../support/job-fixture.js';

const root = tempRoots();
afterAll(() => {});

const B = '2026-10-01';
const T0 = Date.parse(`${B}T10:00:00Z`);
const SECOND = 1000, HOUR = 3_600_000;
let seq = 0;

/** One ping's access-log record, and what the oracle is told of it. */
function ping(at: number, id: string, session: string, series = 'resent-series'): { line: string; truth: TruthRecord; at: number } {
  const reqId = `W${(seq++).toString(16).toUpperCase().padStart(15, '0')}`;
  const q = `x-series=${series}&x-episode=e1&x-session=${session}&x-ping=${id}&x-ts=${at}`;
  const line = `79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be media-pings [${logTime(at)}] 81.2.69.142 - ${reqId} REST.GET.OBJECT p.gif "GET /p.gif?${q} HTTP/1.1" 200 - 43 43 12 3 "-" "ExoPlayerLib/2.19.1 (Linux; Android 14) okhttp/4.12.0" -`;
  return { line, at, truth: { outcome: 'ping', eventTimeMs: at, day: dayOf(at), series, episode: 'e1', session, user: null, naturalKey: `r:${reqId}`, dedupeKey: id, platform: null, pos: null } };
}

/** Each record in an object of its own, delivered ten minutes after its event (or at `deliveredMs`). */
function objectsOf(pings: Array<ReturnType<typeof ping>>, deliveredMs?: number): LogObject[] {
  return pings.map((p, i) => {
    const at = deliveredMs ?? p.at + 600_000;
    return { key: `logs/${objectKeyTime(at)}-W${String(seq).padStart(6, '0')}${i}`, text: p.line + '\n', gzip: false, deliveredMs: at, records: 1, truth: [p.truth] };
  });
}

/** Resends at the window's edges (by event time from the first sending), and a chain: the third sending is more than 30 days after the first counted one. */
function edges(): Array<ReturnType<typeof ping>> {
  const pairs: Array<[string, number[]]> = [
    ['id-one-day', [0, DAY_MS]],
    ['id-29d23h', [0, 29 * DAY_MS + 23 * HOUR]],
    ['id-30d', [0, 30 * DAY_MS]],
    ['id-30d-1s', [0, 30 * DAY_MS + SECOND]],
    ['id-chain', [0, 20 * DAY_MS, 40 * DAY_MS]],
    ['id-same-day', [0, 2 * HOUR]],
  ];
  return pairs.flatMap(([id, offsets]) => offsets.map((o, k) => ping(T0 + o, id, `s-${id}-${k}`)));
}

/** A sample whose sessions resend (hours to three weeks later), and the edges: objects and truth. */
function traffic(): { objects: LogObject[]; truth: TruthRecord[]; days: string[] } {
  const sample = generateSample({ date: B, sessions: 150, seed: 56, truth: true, series: 5, recordsPerObject: 200, resends: 0.4 });
  const e = edges();
  const truth = [...sample.truth, ...e.map((p) => p.truth)];
  const last = truth.filter((t) => t.outcome === 'ping').map((t) => t.day).sort().at(-1)!;
  return { objects: [...sample.objects, ...objectsOf(e)], truth, days: daysFrom(B, last) };
}

const NOW = new Date('2026-11-25T02:30:00Z');

async function expectDays(r: string, truth: TruthRecord[], days: string[], w: number): Promise<void> {
  for (const day of days) {
    const want = expectedDay(truth, day, w);
    if (want.audit.length === 0) continue;
    expect(await readDay(join(r, 'out'), day), day).toEqual(want);
  }
}

/** A published day's manifest, as the job wrote it. */
async function readManifest(r: string, day: string): Promise<{ repeats: Record<string, number>; pingIds: { key: string; rows: number } | null }> {
  return JSON.parse(await readFile(join(r, 'out', dayManifestKey(day)), 'utf8')) as { repeats: Record<string, number>; pingIds: { key: string; rows: number } | null };
}

describe('the ping-id window (contract §4)', () => {
  it('counts a resent ping once within 30 days by event time (the edges, a chain, a month end), with repeat in the audit and the manifest; the months too', async () => {
    const r = root();
    const t = traffic();
    await writeObjects(join(r, 'logs'), t.objects);
    const config = dirConfig(r);
    const repeats = windowRepeats(t.truth, 30);
    // The oracle's own reading of the edges: the resends at 1 day, 29d23h and exactly 30 days are
    // repeats; 30 days and a second is counted; the chain's second is a repeat and its third counted.
    const repeated = new Set([...repeats].map((p) => `${p.dedupeKey}@${p.eventTimeMs - T0}`));
    for (const k of [`id-one-day@${DAY_MS}`, `id-29d23h@${29 * DAY_MS + 23 * HOUR}`, `id-30d@${30 * DAY_MS}`, `id-chain@${20 * DAY_MS}`]) expect(repeated.has(k), k).toBe(true);
    for (const k of [`id-30d-1s@${30 * DAY_MS + SECOND}`, `id-chain@${40 * DAY_MS}`]) expect(repeated.has(k), k).toBe(false);
    // The generator's resends make repeats of their own.
    expect([...repeats].filter((p) => !p.dedupeKey!.startsWith('id-')).length).toBeGreaterThan(20);

    const log = memoryLog();
    const s = await runDays(config, { from: t.days[0]!, to: t.days.at(-1)!, log, now: NOW });
    expect(s.failed).toEqual([]);
    await expectDays(r, t.truth, t.days, 30);
    // The run's metrics count them, and status shows each day's.
    const figures = new RunFigures();
    for (const e of log.events) figures.observe(e.event, e.fields);
    expect(figures.repeats).toBe(repeats.size);
    // Each day's rollup says what the window cost it: the day 30 days on read the 30 days before it.
    const checked = log.events.find((e) => e.event === 'window.checked' && e.fields.day === addDays(B, 30))?.fields;
    expect(checked, 'window.checked').toMatchObject({ days: 30, historyFiles: 30, repeats: [...repeats].filter((p) => p.day === addDays(B, 30)).length, passes: 1 });
    expect(checked?.checkMs).toEqual(expect.any(Number));
    const status = JSON.parse((await statusCommand(config, { from: addDays(B, 30), to: addDays(B, 30), json: true }, NOW)).text) as { repeats: number };
    expect(status.repeats).toBe([...repeats].filter((p) => p.day === addDays(B, 30)).length);
    // The manifest says how many repeats each day left out; ping - duplicate - repeat = pings.
    const m = await readManifest(r, addDays(B, 30));
    expect(m.repeats.s3).toBeGreaterThanOrEqual(1);
    expect(m.pingIds?.rows).toBeGreaterThan(0);
    const audit = await query<{ outcome: string; n: number }>(`SELECT outcome, sum(records)::INT AS n FROM read_parquet('${join(r, 'out', 'daily_ingest_audit', '*', '*.parquet')}') GROUP BY outcome ORDER BY outcome`);
    expect(audit.find((a) => a.outcome === 'repeat')?.n).toBe(repeats.size);
    // The months count every ping once too: October's and November's.
    for (const month of ['2026-10', '2026-11']) {
      await withBackends(config, memoryLog(), (b) => runMonthRollup(config, b, { month, log: memoryLog(), now: NOW }));
      const cols = 'month::VARCHAR AS month, series_id, episodes, pings, sessions, viewers, minutes_watched, days_watched';
      expect(await query(`SELECT ${cols} FROM read_parquet('${join(r, 'out', 'monthly_series_stats', `dt=${month}-01`, 'part-00000.parquet')}', hive_partitioning = false) ORDER BY series_id`), month)
        .toEqual(expectedMonth(t.truth, month, 30));
    }
  }, 300_000);

  it('gives the same days run newest first: each day a later one counted first goes stale, says why, and rollup-stale republishes it', async () => {
    const r = root();
    const e = edges();
    const truth = e.map((p) => p.truth);
    await writeObjects(join(r, 'logs'), objectsOf(e));
    const config = dirConfig(r);
    const days = [...new Set(truth.map((t) => t.day))].sort();
    for (const day of [...days].reverse()) await runDay(config, { day, log: memoryLog(), now: NOW });
    // The first sending's day was published last: the day that counted its id first is stale, and says why.
    const status = JSON.parse((await statusCommand(config, { from: addDays(B, 1), to: addDays(B, 1), json: true }, NOW)).text) as { state: string; reason: string };
    expect(status.state).toBe('stale');
    expect(status.reason).toMatch(new RegExp(`counted otherwise since ${B} was published`));
    const s = await runDays(config, { stale: true, log: memoryLog(), now: NOW });
    expect(s.failed).toEqual([]);
    expect(s.done).toContain(addDays(B, 1));
    for (const day of days) expect(await readDay(join(r, 'out'), day), day).toEqual(expectedDay(truth, day, 30));
    // Nothing is left stale.
    const after = (await statusCommand(config, { from: days[0], to: days.at(-1), json: true }, NOW)).text.trim().split('\n').map((l) => JSON.parse(l) as { day: string; state: string });
    for (const d of after.filter((a) => days.includes(a.day))) expect(d.state, d.day).not.toBe('stale');
  }, 300_000);

  it('with PINGROLL_DEDUPE_DAYS=0 gives each day alone, as before the window', async () => {
    const r = root();
    const t = traffic();
    await writeObjects(join(r, 'logs'), t.objects);
    const config = dirConfig(r, { PINGROLL_DEDUPE_DAYS: '0' });
    const s = await runDays(config, { from: t.days[0]!, to: t.days.at(-1)!, log: memoryLog(), now: NOW });
    expect(s.failed).toEqual([]);
    await expectDays(r, t.truth, t.days, 0);
    const audit = await query<{ n: number }>(`SELECT count(*)::INT AS n FROM read_parquet('${join(r, 'out', 'daily_ingest_audit', '*', '*.parquet')}') WHERE outcome = 'repeat'`);
    expect(audit[0]!.n).toBe(0);
    // Nothing of the window is kept, and no manifest names ping ids: the days cost what they did before it.
    expect(existsSync(join(r, 'out', PING_IDS)), 'the ping ids kept').toBe(false);
    for (const day of t.days) expect((await readManifest(r, day)).pingIds ?? null, `${day}'s manifest`).toBeNull();
  }, 300_000);

  it('a late record of an earlier day takes the id from a published later day: that day goes stale and is republished, the record counted where it was first sent', async () => {
    const r = root();
    const config = dirConfig(r);
    const first = [ping(T0 + 5 * DAY_MS, 'id-late', 's-late-b'), ping(T0 + 5 * DAY_MS + 60_000, 'id-other', 's-late-b')];
    await writeObjects(join(r, 'logs'), objectsOf(first));
    const days = daysFrom(B, addDays(B, 5));
    const s1 = await runDays(config, { from: days[0]!, to: days.at(-1)!, log: memoryLog(), now: NOW });
    expect(s1.failed).toEqual([]);
    // An object that appears late, under its delivery time on day B + 2: the same id, sent that day.
    // The night's cron: the daily job (a directory is listed whole: it finds the object), then rollup-stale.
    const late = [ping(T0 + 2 * DAY_MS, 'id-late', 's-late-a')];
    await writeObjects(join(r, 'logs'), objectsOf(late));
    const truth = [...first, ...late].map((p) => p.truth);
    await runDay(config, { day: '2026-11-24', log: memoryLog(), now: NOW });
    const s2 = await runDays(config, { stale: true, log: memoryLog(), now: NOW });
    expect(s2.failed).toEqual([]);
    expect(s2.done).toEqual([addDays(B, 2), addDays(B, 5)]);
    for (const day of [addDays(B, 2), addDays(B, 5)]) expect(await readDay(join(r, 'out'), day), day).toEqual(expectedDay(truth, day, 30));
    const later = await readDay(join(r, 'out'), addDays(B, 5));
    expect(later.audit).toContainEqual({ day: addDays(B, 5), source: 's3', outcome: 'repeat', records: 1 });
  }, 300_000);
});

describe('the ping-id window across a closed month (contract §4, §9)', () => {
  it('keeps a closed day\'s figures: a resend after the close is the repeat on its open day, and a late record of a closed day whose id a day around it counts is no adjustment', async () => {
    const r = root();
    const OCT = daysFrom('2026-10-01', '2026-10-31');
    const NOV_10 = new Date('2026-11-10T06:00:00Z');
    const samples = OCT.map((date, i) => generateSample({ date, sessions: 2, seed: 560 + i, truth: true, series: 2, episodesPerSeries: 2, recordsPerObject: 60 }));
    const at = (day: string, hh: number): number => Date.parse(`${day}T${String(hh).padStart(2, '0')}:00:00Z`);
    const x = ping(at('2026-10-30', 10), 'id-closed-x', 's-x1');
    const y = ping(at('2026-11-01', 10), 'id-open-y', 's-y1');
    await writeObjects(join(r, 'logs'), [...samples.flatMap((s) => s.objects), ...objectsOf([x, y])]);
    const config = dirConfig(r);
    expect((await runDays(config, { from: OCT[0]!, to: '2026-11-03', log: memoryLog(), now: NOV_10 })).failed).toEqual([]);
    await runCloseMonth(config, { month: '2026-10', log: memoryLog(), now: NOV_10 });
    const statements = join(r, 'out', 'monthly_statements', 'dt=2026-10-01', 'part-00000.parquet');
    const v1 = await query(`SELECT * FROM read_parquet('${statements}') ORDER BY ALL`);
    const oct30 = await readDay(join(r, 'out'), '2026-10-30');
    const nov1 = await readDay(join(r, 'out'), '2026-11-01');

    // After the close: X resent on November 2 (its first sending counted on the closed October 30), and
    // a late record of the closed October 31 with Y's id (counted on the open November 1, a day after).
    // And a late record of October 31 with an id no day counts: an adjustment's new ping, whose resend
    // on November 12 is that day's repeat.
    const xAgain = ping(at('2026-11-02', 9), 'id-closed-x', 's-x2');
    const yEarlier = ping(at('2026-10-31', 22), 'id-open-y', 's-y0');
    const z = ping(at('2026-10-31', 21), 'id-adjusted-z', 's-z1', 'adjusted-series');
    await writeObjects(join(r, 'logs'), objectsOf([xAgain, yEarlier, z]));
    const NOV_12 = new Date('2026-11-12T06:00:00Z');
    await runDay(config, { day: '2026-11-11', log: memoryLog(), now: NOV_12 });
    expect((await runDays(config, { stale: true, log: memoryLog(), now: NOV_12 })).failed).toEqual([]);

    // The closed figures and statement never move.
    expect(await query(`SELECT * FROM read_parquet('${statements}') ORDER BY ALL`)).toEqual(v1);
    expect(await readDay(join(r, 'out'), '2026-10-30')).toEqual(oct30);
    // X's resend is November 2's repeat.
    expect((await readDay(join(r, 'out'), '2026-11-02')).audit).toContainEqual({ day: '2026-11-02', source: 's3', outcome: 'repeat', records: 1 });
    expect((await readDay(join(r, 'out'), '2026-11-02')).episodes).toEqual([]);
    // The late record of October 31 is an after-close record and no adjustment: November 1 counts Y, as published.
    expect(await readDay(join(r, 'out'), '2026-11-01')).toEqual(nov1);
    const adjusted = await query(`SELECT day::VARCHAR AS day, series_id, pings, after_close_records, duplicates
      FROM read_parquet('${join(r, 'out', 'statement_adjustments', 'dt=2026-11-01', 'part-00000.parquet')}') ORDER BY ALL`);
    expect(adjusted).toEqual([
      { day: '2026-10-31', series_id: 'adjusted-series', pings: 1, after_close_records: 1, duplicates: 0 },
      { day: '2026-10-31', series_id: 'resent-series', pings: 0, after_close_records: 1, duplicates: 1 },
    ]);
    // Z, counted by the adjustment, resent on November 12: the repeat there, counted once in all.
    await writeObjects(join(r, 'logs'), objectsOf([ping(at('2026-11-12', 10), 'id-adjusted-z', 's-z2', 'adjusted-series')]));
    await runDay(config, { day: '2026-11-12', log: memoryLog(), now: new Date('2026-11-13T06:00:00Z') });
    // (The audit's `ping` counts every record with a ping's fields: less `repeat`, the day counts none.)
    expect((await readDay(join(r, 'out'), '2026-11-12')).audit).toEqual([
      { day: '2026-11-12', source: 's3', outcome: 'ping', records: 1 }, { day: '2026-11-12', source: 's3', outcome: 'repeat', records: 1 }]);
    expect((await readDay(join(r, 'out'), '2026-11-12')).episodes).toEqual([]);

    // Retention (PINGROLL_RETENTION_DAYS=1, in December): October's staged data goes, and of its ping ids
    // only those no open day can read (October 1's: November 1 reads from October 2 on).
    const DEC_5 = new Date('2026-12-05T06:00:00Z');
    const idsOf = async (day: string): Promise<string[]> => (await readdir(join(r, 'out', '_state', 'ping-ids', `dt=${day}`)).catch(() => [])).filter((f) => f.endsWith('.parquet'));
    expect(await idsOf('2026-10-01')).toHaveLength(1);
    // Beside each day's ping ids, their keys (the DuckDB engine's: rollup/engines/duckdb/ping-keys.ts), and nothing else.
    const [kept] = await idsOf('2026-10-01');
    expect((await readdir(join(r, 'out', '_state', 'ping-ids', 'dt=2026-10-01'))).sort()).toEqual([kept!.replace(/\.parquet$/, '.keys'), kept].sort());
    await runDay(dirConfig(r, { PINGROLL_RETENTION_DAYS: '1' }), { day: '2026-12-04', log: memoryLog(), now: DEC_5 });
    expect(await idsOf('2026-10-01')).toEqual([]);
    expect(await readdir(join(r, 'out', '_state', 'ping-ids', 'dt=2026-10-01')).catch(() => []), 'its keys too').toEqual([]);
    for (const day of ['2026-10-02', '2026-10-30', '2026-10-31']) expect(await idsOf(day), day).toHaveLength(1);
    expect(await readdir(join(r, 'out', '_state', 'ping-ids', 'adjusted', 'dt=2026-10-31')), 'the adjustment\'s ids').toHaveLength(1);
    // November 2 rolled up again after it: X is still its repeat.
    expect((await runDays(config, { from: '2026-11-02', to: '2026-11-02', force: true, log: memoryLog(), now: DEC_5 })).done).toEqual(['2026-11-02']);
    expect((await readDay(join(r, 'out'), '2026-11-02')).audit).toContainEqual({ day: '2026-11-02', source: 's3', outcome: 'repeat', records: 1 });
  }, 300_000);
});
