/**
 * `make bench` (hostile input): the peak memory of `pingroll rollup` (a cold process, as cron runs it)
 * on a log directory holding one large hostile object beside a small day of good ones: 500 MB with no
 * newline, a gzip that inflates to 3 GiB, 300 MB of random bytes. Each must end as the contract says
 * (a reject, or a quarantine with exit 4) with the process's peak RSS under 1 GiB, against the same
 * run without the hostile object, measured in the same pass.
 */
import { spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { generateSample, writeSample } from '../tools/sample/access-log-generator.js';
import { BENCH_DIR } from './bench-data.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const DAY = '2026-11-01';
const WORK = join(BENCH_DIR, 'hostile');
const MIB = 1 << 20;
const LIMIT_MIB = 1024;

interface Kind { name: string; file: string; write: (path: string) => Promise<void>; expect: number[] }

const chunks = (count: number, make: () => Buffer): Readable => Readable.from((function* () { for (let i = 0; i < count; i++) yield make(); })());

const KINDS: Kind[] = [
  { name: 'none (the good objects alone)', file: '', write: async () => {}, expect: [0] },
  { name: '500 MB with no newline', file: `${DAY}-23-59-59-NONEWLINE`, expect: [0], write: (p) => pipeline(chunks(500, () => Buffer.alloc(MIB, 'a')), createWriteStream(p)) },
  { name: 'gzip inflating to 3 GiB', file: `${DAY}-23-59-59-BOMB.gz`, expect: [4], write: (p) => pipeline(chunks(3072, () => Buffer.alloc(MIB)), createGzip({ level: 1 }), createWriteStream(p)) },
  { name: '300 MB of random bytes', file: `${DAY}-23-59-59-BINARY`, expect: [0], write: (p) => pipeline(chunks(300, () => randomFillSync(Buffer.alloc(MIB))), createWriteStream(p)) },
];

async function main(): Promise<void> {
  const sample = generateSample({ date: DAY, sessions: 200, seed: 9, recordsPerObject: 300 });
  const rows: string[] = [];
  let failed = false;
  for (const kind of KINDS) {
    const dir = join(WORK, 'run');
    await rm(dir, { recursive: true, force: true });
    await mkdir(join(dir, 'logs'), { recursive: true });
    await writeSample(sample, join(dir, 'logs'));
    if (kind.file) await kind.write(join(dir, 'logs', kind.file));
    const report = join(WORK, 'report.json');
    const r = spawnSync(process.execPath, ['--import', join(ROOT, 'bench/report-rss.mjs'), join(ROOT, 'bin/pingroll.js'), 'rollup', '--date', DAY], {
      env: { ...process.env, PINGROLL_LOGS: join(dir, 'logs'), PINGROLL_OUTPUT: join(dir, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(dir, 'wh.duckdb')}`, BENCH_REPORT: report },
      encoding: 'utf8', maxBuffer: 1 << 26,
    });
    const m = JSON.parse(await readFile(report, 'utf8')) as { maxRssKiB: number; seconds: number };
    const rss = m.maxRssKiB / 1024;
    const ok = kind.expect.includes(r.status ?? -1) && rss <= LIMIT_MIB;
    failed ||= !ok;
    const last = r.stderr.trim().split('\n').at(-1) ?? '';
    rows.push(`| ${kind.name} | ${r.status} | ${Math.round(rss)} MiB | ${m.seconds.toFixed(1)} s | ${ok ? 'yes' : '**no**'} | ${r.status === 0 ? r.stdout.trim().split(';')[0] : last.replace(/\|/g, '/').slice(0, 160)} |`);
    process.stderr.write(`${kind.name}: exit ${r.status}, ${Math.round(rss)} MiB\n`);
  }
  await rm(WORK, { recursive: true, force: true });
  process.stdout.write([
    `\`pingroll rollup\` (a cold process) on a day of ${sample.objects.length} good log objects plus one hostile object; peak RSS must stay under ${LIMIT_MIB} MiB.`, '',
    '| hostile object | exit | peak RSS | wall | as the contract says, under 1 GiB | what the run said |', '|---|---|---|---|---|---|', ...rows, '',
  ].join('\n'));
  if (failed) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`hostile bench: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
