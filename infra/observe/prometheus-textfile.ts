/**
 * The run's figures as a Prometheus textfile, for node_exporter's textfile collector on a cron host
 * (`PINGROLL_PROMETHEUS_FILE`, a `.prom` file in the collector's directory). Written whole to a
 * temporary name beside it and renamed over it, so the collector never reads half a file. Each
 * command (rollup, ingest, backfill) has its own series, labelled `command`; a run rewrites its own
 * and keeps the others' as the file had them. `pingroll_last_success_timestamp_seconds` keeps its
 * value through failed runs: alert on `time() - pingroll_last_success_timestamp_seconds > 26 * 3600`.
 */
import { open, readFile, rename, rm, stat } from 'node:fs/promises';
import { TOO_LATE } from '../../datasets/layout.js';
import type { RunFigures } from './run-figures.js';
import { succeeded } from './emf.js';

interface Series { name: string; help: string; value: (f: RunFigures, exitCode: number, nowMs: number) => number | null }

const SERIES: Series[] = [
  { name: 'pingroll_last_run_timestamp_seconds', help: 'When the last run of the command ended, in seconds since 1970.', value: (_f, _c, now) => now / 1000 },
  // Success as the alarms count it (emf.ts): exit 0, or 4 (published; the quarantine has a series of its own).
  { name: 'pingroll_last_success_timestamp_seconds', help: 'When the last successful run (exit 0, or 4: finished with log objects quarantined) of the command ended, in seconds since 1970.', value: (_f, c, now) => (succeeded(c) ? now / 1000 : null) },
  { name: 'pingroll_last_run_exit_code', help: 'The exit code of the last run (0 success; see the README for the others).', value: (_f, c) => c },
  { name: 'pingroll_last_run_duration_seconds', help: 'How long the last run took.', value: (f, _c, now) => (now - f.startedMs) / 1000 },
  { name: 'pingroll_last_run_records_read', help: 'Log records and table items the last run read.', value: (f) => f.recordsRead },
  { name: 'pingroll_last_run_objects_parsed', help: 'Log objects the last run parsed.', value: (f) => f.objectsParsed },
  { name: 'pingroll_last_run_pings', help: 'Pings of the days the last run published.', value: (f) => f.pings },
  { name: 'pingroll_last_run_rejects', help: 'Records of the days the last run published that are not pings.', value: (f) => f.rejects },
  { name: 'pingroll_last_run_quarantined_objects', help: 'Log objects that could not be read and are not accepted as lost, as the last run left them.', value: (f) => f.quarantinedObjects },
  { name: 'pingroll_last_run_stale_days', help: 'Days published before that the last run added records to and did not roll up (make rollup-stale republishes them).', value: (f) => f.staleDays },
  { name: 'pingroll_last_run_provisional_days', help: 'Days the last run published still provisional: waiting for the final full listing of a delivery day that can hold them (pingroll status says when).', value: (f) => f.provisionalDays },
  { name: 'pingroll_last_run_settled_days', help: 'Days published before whose state the last run published as complete (their final full listings done).', value: (f) => f.settledDays },
  { name: 'pingroll_last_run_adjusted_days', help: 'Days of closed months the last run found late pings for: made into adjustments on the next open month (or too late).', value: (f) => f.adjustedDays },
  { name: 'pingroll_last_run_repeats', help: 'Pings the days the last run published left out as repeats: resent with the id of a ping counted on a day at most PINGROLL_DEDUPE_DAYS before (contract §4).', value: (f) => f.repeats },
  { name: 'pingroll_last_run_too_late_records', help: `Pings the last run found for days whose staged data had expired: counted nowhere but their rejects (${TOO_LATE}).`, value: (f) => f.tooLateRecords },
  { name: 'pingroll_last_run_late_objects', help: 'New log objects the last run found by full listings of delivery days: they appeared after the incremental listing had passed their names (replication lag, copies).', value: (f) => f.lateObjects },
  { name: 'pingroll_last_run_lag_seconds', help: 'Age of the newest log object the last run listed, by the delivery time in its name.', value: (f, _c, now) => f.lagSeconds(now) },
];

const LINE = /^(pingroll_[a-z_]+)\{command="([^"\\]*)"\} (\S+)$/;

/** The series values the file holds now, by name and command; none when it is missing or not ours. */
async function previous(file: string): Promise<Map<string, Map<string, number>>> {
  const out = new Map<string, Map<string, number>>();
  const text = await readFile(file, 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m || !Number.isFinite(Number(m[3]))) continue;
    if (!out.has(m[1]!)) out.set(m[1]!, new Map());
    out.get(m[1]!)!.set(m[2]!, Number(m[3]));
  }
  return out;
}

/** Writes `file` for this run (atomically), keeping other commands' series and the last success time. */
export async function writePrometheusTextfile(file: string, f: RunFigures, exitCode: number, nowMs: number): Promise<void> {
  // Runs ending together (a rollup and an ingest, shards on one host) take turns: each reads the file
  // and writes it back, and one must not put back another's old figures.
  const release = await lockFile(`${file}.lock`);
  try {
    await rewrite(file, f, exitCode, nowMs);
  } finally {
    await release();
  }
}

/** An exclusive lock file beside the textfile (not ending in .prom), waited for up to 10 s; one older than a minute is a dead run's. */
async function lockFile(path: string): Promise<() => Promise<void>> {
  for (let waited = 0; ; waited += 50) {
    try {
      const h = await open(path, 'wx');
      await h.close();
      return () => rm(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const age = await stat(path).then((s) => Date.now() - s.mtimeMs, () => 0);
      if (age > 60_000 || waited >= 10_000) await rm(path, { force: true });
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function rewrite(file: string, f: RunFigures, exitCode: number, nowMs: number): Promise<void> {
  const { Gauge, Registry } = await import('prom-client');
  const before = await previous(file);
  const registry = new Registry();
  for (const s of SERIES) {
    const gauge = new Gauge({ name: s.name, help: s.help, labelNames: ['command'], registers: [registry] });
    for (const [command, v] of before.get(s.name) ?? []) if (command !== f.command) gauge.set({ command }, v);
    const v = s.value(f, exitCode, nowMs) ?? before.get(s.name)?.get(f.command) ?? null;
    if (v !== null) gauge.set({ command: f.command }, Math.round(v * 1000) / 1000);
  }
  const text = await registry.metrics();
  // Not ending in .prom: the collector reads only those, so it never sees the temporary file.
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    const h = await open(tmp, 'w');
    try {
      await h.writeFile(text);
      await h.sync();
    } finally {
      await h.close();
    }
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
