/**
 * Splits a byte stream into lines without decoding it (for the bench baselines, which need lines). Lines are handed over as a buffer and a
 * range, 1-based line numbers kept; blank lines are counted but not handed over (contract §3).
 */
export type LineHandler = (b: Buffer, start: number, end: number, lineNo: number) => void;

export class LineSplitter {
  private carry: Buffer | null = null;
  private lineNo = 0;

  constructor(private readonly onLine: LineHandler) {}

  push(chunk: Buffer): void {
    let start = 0;
    if (this.carry) {
      const nl = chunk.indexOf(0x0a);
      if (nl < 0) {
        this.carry = Buffer.concat([this.carry, chunk]);
        return;
      }
      const joined = Buffer.concat([this.carry, chunk.subarray(0, nl)]);
      this.carry = null;
      this.emit(joined, 0, joined.length);
      start = nl + 1;
    }
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      this.emit(chunk, start, nl);
      start = nl + 1;
    }
    // Copy the tail: keeping a view would pin the whole chunk until the next one arrives.
    if (start < chunk.length) this.carry = Buffer.from(chunk.subarray(start));
  }

  /** Hands over a last line that had no newline. */
  end(): void {
    if (this.carry) {
      const c = this.carry;
      this.carry = null;
      this.emit(c, 0, c.length);
    }
  }

  private emit(b: Buffer, start: number, end: number): void {
    this.lineNo++;
    for (let i = start; i < end; i++) {
      const c = b[i];
      if (c !== 0x20 && c !== 0x09 && c !== 0x0d) {
        this.onLine(b, start, end, this.lineNo);
        return;
      }
    }
  }
}

/** Feeds an async iterable of chunks (a file or object stream) through a splitter. */
export async function splitLines(chunks: AsyncIterable<Buffer | Uint8Array>, onLine: LineHandler): Promise<void> {
  const splitter = new LineSplitter(onLine);
  for await (const chunk of chunks) splitter.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  splitter.end();
}
