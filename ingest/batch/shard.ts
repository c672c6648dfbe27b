/**
 * A shard of an ingest: `pingroll ingest --shard I/N` parses the new log objects whose key hashes to
 * I (of 0..N-1) and commits them as its own batch. N shards of one ingest share nothing but the
 * output's state: each lists the same window, keeps the keys it owns, and saves its own listing state
 * (state/listing-state.ts) and quarantine (state/quarantine.ts), so that one shard that fails costs
 * the others nothing.
 *
 * I and N come from the flag or from the environment of the engine running the shards (infra/config.ts,
 * `shardFrom`).
 */
import { createHash } from 'node:crypto';

export interface Shard {
  /** 0-based. */
  index: number;
  count: number;
}

/** At most this many shards (AWS Batch's largest array). */
export const MAX_SHARDS = 10_000;

/**
 * The shard a log object's key belongs to among `count`: the first 4 bytes of its SHA-1, modulo
 * `count`. Stable across processes, machines and releases (it decides who parses what), and even:
 * log keys share long prefixes, which a cheap hash of the last characters would not spread.
 */
export function shardOf(key: string, count: number): number {
  if (count === 1) return 0;
  return createHash('sha1').update(key).digest().readUInt32BE(0) % count;
}

export function owns(shard: Shard | null | undefined, key: string): boolean {
  return !shard || shardOf(key, shard.count) === shard.index;
}

/** `3/8`: how a shard is written on the command line and in messages. */
export function shardText(shard: Shard): string {
  return `${shard.index}/${shard.count}`;
}

/** `3-of-8`: how a shard names its state and lock. */
export function shardName(shard: Shard): string {
  return `${shard.index}-of-${shard.count}`;
}
