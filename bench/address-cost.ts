/**
 * `make bench` (addresses, issue #57): what a new client address costs.
 *  1. The lookup against what the parser pays: distinct addresses drawn as the bench's traffic has
 *     them (tools/sample/traffic-audience.ts: IPv4 over the whole space, 30% IPv6 in the registries'
 *     blocks), each looked up once, in interleaved passes, each pass with a database opened afresh
 *     (nothing remembered of an address): mmdb-lib's `Reader.get` from a string, the rows it decodes
 *     remembered (the lookup alone, as a user of the library would write it), against what the parser
 *     calls for an address it has not seen (`GeoLookup.countryOf`: the address's bytes as they lie in
 *     the parser's memory, in; its country, out).
 *  2. The parse alone (the scanner and the ping rules, as ingest runs them, the rows made) of one of
 *     the day's pings many times over, each from an address of its own, against the same with one
 *     address, interleaved passes: the difference is what a new address costs the parse.
 *  3. The same two days through `make rollup` as cron runs it (a cold process), interleaved: the ratio.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Reader, Response } from 'mmdb-lib';
import { bundledGeoDatabase, GeoLookup } from '../ingest/audience/geo-lookup.js';
import { AccessLogRecordReader, READ_BYTES } from '../ingest/access-log/record-reader.js';
import { defaultConfig } from '../infra/config.js';
import { trafficAddress } from '../tools/sample/traffic-audience.js';
import { BENCH_DIR, ONE_ADDRESS, rechunkedLogDir, withOneAddress } from './bench-data.js';
import { measure, median } from './cold-run.js';
import { benchLogDir } from './job-bench.js';

const DAY = '2026-11-01';
const ADDRESSES = Number(process.env.BENCH_ADDRESSES ?? 1_000_000);
const PASSES = Number(process.env.BENCH_PASSES ?? 7);

function lookups(): string[] {
  const addresses = new Array<string>(ADDRESSES);
  let seed = 57;
  const rand = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  for (let i = 0; i < ADDRESSES; i++) addresses[i] = trafficAddress(rand)[0];
  const bytes = Buffer.from(addresses.join('\n'), 'latin1');
  const { Reader: MmdbReader } = createRequire(import.meta.url)('mmdb-lib') as { Reader: typeof Reader };
  const file = readFileSync(bundledGeoDatabase());
  const ns = { mmdb: [] as number[], ours: [] as number[] };
  let agree = true;
  for (let pass = 0; pass < PASSES; pass++) {
    const reader = new MmdbReader<Response>(file, { cache: new Map() });
    const mmdb = new Array<string>(ADDRESSES);
    let t = process.hrtime.bigint();
    for (let i = 0; i < ADDRESSES; i++) {
      const row = reader.get(addresses[i]!) as { country_code?: string } | null;
      mmdb[i] = row?.country_code ?? 'ZZ';
    }
    ns.mmdb.push(Number(process.hrtime.bigint() - t) / ADDRESSES);
    const geo = new GeoLookup(bundledGeoDatabase());
    const ours = new Array<string>(ADDRESSES);
    t = process.hrtime.bigint();
    for (let i = 0, at = 0; i < ADDRESSES; i++) {
      const end = bytes.indexOf(0x0a, at);
      const stop = end < 0 ? bytes.length : end;
      ours[i] = geo.countryOf(bytes, at, stop - at);
      at = stop + 1;
    }
    ns.ours.push(Number(process.hrtime.bigint() - t) / ADDRESSES);
    for (let i = 0; i < ADDRESSES; i++) if (ours[i] !== mmdb[i]!.toUpperCase()) agree = false;
  }
  if (!agree) throw new Error('the parser\'s lookup and mmdb-lib disagree on an address\'s country');
  const distinct = new Set(addresses).size;
  return [
    `${ADDRESSES.toLocaleString('en-US')} addresses drawn as the bench's traffic has them (${distinct.toLocaleString('en-US')} distinct, 30% IPv6), each looked up once a pass, ${PASSES} interleaved passes, a database opened afresh each pass; medians; every country the same both ways:`,
    '',
    '| lookup of a new address | ns an address | |',
    '|---|---:|---:|',
    `| mmdb-lib \`Reader.get\` from a string, rows decoded once (the lookup alone) | ${median(ns.mmdb).toFixed(0)} | 1.00x |`,
    `| pingroll's parser: \`GeoLookup.countryOf\` of the address's bytes | ${median(ns.ours).toFixed(0)} | ${(median(ns.ours) / median(ns.mmdb)).toFixed(2)}x |`,
  ];
}

/** `dir`'s log objects again, every client address (the fifth field) made ONE_ADDRESS. */
async function oneAddress(dir: string): Promise<string> {
  const out = `${dir}-one-address`;
  if (existsSync(`${out}.ready`)) return out;
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  for (const name of readdirSync(dir)) {
    const text = readFileSync(join(dir, name), 'latin1');
    await writeFile(join(out, name), withOneAddress(text), 'latin1');
  }
  await writeFile(`${out}.ready`, '');
  return out;
}

