/**
 * The run's figures as one CloudWatch Embedded Metric Format line (the format's specification:
 * docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
 * On AWS Batch, ECS or Lambda, stdout goes to CloudWatch Logs, which makes metrics of such a line
 * without an agent: namespace `pingroll`, dimension `Command`. The CDK app's alarms use them.
 */
import type { RunFigures } from './run-figures.js';

export const EMF_NAMESPACE = 'pingroll';

/** Whether to print the line: `PINGROLL_METRICS_EMF` on or off; by default on where stdout goes to CloudWatch Logs. */
export function emfEnabled(env: NodeJS.ProcessEnv): boolean {
  const v = env.PINGROLL_METRICS_EMF;
  if (v === 'on') return true;
  if (v === 'off') return false;
  return Boolean(env.AWS_BATCH_JOB_ID || env.ECS_CONTAINER_METADATA_URI_V4 || env.ECS_CONTAINER_METADATA_URI || env.AWS_LAMBDA_FUNCTION_NAME);
}

/**
 * Whether a run succeeded as the alarms count it: exit 0, or 4 (it finished and published; only log
 * objects it could not read are quarantined, retried by every later run, and counted apart in
 * `QuarantinedObjects`, which has an alarm of its own). A night that quarantined is not a night
 * without a rollup.
 */
export function succeeded(exitCode: number): boolean {
  return exitCode === 0 || exitCode === 4;
}

export function emfLine(f: RunFigures, exitCode: number, nowMs: number): string {
  const ok = succeeded(exitCode);
  const values: Array<[string, number, string]> = [
    ['Success', ok ? 1 : 0, 'Count'],
    ['Failure', ok ? 0 : 1, 'Count'],
    ['DurationSeconds', (nowMs - f.startedMs) / 1000, 'Seconds'],
    ['RecordsRead', f.recordsRead, 'Count'],
    ['ObjectsParsed', f.objectsParsed, 'Count'],
    ['Pings', f.pings, 'Count'],
    ['Rejects', f.rejects, 'Count'],
    // Of the published days' records (a rollup after shards reads none itself).
    ['RejectsShare', f.dayRecords > 0 ? (100 * f.rejects) / f.dayRecords : 0, 'Percent'],
    ['QuarantinedObjects', f.quarantinedObjects, 'Count'],
    ['StaleDays', f.staleDays, 'Count'],
    ['ProvisionalDays', f.provisionalDays, 'Count'],
    ['SettledDays', f.settledDays, 'Count'],
    ['LateObjects', f.lateObjects, 'Count'],
    ['AdjustedDays', f.adjustedDays, 'Count'],
    ['TooLateRecords', f.tooLateRecords, 'Count'],
    ['Repeats', f.repeats, 'Count'],
  ];
  const lag = f.lagSeconds(nowMs);
  if (lag !== null) values.push(['LagSeconds', lag, 'Seconds']);
  const doc: Record<string, unknown> = {
    _aws: {
      Timestamp: nowMs,
      CloudWatchMetrics: [{ Namespace: EMF_NAMESPACE, Dimensions: [['Command']], Metrics: values.map(([Name, , Unit]) => ({ Name, Unit })) }],
    },
    Command: f.command,
    // Not dimensions: searchable in Logs Insights beside the metrics.
    ExitCode: exitCode,
    ...(f.run ? { Run: f.run } : {}),
    ...(f.days.size ? { Days: [...f.days].sort() } : {}),
  };
  for (const [name, value] of values) doc[name] = Math.round(value * 1000) / 1000;
  return JSON.stringify(doc);
}
