/**
 * A busy day end to end, once (a script, not a test; it takes many minutes): at least 50 million pings
 * through `make rollup` as cron runs it, its wall time and peak RSS (the process's, DuckDB and the
 * parsing threads included). The day is the job bench's day of real traffic (3,000 objects) copied as
 * many times as it takes, each copy's ping, session and request IDs made its own (their first two hex
 * digits replaced by the copy's number), so every copy adds its pings instead of repeating them. Each
 * copy's sessions send from addresses of their own, drawn as the bench's traffic draws them (each
 * address of the day mapped to a new one, a copy's map its own: millions of addresses in all), and
 * seven copies in eight write their user agents' first version apart (`Chrome/131.0` as
 * `Chrome/131.05`: thousands of agents, the same devices and bots). Usage: node dist/bench/busy-day.js
 * [min pings, default 50000000]
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BENCH_DIR, rechunkedLogDir } from './bench-data.js';
import { measure } from './cold-run.js';
import { benchLogDir, expectedTables } from './job-bench.js';
import { DEFAULTS } from '../infra/config.js';
import { trafficAddress } from '../tools/sample/traffic-audience.js';

const DAY = '2026-11-01';

/** Copy `k` of one log object's text: its ids, addresses (through `addresses`, the copy's map) and user agents its own. */
function copyOf(text: string, k: number, addresses: Map<string, string>, rand: () => number): string {
  const hex = k.toString(16).padStart(2, '0');
  let out = text
    // Ping and session ids, legacy clients' bare aliases too: a session left the same in every copy
    // would send as many pings a minute as there are copies, and be left out as a loop (contract §10).
    .replace(/([?&](?:x-)?(?:ping|session))=[0-9a-f]{2}/g, `$1=${hex}`)
    // A ping without an id is told apart by its request ID: each copy's are its own too.
    .replace(/ [0-9A-F]{2}([0-9A-F]{14}) (REST|WEBSITE)\./g, ` ${hex.toUpperCase()}$1 $2.`);
  if (k === 0) return out;
  // The client address, the fifth field: the same new one for every record of the address in this copy.
  out = out.replace(/^(\S+ \S+ \[[^\]\n]*\] )(\S+)/gm, (_, head: string, ip: string) => {
    let to = addresses.get(ip);
    if (to === undefined) addresses.set(ip, (to = trafficAddress(rand)[0]));
    return head + to;
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
  const dir = join(BENCH_DIR, `busy-day-${copies}-copies-traffic`);
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
  await rm(out, { recursive: true, force: true });
  const r = measure('make', ['-s', 'rollup', `DATE=${DAY}`],
    { PINGROLL_LOGS: dir, PINGROLL_OUTPUT: join(out, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(out, 'wh.duckdb')}` }, { showStderr: true });
  const { seconds, maxRssMiB: rss } = r;
  const pings = Number(/: (\d+) pings/.exec(r.stdout)?.[1]);
  const objects = readdirSync(dir).length;
  const exact = pings === copies * perCopy;
  process.stdout.write([
    `busy day: ${objects.toLocaleString('en')} log objects (${copies} copies of the job bench's day of real traffic, each with addresses and agents of its own), one \`make rollup\`, cold, default settings (PINGROLL_MEMORY_LIMIT ${DEFAULTS.memoryLimit}), node ${process.version}`,
    '',
    `${pings.toLocaleString('en')} pings in ${seconds.toFixed(0)} s, peak RSS ${Math.round(rss).toLocaleString('en')} MiB`,
    exact ? `exactly ${copies} x ${perCopy.toLocaleString('en')} pings, as the copies hold` : `expected ${(copies * perCopy).toLocaleString('en')} pings: a bug`,
  ].join('\n') + '\n');
  if (!exact || rss > 4096) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
