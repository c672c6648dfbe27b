/**
 * Every AWS call pingroll's code sends through an SDK v3 client (all of them share @smithy/core's
 * Client), recorded as it is sent: the client, the command and its input. For deploy/'s check of the
 * stack's IAM policies against what the jobs really call (deploy/test/iam.test.ts).
 */
import { Client } from '@smithy/core/client';

export interface AwsCall { client: string; command: string; input: Record<string, unknown> }

export function recordAwsCalls(): { calls: AwsCall[]; stop: () => void } {
  const proto = Client.prototype as unknown as { send: (this: { constructor: { name: string } }, command: { constructor: { name: string }; input: Record<string, unknown> }, ...rest: unknown[]) => unknown };
  const original = proto.send;
  const calls: AwsCall[] = [];
  proto.send = function (command, ...rest) {
    calls.push({ client: this.constructor.name, command: command.constructor.name.replace(/Command$/, ''), input: command.input });
    return original.call(this, command, ...rest);
  };
  return { calls, stop: () => { proto.send = original; } };
}
