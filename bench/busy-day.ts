/**
 * A busy day end to end, once (a script, not a test; it takes many minutes): at least 50 million pings
 * through `make rollup` as cron runs it, its wall time and peak RSS (the process's, DuckDB and the
 * parsing threads included). The day is the job bench's day of real traffic (3,000 objects) copied as
 * many times as it takes, each copy's ping, session and request IDs made its own, so every copy adds
 * its pings instead of repeating them: a ping id's first 32 bits XORed with a number of the copy's
 * own, so that the day's ids spread over the whole id space as real random ids do (until 2026-12-06
 * the copy's number replaced their first two hex digits: the day's ids filled 61 of the 256 first
 * bytes, and the window check's merge read a quarter of each history day); a session or request ID's
 * first two hex digits the copy's number. Each
 * copy's sessions send from addresses of their own, drawn as the bench's traffic draws them (each
 * address of the day mapped to a new one, a copy's map its own: millions of addresses in all), and
 * seven copies in eight write their user agents' first version apart (`Chrome/131.0` as
 * `Chrome/131.05`: thousands of agents, the same devices and bots). Usage: node dist/bench/busy-day.js
 * [min pings, default 50000000]
 *
 * BUSY_DAY_ADDRESSES=one: the same day with every client address made one (issue #57's 1.05x target;
 * a folder of its own, as large: remove the other first where the disk holds one). BUSY_DAY_PAIRS=N:
 * N passes of `make rollup` and the ClickHouse peer (bench/clickhouse-baseline.ts) one after the other,
 * their medians and the median of the ratios within a pass (issue #57's 2x target on this day).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BENCH_DIR, busyDayDir, rechunkedLogDir, withClientAddresses, withOneAddress } from './bench-data.js';
import { measure, median, type Measured } from './cold-run.js';
import { benchLogDir, expectedTables } from './job-bench.js';
import { ensureChdb } from './chdb.js';
import { DEFAULTS } from '../infra/config.js';
import { trafficAddress } from '../tools/sample/traffic-audience.js';

const DAY = '2026-11-01';
const ROOT = new URL('../../', import.meta.url).pathname;
const MADE_ONE = process.env.BUSY_DAY_ADDRESSES === 'one';
const PAIRS = Number(process.env.BUSY_DAY_PAIRS ?? 0);

/** Copy `k` of one log object's text: its ids, addresses (through `addresses`, the copy's map) and user agents its own. */
function copyOf(text: string, k: number, addresses: Map<string, string>, rand: () => number): string {
  const hex = k.toString(16).padStart(2, '0');
  // Distinct for every copy (an odd multiplier is a bijection of 32-bit numbers), 0 for the first.
  const mask = Math.imul(k, 0x9e3779b1) >>> 0;
  let out = text
    // Ping ids, legacy clients' bare aliases too: the first 32 bits XORed with the copy's mask (an id
    // that does not start with 8 lowercase hex digits: its first two replaced by the copy's number).
    .replace(/([?&](?:x-)?ping)=([0-9a-f]{8}|[0-9a-f]{2})/g, (_, name: string, head: string) =>
      `${name}=${head.length === 8 ? ((parseInt(head, 16) ^ mask) >>> 0).toString(16).padStart(8, '0') : hex}`)
    // Session ids: a session left the same in every copy would send as many pings a minute as there
    // are copies, and be left out as a loop (contract §10).
    .replace(/([?&](?:x-)?session)=[0-9a-f]{2}/g, `$1=${hex}`)
    // A ping without an id is told apart by its request ID: each copy's are its own too.
    .replace(/ [0-9A-F]{2}([0-9A-F]{14}) (REST|WEBSITE)\./g, ` ${hex.toUpperCase()}$1 $2.`);
  if (MADE_ONE) out = withOneAddress(out);
  if (k === 0) return out;
  // The client address, the fifth field: the same new one for every record of the address in this copy.
  if (!MADE_ONE) out = withClientAddresses(out, (ip) => {
    let to = addresses.get(ip);
    if (to === undefined) addresses.set(ip, (to = trafficAddress(rand)[0]));
    return to;
  });
  // The user agent (the quoted field after the referrer): its first version written apart.
  if (k % 8 !== 0) out = out.replace(/( \d+ (?:\d+|-) "[^"\n]*" ")([^"\n]*)"/g, (_, head: string, agent: string) => `${head}${agent.replace(/\/(\d+)\.(\d+)/, `/$1.$2${k % 8}`)}"`);
  return out;
}

async function main(): Promise<void> {
  const want = Number(process.argv[2] ?? 50_000_000);
  // The job bench's day of real traffic, made here when no `make bench` made it first (a fresh clone has none).
  const { dir: shards, records } = await benchLogDir(1_000_000);
  const perCopy = ((await expectedTables(shards, records)).series as Array<{ pings: number }>).reduce((n, r) => n + Number(r.pings), 0);
  const copies = Math.ceil(want / perCopy);
  if (copies > 256) throw new Error('at most 256 copies (two hex digits)');
  const base = await rechunkedLogDir(shards, 3000);
  const dir = busyDayDir(copies, MADE_ONE ? 'one-address' : 'traffic');
  if (!existsSync(`${dir}.ready`)) {
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const files = readdirSync(base).sort();
    for (let k = 0; k < copies; k++) {
      const hex = k.toString(16).padStart(2, '0');
      const addresses = new Map<string, string>();
      let seed = 1 + k;
      const rand = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
      for (const f of files) {
        const text = copyOf((await readFile(join(base, f))).toString('latin1'), k, addresses, rand);
        // The same delivery times, a name of its own per copy.
        await writeFile(join(dir, `${f.slice(0, -2)}${hex}`), Buffer.from(text, 'latin1'));
      }
      process.stderr.write(`\rwriting copy ${k + 1}/${copies}`);
    }
    process.stderr.write('\n');
    await writeFile(`${dir}.ready`, '');
  }
  const out = join(BENCH_DIR, 'busy-day-out');
  const rollup = (): Measured => {
    spawnSync('rm', ['-rf', out]);
    return measure('make', ['-s', 'rollup', `DATE=${DAY}`],
      { PINGROLL_LOGS: dir, PINGROLL_OUTPUT: join(out, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(out, 'wh.duckdb')}` }, { showStderr: PAIRS === 0 });
  };
  // A ClickHouse run that fails (out of memory) is reported, and the rollup's figures still are.
  const clickhouse = (): Measured | { failed: string } => {
    spawnSync('rm', ['-rf', join(BENCH_DIR, 'clickhouse-out')]);
    try {
      return measure('node', [join(ROOT, 'dist/bench/clickhouse-baseline.js'), dir, DAY, join(BENCH_DIR, 'clickhouse-out')]);
    } catch (err) {
      return { failed: String((err as Error).message).slice(-600) };
    }
  };
  if (PAIRS > 0) await ensureChdb();
  const objects = readdirSync(dir).length;
  const passes: Array<{ ours: Measured; clickhouse?: Measured | { failed: string } }> = [];
  for (let p = 0; p < Math.max(1, PAIRS); p++) {
    passes.push({ ours: rollup(), ...(PAIRS > 0 ? { clickhouse: clickhouse() } : {}) });
    if (PAIRS > 0) process.stderr.write(`busy day: pass ${p + 1}/${PAIRS}\n`);
  }
  const pingsOf = (r: Measured): number => Number(/: (\d+) pings/.exec(r.stdout)?.[1]);
  const exact = passes.every((r) => pingsOf(r.ours) === copies * perCopy);
  const med = (f: (r: (typeof passes)[number]) => number): number => median(passes.map(f));
  const seconds = med((r) => r.ours.seconds);
  const rss = Math.max(...passes.map((r) => r.ours.maxRssMiB));
  const lines = [
    `busy day: ${objects.toLocaleString('en')} log objects (${copies} copies of the job bench's day of real traffic, each with ${MADE_ONE ? 'every client address made one' : 'addresses and agents of its own'}), \`make rollup\`, cold, default settings (PINGROLL_MEMORY_LIMIT ${DEFAULTS.memoryLimit}), node ${process.version}${PAIRS > 0 ? `, ${PAIRS} passes alternating with ClickHouse, medians` : ''}`,
    '',
    `${pingsOf(passes[0]!.ours).toLocaleString('en')} pings in ${seconds.toFixed(0)} s, peak RSS ${Math.round(rss).toLocaleString('en')} MiB${PAIRS > 1 ? ` (each pass: ${passes.map((r) => r.ours.seconds.toFixed(0)).join(', ')} s)` : ''}`,
    exact ? `exactly ${copies} x ${perCopy.toLocaleString('en')} pings, as the copies hold` : `expected ${(copies * perCopy).toLocaleString('en')} pings: a bug`,
  ];
  const failed = passes.map((r) => r.clickhouse).find((c) => c && 'failed' in c) as { failed: string } | undefined;
  if (failed) lines.push(`ClickHouse failed: ${failed.failed}`);
  else if (PAIRS > 0) {
    const ch = JSON.parse((passes[0]!.clickhouse as Measured).stdout) as { pings: number };
    lines.push(
      `ClickHouse (chDB, in-process, bench/clickhouse-baseline.ts): ${med((r) => (r.clickhouse as Measured).seconds).toFixed(0)} s, peak RSS ${Math.round(med((r) => (r.clickhouse as Measured).maxRssMiB)).toLocaleString('en')} MiB (each pass: ${passes.map((r) => (r.clickhouse as Measured).seconds.toFixed(0)).join(', ')} s), ${ch.pings.toLocaleString('en')} pings`,
      `make rollup at ${med((r) => (r.clickhouse as Measured).seconds / r.ours.seconds).toFixed(2)}x ClickHouse's speed (median of the ratios within a pass; issue #57's target: at least 2x)`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n');
  if (!exact || rss > 4096 || failed) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
