/**
 * The output's layout, declared once: every folder and file pingroll keeps beside the published
 * datasets (whose own folders, `<table>/dt=<day>/`, follow from datasets/registry.ts), what lives
 * there and which module owns it. Every module that names one of these keys, the deployment's
 * lifecycle rules among them, takes it from here. (A few are still written or deleted by modules
 * other than their owner: issue #55.)
 *
 * Four folders beside the tables':
 * - `_state/`: what pingroll remembers between runs (the ledger, the listing, the lock, closes...);
 * - `_staging/`: the pings and rejects each batch or table scan staged;
 * - `_runs/`: what each run published beside the tables (a day's manifest and rejects);
 * - `_warehouse-rollup/`: what a rollup inside Redshift keeps while it runs.
 *
 * No imports: the CDK app (deploy/, a package of its own) reads this file as it is.
 */

/** pingroll's own state: nothing under it is published. */
export const STATE = '_state/';
/** Staged pings and rejects: `_staging/<batch or scan>/dt=<day>/...` (`stagingPrefix`). */
export const STAGING = '_staging/';
/** What each run published beside the tables: a day's manifest and rejects, and the rejects of no day or of expired days. */
export const RUNS = '_runs/';
/**
 * Where a day or month rolled up inside Redshift keeps its files while it runs (COPY manifests, the
 * UNLOADed files, the viewer key's secret), `<run>/dt=<day>/` or `<run>/month=<month>.<zone>/`:
 * written by rollup/engines/redshift/, each run removing its own; what a dead run left goes with the
 * next run's leftovers (state/leftovers.ts), or by the deployment's lifecycle rule after a day.
 */
export const WAREHOUSE_ROLLUP = '_warehouse-rollup/';

// The ledger (state/ledger.ts): which log objects were parsed, and what their batches staged.

/** Batch commits not compacted yet, `<batch>.json`: the commit point of a batch (state/ledger.ts). */
export const BATCHES = '_state/batches/';
/** Keys parsed, by delivery day and batch: `<delivery day>/<batch>.<slices>.keys` (state/ledger.ts; retention removes expired days'). */
export const PARSED = '_state/parsed/';
/** What each batch staged for each day of records: `dt=<day>/<batch>.json` and its `<batch>.objects.gz` (state/ledger.ts). */
export const DAYS = '_state/days/';
/** Staging under way: `<batch or scan>.json`, one a batch or scan until it is committed, or found dead and removed (state/ledger.ts). */
export const INTENTS = '_state/intents/';
/** DynamoDB table reads, `<table>/<scan>.json`: only a table's latest complete reading counts (state/ledger.ts). */
export const SCANS = '_state/scans/';
/** The ledger's format (state/ledger.ts); an output without it is format 1. */
export const FORMAT_KEY = '_state/format.json';

/** Where a batch or scan stages its files (written by ingest/batch/, committed and tidied by the ledger). */
export function stagingPrefix(id: string): string {
  return `${STAGING}${id}/`;
}

/** Each batch's entry for a day of records, and its list of inputs (state/ledger.ts, which drops a too-late batch's when the adjustments stage asks; retention still removes expired days'). */
export function dayEntriesPrefix(day: string): string {
  return `${DAYS}dt=${day}/`;
}

// What the listers know of the logs.

/** A lister's state: where its next listing starts, which delivery days it follows (ingest/listing/listing-state.ts). */
export const LISTING_KEY = '_state/listing.json';
/** Each shard's listing state, `<I>-of-<N>.json` (ingest/listing/listing-state.ts, which drops them when the ledger's migration from format 1 asks). */
export const LISTING_SHARDS = '_state/listing-shards/';
/** Seals of slices the listing window has left, `<day>/<slice>.<count>.<digest>` (ingest/listing/seals.ts; retention removes expired days'). */
export const SEALS = '_state/seals/';
/** The delivery days whose parsed keys and seals retention deleted: never listed or read again (state/retention.ts). */
export const EXPIRED_DELIVERY_DAYS = '_state/expired-delivery-days.json';
/** Log objects that could not be read, and whether an operator accepted them as lost (state/quarantine.ts). */
export const QUARANTINE_KEY = '_state/quarantine.json';
/** A sharded ingest's quarantines, `<I>-of-<N>.json`, folded into QUARANTINE_KEY by the next run that holds the output alone (state/quarantine.ts). */
export const QUARANTINE_SHARDS = '_state/quarantine-shards/';

