/**
 * The requests an S3 client sends, seen where the SDK's commands and the lean path
 * (ingest/object-source/s3-lean-get.ts) both send theirs: the client's HTTP handler. A middleware on
 * the client's stack sees the SDK's commands only, so it would miss every request after a source's first.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { HttpRequest } from '@smithy/types';

/** Calls `seen` with each request `client` sends from now on, before it is sent. */
export function onRequests(client: S3Client, seen: (request: HttpRequest) => void): void {
  const handler = client.config.requestHandler as unknown as { handle: (request: HttpRequest, ...rest: unknown[]) => Promise<unknown> };
  const handle = handler.handle.bind(handler);
  handler.handle = (request, ...rest) => {
    seen(request);
    return handle(request, ...rest);
  };
}

export interface ListRequest { prefix: string; delimiter?: string; startAfter?: string }

/** Whether `request` is a ListObjectsV2 (a GET of the bucket with `list-type`). */
export function isList(request: HttpRequest): boolean {
  return request.method === 'GET' && request.query?.['list-type'] !== undefined;
}

/** Calls `seen` with each ListObjectsV2 request `client` sends from now on. */
export function onListRequests(client: S3Client, seen: (request: ListRequest) => void): void {
  const one = (v: string | (string | null)[] | null | undefined): string | undefined => (typeof v === 'string' ? v : undefined);
  onRequests(client, (request) => {
    if (!isList(request)) return;
    const q = request.query ?? {};
    const delimiter = one(q.delimiter), startAfter = one(q['start-after']);
    seen({ prefix: one(q.prefix) ?? '', ...(delimiter !== undefined ? { delimiter } : {}), ...(startAfter !== undefined ? { startAfter } : {}) });
  });
}
