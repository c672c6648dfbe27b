/**
 * The pingroll command line, on commander: every command has `--help`, `pingroll --version` prints
 * the version and git revision, and a mistyped command or flag gets a suggestion. Every failure ends
 * in one line on stderr that says what to do, and a non-zero exit code: 2 for a usage or
 * configuration problem, 3 when another run holds the output's lock, 1 for any other failure.
 */
import { Command, CommanderError } from 'commander';
import { LockHeldError } from '../state/run-lock.js';
import { LocationError } from '../lib/location.js';
import { ConfigError, debugFrom, loadConfig } from '../infra/config.js';
import { versionLine } from '../infra/version.js';
import { geoDatabase } from '../ingest/audience/geo-lookup.js';
import { withOutputViewerKey } from '../infra/generated-viewer-key.js';
import { failureLine } from './failure-message.js';
import { configFrom, withConfigOptions, withReadOptions, withWarehouseOptions, type ConfigOptions } from './config-options.js';
import type { GenerateOptions } from './commands/generate.js';
import type { IngestCommandOptions } from './commands/ingest.js';
import type { RollupOptions } from './commands/rollup.js';
import type { BackfillCommandOptions } from './commands/backfill.js';
import type { ReconcileCommandOptions } from './commands/reconcile.js';
import type { CloseCommandOptions } from './commands/close.js';
import { NotCompleteError, ProvisionalError, UnreadableObjectsError } from './exit-errors.js';
import { CloseRefusedError, CloseUsageError } from '../state/closes.js';
import { afterRun, observeSettings, type ObserveSettings } from '../infra/observe/after-run.js';
import { MEASURED_COMMANDS, runFigures } from '../infra/observe/run-figures.js';

// Each command's module is loaded when it runs: a rollup does not load the report's charts, the
// sample generator or the parser's JSON output (start-up, issue #26).

/** What a command prints on stdout. */
const print = (text: string): void => void process.stdout.write(text);

/** The IP-to-country database the configuration names (contract §10), for --version. */
function geoLine(): string {
  try {
    const { database, builtAt } = geoDatabase(loadConfig(process.env).geoipDb);
    return `IP-to-country: ${database}, built ${builtAt}`;
  } catch (err) {
    return `IP-to-country: ${(err as Error).message}`;
  }
}

