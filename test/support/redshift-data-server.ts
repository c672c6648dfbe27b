/**
 * The Redshift Data API and Redshift Serverless's API as HTTP servers on 127.0.0.1 (free ports), for
 * the jobs run as processes of their own, as the deployment runs them (deploy/test/state-machine.ts):
 * an in-process mock cannot reach another process. Both speak the AWS JSON 1.1 protocol the SDK
 * sends (`X-Amz-Target: RedshiftData.<Operation>`); the SDK reaches them through
 * AWS_ENDPOINT_URL_REDSHIFT_DATA and AWS_ENDPOINT_URL_REDSHIFT_SERVERLESS.
 *
 * Batches and queries are Redshift played by PostgreSQL (test/support/redshift-on-postgres.ts: each as
 * its caller's database user, COPY and UNLOAD done there). Every call is recorded, with its input.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** A call as a client sent it. */
export interface ServedCall { client: 'RedshiftDataClient' | 'RedshiftServerlessClient'; command: string; input: Record<string, unknown> }

type Handler = (input: any) => Promise<unknown>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * What redshiftOnPostgres registers its batch handler on (aws-sdk-client-mock's shape, the one
 * method it uses), so that the same stand-in serves the in-process mock and this server.
 */
export function handlerStub(): { stub: { on(command: { name: string }): { callsFake(fn: Handler): void; resolves(v: unknown): void } }; handlers: Map<string, Handler> } {
  const handlers = new Map<string, Handler>();
  return {
    handlers,
    stub: {
      on: (command) => ({
        callsFake: (fn) => { handlers.set(command.name.replace(/Command$/, ''), fn); },
        resolves: (v) => { handlers.set(command.name.replace(/Command$/, ''), async () => v); },
      }),
    },
  };
}

export interface RedshiftServers {
  env: Record<string, string>;
  calls: ServedCall[];
  /** The namespace's roles as UpdateNamespace left them. */
  namespaceRoles: string[];
  stop(): Promise<void>;
}

export async function startRedshiftServers(handlers: Map<string, Handler>, opts: { namespace?: string } = {}): Promise<RedshiftServers> {
  const calls: ServedCall[] = [];
  const failed = new Map<string, string>();
  const namespaceRoles: string[] = [];
  let n = 0;
  /**
   * A statement as the stand-in runs it (each as its caller's database user, never the superuser
   * behind its back); its failure reported as Redshift does, through DescribeStatement, not the call.
   */
  const statement = (op: string): Handler => async (input) => {
    const handler = handlers.get(op);
    if (!handler) throw new Error(`no ${op} handler: serve the Data API with redshiftOnPostgres's handlers`);
    try {
      return await handler(input);
    } catch (err) {
      const id = `failed-${++n}`;
      failed.set(id, (err as Error).message);
      return { Id: id };
    }
  };
  const data: Record<string, Handler> = {
    BatchExecuteStatement: statement('BatchExecuteStatement'),
    ExecuteStatement: statement('ExecuteStatement'),
    async DescribeStatement(input: { Id: string }) {
      const error = failed.get(input.Id);
      return error === undefined ? { Id: input.Id, Status: 'FINISHED' } : { Id: input.Id, Status: 'FAILED', Error: error };
    },
    async GetStatementResult(input: { Id: string }) {
      const result = handlers.get('GetStatementResult');
      if (!result) throw new Error('no result handler: serve the Data API with redshiftOnPostgres\'s handlers');
      return result(input);
    },
    async CancelStatement() { return { Status: true }; },
  };
  const namespace = opts.namespace ?? 'analytics-ns';
  const serverless: Record<string, Handler> = {
    async GetWorkgroup(input: { workgroupName: string }) {
      return { workgroup: { workgroupName: input.workgroupName, namespaceName: namespace, status: 'AVAILABLE' } };
    },
    async GetNamespace() {
      return { namespace: { namespaceName: namespace, status: 'AVAILABLE', iamRoles: namespaceRoles.map((arn) => `IamRole(applyStatus=in-sync, iamRoleArn=${arn})`) } };
    },
    async UpdateNamespace(input: { iamRoles?: string[] }) {
      namespaceRoles.splice(0, namespaceRoles.length, ...(input.iamRoles ?? []));
      return { namespace: { namespaceName: namespace, status: 'AVAILABLE' } };
    },
  };
  const serve = (client: ServedCall['client'], prefix: string, ops: Record<string, Handler>) => async (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const target = String(req.headers['x-amz-target'] ?? '');
    const op = target.startsWith(`${prefix}.`) ? target.slice(prefix.length + 1) : '';
    const input = body ? JSON.parse(body) as Record<string, unknown> : {};
    calls.push({ client, command: op, input });
    const handler = ops[op];
    res.setHeader('content-type', 'application/x-amz-json-1.1');
    if (!handler) {
      res.statusCode = 400;
      res.end(JSON.stringify({ __type: 'ValidationException', message: `${target} is not served here` }));
      return;
    }
    try {
      res.end(JSON.stringify(await handler(input)));
    } catch (err) {
      res.statusCode = 400;
      res.end(JSON.stringify({ __type: 'ValidationException', message: (err as Error).message }));
    }
  };
  const listen = (handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<{ server: Server; url: string }> => new Promise((resolve, reject) => {
    const server = createServer((req, res) => { void handler(req, res); });
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }));
  });
  const d = await listen(serve('RedshiftDataClient', 'RedshiftData', data));
  const s = await listen(serve('RedshiftServerlessClient', 'RedshiftServerless', serverless));
  return {
    env: { AWS_ENDPOINT_URL_REDSHIFT_DATA: d.url, AWS_ENDPOINT_URL_REDSHIFT_SERVERLESS: s.url },
    calls, namespaceRoles,
    async stop() {
      await Promise.all([d.server, s.server].map((x) => new Promise<void>((r) => { x.closeAllConnections(); x.close(() => r()); })));
    },
  };
}
