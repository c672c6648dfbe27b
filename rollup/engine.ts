/**
 * A rollup engine: what rolls a day (and a month) up from what is staged for it, and makes a closed
 * month's figures (its statement, adjustments, too-late records). Each engine is a folder of
 * rollup/engines/: `duckdb/` in this process (the default), `redshift/` inside the warehouse
 * (PINGROLL_ROLLUP=redshift). A third engine is a third folder implementing this interface; the
 * composition root (infra/backends.ts) picks one from the configuration, and makes it for each stage
 * of a run with what the engine works with there (the stage's local connection, for the files it
 * writes); nothing else asks which it is or what it works with.
 *
 * Every engine takes the same input and hands back the same thing: each table of the day as a local
 * Parquet file in the registry's column order (rollup/output-file.ts), which export/ publishes whole.
 */
import type { Log } from '../lib/log.js';
import type { EpisodeCatalog } from './episode-catalog.js';
import type { OutputFile } from './output-file.js';
import type { Outcomes, TableName } from './rules.js';

/** One closed day's adjustments on the month they are reported on (contract §9): what the engine's `adjust` reads. */
export interface DayAdjustment {
  reportedMonth: string;
  closedMonth: string;
  tz: string;
  day: string;
  /** The staged files the closed figures (and earlier statements) counted (fetched when the engine `readsLocalFiles`). */
  counted: readonly StagedFile[];
  /** The day's pending staged files. */
  pending: readonly StagedFile[];
  /**
   * The ping-id window (contract §4, §9): W, the ping ids of the published days at most W days before
   * and after it (a pending survivor whose id one of them counts, at most W days apart, is a repeat:
   * what is counted stays counted), and the day's own as it was closed (its repeats are not in its
   * closed figures). Fetched when the engine `readsLocalFiles`.
   */
  window: { days: number; around: readonly StagedFile[]; own: StagedFile | null };
}

/**
 * A closed day's adjustments as the engine made them: the piece (statement_adjustments), and with the
 * window on (W > 0) the ping ids its new pings counted (PING_IDS_COLUMNS, a local file):
 * what later days' windows read beside the day's own as it was closed (contract §4, §9).
 */
export type AdjustedDay = OutputFile & { pingIds: { file: string; rows: number } | null };

/** A figure of a series that a statement's new version changed (kept with the version, state/closes.ts). */
export interface FigureChange { series_id: string; field: string; from: number | null; to: number | null }

/** What a close asks of the engine: version `version` of the month's statement in `tz` (contract §9). */
export interface StatementAsk {
  month: string;
  tz: string;
  version: number;
  closedAt: string;
  /** The month's monthly_series_stats in `tz`, as the close rolled it up: the statement's rows. */
  monthly: OutputFile;
  /** The month's monthly_statements as published before (every version of every zone: what a statement never loses); null: none yet. */
  before: StagedFile | null;
  dir: string;
}

/** The month's monthly_statements (every version of every zone, this one's replaced), and what this version changed from the one before. */
export interface IssuedStatement { file: OutputFile; changed: FigureChange[] }

/**
 * A batch's staged pings of a day whose staged data expired, kept as `too_late` rejects (contract §9):
 * every one of them, so how many (by source) is what the batch's commit counted, not a figure to work out.
 */
export interface TooLateAsk {
  batch: string;
  day: string;
  /** Its staged files of the day (fetched when the engine `readsLocalFiles`). */
  staged: readonly StagedFile[];
  reason: string;
  /** A local folder of its own, for what the engine fetches. */
  dir: string;
  /** The rejects file to write (gzip JSON lines). */
  out: string;
}

/**
 * What an engine that works elsewhere (Redshift) still has done on this machine, to files: their
 * shape, never a figure. Made by the composition root with the stage's local connection.
 */
export interface LocalFiles {
  /** An empty Parquet file of a table's columns (the registry's): a result the warehouse UNLOADed no file of. */
  emptyParquet(table: TableName | 'monthly_series_stats' | 'statement_adjustments' | 'ping_ids', file: string): Promise<void>;
  /** A one-row, one-column Parquet file holding `value` (VARCHAR): what a warehouse COPYs rather than read in a logged statement. */
  valueParquet(column: string, value: string, file: string): Promise<void>;
  /** A Parquet file's rows, in the file's order, as gzip JSON lines: each row an object of its columns. */
  jsonLines(parquet: string, out: string): Promise<void>;
}

/** A file an engine reads (output-relative key: staged pings, an adjustment's piece), its size, and where it is on this machine (null: not fetched). */
export interface StagedFile { key: string; size: number; local: string | null }

/** A ping-ids file of the ping-id window: with `own`, a published day's own (its manifest's day and rows); without, what adjustments of a closed day count. */
export interface PingIdsFile extends StagedFile {
  own?: { day: string; rows: number };
  /** Its keys kept beside it (rollup/engines/duckdb/ping-keys.ts), fetched for an engine that reads them (the Parquet file then is not: `local` is null); null or absent: none kept, or not fetched. */
  keys?: string | null;
}

