/**
 * Configuration (contract §7): `PINGROLL_*` environment variables, each overridden by the `--flag` of the
 * same name, and the run settings that only flags set. This is the one place that reads the
 * environment and the one place each default is defined; everything else is handed what it needs.
 * AWS settings are the SDK's own (`AWS_REGION`, `AWS_ENDPOINT_URL_S3`, ...) and never pass through
 * here, except to learn whether S3 is a stand-in server (path-style addressing). Every bad value is a
 * ConfigError whose message says which setting and what it takes.
 */
import type { Privacy } from '../ingest/privacy.js';
import { VIEWER_SECRET, viewerKey, type ViewerKey } from '../rollup/viewer-key.js';
import { CATALOG_ONLY, type CatalogOnly } from '../rollup/rules.js';
import { DEFAULT_PLATFORMS, MAX_PLATFORM_CHARS, normalizePlatform } from '../ingest/ping-record.js';
import type { Location } from '../lib/location.js';
import { addDays } from '../lib/utc-day.js';
import type { RedshiftConfig } from '../export/warehouse/redshift/redshift-config.js';
import { MAX_SHARDS, type Shard } from '../ingest/batch/shard.js';
import { DEFAULT_SCHEDULE, type ReconcileSchedule } from '../ingest/listing/delivery-days.js';

export class ConfigError extends Error {}

/** Which warehouse a day is loaded into (`PINGROLL_WAREHOUSE`). */
export type WarehouseTarget =
  | { kind: 'duckdb'; file: string }
  | { kind: 'redshift' }
  | { kind: 'none' };

