/**
 * Collects one batch's records by UTC day, on local disk: pings as CSV (DuckDB reads it fast and
 * in parallel), rejects as JSON lines, outcome counts in memory. `stage` turns each day's pings into
 * Parquet in the output store. Memory stays flat whatever the batch's size: rows go to disk as they
 * come, in 1 MB writes.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import { gzipSync } from 'node:zlib';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Outcome, PingRecord, Source } from '../ping-record.js';
import type { OutputStore } from '../../export/output-store/output-store.js';
import { sqlString } from '../../infra/duckdb.js';
import type { StagedDay } from './ledger.js';

/** A rejected record, as kept in the rejects file (SPEC §3). */
export interface Reject {
  source: Source;
  outcome: Outcome;
  reason: string;
  /** Log object key, or table name. */
  input: string;
  /** 1-based line in the object, or the item's key. */
  at: number | string;
  /** The record as read (a log line, or an item as JSON), cut at 16 KiB. */
  record: string;
}

const FLUSH_AT = 1 << 20;
const RECORD_LIMIT = 16 * 1024;

class DayFile {
  private parts: string[] = [];
  private size = 0;
  private readonly out: WriteStream;
  rows = 0;

  constructor(readonly path: string) {
    this.out = createWriteStream(path);
  }

  add(line: string): void {
    this.parts.push(line);
    this.size += line.length;
    this.rows++;
    if (this.size >= FLUSH_AT) this.flush();
  }

  private flush(): void {
    if (this.parts.length === 0) return;
    this.out.write(this.parts.join(''));
    this.parts = [];
    this.size = 0;
  }

  private closed: Promise<void> | null = null;

  /** Flushes and closes the file; safe to call again (the stream's 'close' fires only once). */
  close(): Promise<void> {
    if (!this.closed) {
      this.flush();
      this.out.end();
      this.closed = once(this.out, 'close').then(() => {});
    }
    return this.closed;
  }
}

interface Day {
  pings: DayFile | null;
  rejects: string[];
  outcomes: Partial<Record<Source, Partial<Record<Outcome, number>>>>;
  inputs: Set<number>;
}

export class DaySpool {
  private readonly days = new Map<string, Day>();

  constructor(private readonly dir: string) {}

  private day(d: string): Day {
    let day = this.days.get(d);
    if (!day) {
      day = { pings: null, rejects: [], outcomes: {}, inputs: new Set() };
      this.days.set(d, day);
    }
    return day;
  }

  /** Counts one record of `day` from input number `input`. */
  count(day: string, source: Source, outcome: Outcome, input: number): void {
    const d = this.day(day);
    const counts = (d.outcomes[source] ??= {});
    counts[outcome] = (counts[outcome] ?? 0) + 1;
    d.inputs.add(input);
  }

  addPing(day: string, ping: PingRecord, input: number): void {
    this.count(day, ping.source, 'ping', input);
    const d = this.day(day);
    d.pings ??= new DayFile(join(this.dir, `pings-${day}.csv`));
    d.pings.add(`${ping.source},${csv(ping.series)},${csv(ping.episode)},${csv(ping.session)},${ping.user === null ? '' : csv(ping.user)},${ping.pingId === null ? '' : csv(ping.pingId)},${ping.eventTimeMs},${csv(ping.naturalKey)}\n`);
  }

  addReject(day: string, reject: Reject, input: number): void {
    this.count(day, reject.source, reject.outcome, input);
    const record = reject.record.length > RECORD_LIMIT ? reject.record.slice(0, RECORD_LIMIT) : reject.record;
    this.day(day).rejects.push(JSON.stringify({ ...reject, record }));
  }

  daysSeen(): string[] {
    return [...this.days.keys()].sort();
  }

  /**
   * Writes each day's pings as Parquet and its rejects as gzip JSON lines under
   * `_staging/dt=<day>/`, and returns what the batch commit records of them.
   */
  async stage(store: OutputStore, batch: string, engine: DuckDBConnection): Promise<Record<string, StagedDay>> {
    const out: Record<string, StagedDay> = {};
    for (const day of this.daysSeen()) {
      const d = this.days.get(day)!;
      let pings: string | null = null;
      if (d.pings) {
        await d.pings.close();
        const parquet = d.pings.path.replace(/\.csv$/, '.parquet');
        await engine.run(`COPY (SELECT * FROM read_csv(${sqlString(d.pings.path)}, header = false, delim = ',', quote = '"', escape = '"',
            columns = {'source': 'VARCHAR', 'series': 'VARCHAR', 'episode': 'VARCHAR', 'session': 'VARCHAR', 'user_id': 'VARCHAR',
                       'ping_id': 'VARCHAR', 'event_ms': 'BIGINT', 'natural_key': 'VARCHAR'}))
          TO ${sqlString(parquet)} (FORMAT parquet, COMPRESSION zstd)`);
        pings = `_staging/dt=${day}/${batch}.parquet`;
        await store.put(pings, { file: parquet });
        await rm(parquet, { force: true });
        await rm(d.pings.path, { force: true });
      }
      let rejects: string | null = null;
      if (d.rejects.length) {
        rejects = `_staging/dt=${day}/${batch}.rejects.jsonl.gz`;
        await store.put(rejects, gzipSync(Buffer.from(d.rejects.join('\n') + '\n')));
      }
      out[day] = { pings, pingCount: d.pings?.rows ?? 0, rejects, outcomes: d.outcomes, inputs: [...d.inputs].sort((a, b) => a - b) };
    }
    return out;
  }

  /** Removes the local files (after staging, or after a failure). */
  async discard(): Promise<void> {
    for (const d of this.days.values()) {
      if (d.pings) {
        await d.pings.close().catch(() => {});
        await rm(d.pings.path, { force: true });
      }
    }
    this.days.clear();
  }
}

/** A CSV field: quoted only when it must be. */
function csv(v: string): string {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 0x22 || c === 0x2c || c === 0x0a || c === 0x0d) return `"${v.replace(/"/g, '""')}"`;
  }
  return v;
}
