/**
 * `make bench` (history part): what a run costs over a log directory that holds a history.
 * `pingroll rollup` (a cold process) on an output whose ledger already holds 10k, 200k or 1M parsed
 * log objects (made cheaply, in the ledger's own format: the compacted indexes a year of runs would
 * leave), over a log directory that holds those objects too (empty files, PartitionedPrefix layout,
 * 10,000 a day), plus:
 * - a run with 100 new objects (parsed, staged, the day rolled up and published);
 * - a no-op run right after (nothing new; the day published again).
 * A directory is listed whole at every run (every file found, whatever its name): its ledger reads
 * follow what changed (each slice as its seal says is not read), its listing the files it holds.
 * Each history gets one run first that seals its slices (the state a year of runs leaves). Interleaved
 * passes, medians, each against the 10k history measured in the same pass; and the listing alone (the
 * walk and a stat a file, in this process).
 */
import { gitRevision } from '../infra/version.js';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateSample, objectBody, redeliver } from '../tools/sample/access-log-generator.js';
import { addDays, DAY_MS, dayStartMs } from '../lib/utc-day.js';
import { BATCHES, dayEntriesPrefix, INTENTS, LISTING_KEY, LOCK_PREFIX, PARSED, PUBLISH_PREFIX, QUARANTINE_KEY, SCANS, STATE, stagingPrefix } from '../datasets/layout.js';
import { migrate, type StagedDay } from '../state/ledger.js';
import { DirectoryObjectStore } from '../state/object-store/directory-object-store.js';
import { nameStamp } from '../ingest/listing/listing-window.js';
import { DirectoryObjectSource } from '../ingest/object-source/directory-object-source.js';
import { BENCH_DIR } from './bench-data.js';
import { measure, median, ROOT } from './cold-run.js';
import { LISTER_RULES } from '../ingest/listing/lister.js';

const DAY = '2026-11-01';
const PER_DAY = 10_000;
const HISTORIES = (process.env.BENCH_HISTORIES ?? '10000,200000,1000000').split(',').map(Number);
const ACCOUNT = '123456789012/us-east-1/media-pings/';

const folder = (day: string): string => `${ACCOUNT}${day.replace(/-/g, '/')}/`;

/** The log directory and the output's ledger for `n` objects of history (made once, kept under .bench/). */
async function makeHistory(n: number): Promise<string> {
  const dir = join(BENCH_DIR, `history-${n}`);
  if (existsSync(join(dir, 'ready-format-2'))) return dir;
  await rm(dir, { recursive: true, force: true });
  const days = Math.ceil(n / PER_DAY);
  let made = 0;
  let last = 0;
  for (let d = days; d >= 1; d--) {
    const day = addDays(DAY, -d);
    const count = Math.min(PER_DAY, n - made);
    const logDir = join(dir, 'logs', folder(day));
    await mkdir(logDir, { recursive: true });
    const keys: string[] = [];
    for (let i = 0; i < count; i++) {
      const at = dayStartMs(day) + Math.floor((i * DAY_MS) / count);
      const name = `${nameStamp(at)}-${(made + i).toString(16).toUpperCase().padStart(16, '0')}`;
      keys.push(folder(day) + name);
      await writeFile(join(logDir, name), '');
      last = at;
    }
    made += count;
    // Two runs a day parsed them: each run's batch, compacted.
    for (const [b, part] of [keys.slice(0, keys.length >> 1), keys.slice(keys.length >> 1)].entries()) {
      const batch = `${day.replace(/-/g, '')}T0${b}0000Z-hist${b}`;
      await put(dir, `${PARSED}${day}/${batch}.json`, { batch, keys: part });
      const objects = part.map((key) => ({ key, size: 1200, etag: '0123456789abcdef0123456789abcdef', records: 3 }));
      const staged: StagedDay = { pings: [`${stagingPrefix(batch)}dt=${day}/part-0.parquet`], pingCount: part.length * 3, rejects: null, outcomes: { s3: { ping: part.length * 3 } }, inputs: objects.map((_, i) => i) };
      await put(dir, `${dayEntriesPrefix(day)}${batch}.json`, { batch, staged, objects });
    }
    process.stderr.write(`\rhistory ${n}: ${made} objects`);
  }
  process.stderr.write('\n');
  // As a run before delivery days were followed left it (loadListing takes it as following every day).
  const listing = { watermark: new Date(last).toISOString(), accounts: ['123456789012/'], folders: [], other: false, fullListingAt: new Date(last).toISOString() };
  await put(dir, LISTING_KEY, listing);
  // Written as format 1 (a file of keys per day and batch, inputs inline), then brought to the
  // present format by the ledger's own migration, as a real output of that age would be once.
  await migrate(new DirectoryObjectStore(join(dir, 'out')), LISTER_RULES);
  await writeFile(join(dir, 'ready-format-2'), '');
  return dir;
}