export interface Config {
  logs: Location;
  pingKeys: string[];
  /** Monthly table template (`pings_{yyyy}_{mm}`), or null for no DynamoDB source. */
  ddbTables: string | null;
  /** Where DynamoDB export-to-S3 output is (read instead of scanning closed tables), or null. */
  ddbExports: Location | null;
  output: Location;
  warehouse: WarehouseTarget;
  /** Set when the warehouse is Redshift. */
  redshift: RedshiftConfig | null;
  /**
   * Where a day is rolled up (`PINGROLL_ROLLUP`): `duckdb` in this process, or `redshift`, inside the
   * warehouse, in the day's load transaction (the staged Parquet COPYed in, the outputs UNLOADed).
   */
  rollup: 'duckdb' | 'redshift';
  /** DuckDB's memory limit for a run, in MB (`PINGROLL_MEMORY_LIMIT`); a backfill shares it among its days. */
  memoryLimitMb: number;
  /** DuckDB's threads in each of a run's engines (`PINGROLL_THREADS`); null: one per core. */
  threads: number | null;
  /** Remote log objects fetched at once, at most (`--concurrency`); the 64 MB read budget bounds them too. */
  concurrency: number;
  /** Parsing threads (`--parse-threads`): a number (0: the run's own thread), or `auto`: with 4 cores or more, one per core but one, for a batch of 32 MB or more. */
  parseThreads: number | 'auto';
  /**
   * How far before the latest delivery time a listing saw the next listing starts (`--list-margin`,
   * minutes): an object that became visible later than this after the time in its name is found by
   * the next full listing of its delivery day (`schedule`).
   */
  listMarginMs: number;
  /**
   * When each delivery day is listed in full after it ends (`PINGROLL_RECONCILE_AFTER`, default 2h,1d,3d;
   * the last is its final listing), and how many delivery days after a day can hold its records
   * (`PINGROLL_LATE_DAYS`, default 2): a day is complete once D to D + late days have had their final
   * listing (ingest/listing/delivery-days.ts).
   */
  schedule: ReconcileSchedule;
  /** Parallel Scan segments per table (`--segments`). */
  segments: number;
  /** Read capacity units per second for table scans, at most (`--max-rcu`); null for no limit. */
  maxRcu: number | null;
  /** Days a backfill rolls up at once (`--days`). */
  parallelDays: number;
  /**
   * The ping-id window (`PINGROLL_DEDUPE_DAYS`, contract §4; default 30): a day's survivor is a
   * `repeat` when a counted survivor with its ping id lies on an earlier day at most this many days
   * before it by event time (rollup/ping-window.ts). 0: each day is deduplicated alone.
   */
  dedupeDays: number;
  /** Seconds a run waits for another run's lock before it exits 3 (`--wait`); 0: not at all. */
  waitSeconds: number;
  /** Stack traces with failures (`PINGROLL_DEBUG`). */
  debug: boolean;
  /** S3 is an S3-compatible server at an endpoint override (`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`). */
  s3EndpointOverride: boolean;
  /** How log objects are listed and read from S3 (`PINGROLL_S3_GET`): `lean` (the SDK's signer, credentials, HTTP handler and retries without its per-request middleware) or `sdk` (ListObjectsV2Command and GetObjectCommand). */
  s3Get: 'lean' | 'sdk';
  /** What the rejects keep of the people behind the records (`PINGROLL_PRIVACY`): `keep` the records as read, or `mask` client IPs and requester ARNs (ingest/privacy.ts). */
  privacy: Privacy;
  /** Days a day's rejects are kept after it (`PINGROLL_REJECTS_RETENTION_DAYS`); null: kept for good. */
  rejectsRetentionDays: number | null;
  /** How long a Redshift statement may run before the job cancels it and fails (`PINGROLL_REDSHIFT_WAIT`, minutes; default 30). */
  redshiftWaitMinutes: number;
  /** Days after a month ends that the daily job closes it (`PINGROLL_CLOSE_AFTER_DAYS`, contract §9); null: only `pingroll close` does. */
  closeAfterDays: number | null;
  /** Days the staged pings, parsed keys and run state of a closed month's day are kept after it (`PINGROLL_RETENTION_DAYS`, contract §9); null: kept for good. */
  retentionDays: number | null;
  /** The Glue database whose tables get each published day's partitions (`PINGROLL_GLUE_DATABASE`); needs the output on S3. */
  glueDatabase: string | null;
  /** The secret the viewer datasets' keys are made with (`PINGROLL_VIEWER_KEY`, rollup/viewer-key.ts); null: those datasets get no rows. */
  viewerKey: ViewerKey | null;
  /** The platforms `daily_platform_stats` counts by name (`PINGROLL_PLATFORMS`, normalised); every other, and none, is `unknown`. */
  platforms: readonly string[];
  /** The episode catalog's location (`PINGROLL_EPISODE_CATALOG`, rollup/episode-catalog.ts): a local CSV file or an S3 object; null: completion figures are NULL. */
  episodeCatalog: CatalogLocation | null;
  /** `PINGROLL_CATALOG_ONLY` (`series` or `episodes`; null: off): pings the episode catalog does not list are `invalid_traffic` (rule `not_in_catalog`). */
  catalogOnly: CatalogOnly | null;
  /** The IP-to-country database, an MMDB file (`PINGROLL_GEOIP_DB`, ingest/audience/geo-lookup.ts); null: the one shipped with the release. */
  geoipDb: string | null;
}

/** Where one file is: an S3 object or a local path. */
export type CatalogLocation = { kind: 's3'; bucket: string; key: string; url: string } | { kind: 'file'; path: string; url: string };

/**
 * The settings a command line can give, each declared once: its environment variable, and the
 * `--flag` of the same name (`logs`: `--logs`, `PINGROLL_LOGS`), which overrides it; the flag's
 * argument and help; and which commands take it (`all` that read the configuration, `run` those
 * that ingest or publish: rollup, ingest, backfill, reconcile).
 */
