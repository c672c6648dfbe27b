/** The WebAssembly module ingest reads access logs with: the record scanner and the ping rules; and the staged rows' columns (staged-columns.as.ts), which the spool writes Parquet from. */
export * from './record-scanner.as';
export * from './ping-rules.as';
export { setClientCache, clientCacheMinBytes } from './client-cache.as';
export * from './staged-columns.as';
