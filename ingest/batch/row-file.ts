/**
 * A part file of staged rows: appends go through a 4 MB buffer to the file in large synchronous
 * writes (rows come from the scanner by the thousand; the staged writer reads the file once complete:
 * staged-parquet.ts).
 */
import { closeSync, ftruncateSync, openSync, writeSync } from 'node:fs';

const BUFFER = 4 << 20;
/** Appends at least this large are written straight from the caller's bytes. */
const DIRECT = 64 << 10;

export class RowFile {
  private readonly fd: number;
  private used = 0;
  /** Bytes in the file itself (the rest is in the buffer). */
  private written = 0;
  private open = true;
  /** Bytes appended. */
  size = 0;

  private readonly buf: Buffer;

  /** @param bufferBytes how much is held before a write (rows: 4 MB; rejects, which come few, less). */
  constructor(readonly path: string, bufferBytes = BUFFER) {
    this.fd = openSync(path, 'w');
    this.buf = Buffer.allocUnsafe(bufferBytes);
  }

  append(bytes: Uint8Array): void {
    this.size += bytes.length;
    // Large pieces (the rows of a whole scan call) go to the file as they are, without a copy.
    if (bytes.length >= DIRECT) {
      this.flush();
      this.write(bytes);
      return;
    }
    if (bytes.length >= this.buf.length) {
      this.flush();
      this.write(bytes);
      return;
    }
    if (this.used + bytes.length > this.buf.length) this.flush();
    this.buf.set(bytes, this.used);
    this.used += bytes.length;
  }

  /** Takes back everything appended after the first `size` bytes (rows of an object that turned out unreadable). */
  truncate(size: number): void {
    if (size < this.written) {
      ftruncateSync(this.fd, size);
      this.written = size;
      this.used = 0;
    } else this.used = size - this.written;
    this.size = size;
  }

  /** Writes what the buffer holds to the file, so that another thread may read all that was appended. */
  flush(): void {
    this.write(this.buf.subarray(0, this.used));
    this.used = 0;
  }

  /** At the file's end as this file counts it (explicit positions: a truncated file is written on from where it was cut). */
  private write(bytes: Uint8Array): void {
    for (let off = 0; off < bytes.length;) {
      const n = writeSync(this.fd, bytes, off, bytes.length - off, this.written);
      off += n;
      this.written += n;
    }
  }

  /** Flushes and closes the file; safe to call again. */
  close(): void {
    if (!this.open) return;
    this.open = false;
    this.flush();
    closeSync(this.fd);
  }
}
