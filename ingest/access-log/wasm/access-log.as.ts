/** The WebAssembly module ingest reads access logs with: the record scanner and the ping rules; and the staged rows' columns (staged-columns.as.ts) and Snappy (snappy.as.ts), which the spool writes Parquet with. */
export * from './record-scanner.as';
export * from './ping-rules.as';
export { setClientCache, clientCacheMinBytes } from './client-cache.as';
export * from './staged-columns.as';
export * from './snappy.as';
