/**
 * The module's Snappy (ingest/access-log/wasm/snappy.as.ts), which compresses the staged files' pages
 * on S3: what it writes, snappyjs (an independent implementation of the format) reads back byte for
 * byte, for every shape of input (empty, short, incompressible, runs, text, across its 64 KB blocks),
 * and no larger than snappyBound says; text shrinks about as much as snappyjs makes it.
 */
import { describe, expect, it } from 'vitest';
import snappy from 'snappyjs';
import { moduleInstance } from '../../../ingest/access-log/record-reader.js';
import { rng } from '../../../tools/sample/access-log-generator.js';

const x = moduleInstance().exports as unknown as {
  memory: WebAssembly.Memory; snappyCompress(src: number, n: number, dst: number): number; snappyBound(n: number): number;
};
const SRC = 1 << 20;

function compress(input: Uint8Array): Uint8Array {
  const dst = SRC + input.length + 64;
  const need = dst + x.snappyBound(input.length) - x.memory.buffer.byteLength;
  if (need > 0) x.memory.grow(Math.ceil(need / 65_536));
  const mem = new Uint8Array(x.memory.buffer);
  mem.set(input, SRC);
  const n = x.snappyCompress(SRC, input.length, dst);
  expect(n).toBeLessThanOrEqual(x.snappyBound(input.length));
  return mem.slice(dst, dst + n);
}

describe("the module's Snappy", () => {
  const r = rng(17);
  const text = Buffer.from(Array.from({ length: 6_000 }, (_, i) => `s3,série-${Math.floor(r() * 40)},e${Math.floor(r() * 300)},session-${Math.floor(r() * 900)},${(r() * 1e16).toString(16)},${1_793_000_000_000 + i}\n`).join(''));
  const shapes: Record<string, Uint8Array> = {
    empty: new Uint8Array(0),
    'one byte': Uint8Array.of(7),
    'fourteen bytes': Buffer.from('abcdabcdabcdab'),
    'zeros across blocks': new Uint8Array(200_000),
    'random bytes': Uint8Array.from({ length: 150_000 }, () => Math.floor(r() * 256)),
    'a block of one literal, then runs': Buffer.concat([Buffer.from(Uint8Array.from({ length: 70_000 }, () => Math.floor(r() * 256))), Buffer.alloc(5_000, 1)]),
    'runs of every length near the copies\' limits': Buffer.concat(Array.from({ length: 300 }, (_, i) => Buffer.concat([Buffer.alloc(1 + (i % 70), i & 255), Buffer.from([i, i >> 8, 255 - i])]))),
    'literals of every length from 1 to 300 between copies': Buffer.concat(Array.from({ length: 300 }, (_, i) => Buffer.concat([Buffer.from(Uint8Array.from({ length: i + 1 }, () => Math.floor(r() * 256))), Buffer.from('a marker that repeats')]))),
    'staged-like text': text,
  };
  for (const [name, input] of Object.entries(shapes)) {
    it(`writes what snappyjs reads back: ${name}`, () => {
      const packed = compress(input);
      expect(Buffer.from(snappy.uncompress(packed)).equals(Buffer.from(input))).toBe(true);
    });
  }

  it('shrinks text about as much as snappyjs', () => {
    const ours = compress(text).length, theirs = snappy.compress(text).length;
    expect(ours).toBeLessThan(text.length * 0.6);
    expect(ours).toBeLessThan(theirs * 1.05);
  });
});
