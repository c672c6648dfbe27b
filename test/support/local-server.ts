/**
 * The one way tests start a local server: a child process bound to 127.0.0.1 on a free port (it is
 * asked for port 0 and says which it took), waited for until it says it listens, stopped after.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

export interface LocalServer {
  port: number;
  endpoint: string;
  stop(): Promise<void>;
}

export interface ServerSpec {
  /** For messages. */
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** Matches the line that says the server listens; group 1 is its port. */
  listening: RegExp;
  startupMs?: number;
}

export async function startLocalServer(spec: ServerSpec): Promise<LocalServer> {
  const options: SpawnOptions = { stdio: ['ignore', 'pipe', 'pipe'], ...(spec.env ? { env: spec.env } : {}) };
  const child: ChildProcess = spawn(spec.command, spec.args, options);
  const port = await new Promise<number>((resolve, reject) => {
    // What the server said until it listened (the tail of it, for the messages). After that its output
    // is drained and dropped: moto writes a line a request, and a suite's thousands of requests read
    // against all that came before cost the tests' process minutes of CPU (a regex over a string that
    // only grows, once a chunk).
    let out = '';
    let started = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${spec.name} did not start within ${spec.startupMs ?? 60_000} ms: ${out.slice(-2000)}`));
    }, spec.startupMs ?? 60_000);
    const onData = (d: Buffer): void => {
      if (started) return;
      out = (out + d.toString()).slice(-16_384);
      const m = spec.listening.exec(out);
      if (m) {
        started = true;
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${spec.name} exited with ${code}: ${out.slice(-2000)}`));
    });
  });
  return {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}
