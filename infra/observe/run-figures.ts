/**
 * What a run did, in figures, for metrics and notifications: gathered from the run's log events
 * (run-log.ts hands each event here), so that no job carries metrics code of its own.
 */

/** The commands whose runs are measured. */
export const MEASURED_COMMANDS = new Set(['rollup', 'ingest', 'backfill', 'reconcile']);

export class RunFigures {
  command = '';
  run: string | null = null;
  readonly startedMs = Date.now();
  /** Days rolled up and published by this run. */
  readonly days = new Set<string>();
  /**
   * Days published before that this run added records to and did not roll up: stale until rolled up
   * again (`make rollup-stale`). From the run's own count (`run.done`, `backfill.done`): days never
   * published are not stale, and an ingest-only run (a shard) counts none.
   */
  staleDays = 0;
  recordsRead = 0;
  objectsParsed = 0;
  pings = 0;
  rejects = 0;
  /** Records of the days published (every outcome): what `rejects` is a share of. */
  dayRecords = 0;
  /** Log objects that could not be read and are not accepted as lost (the quarantine, as the run left it). */
  quarantinedObjects = 0;
  /** The latest delivery time named by a listed log object, ms. */
  newestObjectMs: number | null = null;
  /** Days this run published (or whose state it published again) still provisional: waiting for the final full listing of a delivery day that can hold them. */
  provisionalDays = 0;
  /** Days whose state this run published as complete (published before, their final listings now done). */
  settledDays = 0;
  /** New log objects found by full listings of delivery days: objects that appeared after the incremental window had passed their names (replication lag, copies). */
  lateObjects = 0;

  /** Survivors of the days published left out as repeats of pings counted on other days (contract §4's ping-id window). */
  repeats = 0;
  /** Pings of days whose staged data expired (contract §9): counted nowhere but their rejects. */
  tooLateRecords = 0;
  /** Days of closed months whose late pings this run made into adjustments (or found too late). */
  adjustedDays = 0;

  /** Takes one log event. */
  observe(event: string, fields: Record<string, unknown>): void {
    const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
    switch (event) {
      case 'run.start':
        if (typeof fields.run === 'string') this.run ??= fields.run;
        break;
      case 'ingest.done': {
        this.recordsRead += n(fields.records);
        this.objectsParsed += n(fields.objects);
        this.lateObjects += n(fields.lateObjects);
        const newest = typeof fields.newestObject === 'string' ? Date.parse(fields.newestObject) : NaN;
        if (Number.isFinite(newest) && (this.newestObjectMs === null || newest > this.newestObjectMs)) this.newestObjectMs = newest;
        break;
      }
      case 'adjustments.done':
        this.adjustedDays += Array.isArray(fields.days) ? fields.days.length : 0;
        this.tooLateRecords += n(fields.tooLateRecords);
        break;
      case 'day.done':
        if (typeof fields.day === 'string') this.days.add(fields.day);
        if (fields.state === 'provisional') this.provisionalDays++;
        this.pings += n(fields.pings);
        this.rejects += n(fields.rejects);
        this.dayRecords += n(fields.records);
        if (fields.repeats && typeof fields.repeats === 'object') for (const v of Object.values(fields.repeats)) this.repeats += n(v);
        break;
      case 'day.settled':
        if (fields.state === 'complete') this.settledDays++;
        if (fields.state === 'provisional') this.provisionalDays++;
        break;
      case 'run.done':
        this.quarantinedObjects = Math.max(this.quarantinedObjects, n(fields.unreadable));
        this.staleDays = Math.max(this.staleDays, n(fields.staleDays));
        break;
      case 'backfill.done':
        this.staleDays = Math.max(this.staleDays, n(fields.staleDays));
        break;
      case 'object.unreadable':
        this.quarantinedObjects = Math.max(this.quarantinedObjects, 1);
        break;
    }
  }

  /** Seconds from the newest listed log object's delivery time to `nowMs`; null when no object named one. */
  lagSeconds(nowMs: number): number | null {
    return this.newestObjectMs === null ? null : Math.max(0, (nowMs - this.newestObjectMs) / 1000);
  }
}

/** This process's run. */
export const runFigures = new RunFigures();