export function program(): Command {
  const p = new Command('pingroll')
    .description('Video-player pings from S3 access logs and legacy DynamoDB tables into exact daily rollups')
    // The revision is asked of git only when --version is given: nothing at a normal start.
    .option('-V, --version', 'the version, and the git revision when run from a checkout')
    .on('option:version', () => {
      print(`${versionLine()}\n`);
      print(`${geoLine()}\n`);
      throw new CommanderError(0, 'pingroll.version', '');
    })
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ writeErr: () => {}, outputError: () => {} })
    .addHelpText('after', '\nConfiguration: PINGROLL_* environment variables, or the flags of the same name (pingroll <command> --help).');

  withReadOptions(withConfigOptions(p.command('rollup')
    .description('ingest new log objects, roll up the day, write Parquet, manifest and warehouse rows (or, with --month, the month\'s monthly_series_stats)')
    .option('--date <YYYY-MM-DD>', 'the UTC day')
    .option('--month <YYYY-MM>', 'roll up the month (monthly_series_stats) instead of a day; the month must be over')
    .option('--tz <Area/City>', "with --month: the month in this IANA time zone (default UTC)")
    .option('--dry-run', 'say what would be read and written; change nothing')
    .option('--no-ingest', 'roll up from what is staged (by pingroll ingest --shard): no listing, parsing or table scans')))
    .action(async (opts: ConfigOptions & RollupOptions) => (await import('./commands/rollup.js')).rollupCommand(withOutputViewerKey(configFrom(opts), false), opts));

  withReadOptions(withConfigOptions(p.command('ingest')
    .description('parse the new log objects and commit them, without rolling up; as one of N shards running at once with --shard')
    .option('--shard <I/N>', 'parse the objects whose keys hash to shard I of N (0-based); default: from AWS_BATCH_JOB_ARRAY_INDEX and AWS_BATCH_JOB_ARRAY_SIZE, or JOB_COMPLETION_INDEX and PINGROLL_SHARDS')
    .option('--date <YYYY-MM-DD[,...]>', 'the days asked for, comma-separated: their delivery days are listed if they never were, and the legacy tables that can hold them are read (each shard its share); default: yesterday')))
    .action(async (opts: ConfigOptions & IngestCommandOptions) => (await import('./commands/ingest.js')).ingestCommand(withOutputViewerKey(configFrom(opts), false), opts));

  withReadOptions(withConfigOptions(p.command('backfill')
    .description('ingest once, then roll up every day of a range; skips days whose inputs did not change')
    .option('--from <YYYY-MM-DD>', 'the first day')
    .option('--to <YYYY-MM-DD>', 'the last day')
    .option('--force', 'redo days whose inputs did not change')
    .option('--stale', 'publish exactly the days whose staged data changed since they were published (FROM and TO optional)')
    .option('--no-ingest', 'roll up from what is staged (after a sharded ingest): no listing, parsing or table scans')))
    .action(async (opts: ConfigOptions & BackfillCommandOptions) => (await import('./commands/backfill.js')).backfillCommand(withOutputViewerKey(configFrom(opts), false), opts));

  withReadOptions(withConfigOptions(p.command('reconcile')
    .description('list delivery days in full now, whatever the schedule, and parse what no run has (a restore, a copy, a new replication rule); the days their records belong to become stale')
    .option('--from <YYYY-MM-DD>', 'the first delivery day (the date in the log objects\' names)')
    .option('--to <YYYY-MM-DD>', 'the last delivery day')
    .option('--shard <I/N>', 'list the slices of shard I of N only (0-based)')))
    .action(async (opts: ConfigOptions & ReconcileCommandOptions) => (await import('./commands/reconcile.js')).reconcileCommand(withOutputViewerKey(configFrom(opts), false), opts));

  withConfigOptions(p.command('status')
    .description("each day's state (complete, provisional, stale, incomplete, never run); exit 0 when every day is complete, 6 when the rest are only provisional, 5 when one needs action")
    .option('--from <YYYY-MM-DD>', 'the first day (default: 29 days before --to)')
    .option('--to <YYYY-MM-DD>', 'the last day (default: yesterday)')
    .option('--json', 'one JSON object per day'))
    .action(async (opts: ConfigOptions & { from?: string; to?: string; json?: boolean }) => {
      const { text, verdict } = await (await import('./commands/status.js')).statusCommand(configFrom(opts), opts);
      print(text);
      if (verdict === 'provisional') throw new ProvisionalError('every day in the range is complete or provisional: the provisional ones wait for their scheduled full listings (see when above); nothing to do');
      if (verdict === 'attention') throw new NotCompleteError('not every day in the range is complete or provisional (see the reasons above)');
    });

  withConfigOptions(p.command('tables')
    .description('the legacy monthly tables: plan (their states), rotate (create next month\'s), retire (delete exported ones)')
    .argument('<action>', 'plan, rotate or retire')
    .option('--before <YYYY-MM>', 'retire: tables of earlier months')
    .option('--apply', 'retire: delete, instead of saying what would be deleted')
    .option('--provisioned <R,W>', 'rotate: provisioned read and write capacity instead of on-demand'))
    .action(async (action: string, opts: ConfigOptions & { before?: string; apply?: boolean; provisioned?: string }) => {
      // Loaded on demand, as it needs the AWS SDK.
      const { tablesCommand } = await import('./commands/tables.js');
      print(await tablesCommand(configFrom(opts), action, opts));
    });

  withConfigOptions(p.command('quarantine')
    .description('log objects that could not be read: list them, or accept one (or --all) as lost')
    .argument('<action>', 'list or accept')
    .argument('[key]', 'accept: the object key, as list shows it')
    .option('--all', 'accept: every quarantined object'))
    .action(async (action: string, key: string | undefined, opts: ConfigOptions & { all?: boolean }) => print(await (await import('./commands/quarantine.js')).quarantineCommand(configFrom(opts), action, key, opts)));

  withConfigOptions(p.command('warehouse')
    .description("init: create the warehouse tables and views (idempotent); bootstrap (Redshift, as its administrator): attach the COPY role, make the jobs' user, schema and grants")
    .argument('<action>', 'init or bootstrap')
    .option('--grant-to <user>', "bootstrap: the jobs' database user (IAMR:<role name> for an IAM role using the Data API)"))
    .action(async (action: string, opts: ConfigOptions & { grantTo?: string }) => {
      if (action === 'bootstrap') {
        print(await (await import('./commands/warehouse-bootstrap.js')).bootstrapCommand(configFrom(opts), opts.grantTo));
        return;
      }
      if (action !== 'init') throw new ConfigError(`warehouse needs 'init' or 'bootstrap' (got '${action}')`);
      const { objectStoreAt, warehouseFor } = await import('../infra/backends.js');
      const { makeLog } = await import('./run-log.js');
      const { acquireLock } = await import('../state/run-lock.js');
      const config = configFrom(opts);
      const wh = await warehouseFor(config, makeLog());
      if (!wh) throw new ConfigError('PINGROLL_WAREHOUSE is none: there is no warehouse to initialize');
      // Under the run lock: a run may be loading the warehouse, and one change must not undo the other.
      const lock = await acquireLock(await objectStoreAt(config.output, config), `init-${process.pid}`, 'warehouse init');
      try {
        await wh.init();
      } finally {
        await wh.close();
        await lock.release();
      }
      print(`${wh.description}: tables and views are in place\n`);
    });

  withConfigOptions(p.command('close')
    .description("close a month (contract §9): freeze its figures as a statement, version 1; later pings of it are adjustments on the next month's")
    .option('--month <YYYY-MM>', 'the month; every day of it must be complete')
    .option('--tz <Area/City>', 'the IANA time zone the month is in (default UTC)')
    .option('--reopen', 'issue the next version of a closed month, from everything staged now')
    .option('--reason <text>', 'with --reopen: why, written down with the new version'))
    .action(async (opts: ConfigOptions & CloseCommandOptions) => (await import('./commands/close.js')).closeCommand(withOutputViewerKey(configFrom(opts), false), opts));

  withWarehouseOptions(p.command('report')
    .description("the licensors' statement: minutes watched per series and share of the month")
    .option('--month <YYYY-MM>', 'the month')
    .option('--tz <Area/City>', 'with --month: the month in this IANA time zone (default UTC)')
    .option('--date <YYYY-MM-DD>', 'with --html: the day')
    .option('--format <format>', 'table, csv or json', 'table')
    .option('--by <dimension>', 'with --month: the statement split by country (UTC months only)')
    .option('--html <file>', 'write a self-contained HTML page with charts for the --date or --month'))
    .action(async (opts: ConfigOptions & { month?: string; tz?: string; format?: string; date?: string; html?: string; by?: string }) => print(await (await import('./commands/report.js')).reportCommand(configFrom(opts), opts)));

  withWarehouseOptions(p.command('uniques')
    .description('exact unique viewers over a range of days, per series (or per episode of one series) and over all series')
    .option('--from <YYYY-MM-DD>', 'the first UTC day')
    .option('--to <YYYY-MM-DD>', 'the last UTC day (included)')
    .option('--series <id>', 'one series')
    .option('--episode <id>', "with --series: one episode ('' for each of the series' episodes)")
    .option('--format <format>', 'table, csv or json', 'table'))
    .action(async (opts: ConfigOptions & { from?: string; to?: string; series?: string; episode?: string; format?: string }) => print(await (await import('./commands/uniques.js')).uniquesCommand(withOutputViewerKey(configFrom(opts), false), opts)));

  withWarehouseOptions(p.command('top')
    .description("the day's top episodes by minutes watched, from the DuckDB warehouse")
    .option('--date <YYYY-MM-DD>', 'the UTC day')
    .option('--limit <n>', 'how many episodes', '10'))
    .action(async (opts: ConfigOptions & { date?: string; limit: string }) => print(await (await import('./commands/top.js')).topCommand(configFrom(opts), opts)));

  p.command('parse')
    .description('one JSON line per log line: outcome, fields, ping (stdin without FILE; gzip detected)')
    .argument('[file]', 'an access-log file; - or none for stdin')
    .option('--reason', 'add why a record is not a ping')
    .option('--ping-keys <keys>', 'comma-separated ping object keys (PINGROLL_PING_KEYS)')
    .action(async (file: string | undefined, opts: { reason?: boolean; pingKeys?: string }) => {
      const config = loadConfig(process.env, { pingKeys: opts.pingKeys });
      await (await import('./commands/parse.js')).parseCommand(file, config.pingKeys, opts.reason ?? false);
    });

  p.command('summarize')
    .description('outcome counts and top episodes of a directory of logs')
    .argument('[dir]', 'a directory of logs (default: PINGROLL_LOGS)')
    .action(async (dir: string | undefined) => {
      const config = loadConfig(process.env);
      const { summarizeCommand, unreadableLine } = await import('./commands/summarize.js');
      const { text, unreadable } = await summarizeCommand(dir ?? config.logs.url, config.pingKeys);
      print(text);
      // Completed, but not every object was read: exit 4, naming them.
      if (unreadable.length) throw new UnreadableObjectsError(unreadableLine(unreadable));
    });

  p.command('generate')
    .description('write a seeded, realistic sample day of access logs')
    .option('--out <dir>', 'where to write', './data/logs')
    .option('--date <YYYY-MM-DD>', 'the day (default: yesterday)')
    .option('--sessions <n>', 'viewing sessions', '2000')
    .option('--seed <n>', 'random seed', '1')
    .option('--prefix <prefix>', 'key prefix of the log objects', '')
    .option('--catalog <file>', "also write the sample's episode catalog (CSV: PINGROLL_EPISODE_CATALOG)")
    .option('--resends <share>', 'share of sessions (0 to 1) whose app resends a third of its pings, with their ids, hours to three weeks later (contract §4: repeat)', '0')
    .action(async (opts: GenerateOptions) => (await import('./commands/generate.js')).generateCommand(opts));

  withWarehouseOptions(p.command('sql')
    .description('run a query on the warehouse, read-only (the embedded DuckDB file, or Redshift), and print its rows')
    .argument('[query]', 'the SQL, e.g. "SELECT * FROM monthly_series_minutes ORDER BY month DESC LIMIT 10"; none: a prompt (statements end with ;), or the statements piped in')
    .option('--format <format>', 'table, csv or json', 'table'))
    .action(async (sql: string | undefined, opts: ConfigOptions & { format?: string }) => {
      const { sqlCommand, sqlPrompt } = await import('./commands/sql.js');
      print(sql === undefined ? await sqlPrompt(configFrom(opts), opts.format) : await sqlCommand(configFrom(opts), sql, opts.format));
    });
  return p;
}

