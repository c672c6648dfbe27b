/**
 * A shard of an ingest: `pingroll ingest --shard I/N` parses the new log objects of the slices it owns
 * (the ten minutes of delivery time whose number is I modulo N, ingest/listing/slices.ts) and commits them as its
 * own batches. N shards of one ingest share nothing but the output's state: each lists only its own
 * slices, reads only their state, and saves its own listing state (ingest/listing/listing-state.ts) and
 * quarantine (state/quarantine.ts), so that one shard that fails costs the others nothing.
 *
 * I and N come from the flag or from the environment of the engine running the shards (infra/config.ts,
 * `shardFrom`).
 */
import { shardOfKey, type Reach, type Shard } from '../listing/slices.js';

export type { Shard };

/** At most this many shards (AWS Batch's largest array). */
export const MAX_SHARDS = 10_000;

/** The shard a log object's key belongs to among `count`: the owner of its slice (ingest/listing/slices.ts). */
export const shardOf = shardOfKey;

/** Whether `shard` owns `key`; `reach`, when the caller has it (`reachOf`), is not worked out again. */
export function owns(shard: Shard | null | undefined, key: string, reach?: Reach | null): boolean {
  return !shard || shardOf(key, shard.count, reach) === shard.index;
}

/** `3/8`: how a shard is written on the command line and in messages. */
export function shardText(shard: Shard): string {
  return `${shard.index}/${shard.count}`;
}

/** `3-of-8`: how a shard names its state and lock. */
export function shardName(shard: Shard): string {
  return `${shard.index}-of-${shard.count}`;
}
