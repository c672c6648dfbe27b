/**
 * The night as the deployment runs it: the CDK app (deploy/bin/pingroll-app.ts) synthesized with a
 * context, as `cdk synth` runs it (a process of its own, CDK_CONTEXT_JSON and CDK_OUTDIR); then the
 * state machine's definition walked from its start, as Step Functions would, for an input: each Pass
 * (JSONata), Choice, Map and Task, and for each Batch job its job definition's command, parameters
 * (`Ref::name`) and environment from the template, run as a process (an array job: its children at
 * once, AWS_BATCH_JOB_ARRAY_INDEX and _SIZE set), with the image's working directory (the
 * repository: bin/pingroll.js) and the AWS endpoints of the local stand-ins. A job that exits
 * non-zero fails the execution, as it would (the jobs' retries are not played).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** A resource of the synthesized template. */
export interface Resource { Type: string; Properties: Record<string, any> } // eslint-disable-line @typescript-eslint/no-explicit-any
export interface SynthTemplate { Resources: Record<string, Resource> }

/** `cdk synth` of the app with `context` (keys without the `pingroll:` prefix): the stack's template. */
export function synthApp(context: Record<string, unknown>, outdir: string): SynthTemplate {
  const tsx = createRequire(join(REPO, 'package.json')).resolve('tsx/cli');
  const ctx = Object.fromEntries(Object.entries(context).map(([k, v]) => [`pingroll:${k}`, v]));
  const r = spawnSync(process.execPath, [tsx, 'bin/pingroll-app.ts'], {
    cwd: join(REPO, 'deploy'), encoding: 'utf8',
    env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify(ctx), CDK_OUTDIR: outdir },
  });
  if (r.status !== 0) throw new Error(`the app did not synthesize: ${r.stderr}`);
  return JSON.parse(readFileSync(join(outdir, 'Pingroll.template.json'), 'utf8')) as SynthTemplate;
}

/** What the template's references stand for here: buckets by the logical id's start, anything else named by its id. */
export type Refs = (logicalId: string, attribute?: string) => string;

/** A template value made concrete. */
export function resolveValue(v: unknown, refs: Refs): unknown {
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null) return v;
  if (Array.isArray(v)) return v.map((x) => resolveValue(x, refs));
  const o = v as Record<string, unknown>;
  if ('Ref' in o) {
    const id = o.Ref as string;
    return ({ 'AWS::Partition': 'aws', 'AWS::Region': 'us-east-1', 'AWS::AccountId': '123456789012', 'AWS::URLSuffix': 'amazonaws.com' } as Record<string, string>)[id] ?? refs(id);
  }
  if ('Fn::GetAtt' in o) {
    const [id, attr] = o['Fn::GetAtt'] as [string, string];
    return refs(id, attr);
  }
  if ('Fn::Join' in o) {
    const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => String(resolveValue(p, refs))).join(sep);
  }
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, resolveValue(x, refs)]));
}

type State = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
interface Machine { StartAt: string; States: Record<string, State> }

/** One job run: its definition's logical id, the command run (after Ref:: substitution), each process's exit code. */
export interface JobRun { definition: string; command: string[]; array: number | null; exits: number[]; stdout: string[]; stderr: string[] }

export interface NightOptions {
  template: SynthTemplate;
  refs: Refs;
  /** The environment every job gets besides its definition's: AWS endpoints and credentials, PATH. */
  env: Record<string, string>;
  /** Values of the definition's Secrets, by name. */
  secrets: Record<string, string>;
  /** An AWS SDK integration task (s3:putObject), done against the stand-ins. */
  sdkTask(service: string, action: string, parameters: Record<string, unknown>): Promise<void>;
  /** Each job as it ends. */
  onJob?(run: JobRun): void;
}

/** The template's state machine, its definition made concrete. */
export function machineOf(template: SynthTemplate, refs: Refs): Machine {
  const sm = Object.values(template.Resources).find((r) => r.Type === 'AWS::StepFunctions::StateMachine')!;
  return JSON.parse(resolveValue(sm.Properties.DefinitionString, refs) as string) as Machine;
}

/** A JSONPath of the forms the definition uses: `$`, `$.a.b`, `$$.Map.Item.Value`. */
function path(expr: string, input: unknown, context: Record<string, unknown>): unknown {
  const [root, rest] = expr.startsWith('$$') ? [context, expr.slice(2)] : [input, expr.slice(1)];
  let v: unknown = root;
  for (const k of rest.split('.').filter(Boolean)) v = (v as Record<string, unknown> | undefined)?.[k];
  return v;
}

/** Parameters with `key.$` paths filled in. */
function parameters(p: Record<string, unknown>, input: unknown, context: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(p).map(([k, v]) => k.endsWith('.$') ? [k.slice(0, -2), path(v as string, input, context)]
    : [k, v && typeof v === 'object' && !Array.isArray(v) ? parameters(v as Record<string, unknown>, input, context) : v]));
}

/** Runs the state machine on `input` to its end; throws where an execution would fail. */
export async function runMachine(opts: NightOptions, input: unknown): Promise<JobRun[]> {
  const runs: JobRun[] = [];
  await runStates(opts, machineOf(opts.template, opts.refs), input, {}, runs);
  return runs;
}