export const SETTINGS = {
  logs: { env: 'PINGROLL_LOGS', arg: '<location>', help: 'where access logs are: s3://bucket/prefix/ or a directory', on: 'all' },
  pingKeys: { env: 'PINGROLL_PING_KEYS', arg: '<keys>', help: 'comma-separated ping object keys', on: 'all' },
  ddbTables: { env: 'PINGROLL_DDB_TABLES', arg: '<template>', help: 'monthly table template, e.g. pings_{yyyy}_{mm}', on: 'all' },
  ddbExports: { env: 'PINGROLL_DDB_EXPORTS', arg: '<location>', help: 'where DynamoDB exports are', on: 'all' },
  output: { env: 'PINGROLL_OUTPUT', arg: '<location>', help: 's3://bucket/prefix/ or a directory', on: 'all' },
  warehouse: { env: 'PINGROLL_WAREHOUSE', arg: '<target>', help: 'duckdb:<file>, redshift or none', on: 'all' },
  memoryLimit: { env: 'PINGROLL_MEMORY_LIMIT', arg: '<size>', help: "DuckDB's memory limit, e.g. 2GB (default 512MB)", on: 'all' },
  threads: { env: 'PINGROLL_THREADS', arg: '<n>', help: "DuckDB's threads (default: one per core)", on: 'all' },
  rollup: { env: 'PINGROLL_ROLLUP', arg: '<engine>', help: 'where a day is rolled up: duckdb (default) or redshift (inside the warehouse)', on: 'run' },
  concurrency: { env: 'PINGROLL_CONCURRENCY', arg: '<n>', help: 'remote log objects fetched at once, at most (default 64; a 64 MB read budget bounds them too)', on: 'run' },
  parseThreads: { env: 'PINGROLL_PARSE_THREADS', arg: '<n>', help: 'threads parsing log objects: a number, 0 for none, or auto (default: with 4 cores or more, one per core but one, for a batch of 32 MB or more; with 2 or 3, one per core for a batch of 4 GiB or more, and one per core but one for a batch of S3 objects from 32 MB)', on: 'run' },
  listMargin: { env: 'PINGROLL_LIST_MARGIN', arg: '<minutes>', help: 'list logs from this long before the latest delivery time seen (default 10)', on: 'run' },
  segments: { env: 'PINGROLL_SEGMENTS', arg: '<n>', help: 'parallel scan segments per table (default 4)', on: 'run' },
  maxRcu: { env: 'PINGROLL_MAX_RCU', arg: '<n>', help: 'read capacity units per second for table scans, at most', on: 'run' },
  days: { env: 'PINGROLL_DAYS', arg: '<n>', help: 'days a backfill rolls up at once (default 2)', on: 'run' },
  wait: { env: 'PINGROLL_WAIT', arg: '<seconds>', help: "wait this long for another run's lock (default: fail at once)", on: 'run' },
  dedupeDays: { env: 'PINGROLL_DEDUPE_DAYS', arg: '<days>', help: 'how far apart by event time two records with one ping id may be and still be one ping (default 30; 0: a day alone)', on: 'all' },
} as const satisfies Record<string, { env: string; arg: string; help: string; on: 'all' | 'run' }>;

export type SettingName = keyof typeof SETTINGS;

