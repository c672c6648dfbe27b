/**
 * What the ping-id window (contract §4) costs the busy day (bench/busy-day.ts, `make busy-day` makes
 * its logs): `make rollup` as cron runs it, cold, three times, each into a fresh output: with the
 * window off (PINGROLL_DEDUPE_DAYS=0: no id looked at or kept), with the window on and no day before
 * it (the day's ids kept, none checked), and with the window on over W days of published history
 * (W = 30 unless said), each day's ping ids as many as the busy day's, a share of them the busy day's
 * own (its resends: repeats). Wall time and peak RSS of each, and the ratios to the first.
 * (A script, not a test: it takes many minutes.)
 *
 * The history's days are one ping-ids file and its keys (rollup/engines/duckdb/ping-keys.ts), made
 * once from the second run's ids (a share of them moved ten days back) and random UUIDs, and linked
 * under each day's name: W files to read of the same size as W real ones, on a disk that has room for
 * one. So the days after the first are read from the page cache, not the disk: the check's CPU is
 * measured, and W days of keys read from a disk would add their bytes at its rate.
 *
 * Usage: [BENCH_PAIRS=n] node dist/bench/window-cost.js [W, default 30] [repeat share, default 0.02]
 * BENCH_PAIRS: that many more pairs of runs, the window on over the history and off (the off run first
 * in the first pair, the third, ...; second in the others), and the median of the pairs' ratios (the
 * first ratio's off run went first of all, after whatever ran before: on 2026-12-06 it took 279 s,
 * then 249 s and 226 s in the pairs).
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { link, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { BENCH_DIR, readyBusyDay } from './bench-data.js';
import { measure, median } from './cold-run.js';
import { dayManifestKey, PING_IDS } from '../datasets/layout.js';
import { addDays, DAY_MS, dayStartMs } from '../lib/utc-day.js';
import { PING_IDS_ROW_GROUP } from '../rollup/ping-window.js';
import { keysOfParquet } from '../rollup/engines/duckdb/ping-keys.js';
import { keysKeyOf } from '../state/ping-ids.js';

const DAY = '2026-11-01';

async function main(): Promise<void> {
  const w = Number(process.argv[2] ?? 30);
  const share = Number(process.argv[3] ?? 0.02);
  const dir = readyBusyDay('traffic');
  if (dir === null) throw new Error('no busy day\'s logs under .bench/: make busy-day makes them');
  // Each run's log lines (their times say where the run's time went) are kept beside its output.
  const run = (out: string, env: Record<string, string>) => {
    const r = measure('make', ['-s', 'rollup', `DATE=${DAY}`],
      { PINGROLL_LOGS: dir, PINGROLL_OUTPUT: join(out, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(out, 'wh.duckdb')}`, ...env }, { showStderr: false });
    writeFileSync(`${out}.log`, r.stderr);
    return r;
  };
  const pingsOf = (stdout: string): number => Number(/: (\d+) pings/.exec(stdout)?.[1]);
  const repeatsOf = (stdout: string): number => Number(/and (\d+) resent/.exec(stdout)?.[1] ?? 0);

  // The window off.
  const off = join(BENCH_DIR, 'window-off-out');
  await rm(off, { recursive: true, force: true });
  const a = run(off, { PINGROLL_DEDUPE_DAYS: '0' });
  const pings = pingsOf(a.stdout);
  process.stderr.write(`window off: ${pings} pings in ${a.seconds.toFixed(0)} s, peak RSS ${Math.round(a.maxRssMiB)} MiB\n`);
  await rm(off, { recursive: true, force: true });

  // The window on, no day before it: the day's ids are kept, none checked.
  const kept = join(BENCH_DIR, 'window-kept-out');
  await rm(kept, { recursive: true, force: true });
  const k = run(kept, { PINGROLL_DEDUPE_DAYS: String(w) });
  process.stderr.write(`window on, no history: ${pingsOf(k.stdout)} pings in ${k.seconds.toFixed(0)} s, peak RSS ${Math.round(k.maxRssMiB)} MiB\n`);

  // The history: one day's ids, linked under each of the W days before.
  const idsDir = join(kept, 'out', PING_IDS, `dt=${DAY}`);
  const dayIds = join(idsDir, readdirSync(idsDir).find((f) => f.endsWith('.parquet'))!);
  const history = join(BENCH_DIR, `window-history-${share}.parquet`);
  const db = await (await DuckDBInstance.create(':memory:', { memory_limit: '12GB', temp_directory: join(BENCH_DIR, 'window-spill') })).connect();
  const rows = Number((await (await db.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${dayIds}')`)).getRowObjectsJson())[0]!.n);
  const back = dayStartMs(DAY) - 10 * DAY_MS;
  await db.run(`COPY (
      SELECT ping_id, event_ms, "repeat", counted FROM (
        SELECT ping_id, ${back} + event_ms % ${DAY_MS} AS event_ms, false AS "repeat", true AS counted FROM read_parquet('${dayIds}') WHERE counted AND hash(ping_id) % 1000 < ${Math.round(share * 1000)}
        UNION ALL
        SELECT uuid()::VARCHAR, ${back} + (i * 1727) % ${DAY_MS}, false, true FROM range(${Math.round(rows * (1 - share))}) t(i))
      ORDER BY ping_id)
    TO '${history}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${PING_IDS_ROW_GROUP})`);
  const sampled = Number((await (await db.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${dayIds}') WHERE counted AND hash(ping_id) % 1000 < ${Math.round(share * 1000)}`)).getRowObjectsJson())[0]!.n);
  const historyRows = Number((await (await db.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${history}')`)).getRowObjectsJson())[0]!.n);
  const bytes = (await stat(history)).size;
  const historyKeys = history.replace(/\.parquet$/, '.keys');
  await keysOfParquet(db, history, historyKeys);
  const keyBytes = (await stat(historyKeys)).size;
  process.stderr.write(`history: ${w} days of ${historyRows} ids (${(bytes / 2 ** 20).toFixed(0)} MiB a day, ${(keyBytes / 2 ** 20).toFixed(0)} MiB of keys), ${sampled} of them the busy day's own\n`);

  // The window on, over a fresh output holding the history as published days.
  const on = join(BENCH_DIR, 'window-on-out');
  const withHistory = async (): Promise<void> => {
    await rm(on, { recursive: true, force: true });
    for (let k = 1; k <= w; k++) {
      const day = addDays(DAY, -k);
      const key = `${PING_IDS}dt=${day}/bench.parquet`;
      await mkdir(join(on, 'out', PING_IDS, `dt=${day}`), { recursive: true });
      await link(resolve(history), join(on, 'out', key));
      await link(resolve(historyKeys), join(on, 'out', keysKeyOf(key)));
      await mkdir(join(on, 'out', dayManifestKey(day), '..'), { recursive: true });
      await writeFile(join(on, 'out', dayManifestKey(day)), JSON.stringify({ run: 'bench', day, pings: historyRows, pingIds: { key, rows: historyRows, bytes } }) + '\n');
    }
  };
  await withHistory();
  const b = run(on, { PINGROLL_DEDUPE_DAYS: String(w) });
  // BENCH_PAIRS more pairs, in turn the window off first and on first. A run's ingest reads 34 GB of
  // logs that do not fit the page cache, and the second run of a pair read them 10-25 s faster than
  // the first (2026-12-06: the on runs' ingests, always first then, 14-18 s slower than the off
  // runs' after them), so that neither side always has the second run.
  const pairs: Array<{ on: number; off: number; rss: number }> = [];
  for (let p = 0; p < Number(process.env.BENCH_PAIRS ?? 0); p++) {
    const windowOn = async (): Promise<ReturnType<typeof run>> => {
      await withHistory();
      const r = run(on, { PINGROLL_DEDUPE_DAYS: String(w) });
      if (repeatsOf(r.stdout) !== sampled) throw new Error(`pair ${p + 1}: ${repeatsOf(r.stdout)} repeats, not ${sampled}: a bug`);
      return r;
    };
    const windowOff = async (): Promise<ReturnType<typeof run>> => {
      await rm(off, { recursive: true, force: true });
      const r = run(off, { PINGROLL_DEDUPE_DAYS: '0' });
      await rm(off, { recursive: true, force: true });
      return r;
    };
    const offFirst = p % 2 === 0;
    const bOff = offFirst ? await windowOff() : null;
    const bOn = await windowOn();
    const off2 = bOff ?? await windowOff();
    pairs.push({ on: bOn.seconds, off: off2.seconds, rss: bOn.maxRssMiB });
    process.stderr.write(`pair ${p + 1} (${offFirst ? 'off first' : 'on first'}): window on ${bOn.seconds.toFixed(0)} s, off ${off2.seconds.toFixed(0)} s: ${(bOn.seconds / off2.seconds).toFixed(2)}x\n`);
  }
  const pingsOn = pingsOf(b.stdout), repeats = repeatsOf(b.stdout);
  const exact = pingsOn + repeats === pings && repeats === sampled;
  process.stdout.write([
    `the window's cost on the busy day (${readdirSync(dir).length.toLocaleString('en')} log objects), one \`make rollup\` each, cold, node ${process.version}`,
    '',
    `window off (PINGROLL_DEDUPE_DAYS=0): ${pings.toLocaleString('en')} pings in ${a.seconds.toFixed(0)} s, peak RSS ${Math.round(a.maxRssMiB).toLocaleString('en')} MiB`,
    `window on, no day before it (the day's ids kept, none checked): ${k.seconds.toFixed(0)} s (${(k.seconds / a.seconds).toFixed(2)}x), peak RSS ${Math.round(k.maxRssMiB).toLocaleString('en')} MiB`,
    `window on (${w} days, ${(w * historyRows).toLocaleString('en')} history ids, ${(w * keyBytes / 2 ** 30).toFixed(1)} GiB of keys): ${pingsOn.toLocaleString('en')} pings and ${repeats.toLocaleString('en')} repeats in ${b.seconds.toFixed(0)} s, peak RSS ${Math.round(b.maxRssMiB).toLocaleString('en')} MiB`,
    // With pairs, the first ratio is not the measure: its off run went first of all, the pairs' runs after a run each.
    `${pairs.length ? 'ratio to the first off run (not the measure: that run went first of all; the pairs\' median below is)' : 'ratio'}: ${(b.seconds / a.seconds).toFixed(2)}x${pairs.length ? '' : ' (target 1.15x)'}, peak RSS ${(b.maxRssMiB / 1024).toFixed(2)} GiB (target 1.5 GiB)`,
    ...(pairs.length ? [`then ${pairs.length} pairs, the window on over ${w} days and off, the off run first in the odd pairs: ${pairs.map((x) => `${x.on.toFixed(0)} s against ${x.off.toFixed(0)} s (${(x.on / x.off).toFixed(2)}x)`).join(', ')}; `
      + `median ratio of the ${pairs.length} pairs ${median(pairs.map((x) => x.on / x.off)).toFixed(2)}x (target 1.15x), peak RSS at most ${Math.round(Math.max(b.maxRssMiB, ...pairs.map((x) => x.rss))).toLocaleString('en')} MiB`] : []),
    exact ? `exact: every sampled id of the day a repeat, the rest counted` : `expected ${sampled} repeats and ${pings} pings in all: a bug`,
  ].join('\n') + '\n');
  if (!exact) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
