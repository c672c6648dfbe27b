/**
 * A Parquet file's own account of itself, read from its footer (hyparquet): how many rows it holds,
 * without reading them or opening a query engine. hyparquet is loaded at the first call (about a
 * tenth of a second): only a Redshift run asks.
 */

/** The rows a local Parquet file holds, as its footer says. */
export async function parquetRowCount(file: string): Promise<number> {
  const { asyncBufferFromFile, parquetMetadataAsync } = await import('hyparquet');
  const meta = await parquetMetadataAsync(await asyncBufferFromFile(file));
  return Number(meta.num_rows);
}