/** `parseThreads` as `--parse-threads`. */
export function flagOf(name: SettingName): string {
  return `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** The `--flag` values given on the command line; each overrides its environment variable. */
export type ConfigFlags = { [K in SettingName]?: string | undefined };

export const DEFAULTS = {
  logs: './data/logs',
  pingKeys: 'p.gif',
  ddbTables: '',
  ddbExports: '',
  output: './data/out',
  warehouse: 'duckdb:./data/warehouse.duckdb',
  memoryLimit: '512MB',
  concurrency: 64,
  parseThreads: 'auto',
  listMarginMinutes: 10,
  segments: 4,
  parallelDays: 2,
  dedupeDays: 30,
} as const;

/** Every setting at its default: what tests and benchmarks run with. */
export function defaultConfig(): Config {
  return loadConfig({});
}

export function loadConfig(env: NodeJS.ProcessEnv, flags: ConfigFlags = {}): Config {
  // A flag given, else its environment variable (an empty one counts as unset).
  const given = (name: SettingName): string | undefined => flags[name] ?? (env[SETTINGS[name].env] || undefined);
  const pick = (name: SettingName, dflt: string): string => given(name) ?? dflt;
  /** How a bad value is named in messages: the flag when one was given, else the variable. */
  const said = (name: SettingName): string => (flags[name] !== undefined ? flagOf(name) : SETTINGS[name].env);
  const number = (name: SettingName, dflt: number, min: number, max: number): number => wholeNumber(given(name), dflt, said(name), min, max);
  const threads = given('parseThreads');
  const config: Config = {
    logs: parseLocation(pick('logs', DEFAULTS.logs), 'PINGROLL_LOGS'),
    pingKeys: parsePingKeys(pick('pingKeys', DEFAULTS.pingKeys)),
    ddbTables: parseTableTemplate(pick('ddbTables', DEFAULTS.ddbTables)),
    ddbExports: optionalLocation(pick('ddbExports', DEFAULTS.ddbExports), 'PINGROLL_DDB_EXPORTS'),
    output: parseLocation(pick('output', DEFAULTS.output), 'PINGROLL_OUTPUT'),
    warehouse: parseWarehouse(pick('warehouse', DEFAULTS.warehouse)),
    redshift: null,
    rollup: parseRollup(pick('rollup', 'duckdb')),
    memoryLimitMb: parseMemoryLimit(pick('memoryLimit', DEFAULTS.memoryLimit)),
    threads: given('threads') === undefined ? null : number('threads', 1, 1, 1024),
    concurrency: number('concurrency', DEFAULTS.concurrency, 1, 1024),
    parseThreads: threads === undefined || threads === 'auto' ? DEFAULTS.parseThreads : wholeNumber(threads, 0, said('parseThreads'), 0, 64),
    listMarginMs: number('listMargin', DEFAULTS.listMarginMinutes, 0, 7 * 24 * 60) * 60_000,
    schedule: {
      afterMs: reconcileAfter(env.PINGROLL_RECONCILE_AFTER),
      lateDays: env.PINGROLL_LATE_DAYS ? wholeNumber(env.PINGROLL_LATE_DAYS, 0, 'PINGROLL_LATE_DAYS', 0, 14) : DEFAULT_SCHEDULE.lateDays,
    },
    segments: number('segments', DEFAULTS.segments, 1, 1000),
    maxRcu: positiveOrNull(given('maxRcu'), said('maxRcu')),
    parallelDays: number('days', DEFAULTS.parallelDays, 1, 16),
    dedupeDays: number('dedupeDays', DEFAULTS.dedupeDays, 0, 366),
    waitSeconds: seconds(given('wait'), said('wait')),
    debug: debugFrom(env),
    s3EndpointOverride: Boolean(env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL),
    s3Get: s3GetFrom(env.PINGROLL_S3_GET),
    glueDatabase: env.PINGROLL_GLUE_DATABASE || null,
    privacy: privacyFrom(env.PINGROLL_PRIVACY),
    viewerKey: viewerKeyFrom(env.PINGROLL_VIEWER_KEY),
    platforms: platformsFrom(env.PINGROLL_PLATFORMS),
    episodeCatalog: catalogLocationFrom(env.PINGROLL_EPISODE_CATALOG),
    catalogOnly: catalogOnlyFrom(env.PINGROLL_CATALOG_ONLY),
    geoipDb: geoipDbFrom(env.PINGROLL_GEOIP_DB),
    rejectsRetentionDays: env.PINGROLL_REJECTS_RETENTION_DAYS ? wholeNumber(env.PINGROLL_REJECTS_RETENTION_DAYS, 0, 'PINGROLL_REJECTS_RETENTION_DAYS', 1, 36_500) : null,
    redshiftWaitMinutes: env.PINGROLL_REDSHIFT_WAIT ? wholeNumber(env.PINGROLL_REDSHIFT_WAIT, 30, 'PINGROLL_REDSHIFT_WAIT', 1, 1440) : 30,
    closeAfterDays: env.PINGROLL_CLOSE_AFTER_DAYS ? wholeNumber(env.PINGROLL_CLOSE_AFTER_DAYS, 0, 'PINGROLL_CLOSE_AFTER_DAYS', 1, 3_650) : null,
    retentionDays: env.PINGROLL_RETENTION_DAYS ? wholeNumber(env.PINGROLL_RETENTION_DAYS, 0, 'PINGROLL_RETENTION_DAYS', 1, 36_500) : null,
  };
  if (config.warehouse.kind === 'redshift') {
    // Redshift COPY reads the day's Parquet from S3: a directory output cannot feed it.
    if (config.output.kind !== 's3') {
      throw new ConfigError(`PINGROLL_WAREHOUSE=redshift needs PINGROLL_OUTPUT on S3 (s3://bucket/prefix/), since COPY reads the Parquet from there; it is ${config.output.url}`);
    }
    config.redshift = parseRedshift(env);
  }
  if (config.glueDatabase !== null && (config.output.kind !== 's3' || !/^[a-z0-9_]{1,255}$/.test(config.glueDatabase))) {
    throw new ConfigError(config.output.kind !== 's3'
      ? `PINGROLL_GLUE_DATABASE needs PINGROLL_OUTPUT on S3 (the catalog's partitions point at the published files); it is ${config.output.url}`
      : `PINGROLL_GLUE_DATABASE='${config.glueDatabase}' must be a Glue database name (lower-case letters, digits, _)`);
  }
  if (config.catalogOnly && !config.episodeCatalog) {
    throw new ConfigError(`PINGROLL_CATALOG_ONLY=${config.catalogOnly} keeps pings to the episode catalog, and PINGROLL_EPISODE_CATALOG names none; set it, or unset PINGROLL_CATALOG_ONLY`);
  }
  if (config.rollup === 'redshift' && config.warehouse.kind !== 'redshift') {
    throw new ConfigError('PINGROLL_ROLLUP=redshift needs PINGROLL_WAREHOUSE=redshift: the rollup runs inside the warehouse');
  }

  return config;
}

