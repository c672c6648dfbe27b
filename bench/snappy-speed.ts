/**
 * Snappy for the staged files on S3 (issue #57, item 4): the module's own (ingest/access-log/wasm/snappy.as.ts)
 * against snappyjs, the JavaScript library a user would pick, on the small-object day's staged rows
 * (the CSV bench/staging-paths.ts leaves in .bench/staging-out: run it first), cut into pieces of a
 * page's size, in one process, interleaved passes, medians. Each piece the module compresses,
 * snappyjs reads back whole. Usage: node dist/bench/snappy-speed.js (BENCH_PASSES, default 5).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import snappy from 'snappyjs';
import { moduleInstance } from '../ingest/access-log/record-reader.js';
import { BENCH_DIR } from './bench-data.js';
import { median, ROOT } from './cold-run.js';

const PASSES = Number(process.env.BENCH_PASSES ?? 5);
const rowsCsv = join(ROOT, BENCH_DIR, 'staging-out', 'rows.csv');
if (!existsSync(rowsCsv)) throw new Error(`${rowsCsv} is missing: run node dist/bench/staging-paths.js first`);
const data = readFileSync(rowsCsv);
const x = moduleInstance().exports as unknown as {
  memory: WebAssembly.Memory; snappyCompress(src: number, n: number, dst: number): number; snappyBound(n: number): number;
};

const rows: string[] = [];
for (const piece of [256 << 10, 2 << 20]) {
  const SRC = 1 << 20, DST = SRC + piece + 64;
  const need = DST + x.snappyBound(piece) - x.memory.buffer.byteLength;
  if (need > 0) x.memory.grow(Math.ceil(need / 65_536));
  const mem = new Uint8Array(x.memory.buffer);
  const pieces = Array.from({ length: Math.ceil(data.length / piece) }, (_, i) => data.subarray(i * piece, Math.min(data.length, (i + 1) * piece)));
  const ways = {
    module: (): number => pieces.reduce((n, p) => {
      mem.set(p, SRC);
      return n + x.snappyCompress(SRC, p.length, DST);
    }, 0),
    snappyjs: (): number => pieces.reduce((n, p) => n + snappy.compress(p).length, 0),
  };
  // Every piece the module compresses reads back whole.
  for (const p of pieces) {
    mem.set(p, SRC);
    const back = snappy.uncompress(mem.slice(DST, DST + x.snappyCompress(SRC, p.length, DST)));
    if (!Buffer.from(back).equals(p)) throw new Error('the module\'s Snappy did not read back: a bug in pingroll');
  }
  const cpu: Record<string, number[]> = { module: [], snappyjs: [] };
  const size: Record<string, number> = {};
  for (let pass = 0; pass < PASSES; pass++) {
    for (const [name, f] of Object.entries(ways)) {
      const c0 = process.cpuUsage();
      size[name] = f();
      const c = process.cpuUsage(c0);
      cpu[name]!.push((c.user + c.system) / 1000);
    }
  }
  for (const name of Object.keys(ways)) {
    const ms = median(cpu[name]!);
    rows.push(`| ${name} | ${piece >> 10} KB | ${Math.round(ms)} | ${Math.round(data.length / 1e3 / ms)} | ${(size[name]! / 1e6).toFixed(1)} MB |`);
  }
}
process.stdout.write([
  `Snappy on the small-object day's staged rows (${(data.length / 1e6).toFixed(0)} MB of CSV) in pieces, ${PASSES} interleaved passes, medians:`,
  '',
  '| compressor | piece | CPU ms | MB/s | compressed |',
  '|---|---:|---:|---:|---:|',
  ...rows,
].join('\n') + '\n');