async function put(dir: string, key: string, value: unknown): Promise<void> {
  const path = join(dir, 'out', key);
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, JSON.stringify(value));
}

/** 100 new objects of DAY, delivered after the history, in its date folder. */
function newObjects(): Array<{ key: string; body: Buffer }> {
  const sample = generateSample({ date: DAY, sessions: 300, seed: 77, recordsPerObject: 80, gzipShare: 0, prefix: folder(DAY) });
  return sample.objects.slice(0, 100).map((o, i) => {
    const r = redeliver(o, dayStartMs(DAY) + 3_600_000 + i * 1000);
    return { key: r.key, body: objectBody(r) };
  });
}

/** Puts the history back as it was made: the new objects and everything runs wrote removed. */
async function reset(dir: string, n: number): Promise<void> {
  await rm(join(dir, 'logs', folder(DAY)), { recursive: true, force: true });
  await rm(join(dir, 'wh.duckdb'), { force: true });
  for (const top of await readdir(join(dir, 'out'))) if (`${top}/` !== STATE) await rm(join(dir, 'out', top), { recursive: true, force: true });
  await rm(join(dir, 'out', dayEntriesPrefix(DAY)), { recursive: true, force: true });
  for (const folder of [BATCHES, INTENTS, LOCK_PREFIX, PUBLISH_PREFIX, SCANS]) await rm(join(dir, 'out', folder), { recursive: true, force: true });
  for (const d of await readdir(join(dir, 'out', PARSED))) if (d >= DAY) await rm(join(dir, 'out', PARSED, d), { recursive: true, force: true });
  await rm(join(dir, 'out', QUARANTINE_KEY), { force: true });
  await cp(join(BENCH_DIR, `history-${n}.listing.json`), join(dir, 'out', LISTING_KEY));
}

interface Run { seconds: number; rssMiB: number; listed: number; parsed: number; slicesRead: number }