function parseRollup(value: string): Config['rollup'] {
  if (value === 'duckdb' || value === 'redshift') return value;
  throw new ConfigError(`PINGROLL_ROLLUP (--rollup) '${value}' is not one of duckdb (the default), redshift`);
}

/** Whether failures print stack traces (`PINGROLL_DEBUG`); readable before the rest of the configuration. */
export function debugFrom(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.PINGROLL_DEBUG);
}

function wholeNumber(value: string | undefined, dflt: number, flag: string, min: number, max: number): number {
  if (value === undefined) return dflt;
  const n = Number(value);
  if (!(Number.isInteger(n) && n >= min && n <= max)) throw new ConfigError(`${flag}=${value} must be a whole number from ${min} to ${max}`);
  return n;
}

function positiveOrNull(value: string | undefined, name: string): number | null {
  if (value === undefined) return null;
  const n = Number(value);
  if (!(n > 0)) throw new ConfigError(`${name}=${value} must be a positive number of read capacity units per second`);
  return n;
}

/** How long a run waits for another's lock: a number of seconds, 0 (fail at once) when unset. */
function seconds(value: string | undefined, name: string): number {
  if (value === undefined) return 0;
  const n = Number(value);
  if (!(value.trim() !== '' && n >= 0 && n <= 86_400)) throw new ConfigError(`${name}=${value} must be a number of seconds from 0 to 86400`);
  return n;
}

const UNITS: Record<string, number> = { kb: 1e-3, mb: 1, gb: 1e3, tb: 1e6, kib: 1.024e-3, mib: 1.048576, gib: 1073.741824, tib: 1099511.627776 };

/** `2GB`, `512MB`, `1.5GiB` as MB (DuckDB's units: GB is 10^9 bytes, GiB 2^30). */
function parseMemoryLimit(value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b)\s*$/i.exec(value);
  const mb = m ? Math.floor(Number(m[1]) * UNITS[m[2]!.toLowerCase()]!) : NaN;
  if (!(mb >= 64)) throw new ConfigError(`PINGROLL_MEMORY_LIMIT='${value}' must be a size of at least 64MB, such as 2GB or 512MB`);
  return mb;
}

function parseRedshift(env: NodeJS.ProcessEnv): RedshiftConfig {
  const v = (name: string): string | null => (env[name]?.trim() ? env[name]!.trim() : null);
  const workgroup = v('PINGROLL_REDSHIFT_WORKGROUP'), cluster = v('PINGROLL_REDSHIFT_CLUSTER');
  const dbUser = v('PINGROLL_REDSHIFT_DB_USER'), secretArn = v('PINGROLL_REDSHIFT_SECRET_ARN');
  if (Boolean(workgroup) === Boolean(cluster)) {
    throw new ConfigError('PINGROLL_WAREHOUSE=redshift needs exactly one of PINGROLL_REDSHIFT_WORKGROUP (Serverless) or PINGROLL_REDSHIFT_CLUSTER');
  }
  if (cluster && !dbUser && !secretArn) {
    throw new ConfigError('PINGROLL_REDSHIFT_CLUSTER needs PINGROLL_REDSHIFT_DB_USER (temporary credentials) or PINGROLL_REDSHIFT_SECRET_ARN');
  }
  const database = v('PINGROLL_REDSHIFT_DATABASE');
  if (!database) throw new ConfigError('PINGROLL_WAREHOUSE=redshift needs PINGROLL_REDSHIFT_DATABASE');
  const iamRole = v('PINGROLL_REDSHIFT_IAM_ROLE');
  if (!iamRole || !/^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/.test(iamRole)) {
    throw new ConfigError(`PINGROLL_REDSHIFT_IAM_ROLE must be the ARN of the role Redshift assumes for COPY (arn:aws:iam::<account>:role/<name>); it is '${iamRole ?? ''}'`);
  }
  const schema = v('PINGROLL_REDSHIFT_SCHEMA') ?? 'pingroll';
  if (!/^[a-z_][a-z0-9_]{0,126}$/.test(schema)) throw new ConfigError(`PINGROLL_REDSHIFT_SCHEMA='${schema}' must be a lowercase identifier`);
  return { target: workgroup ? { workgroup } : { cluster: cluster!, dbUser }, database, secretArn, schema, iamRole };
}

