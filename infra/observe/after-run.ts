/**
 * What happens once a measured run (rollup, ingest, backfill) has its exit code: its figures as an
 * Embedded Metric Format line on stdout (on AWS), as a Prometheus textfile (`PINGROLL_PROMETHEUS_FILE`),
 * and a notification (`PINGROLL_NOTIFY_URL`) when it failed, quarantined objects or left days stale.
 * None of them changes the exit code; one that cannot be done is said in the log.
 */
import { isAbsolute } from 'node:path';
import { ConfigError } from '../config.js';
import type { Log } from '../../lib/log.js';
import { emfEnabled, emfLine } from './emf.js';
import { notificationFor, notify } from './notify.js';
import { writePrometheusTextfile } from './prometheus-textfile.js';
import { MEASURED_COMMANDS, type RunFigures } from './run-figures.js';

export interface ObserveSettings {
  emf: boolean;
  prometheusFile: string | null;
  notifyUrl: string | null;
}

/** The settings, checked before the run starts (a bad one is exit 2, as any configuration error). */
export function observeSettings(env: NodeJS.ProcessEnv): ObserveSettings {
  const emf = env.PINGROLL_METRICS_EMF;
  if (emf !== undefined && emf !== '' && emf !== 'on' && emf !== 'off' && emf !== 'auto') throw new ConfigError(`PINGROLL_METRICS_EMF='${emf}' must be on, off or auto`);
  const file = env.PINGROLL_PROMETHEUS_FILE || null;
  if (file !== null && (!isAbsolute(file) || !file.endsWith('.prom'))) throw new ConfigError(`PINGROLL_PROMETHEUS_FILE='${file}' must be an absolute path ending in .prom (node_exporter's textfile collector reads only those)`);
  const url = env.PINGROLL_NOTIFY_URL || null;
  if (url !== null) {
    let ok = false;
    try {
      ok = ['http:', 'https:'].includes(new URL(url).protocol);
    } catch { /* not a URL */ }
    if (!ok) throw new ConfigError(`PINGROLL_NOTIFY_URL='${url}' must be an http:// or https:// URL`);
  }
  return { emf: emfEnabled(env), prometheusFile: file, notifyUrl: url };
}

export async function afterRun(settings: ObserveSettings, f: RunFigures, exitCode: number, failure: string | null, log: Log): Promise<void> {
  if (!MEASURED_COMMANDS.has(f.command)) return;
  const now = Date.now();
  if (settings.emf) process.stdout.write(emfLine(f, exitCode, now) + '\n');
  if (settings.prometheusFile) {
    try {
      await writePrometheusTextfile(settings.prometheusFile, f, exitCode, now);
    } catch (err) {
      log.warn('metrics.failed', { file: settings.prometheusFile, error: (err as Error).message });
    }
  }
  if (settings.notifyUrl) {
    const n = notificationFor(f, exitCode, failure, now);
    if (n) {
      const why = await notify(settings.notifyUrl, n);
      if (why) log.warn('notify.failed', { url: new URL(settings.notifyUrl).origin, error: why });
      else log.info('notify.sent', { exitCode, reason: n.reason });
    }
  }
}
