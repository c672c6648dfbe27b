/**
 * What a stage of a job works with: the configuration, the backends, the run it is part of, and a
 * DuckDB connection of its own (Run.withEngine: opened at its first use, closed after the stage).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Backends } from '../../infra/backends.js';
import type { Config } from '../../infra/config.js';
import type { Run } from '../run.js';

export interface Stage {
  readonly config: Config;
  readonly backends: Backends;
  readonly run: Run;
  readonly db: DuckDBConnection;
}

/** `fn` as a stage of `at.run` named `name`, with a DuckDB connection of its own (of `memoryLimitMb`: the configured limit unless said; the configured threads). */
export function withStage<T>(at: Omit<Stage, 'db'>, name: string, fn: (stage: Stage) => Promise<T>, memoryLimitMb = at.config.memoryLimitMb): Promise<T> {
  return at.run.work.withEngine(name, { memoryLimitMb, threads: at.config.threads }, (db) => fn({ ...at, db }));
}
