/**
 * The DuckDB engine (the default): a day rolled up in this process from its staged files on this
 * machine (day-rollup.ts), larger than memory when it must be, and each table written as Parquet.
 */
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { AdjustedDay, DayAdjustment, DayInput, IssuedStatement, MonthDay, PingIdsFile, RollupEngine, RolledUpDay, RolledUpMonth, RunContext, StagedFile, StatementAsk, TooLateAsk } from '../../engine.js';
import type { EpisodeCatalog } from '../../episode-catalog.js';
import { MONTH_TABLE, writeParquet, type OutputFile } from '../../output-file.js';
import { allEnded } from '../../../lib/all-ended.js';
import { sibling } from '../../../lib/duckdb-engine.js';
import { TABLES, type RollupSettings } from '../../rules.js';
import { logWindowChecked } from '../../ping-window.js';
import { catalogRuleFor, rollupDay } from './day-rollup.js';
import type { WindowFile } from './window-check.js';
import { rollupMonth } from './month-rollup.js';
import { adjustDay, adjustedPingIds } from './adjustments.js';
import { ADJUSTMENTS_ORDER, adjustmentsOf, issueStatement, tooLateRejects } from './statement.js';
import { writeInvalidRejects } from './invalid-rejects.js';

/** A staged file's local path: the DuckDB engine reads local files only. */
function local(day: string, f: StagedFile): string {
  if (f.local === null) throw new Error(`the DuckDB rollup of ${day} was handed ${f.key} not fetched; it reads local files`);
  return f.local;
}

export class DuckDbRollup implements RollupEngine {
  readonly name = 'duckdb';
  readonly readsLocalFiles = true;

  /** @param db the stage's own connection (spilling under the run's work folder), opened at its first use. */
  constructor(private readonly db: DuckDBConnection, private readonly settings: RollupSettings = {}) {}

  async rollupDay(input: DayInput, run: RunContext): Promise<RolledUpDay> {
    const { db } = this;
    const files = input.staged.map((f) => local(input.day, f));
    const windowFile = (f: PingIdsFile): WindowFile => (f.keys ? { parquet: null, keys: f.keys } : { parquet: local(input.day, f), keys: null });
    const window = { days: input.window.days, history: input.window.history.map(windowFile), closedAfter: input.window.closedAfter.map(windowFile),
      out: join(input.dir, 'ping-ids.parquet'), outKeys: join(input.dir, 'ping-ids.keys'), dir: input.dir };
    const rollup = await rollupDay(db, input.day, files, input.outcomes, { ...this.settings, catalogFile: input.catalog?.file ?? null, window });
    if (rollup.windowCost) logWindowChecked(run, input, rollup.pingIdRows, rollup.repeats, rollup.windowCost);
    const outputs: OutputFile[] = [];
    // The automated traffic's rejects lines (one thread: gzip) are written on a connection of their
    // own while the tables are written (none to be had: after them).
    const anyInvalid = Object.values(rollup.invalid).some((n) => n > 0);
    const side = anyInvalid ? await sibling(db) : null;
    let invalidRejects: string | null;
    try {
      [, invalidRejects = null] = await allEnded<string | null>([
        async () => {
          for (const table of TABLES) outputs.push(await writeParquet(db, `SELECT * FROM ${rollup.tables[table]}`, table, input.day, input.dir));
          return null;
        },
        async () => (anyInvalid ? writeInvalidRejects(side ?? db, rollup.excluded, input.dir) : null),
      ], side ? 2 : 1);
    } finally {
      side?.closeSync();
    }
    return { pings: rollup.pings, duplicates: rollup.duplicates, repeats: rollup.repeats, pingIds: window.days > 0 ? { file: window.out, rows: rollup.pingIdRows, keys: window.outKeys } : null,
      invalid: rollup.invalid, outputs: [...outputs, input.runs], invalidRejects, loaded: false };
  }

  async adjust(a: DayAdjustment, dir: string, catalog: EpisodeCatalog | null): Promise<AdjustedDay> {
    const { db } = this;
    const files = { ...a, counted: a.counted.map((f) => local(a.day, f)), pending: a.pending.map((f) => local(a.day, f)),
      window: { days: a.window.days, around: a.window.around.map((f) => local(a.day, f)), own: a.window.own && local(a.day, a.window.own) } };
    await adjustDay(db, files, 'adjustments', catalogRuleFor(this.settings.catalogOnly, catalog?.file, `the adjustments of ${a.day}`));
    const piece = await writeParquet(db, `SELECT * FROM adjustments ${ADJUSTMENTS_ORDER}`, 'statement_adjustments', `${a.reportedMonth}-01`, dir, 'reported_month');
    const ids = join(dir, 'adjusted-ping-ids.parquet');
    return { ...piece, pingIds: a.window.days > 0 ? { file: ids, rows: await adjustedPingIds(db, ids) } : null };
  }

  statement(ask: StatementAsk): Promise<IssuedStatement> {
    return issueStatement(this.db, ask);
  }

  adjustments(reportedMonth: string, pieces: readonly StagedFile[], dir: string): Promise<OutputFile> {
    return adjustmentsOf(this.db, reportedMonth, pieces.map((p) => local(reportedMonth, p)), dir);
  }

  tooLate(ask: TooLateAsk): Promise<void> {
    return tooLateRejects(this.db, ask);
  }

  async rollupMonth(month: string, tz: string, days: MonthDay[], dir: string, _run: RunContext, catalog: EpisodeCatalog | null): Promise<RolledUpMonth> {
    const { db } = this;
    const table = await rollupMonth(db, month, days.map((d) => ({ day: d.day, files: d.staged.map((f) => local(d.day, f)), pingIds: d.pingIds && local(d.day, d.pingIds) })), tz, catalogRuleFor(this.settings.catalogOnly, catalog?.file, `the rollup of ${month}`));
    return { file: await writeParquet(db, `SELECT * FROM ${table}`, MONTH_TABLE, `${month}-01`, dir, 'month', tz), loaded: false };
  }
}