function rollup(dir: string): number {
  const out = join(BENCH_DIR, 'address-out');
  spawnSync('rm', ['-rf', out]);
  return measure('make', ['-s', 'rollup', `DATE=${DAY}`], {
    PINGROLL_LOGS: dir, PINGROLL_OUTPUT: join(out, 'out'), PINGROLL_WAREHOUSE: `duckdb:${join(out, 'wh.duckdb')}`,
  }).seconds;
}

/** The small-object day of real traffic, and the same with every address made one. */
async function days(): Promise<{ real: string; one: string }> {
  const { dir: shards } = await benchLogDir(540_000);
  const real = await rechunkedLogDir(shards, 2000);
  return { real, one: await oneAddress(real) };
}

/** Every object of `dir`, one after another, through a reader of its own (the module's caches empty): seconds. */
function parsed(bytes: Buffer): number {
  const t = process.hrtime.bigint();
  const reader = new AccessLogRecordReader(() => {}, { pingKeys: defaultConfig().pingKeys, onRows: () => {} });
  for (let at = 0; at < bytes.length; at += READ_BYTES) reader.push(bytes.subarray(at, Math.min(bytes.length, at + READ_BYTES)));
  reader.finish();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

/** A ping line of the real day, `lines` times over: each with an address of its own (`real`), or all with ONE_ADDRESS. */
async function pingLines(lines: number): Promise<{ real: Buffer; one: Buffer }> {
  const { real } = await days();
  const first = readdirSync(real).sort().map((n) => readFileSync(join(real, n), 'latin1')).join('').split('\n').find((l) => l.includes('GET /p.gif?') && l.includes('x-ping=') && l.includes('" 200 '))!;
  const [, head, tail] = /^(\S+ \S+ \[[^\]\n]*\] )\S+(.*)$/.exec(first)!;
  let seed = 58;
  const rand = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const own: string[] = [], same: string[] = [];
  for (let i = 0; i < lines; i++) {
    own.push(`${head}${trafficAddress(rand)[0]}${tail}`);
    same.push(`${head}${ONE_ADDRESS}${tail}`);
  }
  return { real: Buffer.from(own.join('\n') + '\n', 'latin1'), one: Buffer.from(same.join('\n') + '\n', 'latin1') };
}

async function parse(): Promise<string[]> {
  const lines = Math.min(ADDRESSES, 500_000);
  const bytes = await pingLines(lines);
  const times = { real: [] as number[], one: [] as number[] };
  for (let pass = 0; pass < PASSES; pass++) {
    times.real.push(parsed(bytes.real));
    times.one.push(parsed(bytes.one));
  }
  const extra = median(times.real.map((r, i) => r - times.one[i]!));
  return [
    `The parse alone (the scanner, the ping rules, the staged rows: what ingest does with a record) of ${lines.toLocaleString('en-US')} copies of a ping of the bench's day, each from an address of its own (drawn as above), against the same with every address one, ${PASSES} interleaved passes, a reader of its own each pass:`,
    '',
    '| pings | parse (median) | a ping |',
    '|---|---:|---:|',
    `| every address one | ${median(times.one).toFixed(3)} s | ${Math.round((median(times.one) * 1e9) / lines)} ns |`,
    `| each from an address of its own | ${median(times.real).toFixed(3)} s | ${Math.round((median(times.real) * 1e9) / lines)} ns |`,
    `| the difference: what a new address costs | | ${Math.round((extra * 1e9) / lines)} ns |`,
  ];
}

async function madeOne(): Promise<string[]> {
  const { real, one } = await days();
  const times = { real: [] as number[], one: [] as number[] };
  for (let pass = 0; pass < PASSES; pass++) {
    process.stderr.write(`addresses: pass ${pass + 1}/${PASSES}\n`);
    times.real.push(rollup(real));
    times.one.push(rollup(one));
  }
  const ratio = median(times.real.map((r, i) => r / times.one[i]!));
  return [
    `The small-object day of real traffic (${real}) through \`make rollup\`, cold, against the same logs with every client address made one (${ONE_ADDRESS}), ${PASSES} interleaved passes (issue #57's target: at most 1.05x apart):`,
    '',
    '| logs | make rollup (median) | |',
    '|---|---:|---:|',
    `| every address made one | ${median(times.one).toFixed(2)} s | 1.00x |`,
    `| each session its own address | ${median(times.real).toFixed(2)} s | ${ratio.toFixed(2)}x |`,
  ];
}

const parts = process.env.BENCH_ADDRESS_PARTS ?? 'lookup,parse,day';
const lines: string[] = [];
if (parts.includes('lookup')) lines.push(...lookups(), '');
if (parts.includes('parse')) lines.push(...(await parse()), '');
if (parts.includes('day')) lines.push(...(await madeOne()));
process.stdout.write(lines.join('\n') + '\n');
