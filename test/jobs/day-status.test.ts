/**
 * Which days are complete, and re-running exactly the ones late data changed: `pingroll status` and
 * `backfill --stale` on generated days with late objects and an unreadable one.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { statusCommand } from '../../cli/commands/status.js';
import { memoryLog } from '../../lib/log.js';
import { generateSample, redeliver, type LogObject } from '../../tools/sample/access-log-generator.js';
import { dirConfig, query, readDay, runDay, runDays, tempRoots, writeObjects } from '../support/job-fixture.js';
import { expectedDay } from '../support/oracle.js';

const root = tempRoots();
const NOW = new Date('2026-11-10T06:00:00Z');
const states = async (config: ReturnType<typeof dirConfig>, from: string, to: string, now = NOW) =>
  (await statusCommand(config, { from, to, json: true }, now)).text.trim().split('\n').map((l) => JSON.parse(l) as { day: string; state: string; reason: string; publishedAt: string | null });

/** Each day's publication time and state as `daily_runs` says them, in Parquet and in the warehouse, beside what status says. */
async function runsAgree(root: string, config: ReturnType<typeof dirConfig>, days: readonly string[], now = NOW): Promise<void> {
  const said = await states(config, days[0]!, days.at(-1)!, now);
  for (const [i, day] of days.entries()) {
    const sql = (from: string): string => `SELECT epoch_ms(published_at) AS ms, state FROM ${from} WHERE day = DATE '${day}'`;
    const parquet = await query<{ ms: number; state: string }>(sql(`read_parquet('${join(root, 'out', 'daily_runs', `dt=${day}`, 'part-00000.parquet')}')`));
    const warehouse = await query<{ ms: number; state: string }>(sql('daily_runs'), join(root, 'wh.duckdb'));
    expect(warehouse, day).toEqual(parquet);
    expect({ publishedAt: said[i]!.publishedAt, state: said[i]!.state }, day).toEqual({ publishedAt: new Date(parquet[0]!.ms).toISOString(), state: parquet[0]!.state });
  }
}

describe('day status', () => {
  it('names each day complete, provisional, stale, incomplete or never run; --stale republishes exactly the stale days', async () => {
    const r = root();
    const config = dirConfig(r);
    const days = ['2026-11-01', '2026-11-02', '2026-11-03'] as const;
    const samples = days.map((d, i) => generateSample({ date: d, sessions: 60, seed: 70 + i, truth: true, recordsPerObject: 200 }));
    // The last two objects of the first two days arrive late: delivered after everything else.
    const held: LogObject[] = [...samples[0]!.objects.slice(-2), ...samples[1]!.objects.slice(-2)];
    const onTime = samples.flatMap((s) => s.objects).filter((o) => !held.includes(o));
    const lastDelivery = Math.max(...onTime.map((o) => o.deliveredMs));
    const late = held.map((o, i) => redeliver(o, lastDelivery + 60_000 + i * 1000));
    await writeObjects(join(r, 'logs'), onTime);
    const first = await runDays(config, { from: days[0], to: days[2], log: memoryLog(), now: NOW });
    expect(first.done).toEqual(days);
    expect((await states(config, '2026-11-01', '2026-11-04')).map((s) => s.state)).toEqual(['complete', 'complete', 'complete', 'never run']);

    // The late objects are parsed by the next run (of any day): the days they hold are now stale.
    await writeObjects(join(r, 'logs'), late);
    await runDay(config, { day: days[2], log: memoryLog() });
    const afterLate = await states(config, days[0], days[2]);
    const stale = afterLate.filter((s) => s.state === 'stale').map((s) => s.day);
    const lateDays = [...new Set(late.flatMap((o) => o.truth.map((t) => t.day)))].filter((d) => d < days[2]).sort();
    expect(lateDays.length).toBeGreaterThan(0);
    expect(stale).toEqual(lateDays);
    expect(afterLate.find((s) => s.state === 'stale')?.reason).toMatch(/staged since it was published; run make rollup-stale/);

    // --stale publishes exactly those, and they come out exact over every record.
    const republished = await runDays(config, { stale: true, log: memoryLog(), now: NOW });
    expect(republished.done).toEqual(lateDays);
    expect(republished.skipped).toEqual(days.filter((d) => !lateDays.includes(d)));
    const truth = [...samples.flatMap((s) => s.objects).filter((o) => !held.includes(o)), ...late].flatMap((o) => o.truth);
    for (const d of days) expect(await readDay(join(r, 'out'), d), d).toEqual(expectedDay(truth, d));
    expect((await states(config, days[0], days[2])).map((s) => s.state)).toEqual(['complete', 'complete', 'complete']);
    // status and daily_runs tell one story: when each day was published, and its state.
    await runsAgree(r, config, days);

    // An unreadable object delivered on the 2nd may hold records of the 31st to the 2nd.
    await writeFile(join(r, 'logs', '2026-11-02-12-00-00-UNREADABLE.gz'), Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(100, 1)]));
    await runDay(config, { day: days[2], log: memoryLog() });
    const withBad = await states(config, days[0], days[2]);
    expect(withBad.map((s) => s.state)).toEqual(['incomplete', 'incomplete', 'complete']);
    expect(withBad[0]!.reason).toMatch(/1 unreadable log object may hold records of it \(first: 2026-11-02-12-00-00-UNREADABLE.gz\)/);

    // A day published just after it ends is provisional until the final full listing of its last
    // delivery day (D+2, three days after it ends), and says when that is due.
    const r2 = root();
    await writeObjects(join(r2, 'logs'), samples[2]!.objects);
    const justAfter = new Date('2026-11-04T01:00:00Z');
    await runDay(dirConfig(r2), { day: days[2], log: memoryLog(), now: justAfter });
    const fresh = await statusCommand(dirConfig(r2), { from: days[2], to: days[2], json: true }, justAfter);
    expect(fresh.verdict).toBe('provisional');
    expect(JSON.parse(fresh.text)).toMatchObject({ state: 'provisional', finalAt: '2026-11-09T00:00:00.000Z', reason: expect.stringMatching(/^waiting for the final full listing of delivery days 2026-11-03, 2026-11-04, 2026-11-05, due 2026-11-09T00:00Z/) });
    await runsAgree(r2, dirConfig(r2), [days[2]], justAfter);
    // Its state alone published again once its listings are done (a later night's run): still one story.
    await runDay(dirConfig(r2), { day: '2026-11-09', log: memoryLog(), now: NOW });
    await runsAgree(r2, dirConfig(r2), [days[2]]);
    expect((await states(dirConfig(r2), days[2], days[2]))[0]!.state).toBe('complete');
  });
});
