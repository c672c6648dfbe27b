/**
 * A real S3 API for tests: s3rver in its own process, bound to 127.0.0.1 on a free port, stopped
 * after. It needs the legacy OpenSSL provider (paginated ListObjectsV2 fails without it), and our
 * client talks to it path-style with checksums only when required (see infra/aws/s3-client.ts).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { rm, tempDir } from './job-fixture.js';
import { startLocalServer } from './local-server.js';

export interface S3rver {
  endpoint: string;
  /** The environment a client needs (merge into process.env). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startS3rver(buckets: string[]): Promise<S3rver> {
  const dir = tempDir('pingroll-s3rver-');
  const bin = join(dirname(createRequire(import.meta.url).resolve('s3rver/package.json')), 'bin', 's3rver.js');
  const server = await startLocalServer({
    name: 's3rver', command: process.execPath,
    args: [bin, '-d', dir, '-a', '127.0.0.1', '-p', '0', ...buckets.flatMap((b) => ['--configure-bucket', b])],
    env: { ...process.env, NODE_OPTIONS: '--openssl-legacy-provider' },
    listening: /listening on [^\s:]+:(\d+)/i, startupMs: 15_000,
  });
  const { endpoint } = server;
  return {
    endpoint,
    env: { AWS_ENDPOINT_URL_S3: endpoint, AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' },
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
