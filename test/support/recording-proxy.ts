/**
 * A recording proxy in front of a local AWS stand-in (moto's S3 and Glue, DynamoDB Local), on
 * 127.0.0.1 and a free port: each request is forwarded as it came and recorded as the call it is
 * (client, operation, the input IAM reads), for jobs run as processes of their own, where an
 * in-process recorder (aws-calls.ts) sees nothing. Every request is seen, the lean GET's included.
 */
import { createServer, request as forward, type IncomingMessage, type Server } from 'node:http';
import type { AwsCall } from './aws-calls.js';

/** An S3 REST request (path style) as the SDK operation that sent it. */
export function s3Call(method: string, url: URL, headers: IncomingMessage['headers']): AwsCall {
  const [, bucket = '', ...rest] = url.pathname.split('/');
  const key = decodeURIComponent(rest.join('/'));
  const q = url.searchParams;
  const s3 = (command: string, input: Record<string, unknown> = {}): AwsCall => ({ client: 'S3Client', command, input: { Bucket: decodeURIComponent(bucket), ...(key ? { Key: key } : {}), ...input } });
  if (!key) {
    if (method === 'GET' && q.has('list-type')) return s3('ListObjectsV2', { Prefix: q.get('prefix') ?? '' });
    if (method === 'HEAD') return s3('HeadBucket');
    if (method === 'POST' && q.has('delete')) return s3('DeleteObjects');
    return s3(`${method} bucket ${url.search}`);
  }
  switch (method) {
    case 'GET': return q.has('tagging') ? s3('GetObjectTagging') : q.has('uploadId') ? s3('ListParts') : s3('GetObject');
    case 'HEAD': return s3('HeadObject');
    case 'PUT':
      if (q.has('tagging')) return s3('PutObjectTagging');
      if (q.has('uploadId')) return s3('UploadPart');
      if (headers['x-amz-copy-source']) return s3('CopyObject', { CopySource: String(headers['x-amz-copy-source']) });
      return s3('PutObject', headers['x-amz-tagging'] ? { Tagging: String(headers['x-amz-tagging']) } : {});
    case 'POST': return q.has('uploads') ? s3('CreateMultipartUpload') : q.has('uploadId') ? s3('CompleteMultipartUpload') : s3(`POST ${url.search}`);
    case 'DELETE': return q.has('uploadId') ? s3('AbortMultipartUpload') : s3('DeleteObject');
    default: return s3(`${method} object`);
  }
}

/** A JSON-protocol request (`X-Amz-Target: Service.Operation`) as its call. */
function targetCall(target: string, body: string): AwsCall {
  const [service, op] = target.split('.') as [string, string];
  const client = service.startsWith('DynamoDB') ? 'DynamoDBClient' : service === 'AWSGlue' ? 'GlueClient' : `${service}Client`;
  return { client, command: op, input: body ? JSON.parse(body) as Record<string, unknown> : {} };
}

export interface RecordingProxy { endpoint: string; calls: AwsCall[]; stop(): Promise<void> }

/**
 * `hold`: called with each call as it arrives (after it is recorded); the request is passed on once
 * what it returns has settled (a test holding one request until others have come).
 */
export async function startRecordingProxy(target: string, opts: { hold?: (call: AwsCall) => Promise<unknown> | null } = {}): Promise<RecordingProxy> {
  const to = new URL(target);
  const calls: AwsCall[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const amzTarget = req.headers['x-amz-target'];
      const call = amzTarget ? targetCall(String(amzTarget), body.toString('utf8')) : s3Call(req.method ?? 'GET', new URL(req.url ?? '/', 'http://x'), req.headers);
      calls.push(call);
      const pass = (): void => {
        const out = forward({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (upstream) => {
          res.writeHead(upstream.statusCode ?? 502, upstream.headers);
          upstream.pipe(res);
        });
        out.on('error', (err) => { res.writeHead(502); res.end(String(err)); });
        out.end(body);
      };
      const held = opts.hold?.(call);
      if (held) void held.then(pass, pass);
      else pass();
    });
  });
  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', () => resolve()); });
  return {
    endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`, calls,
    stop: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
