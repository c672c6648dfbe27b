/** The WebAssembly module ingest reads access logs with: the record scanner and the ping rules. */
export * from './record-scanner.as';
export * from './ping-rules.as';
export { setClientCache, clientCacheMinBytes } from './client-cache.as';
