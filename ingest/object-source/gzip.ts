import { createGunzip } from 'node:zlib';
import { Readable } from 'node:stream';

/** Whether bytes start with gzip's magic bytes (S3 log objects may be compressed with or without a `.gz` suffix). */
export function isGzip(b: Uint8Array): boolean {
  return b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;
}

/**
 * Chunks of a possibly gzip-compressed stream, decompressed when it starts with gzip's magic bytes
 * (S3 log objects may be compressed with or without a `.gz` suffix).
 */
export async function* gunzipIfNeeded(input: AsyncIterable<Uint8Array>): AsyncGenerator<Buffer> {
  const it = input[Symbol.asyncIterator]();
  let head: Buffer = Buffer.alloc(0);
  // Two bytes decide; a stream may hand them over in pieces.
  while (head.length < 2) {
    const r = await it.next();
    if (r.done) {
      if (head.length) yield head;
      return;
    }
    // Nearly always the first chunk holds both: keep it as it is rather than copy it.
    head = head.length === 0 ? Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength) : Buffer.concat([head, r.value]);
  }
  const rest: AsyncIterable<Uint8Array> = { [Symbol.asyncIterator]: () => it };
  if (!isGzip(head)) {
    yield head;
    for await (const c of rest) yield Buffer.from(c.buffer, c.byteOffset, c.byteLength);
    return;
  }
  const gunzip = createGunzip();
  const source = Readable.from((async function* () {
    yield head;
    for await (const c of rest) yield c;
  })());
  source.on('error', (err) => gunzip.destroy(err));
  for await (const c of source.pipe(gunzip)) yield c as Buffer;
}