export async function main(argv: string[]): Promise<number> {
  const p = program();
  if (argv.length === 0) {
    process.stdout.write(p.helpInformation());
    return 2;
  }
  let observe: ObserveSettings | null = null;
  let outcome: { code: number; line: string | null };
  try {
    observe = observeSettings(process.env);
    if (MEASURED_COMMANDS.has(argv[0]!)) runFigures.command = argv[0]!;
    await p.parseAsync(argv, { from: 'user' });
    outcome = { code: 0, line: null };
  } catch (err) {
    outcome = reportFailure(err, debugFrom(process.env));
  }
  // Metrics and notifications of the run (never a change to its exit code).
  if (observe) await afterRun(observe, runFigures, outcome.code, outcome.line, (await import('./run-log.js')).makeLog());
  return outcome.code;
}

/** Says a failure on stderr, one line; its exit code, and the line (null when there was nothing to say). */
export function reportFailure(err: unknown, debug: boolean): { code: number; line: string | null } {
  const say = (code: number, line: string): { code: number; line: string } => {
    process.stderr.write(`pingroll: ${line}\n`);
    return { code, line };
  };
  if (err instanceof CommanderError) {
    // Help and version were printed; anything else is a usage error, said on one line.
    if (err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return { code: 0, line: null };
    const text = err.message.replace(/^error: /, '').replace(/\n+/g, ' ').trim();
    return say(2, `${text.charAt(0).toUpperCase()}${text.slice(1)}; run 'pingroll --help' for the commands and 'pingroll <command> --help' for their flags`);
  }
  if (err instanceof NotCompleteError || err instanceof CloseRefusedError) return say(5, err.message);
  if (err instanceof ProvisionalError) return say(6, err.message);
  if (err instanceof UnreadableObjectsError) return say(4, err.message);
  if (err instanceof LockHeldError) return say(3, err.message);
  if (err instanceof ConfigError || err instanceof LocationError || err instanceof CloseUsageError) return say(2, err.message);
  if ((err as NodeJS.ErrnoException).code === 'EPIPE') return { code: 0, line: null };
  if (debug) process.stderr.write(`${(err as Error).stack}\n`);
  return say(1, failureLine(err));
}

/**
 * Runs the command line of this process (bin/pingroll.js): what the process does on its own
 * warnings, a closed stdout and an event loop run dry, then `main` over its arguments.
 */
export function start(): void {
  // Node's own warnings (the AWS SDK's 8-line notice that later releases need Node 22, among them) go
  // to stderr as a block of text; off a terminal stderr carries JSON lines only. The SDK versions are
  // pinned (package.json), so that notice is dropped; any other warning becomes one line.
  process.removeAllListeners('warning');
  process.on('warning', (w) => {
    if (w.name === 'NodeVersionSupportWarning' || w.message.startsWith('NodeVersionSupportWarning')) return;
    const text = w.message.split('\n')[0];
    process.stderr.write(process.stderr.isTTY ? `warning: ${text}\n` : JSON.stringify({ ts: new Date().toISOString(), level: 'warn', event: 'node.warning', name: w.name, message: text }) + '\n');
  });

  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
  });

  let settled: number | null = null;
  // Node exits 0 when its event loop runs dry, even with work still awaited: never let that pass as success.
  process.on('beforeExit', () => {
    if (settled === null) {
      process.stderr.write('pingroll: internal error: the run stopped before finishing (an operation never completed); report it with the log above\n');
      process.exit(70);
    }
    // Nothing is left to run: the loop is dry, so every write to stdout, stderr and the disk has ended.
    // Exit now rather than free the heap page by page first: 8 ms of a run with nothing to do (0.96x
    // its wall time, 21 pairs).
    process.exit(settled);
  });
  main(process.argv.slice(2)).then((code) => {
    settled = code;
  });
}
