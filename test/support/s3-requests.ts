/**
 * The ListObjectsV2 requests an S3 client sends, seen where the SDK's commands and the lean path
 * (ingest/object-source/s3-lean-get.ts) both send theirs: the client's HTTP handler. A middleware on
 * the client's stack sees the SDK's commands only, so it would miss every listing after a source's first.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { HttpRequest } from '@smithy/types';

export interface ListRequest { prefix: string; delimiter?: string; startAfter?: string }

/** Calls `seen` with each ListObjectsV2 request `client` sends from now on. */
export function onListRequests(client: S3Client, seen: (request: ListRequest) => void): void {
  const handler = client.config.requestHandler as unknown as { handle: (request: HttpRequest, ...rest: unknown[]) => Promise<unknown> };
  const handle = handler.handle.bind(handler);
  handler.handle = (request, ...rest) => {
    const q = request.query ?? {};
    if (request.method === 'GET' && q['list-type'] !== undefined) {
      const one = (v: string | (string | null)[] | null | undefined): string | undefined => (typeof v === 'string' ? v : undefined);
      const delimiter = one(q.delimiter), startAfter = one(q['start-after']);
      seen({ prefix: one(q.prefix) ?? '', ...(delimiter !== undefined ? { delimiter } : {}), ...(startAfter !== undefined ? { startAfter } : {}) });
    }
    return handle(request, ...rest);
  };
}
