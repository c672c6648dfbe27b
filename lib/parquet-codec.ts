/**
 * The codec of every Parquet file pingroll writes: the day's outputs (which Redshift COPYs, and
 * Redshift Spectrum or Athena may read in place) and the staged pings (which the rollup inside
 * Redshift COPYs: PINGROLL_ROLLUP=redshift). Snappy, the codec AWS documents for all three:
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
