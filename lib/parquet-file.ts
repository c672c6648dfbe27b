/**
 * A Parquet file's own account of itself, read from its footer (hyparquet): how many rows it holds,
 * without reading them or opening a query engine.
 */
import { asyncBufferFromFile, parquetMetadataAsync } from 'hyparquet';

/** The rows a local Parquet file holds, as its footer says. */
export async function parquetRowCount(file: string): Promise<number> {
  const meta = await parquetMetadataAsync(await asyncBufferFromFile(file));
  return Number(meta.num_rows);
}
