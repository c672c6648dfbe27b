/**
 * The codec of the Parquet files pingroll writes: the day's outputs (which Redshift COPYs, and
 * Redshift Spectrum or Athena may read in place) and the staged pings on S3 (which the rollup inside
 * Redshift COPYs: PINGROLL_ROLLUP=redshift; staged pings in a local directory: `stagedCodec`).
 * Snappy, the codec AWS documents for all three:
 *
 * - Redshift COPY from Parquet reads through Redshift Spectrum ("COPY from columnar data formats",
 *   https://docs.aws.amazon.com/redshift/latest/dg/copy-usage_notes-copy-from-columnar.html), whose
 *   supported compression for data files lists Snappy, and Parquet's own codecs as snappy or gzip
 *   ("Data files for queries in Amazon Redshift Spectrum",
 *   https://docs.aws.amazon.com/redshift/latest/dg/c-spectrum-data-files.html);
 * - Athena reads Parquet compressed with Snappy, its default for Parquet ("Use compression in
 *   Athena", https://docs.aws.amazon.com/athena/latest/ug/compression-formats.html);
 * - UNLOAD writes Parquet with Snappy ("UNLOAD", FORMAT AS PARQUET: "compressed using SNAPPY",
 *   https://docs.aws.amazon.com/redshift/latest/dg/r_UNLOAD.html), so the files pingroll writes and
 *   the ones Redshift writes for it (the rollup inside Redshift) are alike.
 *
 * ZSTD (the outputs' codec before) and LZ4 (the staged pings') are not in those lists.
 */
export const PARQUET_CODEC = 'snappy';

/**
 * The codec of the staged pings (ingest/batch/day-spool.ts), by where the output lives. On S3 they
 * are Snappy, like every other file: there each byte is stored, sent up by the ingest and down again
 * by every rollup of its day, and the rollup inside Redshift COPYs them. In a local directory they are
 * written uncompressed: the rollup reads them in place, and Snappy cost 12% of the daily job's CPU
 * there to save 23 MB of 66 per 1.1M records (the job bench's day: 2.74 s against 3.12 s user+sys,
 * wall 1.78 s against 1.96 s, medians of 8 interleaved runs). ZSTD at level 1 (26 MB) and LZ4 (46 MB)
 * cost as much CPU as Snappy.
 */
export function stagedCodec(localOutput: boolean): string {
  return localOutput ? 'uncompressed' : PARQUET_CODEC;
}
