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
