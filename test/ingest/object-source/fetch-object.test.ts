/**
 * fetchObject fills a buffer of the listed size without zeroing it first: every byte it hands on is one
 * the stream wrote, whether the object is as listed, longer (the buffer grows) or shorter (cut to what
 * came), and it stops at the bound it is given.
 */
import { describe, expect, it } from 'vitest';
import { fetchObject, TooLong, type ObjectRef, type ObjectSource } from '../../../ingest/object-source/object-source.js';

/** A source whose one object streams `pieces`, whatever size it was listed at. */
function streaming(pieces: string[]): ObjectSource {
  return {
    async open() {
      return (async function* () { for (const p of pieces) yield Buffer.from(p); })();
    },
  } as unknown as ObjectSource;
}

const ref = (size: number): ObjectRef => ({ key: 'k', size, etag: 'e' });

describe('fetchObject', () => {
  it('gives exactly the bytes streamed: as listed, longer than listed, shorter than listed, empty', async () => {
    const text = (b: Uint8Array) => Buffer.from(b).toString();
    expect(text(await fetchObject(streaming(['abc', 'def']), ref(6)))).toBe('abcdef');
    expect(text(await fetchObject(streaming(['abc', 'defgh', 'ij']), ref(4)))).toBe('abcdefghij');
    // Short: the unwritten tail of the (unzeroed) buffer is never handed on.
    const short = await fetchObject(streaming(['ab']), ref(4096));
    expect(short.length).toBe(2);
    expect(text(short)).toBe('ab');
    expect((await fetchObject(streaming([]), ref(0))).length).toBe(0);
  });

  it('has an ArrayBuffer of its own (a parsing thread can take it), not a view of a shared pool', async () => {
    const b = await fetchObject(streaming(['abcdef']), ref(6));
    expect(b.byteOffset).toBe(0);
    expect(b.buffer.byteLength).toBe(6);
  });

  it('throws past the bound, naming it and the listed size', async () => {
    await expect(fetchObject(streaming(['abc', 'def']), ref(3), 4)).rejects.toThrow(/more than the 4 bytes.*listed at 3/);
    // What the batch's read budget holds for a listed object is its listed size: the bound is the error's, to say so.
    await expect(fetchObject(streaming(['abc', 'def']), ref(3), 3)).rejects.toMatchObject({ constructor: TooLong, maxBytes: 3 });
  });
});
