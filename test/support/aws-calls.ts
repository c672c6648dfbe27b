/**
 * Every AWS call pingroll's code sends through an SDK v3 client (all of them share @smithy/core's
 * Client), recorded as it is sent: the client, the command and its input; and every S3 call of the
 * lean path (ingest/object-source/s3-lean-get.ts: GetObject and ListObjectsV2 sent without the SDK's
 * commands), recorded as the command it stands for. For deploy/'s check of the stack's IAM policies
 * against what the jobs really call (deploy/test/iam.test.ts).
 */
import { Client } from '@smithy/core/client';
import { LeanGet, type ListInput } from '../../ingest/object-source/s3-lean-get.js';

export interface AwsCall { client: string; command: string; input: Record<string, unknown> }

export function recordAwsCalls(): { calls: AwsCall[]; stop: () => void } {
  const proto = Client.prototype as unknown as { send: (this: { constructor: { name: string } }, command: { constructor: { name: string }; input: Record<string, unknown> }, ...rest: unknown[]) => unknown };
  const original = proto.send;
  const calls: AwsCall[] = [];
  proto.send = function (command, ...rest) {
    calls.push({ client: this.constructor.name, command: command.constructor.name.replace(/Command$/, ''), input: command.input });
    return original.call(this, command, ...rest);
  };
  const lean = LeanGet.prototype;
  const { get, list } = lean;
  lean.get = function (this: LeanGet, key: string) {
    calls.push({ client: 'S3Client', command: 'GetObject', input: { Bucket: this.bucket, Key: key } });
    return get.call(this, key);
  };
  lean.list = function (this: LeanGet, input: ListInput) {
    calls.push({ client: 'S3Client', command: 'ListObjectsV2', input: { Bucket: this.bucket, ...input } });
    return list.call(this, input);
  };
  return { calls, stop: () => { proto.send = original; lean.get = get; lean.list = list; } };
}