// The run lock, and what runs keep for themselves.

/** The run lock's generations, `<n>.json` (state/run-lock.ts). */
export const LOCK_PREFIX = '_state/lock/';
/** A sharded ingest's locks, one a shard: `<I>-of-<N>/<n>.json` (state/run-lock.ts). */
export const SHARD_LOCKS = '_state/shard-locks/';
/** When a day was last checked, `dt=<day>.json` (state/checks.ts). */
export const CHECKS = '_state/checks/';
/** The empty object an S3 output's check writes and deletes at once, then a random name (state/object-store/s3-object-store.ts). */
export const WRITE_PROBE = '_state/probe-';
/** The embedded default's viewer key, readable by its owner only (infra/generated-viewer-key.ts). */
export const VIEWER_KEY_FILE = '_state/viewer-key';

// Publishing.

/** Publications under way: a journal `<name>.json` and the files it stages under `<name>/<run>/` (export/publish-journal.ts). */
export const PUBLISH_PREFIX = '_state/publish/';
/** Days published as not yet complete, `dt=<day>`, an empty marker each (export/publisher.ts). */
export const UNSETTLED = '_state/unsettled/';
/** COPY manifests of published files with no staged file beside them, `<day>/<table>.manifest` (export/warehouse/redshift/). */
export const LOAD_MANIFESTS = '_state/load-manifests/';

/** A published day's run manifest (export/manifest.ts), written last when the day is published. */
export function dayManifestKey(day: string): string {
  return `${RUNS}dt=${day}/manifest.json`;
}

/** A published day's rejects (export/day-rejects.ts), published with the day, expired by export/rejects-retention.ts. */
export function dayRejectsKey(day: string): string {
  return `${RUNS}dt=${day}/rejects.jsonl.gz`;
}

/** The rejects of records of no day, `<batch>.jsonl.gz` beside its counts `<batch>.json` (jobs/stages/undated.ts; expired by export/rejects-retention.ts). */
export const UNDATED_REJECTS = '_runs/undated/';

/** The tags rejects are written with (a day's, of no day, too late): the deployment's S3 lifecycle rule expires them by these (deploy/lib/pingroll-stack.ts). */
export const REJECTS_TAGS = { 'pingroll-kind': 'rejects' };

// Closed months (contract §9).

/** A closed month's record, `<month>.<zone>.json`: its versions, and which inputs each day it covers counted (state/closes.ts). */
export const CLOSES = '_state/closes/';
/** Days of closed months that batches staged records for since their adjustments were made, `dt=<day>` (state/closes.ts: marked before a batch's commit by state/batch-writer.ts, cleared by the adjustments stage). */
export const LATE = '_state/late/';
/** A reopen under way, `<month>.<zone>.json`, until its version is published (state/reopens.ts: begun and finished by jobs/stages/close.ts). */
export const REOPENING = '_state/reopening/';
/** Pieces of adjustments, `<reported month>/<closed month>.<zone>/dt=<day>.parquet` and `.json` (state/adjustments.ts: made by the adjustments stage, cleared when a close of the reported month asks). */
export const ADJUSTMENTS = '_state/adjustments/';
/** Records of expired days, counted nowhere: `dt=<day>/<batch>.jsonl.gz` and `.json` (jobs/stages/adjust.ts). */
export const TOO_LATE = '_runs/too_late/';
/** Days of closed months being expired, `dt=<day>`, an empty marker each, until their files are gone (state/retention.ts). */
export const EXPIRING = '_state/expiring/';

// The ping-id window (contract §4, rollup/ping-window.ts).

/** Each rolled-up day's ping ids, `dt=<day>/<run>.parquet`, the one its manifest names (state/ping-ids.ts: put before the manifest, the day's others removed after it). */
export const PING_IDS = '_state/ping-ids/';
/** Published days that another day's publication made stale (ping ids they hold were counted otherwise since), `dt=<day>.json` (state/ping-ids.ts). */
export const WINDOW_STALE = '_state/window-stale/';
