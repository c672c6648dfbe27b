/**
 * Reads a whole table with a parallel Scan (the random shard token makes key queries useless):
 * `segments` segments read at once, page by page, eventually consistent, each page's consumed
 * capacity counted. Throttling is absorbed twice: the SDK's adaptive retry first, then our own loop
 * with exponential backoff and full jitter for whatever the SDK gives up on. An optional read budget
 * (`maxRcu` per second, a token bucket charged with what each page consumed) keeps a backfill from
 * starving a live table.
 */
import { ScanCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import PQueue from 'p-queue';
import type { Item } from './item-rules.js';
import type { ItemSource } from './item-source.js';
import type { TablePart } from '../../state/ledger.js';

export interface ScanOptions {
  client: DynamoDBClient;
  table: string;
  /** Parallel scan segments (TotalSegments). */
  segments: number;
  /** The segments to read, when this process reads a share of the table (a shard); all of them when absent. */
  only?: number[] | undefined;
  /** Read capacity units per second, at most; none when absent. */
  maxRcu?: number;
  /** Called with every page's items, in no particular order across segments. */
  onItems: (items: Item[]) => void;
  /** Attempts of our own after the SDK's, for a throttled page. */
  throttleAttempts?: number;
  /** Backoff base and cap in ms (full jitter: a random wait up to min(cap, base * 2^attempt)). */
  backoff?: { baseMs: number; capMs: number };
  onThrottle?: (segment: number, attempt: number, waitMs: number) => void;
  /** Items per page at most (Scan's Limit); DynamoDB's own page limit of 1 MB applies regardless. */
  pageLimit?: number;
  /** The clock the backoff and the read budget wait on; tests give a simulated one. */
  clock?: Clock;
}

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const realClock: Clock = { now: () => Date.now(), sleep: (ms) => new Promise<void>((r) => setTimeout(r, ms)) };

export interface ScanResult {
  items: number;
  pages: number;
  consumedCapacity: number;
  /** Pages that were throttled past the SDK's retries and retried by us. */
  throttledRetries: number;
}

const THROTTLING = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded']);

/** A token bucket of read capacity: `rate` per second, as many at most. Pages are charged after the fact. */
export class ReadBudget {
  private tokens: number;
  private last: number;

  constructor(private readonly rate: number, private readonly clock: Clock = realClock) {
    this.tokens = rate;
    this.last = clock.now();
  }

  /** Waits until the bucket is not in debt. */
  async acquire(): Promise<void> {
    for (;;) {
      const now = this.clock.now();
      this.tokens = Math.min(this.rate, this.tokens + ((now - this.last) / 1000) * this.rate);
      this.last = now;
      if (this.tokens > 0) return;
      await this.clock.sleep(Math.ceil((-this.tokens / this.rate) * 1000) + 1);
    }
  }

  charge(units: number): void {
    this.tokens -= units;
  }
}

export async function scanTable(opts: ScanOptions): Promise<ScanResult> {
  const { segments } = opts;
  const clock = opts.clock ?? realClock;
  const budget = opts.maxRcu ? new ReadBudget(opts.maxRcu, clock) : null;
  const { baseMs, capMs } = opts.backoff ?? { baseMs: 100, capMs: 20_000 };
  const attempts = opts.throttleAttempts ?? 8;
  const result: ScanResult = { items: 0, pages: 0, consumedCapacity: 0, throttledRetries: 0 };
  const mine = opts.only ?? Array.from({ length: segments }, (_, i) => i);
  const queue = new PQueue({ concurrency: Math.max(1, mine.length) });
  let failure: unknown = null;

  const page = async (segment: number, start: Item | undefined) => {
    for (let attempt = 0; ; attempt++) {
      await budget?.acquire();
      try {
        return await opts.client.send(new ScanCommand({
          TableName: opts.table, Segment: segment, TotalSegments: segments, ExclusiveStartKey: start,
          ConsistentRead: false, ReturnConsumedCapacity: 'TOTAL', Limit: opts.pageLimit,
        }));
      } catch (err) {
        const name = (err as { name?: string }).name ?? '';
        if (!THROTTLING.has(name) || attempt + 1 >= attempts) throw err;
        const wait = Math.floor(Math.random() * Math.min(capMs, baseMs * 2 ** attempt));
        result.throttledRetries++;
        opts.onThrottle?.(segment, attempt + 1, wait);
        await clock.sleep(wait);
      }
    }
  };

  for (const segment of mine) {
    queue.add(async () => {
      let start: Item | undefined;
      do {
        const r = await page(segment, start);
        const units = r.ConsumedCapacity?.CapacityUnits ?? 0;
        budget?.charge(units);
        result.consumedCapacity += units;
        result.pages++;
        const items = (r.Items ?? []) as Item[];
        result.items += items.length;
        opts.onItems(items);
        start = r.LastEvaluatedKey as Item | undefined;
      } while (start);
    }).catch((err: unknown) => {
      failure ??= err;
      queue.clear();
    });
  }
  await queue.onIdle();
  if (failure) throw failure;
  return result;
}

/** A table's items through a parallel Scan. */
export class ScanItemSource implements ItemSource {
  readonly exportArn = null;

  constructor(private readonly opts: Omit<ScanOptions, 'onItems'>) {}

  get part(): TablePart | null {
    return this.opts.only ? { of: this.opts.segments, parts: this.opts.only } : null;
  }

  get details(): Record<string, unknown> {
    return { segments: this.opts.segments, ...(this.opts.only ? { reading: this.opts.only } : {}), maxRcu: this.opts.maxRcu ?? null };
  }

  read(onItems: (items: Item[]) => void): Promise<ScanResult> {
    return scanTable({ ...this.opts, onItems });
  }
}
