import type { S3Location } from '../../../lib/location.js';

/**
 * A Redshift COPY manifest of files of the output (keys relative to it, with their sizes). Parquet
 * needs each entry's `meta.content_length` ("Using a manifest to specify data files",
 * https://docs.aws.amazon.com/redshift/latest/dg/loading-data-files-using-manifest.html). COPY from
 * Parquet runs on Redshift Spectrum, which skips files under names beginning with `_` or `.` when it
 * lists a location; a manifest names each file outright, so no listing rule applies.
 */
export function copyManifest(output: S3Location, files: ReadonlyArray<{ key: string; size: number }>): string {
  return JSON.stringify({ entries: files.map((f) => ({ url: `s3://${output.bucket}/${output.prefix}${f.key}`, mandatory: true, meta: { content_length: f.size } })) });
}
