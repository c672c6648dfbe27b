/**
 * moto's S3 server for the tests: it honours S3's conditional writes (`If-None-Match`), which the
 * run lock needs (s3rver ignores them). In its own process, bound to 127.0.0.1 on a free port,
 * stopped after. moto is a Python package (`pip install "moto[server]"`); `make test` installs it
 * when it is missing. It is started by test/support/moto-server.py: moto's own server, with the
 * package-folder listing it makes at every request made once.
 */
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { projectFile } from '../../lib/project-file.js';
import { startLocalServer } from './local-server.js';

export interface Moto {
  endpoint: string;
  /** The environment a client needs (merge into process.env, or pass to loadConfig). */
  env: Record<string, string>;
  client(): S3Client;
  stop(): Promise<void>;
}

export async function startMoto(buckets: string[]): Promise<Moto> {
  const server = await startLocalServer({
    name: 'moto S3 server', command: 'python3', args: [projectFile('test/support/moto-server.py'), '-H', '127.0.0.1', '-p', '0'],
    listening: /Running on http:\/\/127\.0\.0\.1:(\d+)/, startupMs: 30_000,
  });
  const env = { AWS_ENDPOINT_URL_S3: server.endpoint, AWS_ACCESS_KEY_ID: 'moto', AWS_SECRET_ACCESS_KEY: 'moto', AWS_REGION: 'us-east-1' };
  const client = (): S3Client => new S3Client({
    endpoint: server.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'moto', secretAccessKey: 'moto' },
    requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED',
  });
  for (const b of buckets) await client().send(new CreateBucketCommand({ Bucket: b }));
  return { endpoint: server.endpoint, env, client, stop: () => server.stop() };
}
