/**
 * Which legacy DynamoDB items are pings (contract §1b, §3): an item with a readable time in its
 * `ts_shard`, a session, a series and an episode is a ping; anything else is `bad_item`. N and S ids
 * are the same id (`1234` either way). Pure: an item in DynamoDB's attribute-value form in, a verdict out.
 */
import { NO_CLIENT } from '../staged-ping.js';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { MAX_ID_LENGTH, normalizePlatform, normalizePos, type Verdict } from '../ping-record.js';
import { eventTimeOfShardKey } from './ts-shard.js';

export type Item = Record<string, AttributeValue>;

/** An attribute as text: S as is, N as its decimal string; anything else is not an id. */
function text(item: Item, name: string): string | null {
  const v = item[name];
  if (!v) return null;
  if (v.S !== undefined) return v.S;
  if (v.N !== undefined) return v.N;
  return null;
}

export function classifyItem(item: Item): Verdict & { eventTimeMs: number } {
  const tsShard = item.ts_shard?.S;
  const eventTimeMs = tsShard === undefined ? NaN : eventTimeOfShardKey(tsShard);
  const bad = (reason: string): Verdict & { eventTimeMs: number } => ({ outcome: 'bad_item', reason, eventTimeMs });
  if (tsShard === undefined) return bad('no ts_shard string');
  if (Number.isNaN(eventTimeMs)) return bad(`ts_shard '${tsShard.slice(0, 40)}' holds no readable time`);
  const session = text(item, 'session_id');
  const ids: Record<'series' | 'episode' | 'session_id', string | null> = { series: text(item, 'series'), episode: text(item, 'episode'), session_id: session };
  for (const [name, v] of Object.entries(ids)) {
    if (v === null || v === '') return bad(`missing ${name}`);
    if (v.length > MAX_ID_LENGTH && [...v].length > MAX_ID_LENGTH) return bad(`${name} longer than ${MAX_ID_LENGTH} characters`);
  }
  return {
    outcome: 'ping',
    eventTimeMs,
    ping: {
      source: 'dynamodb',
      series: ids.series!,
      episode: ids.episode!,
      session: session!,
      user: text(item, 'user_id') || null,
      pingId: text(item, 'ping_id') || null,
      eventTimeMs,
      naturalKey: `k:${tsShard}|${session}`,
      platform: normalizePlatform(text(item, 'platform')),
      pos: normalizePos(text(item, 'pos')),
      // Items have no client IP or user agent (contract §10).
      ...NO_CLIENT,
    },
  };
}
