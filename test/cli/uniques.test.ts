/**
 * Exact unique viewers over a range of days (`pingroll uniques`, the viewer datasets): against the
 * oracle over two generated days whose viewers overlap, through the real daily job and the DuckDB
 * warehouse; no raw id in what is published; a range keyed with two secrets, or with days rolled up
 * without a key, refused with the days to roll up again.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { uniquesCommand } from '../../cli/commands/uniques.js';
import { ConfigError } from '../../infra/config.js';
import { memoryLog } from '../../lib/log.js';
import { DuckDBInstance } from '../../lib/duckdb-engine.js';
import { viewerKey } from '../../rollup/viewer-key.js';
import { generateSample, type Sample } from '../../tools/sample/access-log-generator.js';
import { expectedUniques, viewerKeyFor } from '../support/oracle.js';
import { dirConfig, query, runDay, runDays, tempRoots, writeObjects } from '../support/job-fixture.js';

const root = tempRoots();
const DAYS = ['2026-11-01', '2026-11-02'];
const SECRET = 'uniques-test-secret-0123456789';
let samples: Sample[];

beforeAll(() => {
  samples = DAYS.map((date, i) => generateSample({ date, sessions: 200, seed: 40 + i, truth: true, prefix: `${date}/`, recordsPerObject: 400, lateShare: 0.2 }));
});

async function rolledUp(env: Array<Record<string, string>>): Promise<string> {
  const r = root();
  for (const s of samples) await writeObjects(join(r, 'logs'), s.objects);
  for (const [i, day] of DAYS.entries()) await runDay(dirConfig(r, env[i]), { day, log: memoryLog() });
  return r;
}

describe('pingroll uniques', () => {
  it('counts each viewer once over the range, per series and over all series, exactly; no raw id is published', async () => {
    const r = await rolledUp([{ PINGROLL_VIEWER_KEY: SECRET }, { PINGROLL_VIEWER_KEY: SECRET }]);
    const config = dirConfig(r, { PINGROLL_VIEWER_KEY: SECRET });
    const truth = samples.flatMap((s) => s.truth);
    const want = expectedUniques(truth, DAYS);
    const got = JSON.parse(await uniquesCommand(config, { from: DAYS[0], to: DAYS[1], format: 'json' })) as { rows: Array<{ series_id: string; viewers: number; days: number }>; allSeries: { viewers: number } };
    const daysOf = (series: string): number => DAYS.filter((d) => expectedUniques(truth, [d]).bySeries.has(series)).length;
    expect(got.rows.map((x) => [x.series_id, x.viewers, x.days])).toEqual([...want.bySeries].sort(([a], [b]) => (a < b ? -1 : 1)).map(([s, v]) => [s, v.size, daysOf(s)]));
    expect(got.allSeries.viewers).toBe(want.all.size);
    // The range is not the days added up: viewers of both days are counted once.
    const perDay = DAYS.map((d) => expectedUniques(truth, [d]).all.size);
    expect(want.all.size).toBeLessThan(perDay[0]! + perDay[1]!);

    // One series, one day, and one series' episodes; the table and CSV forms.
    const series = [...want.bySeries.keys()].sort()[0]!;
    expect(await uniquesCommand(config, { from: DAYS[0], to: DAYS[0], series, format: 'csv' })).toBe(`series_id,viewers,days\r\n${series},${expectedUniques(truth, [DAYS[0]!]).bySeries.get(series)!.size},1\r\n`);
    const episodes = JSON.parse(await uniquesCommand(config, { from: DAYS[0], to: DAYS[1], series, episode: '', format: 'json' })) as { rows: Array<{ episode_id: string; viewers: number }> };
    expect(episodes.rows.length).toBeGreaterThan(1);
    const viewersOf = (ep: string): number => new Set(DAYS.flatMap((d) => samples.flatMap((s) => s.truth)).filter((p) => p.outcome === 'ping' && p.series === series && p.episode === ep)
      .map((p) => p.user ?? `session:${p.session}`)).size;
    for (const e of episodes.rows) expect(e.viewers, e.episode_id).toBe(viewersOf(e.episode_id));
    expect(await uniquesCommand(config, { from: DAYS[0], to: DAYS[1] })).toMatch(new RegExp(`all series\\s+${want.all.size.toLocaleString('en')}\\s+2\\n$`));
    // A range reaching past what is published says which days are missing.
    const wider = JSON.parse(await uniquesCommand(config, { from: DAYS[0], to: '2026-11-04', format: 'json' })) as { unpublished: string[]; allSeries: { viewers: number } };
    expect(wider.unpublished).toEqual(['2026-11-03', '2026-11-04']);
    expect(wider.allSeries.viewers).toBe(want.all.size);
    expect(await uniquesCommand(config, { from: DAYS[0], to: '2026-11-04' })).toContain('Not final: 2 day(s) of the range are not published (2026-11-03, 2026-11-04)');
    // A series no viewer watched is most likely a mistyped id: said so, not blamed on the key.
    expect(await uniquesCommand(config, { from: DAYS[0], to: DAYS[1], series: 'nosuch' })).toMatch(/no viewer of series nosuch in .*though other series have some: check the id/);
    // A missing range end is said as missing.
    await expect(uniquesCommand(config, { to: DAYS[1] })).rejects.toThrow(/^--from is missing; give it as YYYY-MM-DD \(e\.g\. --from 2026-11-01\)$/);

    // Keys, not ids: each published key is the keyed hash of a viewer of the oracle's, none holds a raw id.
    const key = viewerKey(SECRET);
    const keys = await query<{ viewer_key: string }>(`SELECT DISTINCT viewer_key FROM read_parquet('${join(r, 'out', 'daily_series_viewers', '*', '*.parquet')}')`);
    expect(new Set(keys.map((k) => k.viewer_key))).toEqual(new Set([...want.all].map((v) => viewerKeyFor(SECRET, v))));
    expect(keys.every((k) => k.viewer_key.startsWith(key.id) && !/^u\d+$|session:/.test(k.viewer_key))).toBe(true);
  });

  it('refuses a range rolled up without a key, or keyed with two secrets, naming the days to roll up again', async () => {
    // A warehouse made before the viewer tables existed: said, with what to do.
    const old = root();
    const made = await DuckDBInstance.create(join(old, 'wh.duckdb'));
    made.closeSync();
    await expect(uniquesCommand(dirConfig(old), { from: DAYS[0], to: DAYS[1] })).rejects.toThrow(/has no viewer tables .*: run pingroll warehouse init, then roll the days up with PINGROLL_VIEWER_KEY set/);

    const unkeyed = await rolledUp([{ PINGROLL_VIEWER_KEY: SECRET }, {}]);
    const err = await uniquesCommand(dirConfig(unkeyed), { from: DAYS[0], to: DAYS[1] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain(`without PINGROLL_VIEWER_KEY (${DAYS[1]})`);
    // The keyed day alone is fine.
    expect(await uniquesCommand(dirConfig(unkeyed), { from: DAYS[0], to: DAYS[0] })).toMatch(/all series/);

    const mixed = await rolledUp([{ PINGROLL_VIEWER_KEY: SECRET }, { PINGROLL_VIEWER_KEY: `${SECRET}-rotated` }]);
    const current = viewerKey(`${SECRET}-rotated`).id;
    await expect(uniquesCommand(dirConfig(mixed, { PINGROLL_VIEWER_KEY: `${SECRET}-rotated` }), { from: DAYS[0], to: DAYS[1] }))
      .rejects.toThrow(new RegExp(`mixes viewer keys made with 2 different PINGROLL_VIEWER_KEY secrets .*${current}, the current one: ${DAYS[1]}\\.\\.${DAYS[1]}.*make backfill FROM=${DAYS[0]} TO=${DAYS[0]}`));
    // A secret that is not one is refused, without repeating it.
    const bad = 'short\\secret';
    let said = '';
    try {
      dirConfig(mixed, { PINGROLL_VIEWER_KEY: bad });
    } catch (err) {
      said = (err as Error).message;
    }
    expect(said).toMatch(/PINGROLL_VIEWER_KEY must be 16 to 256 characters.*the one set is 12 characters/);
    expect(said).not.toContain(bad);

    // What the refusals say to do works: the backfill they name rolls up again the days made with
    // another key (or none), though their inputs are unchanged, and skips the others.
    const fixed = dirConfig(mixed, { PINGROLL_VIEWER_KEY: `${SECRET}-rotated` });
    const backfill = await runDays(fixed, { from: DAYS[0]!, to: DAYS[1]!, log: memoryLog() });
    expect([backfill.done, backfill.skipped]).toEqual([[DAYS[0]], [DAYS[1]]]);
    const healed = JSON.parse(await uniquesCommand(fixed, { from: DAYS[0], to: DAYS[1], format: 'json' })) as { allSeries: { viewers: number } };
    expect(healed.allSeries.viewers).toBe(expectedUniques(samples.flatMap((s) => s.truth), DAYS).all.size);
    // A backfill run without the key, or --stale with another, leaves the keyed days alone.
    expect((await runDays(dirConfig(mixed), { from: DAYS[0]!, to: DAYS[1]!, log: memoryLog() })).skipped).toEqual(DAYS);
    expect((await runDays(dirConfig(mixed, { PINGROLL_VIEWER_KEY: SECRET }), { stale: true, log: memoryLog(), now: new Date('2026-11-20T00:00:00Z') })).done).toEqual([]);
    expect(JSON.parse(await uniquesCommand(fixed, { from: DAYS[0], to: DAYS[1], format: 'json' }))).toEqual(healed);
    const keyed = dirConfig(unkeyed, { PINGROLL_VIEWER_KEY: SECRET });
    expect((await runDays(keyed, { from: DAYS[0]!, to: DAYS[1]!, log: memoryLog() })).done).toEqual([DAYS[1]]);
    expect(await uniquesCommand(keyed, { from: DAYS[0], to: DAYS[1] })).toMatch(/all series/);
  });
});
