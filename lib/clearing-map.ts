/**
 * A cache that forgets everything once it holds `limit` entries: its memory stays bounded whatever the
 * input sends (distinct user agents, addresses, database rows), and a working set that fits is kept.
 */
export class ClearingMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly limit: number) {}

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    if (this.entries.size >= this.limit) this.entries.clear();
    this.entries.set(key, value);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  /** Forgets every entry whose key `which` picks (every entry without it). */
  clear(which?: (key: K) => boolean): void {
    if (!which) return this.entries.clear();
    for (const key of this.entries.keys()) if (which(key)) this.entries.delete(key);
  }
}

/** What `keptUntilFailed` keeps its promises in: a `Map`, or a `ClearingMap`. */
export interface PromiseKeeper<K, V> {
  get(key: K): Promise<V> | undefined;
  set(key: K, value: Promise<V>): void;
  delete(key: K): void;
}

/**
 * `start()`'s promise, kept under `key` in `kept`: the first ask starts it, the asks after share it
 * (those at the same time too), and one that failed is forgotten, so that the next ask starts again.
 */
export function keptUntilFailed<K, V>(kept: PromiseKeeper<K, V>, key: K, start: () => Promise<V>): Promise<V> {
  const known = kept.get(key);
  if (known) return known;
  const started = start();
  started.catch(() => { if (kept.get(key) === started) kept.delete(key); });
  kept.set(key, started);
  return started;
}