/** An S3 bucket's name: 3-63 lowercase letters, digits, dots and hyphens. */
const S3_BUCKET = '[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]';
/** A URL of any scheme (`s3://`, `https://`, ...). */
const URL_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

export function parseLocation(value: string, name: string): Location {
  const v = value.trim();
  if (v === '') throw new ConfigError(`${name} is empty; set it to s3://bucket/prefix/ or a directory`);
  if (/^s3:\/\//i.test(v)) {
    const m = new RegExp(`^s3://(${S3_BUCKET})(?:/(.*))?$`).exec(v);
    if (!m) throw new ConfigError(`${name}=${value} is not a valid s3://bucket/prefix/ (bucket names are 3-63 lowercase letters, digits, dots and hyphens)`);
    let prefix = m[2] ?? '';
    if (prefix !== '' && !prefix.endsWith('/')) prefix += '/';
    return { kind: 's3', bucket: m[1]!, prefix, url: `s3://${m[1]}/${prefix}` };
  }
  if (URL_SCHEME.test(v)) {
    throw new ConfigError(`${name}=${value}: only s3:// URLs and directories are supported`);
  }
  // The url ends in / as an S3 prefix does: keys join to it as they are.
  return { kind: 'dir', path: v, url: v.endsWith('/') ? v : `${v}/` };
}

/** PINGROLL_CATALOG_ONLY: `series` or `episodes`; empty or unset: off. */
function catalogOnlyFrom(value: string | undefined): CatalogOnly | null {
  const v = value?.trim() ?? '';
  if (v === '') return null;
  if (!(CATALOG_ONLY as readonly string[]).includes(v)) throw new ConfigError(`PINGROLL_CATALOG_ONLY=${v.slice(0, 40)} is not one of ${CATALOG_ONLY.join(', ')} (or empty: every series counts)`);
  return v as CatalogOnly;
}

/** PINGROLL_EPISODE_CATALOG: an S3 object's URL or a local file's path; empty or unset: none. */
function catalogLocationFrom(value: string | undefined): CatalogLocation | null {
  const v = value?.trim() ?? '';
  if (v === '') return null;
  if (/^s3:\/\//i.test(v)) {
    const m = new RegExp(`^s3://(${S3_BUCKET})/(.*[^/])$`).exec(v);
    if (!m) throw new ConfigError(`PINGROLL_EPISODE_CATALOG=${value} is not an S3 object's URL (s3://bucket/key.csv, the key not ending in /)`);
    return { kind: 's3', bucket: m[1]!, key: m[2]!, url: v };
  }
  if (URL_SCHEME.test(v)) throw new ConfigError(`PINGROLL_EPISODE_CATALOG=${value}: only s3:// URLs and local files are supported`);
  return { kind: 'file', path: v, url: v };
}

function optionalLocation(value: string, name: string): Location | null {
  return value.trim() === '' ? null : parseLocation(value, name);
}

function parsePingKeys(value: string): string[] {
  const keys = value.split(',').map((k) => k.trim().replace(/^\/+/, '')).filter((k) => k !== '');
  if (keys.length === 0) throw new ConfigError(`PINGROLL_PING_KEYS='${value}' names no key; set it to a comma-separated list such as p.gif`);
  return keys;
}

function parseTableTemplate(value: string): string | null {
  const v = value.trim();
  if (v === '') return null;
  if (!v.includes('{yyyy}') || !v.includes('{mm}')) {
    throw new ConfigError(`PINGROLL_DDB_TABLES='${value}' must contain {yyyy} and {mm} (e.g. pings_{yyyy}_{mm})`);
  }
  if (!/^[a-zA-Z0-9_.{}-]+$/.test(v)) {
    throw new ConfigError(`PINGROLL_DDB_TABLES='${value}' has characters a DynamoDB table name cannot hold`);
  }
  return v;
}