/** What a day's rollup reads. */
export interface DayInput {
  day: string;
  /** The day's staged pings (state/day-inputs.ts): fetched when the engine `readsLocalFiles`. */
  staged: readonly StagedFile[];
  /** The day's record counts by source and outcome, from the commits. */
  outcomes: Outcomes;
  /** The day's `daily_runs` row as Parquet (rollup/daily-runs.ts): an output like the others, loaded in the same transaction. */
  runs: OutputFile;
  /** The episode catalog as checked this run; null: completion figures are NULL. */
  catalog: EpisodeCatalog | null;
  /**
   * The ping-id window (contract §4, rollup/ping-window.ts): W days, and the ping-ids files of the
   * published days of the W before this one, and of the days of closed months among the W after it
   * (`closedAfter`: what they count stays counted, contract §9), fetched when the engine
   * `readsLocalFiles`. The rollup leaves out the repeats and writes the day's own ping ids.
   */
  window: { days: number; history: readonly PingIdsFile[]; closedAfter: readonly PingIdsFile[] };
  /** A local folder of the day's own, for the files the rollup writes. */
  dir: string;
}

/** A rolled-up day. */
export interface RolledUpDay {
  pings: number;
  /** Duplicates removed, by source. */
  duplicates: Record<string, number>;
  /** Survivors left out as repeats of a ping counted on an earlier day (contract §4), by source. */
  repeats: Record<string, number>;
  /**
   * The day's ping ids (rollup/ping-window.ts), a local Parquet file, and its rows; null: the engine
   * keeps none (the window off). `keys`: their keys, a local file to keep beside them (the DuckDB engine's).
   */
  pingIds: { file: string; rows: number; keys?: string | null } | null;
  /** Records left out as automated traffic (outcome `invalid_traffic`, contract §10), by source: staged as pings, counted as these. */
  invalid: Record<string, number>;
  /** Every table of the day, `daily_runs` last, as local Parquet files. */
  outputs: OutputFile[];
  /** Those records as rejects lines (rollup/rejects-lines.ts), a local gzip file; null: none. */
  invalidRejects: string | null;
  /** The engine loaded the day into the warehouse itself (in the transaction that rolled it up): the publisher must not load it again. */
  loaded: boolean;
}

/** A day of a month, as the month's rollup reads it: its staged pings (fetched when the engine `readsLocalFiles`), and its counts. */
export interface MonthDay {
  day: string;
  staged: readonly StagedFile[];
  outcomes: Outcomes;
  /** The day's ping ids as its rollup wrote them (its repeats are left out of the month as of the day); null: none kept. */
  pingIds: StagedFile | null;
}

/** A rolled-up month: its file, and whether the engine loaded the warehouse itself. */
export interface RolledUpMonth { file: OutputFile; loaded: boolean }

/** The run a rollup works for: its id (names what it writes), its fence (before anything is replaced) and its log. */
export interface RunContext {
  id: string;
  fence: () => Promise<void>;
  log: Log;
}

export interface RollupEngine {
  /** Its name, as PINGROLL_ROLLUP says it. */
  readonly name: string;
  /** Whether it reads the staged files on this machine (the store downloads them first when they are remote). */
  readonly readsLocalFiles: boolean;
  /** Rolls `day` up. */
  rollupDay(input: DayInput, run: RunContext): Promise<RolledUpDay>;
  /**
   * One closed day's adjustments on the month they are reported on (statement_adjustments, contract
   * §9), from its counted and pending staged files, as a local Parquet file (a piece: `adjustments`
   * makes the month's file from them); `catalog` as checked this run (what PINGROLL_CATALOG_ONLY keeps to).
   */
  adjust(day: DayAdjustment, dir: string, catalog: EpisodeCatalog | null, run: RunContext): Promise<AdjustedDay>;
  /**
   * A month's statement, version `ask.version` (monthly_statements, its shares, and what it changed),
   * right after `rollupMonth` rolled the month up in `ask.tz` for it.
   */
  statement(ask: StatementAsk, run: RunContext): Promise<IssuedStatement>;
  /**
   * A reported month's statement_adjustments from its pieces (each a Parquet file `adjust` made, kept
   * in the output: fetched when the engine `readsLocalFiles`).
   */
  adjustments(reportedMonth: string, pieces: readonly StagedFile[], dir: string, run: RunContext): Promise<OutputFile>;
  /** Writes a batch's pings of an expired day as too_late rejects lines (`ask.out`), ordered by event time. */
  tooLate(ask: TooLateAsk, run: RunContext): Promise<void>;
  /** Rolls a month of `tz` up (`monthly_series_stats`, contract §8, §9) from its UTC days' staged files, as a local Parquet file. */
  rollupMonth(month: string, tz: string, days: MonthDay[], dir: string, run: RunContext, catalog: EpisodeCatalog | null): Promise<RolledUpMonth>;
}
