/**
 * A real S3 API for tests: s3rver in its own process, bound to 127.0.0.1 on a free port, stopped
 * after. It needs the legacy OpenSSL provider (paginated ListObjectsV2 fails without it), and our
 * client talks to it path-style with checksums only when required (see infra/aws/s3-client.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { rm, tempDir } from './job-fixture.js';

export interface S3rver {
  endpoint: string;
  /** The environment a client needs (merge into process.env). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startS3rver(buckets: string[]): Promise<S3rver> {
  const dir = tempDir('pingroll-s3rver-');
  const bin = join(dirname(createRequire(import.meta.url).resolve('s3rver/package.json')), 'bin', 's3rver.js');
  const child: ChildProcess = spawn(process.execPath, [bin, '-d', dir, '-a', '127.0.0.1', '-p', '0', ...buckets.flatMap((b) => ['--configure-bucket', b])], {
    env: { ...process.env, NODE_OPTIONS: '--openssl-legacy-provider' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`s3rver did not start: ${out}`)), 15_000);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = /listening on [^\s:]+:(\d+)/i.exec(out) ?? /:(\d{2,5})\b/.exec(out.split('\n').find((l) => /listen/i.test(l)) ?? '');
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`s3rver exited with ${code}: ${out}`)));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    env: { AWS_ENDPOINT_URL_S3: endpoint, AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