function parseWarehouse(value: string): WarehouseTarget {
  const v = value.trim();
  if (v === 'none') return { kind: 'none' };
  if (v === 'redshift') return { kind: 'redshift' };
  if (v.startsWith('duckdb:') && v.length > 'duckdb:'.length) return { kind: 'duckdb', file: v.slice('duckdb:'.length) };
  throw new ConfigError(`PINGROLL_WAREHOUSE='${value}' is not one of duckdb:<file>, redshift, none`);
}

/**
 * A day that is over: today's (and later) logs are still arriving, so it cannot be rolled up yet.
 * `name` and `example` as for parseDay.
 */
export function pastDay(value: string | undefined, name = 'DATE', example?: string, now = new Date()): string {
  const day = parseDay(value, name, example);
  const today = now.toISOString().slice(0, 10);
  if (day >= today) {
    throw new ConfigError(`${name}=${day} is ${day === today ? 'today' : 'in the future'}: its logs are still arriving; the last day that can be rolled up is ${addDays(today, -1)}`);
  }
  return day;
}

/**
 * `YYYY-MM-DD`, a real calendar day. `name` is the setting as the message names it (`--date`);
 * `example`, how to give it right, every way a command is called (`pingroll rollup --date
 * 2026-11-01, or make rollup DATE=2026-11-01`): by default `name` with a day.
 */
export function parseDay(value: string | undefined, name = 'DATE', example = `${name}${name.startsWith('--') ? ' ' : '='}2026-11-01`): string {
  if (value === undefined || value === '') throw new ConfigError(`${name} is missing; give it as YYYY-MM-DD (e.g. ${example})`);
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(value) ? Date.parse(value + 'T00:00:00Z') : NaN;
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) {
    throw new ConfigError(`${name}=${value} is not a day; give it as YYYY-MM-DD (e.g. ${example})`);
  }
  return value;
}

/**
 * The shard `pingroll ingest` is (ingest/batch/shard.ts): `--shard I/N`; else the environment's, when
 * it runs as a child of an AWS Batch array job (AWS_BATCH_JOB_ARRAY_INDEX and AWS_BATCH_JOB_ARRAY_SIZE,
 * both set by Batch) or as a Kubernetes indexed Job (JOB_COMPLETION_INDEX, set by Kubernetes, with
 * PINGROLL_SHARDS set by the Job to its `completions`: Kubernetes does not pass that on); else none.
 */
export function shardFrom(flag: string | undefined, env: NodeJS.ProcessEnv): Shard | null {
  if (flag !== undefined) return parseShard(flag);
  return shardFromEnv(env);
}

/** `I/N`, 0 <= I < N. */
function parseShard(text: string, what = '--shard'): Shard {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  const shard = m ? { index: Number(m[1]), count: Number(m[2]) } : null;
  if (!shard || shard.count < 1 || shard.count > MAX_SHARDS || shard.index >= shard.count) {
    throw new ConfigError(`${what}=${text} is not a shard; give it as I/N, with N from 1 to ${MAX_SHARDS} and I from 0 to N-1 (e.g. 0/8)`);
  }
  return shard;
}

/** The shard the environment names (AWS Batch array job, Kubernetes indexed Job), or null when it names none. */
function shardFromEnv(env: NodeJS.ProcessEnv): Shard | null {
  const batchIndex = env.AWS_BATCH_JOB_ARRAY_INDEX;
  if (batchIndex !== undefined && batchIndex !== '') {
    const size = env.AWS_BATCH_JOB_ARRAY_SIZE ?? env.PINGROLL_SHARDS;
    if (!size) throw new ConfigError('AWS_BATCH_JOB_ARRAY_INDEX is set but AWS_BATCH_JOB_ARRAY_SIZE is not: run the ingest as an array job, or give --shard I/N');
    return parseShard(`${batchIndex}/${size}`, 'AWS_BATCH_JOB_ARRAY_INDEX/AWS_BATCH_JOB_ARRAY_SIZE');
  }
  const k8sIndex = env.JOB_COMPLETION_INDEX;
  if (k8sIndex !== undefined && k8sIndex !== '') {
    if (!env.PINGROLL_SHARDS) throw new ConfigError('JOB_COMPLETION_INDEX is set but PINGROLL_SHARDS is not: set it to the indexed Job\'s completions, or give --shard I/N');
    return parseShard(`${k8sIndex}/${env.PINGROLL_SHARDS}`, 'JOB_COMPLETION_INDEX/PINGROLL_SHARDS');
  }
  return null;
}

