/**
 * The configuration flags every command that reads the configuration takes: each overrides the
 * `PINGROLL_*` environment variable of the same name (contract §7).
 */
import type { Command } from 'commander';
import { loadConfig, type Config } from '../config.js';

export interface ConfigOptions {
  logs?: string;
  pingKeys?: string;
  ddbTables?: string;
  ddbExports?: string;
  output?: string;
  warehouse?: string;
  memoryLimit?: string;
  concurrency?: string;
  parseThreads?: string;
  listMargin?: string;
  segments?: string;
  maxRcu?: string;
  days?: string;
}

export function withConfigOptions(cmd: Command): Command {
  return cmd
    .option('--logs <location>', 'where access logs are: s3://bucket/prefix/ or a directory (PINGROLL_LOGS)')
    .option('--ping-keys <keys>', 'comma-separated ping object keys (PINGROLL_PING_KEYS)')
    .option('--ddb-tables <template>', 'monthly table template, e.g. pings_{yyyy}_{mm} (PINGROLL_DDB_TABLES)')
    .option('--ddb-exports <location>', 'where DynamoDB exports are (PINGROLL_DDB_EXPORTS)')
    .option('--output <location>', 's3://bucket/prefix/ or a directory (PINGROLL_OUTPUT)')
    .option('--warehouse <target>', 'duckdb:<file>, redshift or none (PINGROLL_WAREHOUSE)')
    .option('--memory-limit <size>', "DuckDB's memory limit, e.g. 2GB (PINGROLL_MEMORY_LIMIT)");
}

/** The flags that tune reading: log objects at once, scan segments, a read budget. */
export function withReadOptions(cmd: Command): Command {
  return cmd
    .option('--concurrency <n>', 'remote log objects fetched at once, at most (default 64; a 64 MB read budget bounds them too)')
    .option('--parse-threads <n>', 'threads parsing log objects: a number, 0 for none, or auto (default: with 4 cores or more, one per core but one, for a batch of 32 MB or more)')
    .option('--list-margin <minutes>', 'list logs from this long before the latest delivery time seen (default 10)')
    .option('--segments <n>', 'parallel scan segments per table (default 4)')
    .option('--max-rcu <n>', 'read capacity units per second for table scans, at most')
    .option('--rescan', 'read closed DynamoDB tables again')
    .option('--wait <seconds>', "wait this long for another run's lock (default: fail at once)", '0');
}

export function configFrom(opts: ConfigOptions, env: NodeJS.ProcessEnv = process.env): Config {
  return loadConfig(env, opts);
}