function rollup(dir: string): Run {
  const r = measure('node', [join(ROOT, 'bin/pingroll.js'), 'rollup', '--date', DAY],
    { PINGROLL_LOGS: join(dir, 'logs'), PINGROLL_OUTPUT: join(dir, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(dir, 'wh.duckdb')}` });
  const done = r.stderr.split('\n').find((l) => l.includes('"ingest.done"'));
  const fields = done ? (JSON.parse(done) as { listed: number; objects: number; parsedSlicesRead: number }) : { listed: NaN, objects: NaN, parsedSlicesRead: NaN };
  return { seconds: r.seconds, rssMiB: r.maxRssMiB, listed: fields.listed, parsed: fields.objects, slicesRead: fields.parsedSlicesRead };
}

async function main(): Promise<void> {
  await mkdir(BENCH_DIR, { recursive: true });
  const dirs = new Map<number, string>();
  for (const n of HISTORIES) {
    const dir = await makeHistory(n);
    dirs.set(n, dir);
    if (!existsSync(join(BENCH_DIR, `history-${n}.listing.json`))) await cp(join(dir, 'out', LISTING_KEY), join(BENCH_DIR, `history-${n}.listing.json`));
  }
  const fresh = newObjects();
  // The listing alone, and a first run that seals every slice of the history (as a year of runs would have).
  const listing = new Map<number, number>();
  for (const n of HISTORIES) {
    const dir = dirs.get(n)!;
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = process.hrtime.bigint();
      let files = 0;
      for await (const _ of new DirectoryObjectSource(join(dir, 'logs')).list()) files++;
      if (files !== n) throw new Error(`history ${n}: listed ${files} files`);
      times.push(Number(process.hrtime.bigint() - started) / 1e9);
    }
    listing.set(n, median(times));
    await reset(dir, n);
    rollup(dir);
  }
  const passes = Number(process.env.BENCH_PASSES ?? 5);
  const runs = new Map<number, { fresh: Run[]; noop: Run[] }>(HISTORIES.map((n) => [n, { fresh: [], noop: [] }]));
  for (let p = 0; p < passes; p++) {
    // Each pass in another order: drift on a shared machine lands on every history alike.
    const order = p % 2 ? [...HISTORIES].reverse() : HISTORIES;
    for (const n of order) {
      const dir = dirs.get(n)!;
      await reset(dir, n);
      for (const o of fresh) {
        await mkdir(join(dir, 'logs', o.key, '..'), { recursive: true });
        await writeFile(join(dir, 'logs', o.key), o.body);
      }
      runs.get(n)!.fresh.push(rollup(dir));
      runs.get(n)!.noop.push(rollup(dir));
    }
    process.stderr.write(`pass ${p + 1}/${passes}\n`);
  }
  for (const n of HISTORIES) await reset(dirs.get(n)!, n);
  const base = runs.get(HISTORIES[0]!)!;
  const lines = [
    `history bench: ${passes} interleaved passes, medians; ${PER_DAY.toLocaleString('en')} log objects a day of history (PartitionedPrefix folders in a directory), its ledger compacted by day. Measured ${new Date().toISOString().slice(0, 10)} at ${gitRevision() ?? 'an unknown revision'}, node ${process.version}: \`node dist/bench/history-bench.js\``,
    '',
    '| objects of history | 100-new run s | vs 10k | no-op run s | vs 10k | objects listed (no-op) | parsed slices read (no-op) | the listing alone s | peak RSS MiB (100-new) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const n of HISTORIES) {
    const r = runs.get(n)!;
    const f = median(r.fresh.map((x) => x.seconds)), z = median(r.noop.map((x) => x.seconds));
    const fr = median(r.fresh.map((x, i) => x.seconds / base.fresh[i]!.seconds)), zr = median(r.noop.map((x, i) => x.seconds / base.noop[i]!.seconds));
    if (r.fresh.some((x) => x.parsed !== 100) || r.noop.some((x) => x.parsed !== 0)) throw new Error(`history ${n}: parsed ${r.fresh.map((x) => x.parsed)} then ${r.noop.map((x) => x.parsed)}, not 100 then 0`);
    lines.push(`| ${n.toLocaleString('en')} | ${f.toFixed(2)} | ${fr.toFixed(2)}x | ${z.toFixed(2)} | ${zr.toFixed(2)}x | ${r.noop[0]!.listed.toLocaleString('en')} | ${r.noop[0]!.slicesRead} | ${listing.get(n)!.toFixed(2)} | ${Math.round(median(r.fresh.map((x) => x.rssMiB)))} |`);
  }
  lines.push('', 'A directory is listed whole at every run: every file is found, whatever its name or when it appeared (contract §8). What grows with the history is the walk and a stat a file, and the slices\' tallies; the ledger reads follow what changed (a no-op run reads the parsed keys of no slice). A bucket is listed by window and by delivery day instead: docs/scale.md, *Ten consecutive days*.');
  process.stdout.write(lines.join('\n') + '\n');
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