const DURATION_UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `PINGROLL_RECONCILE_AFTER`: when each delivery day is listed in full after it ends, as durations
 * (`30m`, `2h`, `1d`), ascending, at most 30 days; unset or empty, the default (2h,1d,3d).
 */
function reconcileAfter(value: string | undefined): number[] {
  if (value === undefined || value.trim() === '') return [...DEFAULT_SCHEDULE.afterMs];
  const out: number[] = [];
  for (const part of value.split(',').map((v) => v.trim())) {
    const m = /^(\d{1,5})([mhd])$/.exec(part);
    const ms = m ? Number(m[1]) * DURATION_UNITS[m[2]!]! : NaN;
    if (!(ms > 0 && ms <= 30 * DURATION_UNITS.d!) || (out.length && ms <= out[out.length - 1]!)) {
      throw new ConfigError(`PINGROLL_RECONCILE_AFTER='${value}' must be durations after a delivery day ends, ascending, each a number and m, h or d, up to 30d (e.g. 2h,1d,3d)`);
    }
    out.push(ms);
  }
  return out;
}

function s3GetFrom(value: string | undefined): 'lean' | 'sdk' {
  if (value === undefined || value === '' || value === 'lean') return 'lean';
  if (value === 'sdk') return 'sdk';
  throw new ConfigError(`PINGROLL_S3_GET='${value}' must be lean or sdk`);
}

/** At most this many platforms by name: a day's table has at most this many rows, plus `unknown`, per series. */
const MAX_PLATFORMS = 64;

function platformsFrom(value: string | undefined): readonly string[] {
  if (value === undefined || value.trim() === '') return DEFAULT_PLATFORMS;
  const names = value.split(',').map((v) => v.trim()).filter((v) => v !== '');
  if (names.length === 0) throw new ConfigError(`PINGROLL_PLATFORMS='${value.slice(0, 40)}' names no platform; unset it for the defaults, or name some, e.g. PINGROLL_PLATFORMS=web,ios,android`);
  const platforms: string[] = [];
  for (const name of names) {
    const p = normalizePlatform(name);
    if (p === null || p === 'unknown') throw new ConfigError(`PINGROLL_PLATFORMS: '${name.slice(0, 40)}' is not a platform name (letters and digits, at most ${MAX_PLATFORM_CHARS}; not 'unknown'), e.g. PINGROLL_PLATFORMS=web,ios,android`);
    if (!platforms.includes(p)) platforms.push(p);
  }
  if (platforms.length > MAX_PLATFORMS) throw new ConfigError(`PINGROLL_PLATFORMS names ${platforms.length} platforms; at most ${MAX_PLATFORMS}`);
  return platforms;
}

function viewerKeyFrom(value: string | undefined): ViewerKey | null {
  if (!value) return null;
  // The value itself is never repeated in a message: it is a secret.
  if (!VIEWER_SECRET.test(value)) throw new ConfigError(`PINGROLL_VIEWER_KEY must be 16 to 256 characters of A-Z a-z 0-9 _ + / = . : - (e.g. openssl rand -base64 32); the one set is ${value.length} characters`);
  return viewerKey(value);
}

function privacyFrom(value: string | undefined): Privacy {
  if (value === undefined || value === '' || value === 'keep') return 'keep';
  if (value === 'mask') return 'mask';
  throw new ConfigError(`PINGROLL_PRIVACY='${value}' must be keep (rejects keep records as read) or mask (client IPs cut to their network, requester ARNs dropped)`);
}

/** PINGROLL_GEOIP_DB: a local MMDB file's path (opened when a log is first parsed, with a clear error if it cannot be); empty or unset: the shipped one. */
function geoipDbFrom(value: string | undefined): string | null {
  const v = value?.trim();
  if (!v) return null;
  if (URL_SCHEME.test(v)) throw new ConfigError(`PINGROLL_GEOIP_DB=${value}: give a local file's path (an MMDB database, copied beside the job)`);
  return v;
}
