/**
 * How a batch is sized to this machine (ingest/batch/ingest-batch.ts): the rows per part file, and
 * how many threads `--parse-threads auto` parses it in.
 */
import { describe, expect, it } from 'vitest';
import { PART_BYTES } from '../../../ingest/batch/day-spool.js';
import { autoParsing, autoThreads, FEW_CORES_THREADS_FROM_BYTES, partBytesFor } from '../../../ingest/batch/ingest-batch.js';

describe('rows per part', () => {
  it('is a quarter of a batch\'s rows (a fifth of its log bytes), from 8 MB to 32 MB', () => {
    expect(partBytesFor(10 * 1000)).toBe(8 << 20);
    // The small-object day: 2,000 objects of ~170 KB, 341 MB: parts of ~17 MB.
    expect(partBytesFor(2000 * 170_500)).toBe(Math.ceil((2000 * 170_500) / 20));
    expect(partBytesFor(100_000 * 94_000)).toBe(PART_BYTES);
  });
});

describe('parsing threads, auto', () => {
  const MB = 2 ** 20;
  it('on 4 cores or more: one per core but one, at most 16, from a batch of 32 MB', () => {
    expect(autoThreads(31 * MB, 8)).toBe(0);
    expect(autoThreads(32 * MB, 4)).toBe(3);
    expect(autoThreads(32 * MB, 64)).toBe(16);
  });

  it('on 2 or 3 cores: none for a day like the small-object day, one per core for a batch of 4 GiB or more', () => {
    // The small-object day's one batch (341 MB) and the busy day's two (about 17 GB each).
    expect(autoThreads(2000 * 170_500, 2)).toBe(0);
    expect(autoThreads(FEW_CORES_THREADS_FROM_BYTES - 1, 2)).toBe(0);
    expect(autoThreads(FEW_CORES_THREADS_FROM_BYTES, 2)).toBe(2);
    expect(autoThreads(100_000 * 170_500, 3)).toBe(3);
  });

  it('on 1 core: none, however large the batch', () => {
    expect(autoThreads(100_000 * 170_500, 1)).toBe(0);
  });

  it('from S3 on 2 or 3 cores: from 32 MB, one thread per core but one, fed by the run\'s thread; else as for files', () => {
    const day = 2000 * 170_500;
    expect(autoParsing(day, true, 2)).toEqual({ threads: 1, fetchHere: true });
    expect(autoParsing(day, true, 3)).toEqual({ threads: 2, fetchHere: true });
    expect(autoParsing(day, false, 2)).toEqual({ threads: 0, fetchHere: false });
    expect(autoParsing(31 * MB, true, 2)).toEqual({ threads: 0, fetchHere: false });
    expect(autoParsing(FEW_CORES_THREADS_FROM_BYTES, true, 2)).toEqual({ threads: 2, fetchHere: false });
    expect(autoParsing(day, true, 4)).toEqual({ threads: 3, fetchHere: false });
    expect(autoParsing(day, true, 1)).toEqual({ threads: 0, fetchHere: false });
  });
});
