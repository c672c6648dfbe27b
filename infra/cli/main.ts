#!/usr/bin/env node
/**
 * The pingroll command line. Every failure ends in one line on stderr that says what to do, and a
 * non-zero exit code: 2 for a usage or configuration problem, 3 when another run holds the output's
 * lock, 1 for any other failure.
 */
import { parseArgs } from 'node:util';
import { parseCommand } from './commands/parse.js';
import { generateCommand } from './commands/generate.js';
import { summarizeCommand } from './commands/summarize.js';
import { rollupCommand } from './commands/rollup.js';
import { backfillCommand } from './commands/backfill.js';
import { reportCommand } from './commands/report.js';
import { CONFIG_FLAGS, configFrom } from './commands/rollup.js';
import { warehouseFor } from '../jobs/daily-job.js';
import { makeLog } from '../../lib/log.js';
import { topCommand } from './commands/top.js';
import { LockHeldError } from '../../state/run-lock.js';
import { ConfigError, loadConfig } from '../config.js';

const USAGE = `usage: pingroll <command> [options]
  rollup --date YYYY-MM-DD  ingest new log objects, roll up the day, write Parquet, manifest, warehouse
      --dry-run           say what would be read and written, change nothing
      --wait SECONDS      wait this long for another run's lock (default: fail at once)
      --concurrency N     log objects read at once (default 4)
      --rescan            scan closed DynamoDB tables again
      --max-rcu N         read capacity units per second for table scans, at most
      --segments N        parallel scan segments per table (default 4)
  backfill --from YYYY-MM-DD --to YYYY-MM-DD
                          ingest once, then roll up every day of the range; skips days whose inputs
                          did not change (--force to redo them); --days N at once (default 2)
  tables plan             the monthly tables: months, state (live, closed, exported), items, billing
  tables rotate           create next month's table ahead of time (on-demand; --provisioned R,W)
  tables retire --before YYYY-MM [--apply]
                          delete old tables that a completed export holds (dry run without --apply)
  warehouse init          create the warehouse tables and views (idempotent)
  report --month YYYY-MM  the licensors' statement: minutes watched per series and share of the month
  top --date YYYY-MM-DD   the day's top episodes by minutes watched, from the DuckDB warehouse
  parse [FILE]            one JSON line per log line: outcome, fields, ping (stdin without FILE)
      --reason            add why a record is not a ping
  summarize [DIR]         outcome counts and top episodes of a directory of logs
  generate                write a seeded sample of access logs
      --out DIR --date YYYY-MM-DD --sessions N --seed N
configuration: PINGROLL_* environment variables, or --logs --ping-keys --output --warehouse --ddb-tables`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'parse': {
        const { values, positionals } = parseArgs({
          args: rest, allowPositionals: true,
          options: { reason: { type: 'boolean' }, 'ping-keys': { type: 'string' } },
        });
        const config = loadConfig(process.env, { pingKeys: values['ping-keys'] });
        await parseCommand(positionals[0], config.pingKeys, values.reason ?? false);
        return 0;
      }
      case 'rollup':
        await rollupCommand(rest);
        return 0;
      case 'backfill':
        await backfillCommand(rest);
        return 0;
      case 'tables':
        // Loaded on demand, as it needs the AWS SDK.
        process.stdout.write(await (await import('./commands/tables.js')).tablesCommand(rest));
        return 0;
      case 'warehouse': {
        if (rest[0] !== 'init') throw new ConfigError(`warehouse needs 'init' (got '${rest[0] ?? ''}')`);
        const { values } = parseArgs({ args: rest.slice(1), options: { ...CONFIG_FLAGS } });
        const config = configFrom(values);
        const wh = await warehouseFor(config, makeLog());
        if (!wh) throw new ConfigError('PINGROLL_WAREHOUSE is none: there is no warehouse to initialize');
        try {
          await wh.init();
        } finally {
          await wh.close();
        }
        process.stdout.write(`${wh.description}: tables and views are in place\n`);
        return 0;
      }
      case 'report':
        process.stdout.write(await reportCommand(rest));
        return 0;
      case 'top':
        process.stdout.write(await topCommand(rest));
        return 0;
      case 'summarize': {
        const { positionals } = parseArgs({ args: rest, allowPositionals: true });
        const config = loadConfig(process.env);
        process.stdout.write(await summarizeCommand(positionals[0] ?? config.logs.url, config.pingKeys));
        return 0;
      }
      case 'generate':
        await generateCommand(rest);
        return 0;
      case undefined:
      case 'help':
      case '--help':
        process.stdout.write(USAGE + '\n');
        return command === undefined ? 2 : 0;
      default:
        process.stderr.write(`pingroll: unknown command '${command}'; run 'pingroll help' for the list\n`);
        return 2;
    }
  } catch (err) {
    return reportFailure(err);
  }
}

export function reportFailure(err: unknown): number {
  if (err instanceof LockHeldError) {
    process.stderr.write(`pingroll: ${(err as Error).message}\n`);
    return 3;
  }
  if (err instanceof ConfigError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`pingroll: ${(err as Error).message}\n`);
    return 2;
  }
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOENT') {
    process.stderr.write(`pingroll: no such file: ${e.path ?? e.message}; check the path and run again\n`);
    return 1;
  }
  if (e.code === 'EPIPE') return 0;
  process.stderr.write(`pingroll: ${e.message ?? String(err)}\n`);
  if (process.env.PINGROLL_DEBUG) process.stderr.write(`${e.stack}\n`);
  return 1;
}

process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
});

let settled = false;
// Node exits 0 when its event loop runs dry, even with work still awaited: never let that pass as success.
process.on('beforeExit', () => {
  if (!settled) {
    process.stderr.write('pingroll: internal error: the run stopped before finishing (an operation never completed); report it with the log above\n');
    process.exit(70);
  }
});
main(process.argv.slice(2)).then((code) => {
  settled = true;
  process.exitCode = code;
});