async function runStates(opts: NightOptions, machine: Machine, input: unknown, context: Record<string, unknown>, runs: JobRun[]): Promise<unknown> {
  const jsonata = (await import('jsonata')).default;
  let name: string | undefined = machine.StartAt;
  let value = input;
  while (name !== undefined) {
    const s: State = machine.States[name]!;
    if (!s) throw new Error(`no state ${name}`);
    let next: string | undefined = s.Next;
    switch (s.Type) {
      case 'Pass': {
        if (s.QueryLanguage !== 'JSONata' || !s.Output) throw new Error(`Pass state ${name}: only JSONata outputs are played`);
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(s.Output as Record<string, string>)) {
          const m = /^\{%(.*)%\}$/s.exec(v);
          out[k] = m ? await jsonata(m[1]!).evaluate({}, { states: { input: value } }) : v;
        }
        value = out;
        break;
      }
      case 'Choice': {
        const hit = (s.Choices as Array<{ Variable: string; IsPresent?: boolean; Next: string }>).find((c) => {
          if (c.IsPresent === undefined) throw new Error(`Choice ${name}: only IsPresent is played`);
          return (path(c.Variable, value, context) !== undefined) === c.IsPresent;
        });
        next = hit ? hit.Next : s.Default;
        break;
      }
      case 'Map': {
        const items = path(s.ItemsPath ?? '$', value, context) as unknown[];
        for (const [index, item] of items.entries()) {
          const ctx = { Map: { Item: { Index: index, Value: item } } };
          const itemInput = s.ItemSelector ? parameters(s.ItemSelector, value, ctx) : item;
          await runStates(opts, s.ItemProcessor as Machine, itemInput, ctx, runs);
        }
        if (s.ResultPath !== null) throw new Error(`Map ${name}: only ResultPath null is played`);
        break;
      }
      case 'Task': {
        const resource = String(s.Resource);
        const p = parameters(s.Parameters ?? {}, value, context);
        if (/:states:::batch:submitJob\.sync$/.test(resource)) runs.push(await runJob(opts, p));
        else {
          const sdk = /:states:::aws-sdk:(\w+):(\w+)$/.exec(resource);
          if (!sdk) throw new Error(`Task ${name}: ${resource} is not played`);
          await opts.sdkTask(sdk[1]!, sdk[2]!, p);
        }
        if (s.ResultPath !== null) throw new Error(`Task ${name}: only ResultPath null is played`);
        break;
      }
      case 'Succeed': next = undefined; break;
      case 'Fail': throw new Error(`the execution failed at ${name}: ${s.Error ?? ''} ${s.Cause ?? ''}`);
      default: throw new Error(`state ${name}: type ${s.Type} is not played`);
    }
    if (s.End) next = undefined;
    name = next;
  }
  return value;
}

/** The job definition a submitted ARN names (the refs make a job definition's Ref its logical id). */
function definitionOf(template: SynthTemplate, arn: string): [string, Resource] {
  const hit = Object.entries(template.Resources).find(([id, r]) => r.Type === 'AWS::Batch::JobDefinition' && arn === id);
  if (!hit) throw new Error(`no job definition ${arn}`);
  return hit;
}

/** A Batch job as its definition runs it, with the parameters submitted; its processes at once for an array. */
export async function runJob(opts: NightOptions, submitted: Record<string, unknown>): Promise<JobRun> {
  const [id, def] = definitionOf(opts.template, String(submitted.JobDefinition));
  const params = { ...(def.Properties.Parameters ?? {}), ...(submitted.Parameters as Record<string, string> | undefined ?? {}) } as Record<string, string>;
  const cp = resolveValue(def.Properties.ContainerProperties, opts.refs) as { Command: string[]; Environment?: Array<{ Name: string; Value: string }>; Secrets?: Array<{ Name: string }> };
  const command = cp.Command.map((c) => c.replace(/Ref::(\w+)/g, (m, k: string) => params[k] ?? m));
  const env: Record<string, string> = { ...opts.env };
  for (const e of cp.Environment ?? []) env[e.Name] = e.Value;
  for (const s of cp.Secrets ?? []) {
    if (opts.secrets[s.Name] === undefined) throw new Error(`no value for the secret ${s.Name}`);
    env[s.Name] = opts.secrets[s.Name]!;
  }
  const size = (submitted.ArrayProperties as { Size?: number } | undefined)?.Size ?? null;
  const one = (index: number | null): Promise<{ code: number; stdout: string; stderr: string }> => new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), {
      cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'],
      env: index === null ? env : { ...env, AWS_BATCH_JOB_ARRAY_INDEX: String(index), AWS_BATCH_JOB_ARRAY_SIZE: String(size) },
    });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
  const ended = await Promise.all(size === null ? [one(null)] : Array.from({ length: size }, (_, i) => one(i)));
  const run: JobRun = { definition: id, command, array: size, exits: ended.map((e) => e.code), stdout: ended.map((e) => e.stdout), stderr: ended.map((e) => e.stderr) };
  opts.onJob?.(run);
  const bad = ended.findIndex((e) => e.code !== 0);
  if (bad >= 0) throw new Error(`job ${id}${size === null ? '' : `[${bad}]`} (${command.slice(3).join(' ')}) exited ${ended[bad]!.code}: ${ended[bad]!.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  return run;
}
