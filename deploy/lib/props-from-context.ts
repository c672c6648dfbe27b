/**
 * The stack's settings from the CDK context: `-c pingroll:<option>=...` or cdk.json's `context`, one
 * option for each PingrollStackProps field (the type below fails to compile when a field has none). The
 * CLI hands every `-c` value over as a string and cdk.json keeps JSON's types, so each option is read
 * from either: a number from `8` or `"8"`, an object from itself or its JSON text. A `pingroll:` key
 * that names no option, or a value of the wrong kind, is an error: an option silently dropped deploys a
 * stack that looks right and reads nothing (a misspelt `existingLogs` makes buckets of its own).
 */
import type { StackProps } from 'aws-cdk-lib';
import type { PingrollStackProps } from './pingroll-stack.js';

/** The options: PingrollStackProps less what the app itself gives (the image's directory) and CDK's own. */
export type ContextOptions = Omit<PingrollStackProps, keyof StackProps | 'imageDirectory'>;

type Read<T> = (value: unknown, key: string) => T;

/** Not given: absent, null, or the empty string (cdk.json's placeholder for a required option). */
const absent = (v: unknown): boolean => v === undefined || v === null || v === '';

const text: Read<string | undefined> = (v, key) => {
  if (absent(v)) return undefined;
  if (typeof v !== 'string') throw new Error(`${key} must be a string; got ${JSON.stringify(v)}`);
  return v;
};

const required = (example: string): Read<string> => (v, key) => {
  const s = text(v, key);
  if (s === undefined) throw new Error(`${key} is required: -c ${key}=${example} (or in cdk.json's context)`);
  return s;
};

const number: Read<number | undefined> = (v, key) => {
  if (absent(v)) return undefined;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isFinite(n)) throw new Error(`${key} must be a number; got ${JSON.stringify(v)}`);
  return n;
};

/** An object, from itself (cdk.json) or its JSON text (-c), with exactly the fields `fields` reads. */
function object<T>(example: string, fields: { [K in keyof T]-?: (v: unknown) => boolean }): Read<T | undefined> {
  return (v, key) => {
    if (absent(v)) return undefined;
    let o: unknown = v;
    if (typeof v === 'string') {
      try {
        o = JSON.parse(v);
      } catch {
        throw new Error(`${key} must be JSON, e.g. -c '${key}=${example}'; got ${v}`);
      }
    }
    if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new Error(`${key} must be a JSON object, e.g. ${example}; got ${JSON.stringify(v)}`);
    const known = Object.keys(fields);
    const unknown = Object.keys(o).filter((f) => !known.includes(f));
    if (unknown.length) throw new Error(`${key} has no field ${unknown.join(', ')} (its fields: ${known.join(', ')})`);
    for (const [f, ok] of Object.entries(fields) as Array<[string, (x: unknown) => boolean]>) {
      if (!ok((o as Record<string, unknown>)[f])) throw new Error(`${key}.${f} is missing or of the wrong kind, e.g. ${example}; got ${JSON.stringify(o)}`);
    }
    return o as T;
  };
}

const isString = (x: unknown): boolean => typeof x === 'string';
const isStrings = (x: unknown): boolean => Array.isArray(x) && x.every(isString);

/** How each option is read (the key `pingroll:<name>`). */
const OPTIONS: { [K in keyof ContextOptions]-?: Read<ContextOptions[K]> } = {
  stage: text,
  vpc: object<NonNullable<ContextOptions['vpc']>>('{"vpcId":"vpc-...","subnetIds":["subnet-..."],"availabilityZones":["eu-west-1a"],"publicSubnets":false}', {
    vpcId: isString, subnetIds: isStrings, availabilityZones: isStrings, publicSubnets: (x) => x === undefined || typeof x === 'boolean',
  }),
  existingLogs: object<NonNullable<ContextOptions['existingLogs']>>('{"bucketName":"my-logs","prefix":"access/"}', { bucketName: isString, prefix: isString }),
  logsExpireDays: number,
  firstDay: text,
  pingKey: text,
  ddbTables: text,
  redshiftAdminSecretArn: text,
  redshiftWaitMinutes: number,
  shards: (v, key) => number(v, key) ?? 8,
  redshiftWorkgroup: required('NAME'),
  redshiftWorkgroupArn: required('arn:aws:redshift-serverless:REGION:ACCOUNT:workgroup/ID'),
  redshiftDatabase: required('dev'),
  rejectsRetentionDays: number,
  closeAfterDays: number,
  retentionDays: number,
  catalogDatabase: text,
  athenaBytesScannedCutoff: number,
  rejectsShareAlarm: number,
  alarmEmail: required('ops@example.com'),
  episodeCatalogKey: text,
};

/** The options' names, as `pingroll:<name>` takes them. */
export const CONTEXT_OPTIONS: readonly string[] = Object.keys(OPTIONS);

/** The stack's props from the whole context (`app.node.getAllContext()`); keys outside `pingroll:` are CDK's and others'. */
export function propsFromContext(context: Record<string, unknown>, imageDirectory: string): PingrollStackProps {
  const unknown = Object.keys(context).filter((k) => k.startsWith('pingroll:') && !(k.slice('pingroll:'.length) in OPTIONS));
  if (unknown.length) throw new Error(`unknown context option ${unknown.join(', ')}: pingroll's options are ${CONTEXT_OPTIONS.map((o) => `pingroll:${o}`).join(', ')} (docs/running-on-aws.md)`);
  const props: Record<string, unknown> = { imageDirectory };
  for (const [name, read] of Object.entries(OPTIONS) as Array<[string, Read<unknown>]>) {
    const value = read(context[`pingroll:${name}`], `pingroll:${name}`);
    if (value !== undefined) props[name] = value;
  }
  return props as unknown as PingrollStackProps;
}
