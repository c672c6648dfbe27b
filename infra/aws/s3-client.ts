import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { Config } from '../config.js';

/**
 * The S3 client for logs and output. Region, credentials and endpoint come from the SDK's own
 * settings (`AWS_REGION`, `AWS_ENDPOINT_URL_S3`, ...). With an endpoint override (MinIO, s3rver,
 * LocalStack), requests use path-style addressing and send checksums only when an operation
 * requires them: such servers store streamed uploads with the SDK's chunk framing otherwise.
 */
export function makeS3Client(config: Pick<Config, 's3EndpointOverride'> & Partial<Pick<Config, 'concurrency'>>): S3Client {
  return new S3Client(s3ClientConfig(config));
}

/** The client's settings as plain data: a parsing thread makes its own client from them. */
export function s3ClientConfig(config: Pick<Config, 's3EndpointOverride'> & Partial<Pick<Config, 'concurrency'>>): S3ClientConfig {
  // Enough connections for every fetch the run allows at once (the SDK's default is 50).
  const maxSockets = Math.max(50, config.concurrency ?? 0);
  return {
    ...(config.s3EndpointOverride ? { forcePathStyle: true, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } : {}),
    maxAttempts: 5,
    requestHandler: { httpAgent: { maxSockets }, httpsAgent: { maxSockets } },
    // The middleware stack is resolved once per command type, not at every request: a run sends
    // thousands of GetObjects, and resolving it cost ~12% of the SDK's CPU per GET (3,000 GETs of the
    // bench day from a local HTTP server: 2.7 s of CPU against 3.2 s). pingroll adds no middleware.
    cacheMiddleware: true,
  };
}
