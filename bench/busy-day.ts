/**
 * A busy day end to end, once (a script, not a test; it takes many minutes): at least 50 million pings
 * through `make rollup` as cron runs it, its wall time and peak RSS (the process's, DuckDB and the
 * parsing threads included). The day is the job bench's 3,000 objects copied as many times as it
 * takes, each copy's ping, session and request IDs made its own (their first two hex digits replaced
 * by the copy's number), so every copy adds its pings instead of repeating them. Usage: node
 * dist/bench/busy-day.js [min pings, default 50000000]
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BENCH_DIR, rechunkedLogDir } from './bench-data.js';
import { measure } from './cold-run.js';
import { benchLogDir } from './job-bench.js';
import { DEFAULTS } from '../infra/config.js';

const DAY = '2026-11-01';
/** Pings in one copy of the bench day (825,807 since the generator sends automated traffic, which is not counted; 908,180 before). */
const PINGS_PER_COPY = 825_807;

async function main(): Promise<void> {
  const want = Number(process.argv[2] ?? 50_000_000);
  const copies = Math.ceil(want / PINGS_PER_COPY);
  if (copies > 256) throw new Error('at most 256 copies (two hex digits)');
  // The job bench's day, made here when no `make bench` made it first (a fresh clone has none): the
  // day of nine addresses, whose pings a copy holds is PINGS_PER_COPY. Copies of the day of real
  // traffic would repeat its addresses in every copy; the busy day of real traffic (millions of
  // addresses) is issue #57's still to make.
  const { dir: shards } = await benchLogDir(1_000_000, 'few');
  const base = await rechunkedLogDir(shards, 3000);
  const dir = join(BENCH_DIR, `busy-day-${copies}-copies-v4`);
  if (!existsSync(`${dir}.ready`)) {
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const files = readdirSync(base).sort();
    for (let k = 0; k < copies; k++) {
      const hex = k.toString(16).padStart(2, '0');
      for (const f of files) {
        const text = (await readFile(join(base, f))).toString('latin1')
          // Ping and session ids, legacy clients' bare aliases too: a session left the same in every copy
          // would send as many pings a minute as there are copies, and be left out as a loop (contract §10).
          .replace(/([?&](?:x-)?(?:ping|session))=[0-9a-f]{2}/g, `$1=${hex}`)
          // A ping without an id is told apart by its request ID: each copy's are its own too.
          .replace(/ [0-9A-F]{2}([0-9A-F]{14}) (REST|WEBSITE)\./g, ` ${hex.toUpperCase()}$1 $2.`);
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
  const exact = pings === copies * PINGS_PER_COPY;
  process.stdout.write([
    `busy day: ${objects.toLocaleString('en')} log objects (${copies} copies of the job bench's day), one \`make rollup\`, cold, default settings (PINGROLL_MEMORY_LIMIT ${DEFAULTS.memoryLimit}), node ${process.version}`,
    '',
    `${pings.toLocaleString('en')} pings in ${seconds.toFixed(0)} s, peak RSS ${Math.round(rss).toLocaleString('en')} MiB`,
    exact ? `exactly ${copies} x ${PINGS_PER_COPY.toLocaleString('en')} pings, as the copies hold` : `expected ${(copies * PINGS_PER_COPY).toLocaleString('en')} pings: a bug`,
  ].join('\n') + '\n');
  if (!exact || rss > 4096) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
