/**
 * The configuration's flags, as commander options: each setting of infra/config.ts (`SETTINGS`) is
 * a `--flag` that overrides the `PINGROLL_*` environment variable of the same name (contract §7).
 */
import type { Command } from 'commander';
import { flagOf, loadConfig, SETTINGS, type Config, type ConfigFlags, type SettingName } from '../infra/config.js';

/** What commander hands a command: the configuration's flags (and each command's own). */
export type ConfigOptions = ConfigFlags;

function withSettings(cmd: Command, on: 'all' | 'run', only?: readonly SettingName[]): Command {
  for (const [name, s] of Object.entries(SETTINGS) as Array<[SettingName, (typeof SETTINGS)[SettingName]]>) {
    if (s.on === on && (!only || only.includes(name))) cmd.option(`${flagOf(name)} ${s.arg}`, `${s.help} (${s.env})`);
  }
  return cmd;
}

/** The flags of the commands that read the warehouse (report, uniques, top): where it is, and nothing of ingesting. */
export function withWarehouseOptions(cmd: Command): Command {
  return withSettings(cmd, 'all', ['output', 'warehouse']);
}

/** The flags every command that reads the configuration takes: where things are. */
export function withConfigOptions(cmd: Command): Command {
  return withSettings(cmd, 'all');
}

/** The flags of the commands that run (rollup, ingest, backfill, reconcile): how they read, and how long they wait. */
export function withReadOptions(cmd: Command): Command {
  return withSettings(cmd, 'run').option('--rescan', 'read closed DynamoDB tables again');
}

export function configFrom(opts: ConfigOptions, env: NodeJS.ProcessEnv = process.env): Config {
  return loadConfig(env, opts);
}
