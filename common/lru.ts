/**
 * The project's in-process caches are lru-cache's LRUCache: at most `max` entries, the least
 * recently used one evicted first, each entry stale `ttlMs` after it was set. This factory only
 * adapts lru-cache's clock to ours, so that every cache keeps the expiry it had:
 *
 * - the clock is the caller's `now` (tests move theirs by hand) and is read on every check
 *   (lru-cache otherwise remembers a reading for a millisecond);
 * - an entry is stale from exactly `ttlMs` on (lru-cache's own boundary is strictly after it):
 *   lru-cache counts in half milliseconds here, with TTLs of 2 · ttlMs − 1 (`lruTtl`), which for
 *   millisecond clocks is the same as `age >= ttlMs`; this also keeps a clock that starts at 0
 *   working (lru-cache takes a start time of 0 for "no TTL").
 *
 * A per-entry TTL goes through `lruTtl`: `cache.set(key, value, { ttl: lruTtl(ms) })`.
 */
import { LRUCache } from 'lru-cache'

export interface LruOptions<K = unknown, V = unknown> {
  max: number
  /** Default TTL of an entry; absent or 0: entries do not expire (only eviction removes them). */
  ttlMs?: number
  now?: () => number
  /**
   * Makes `cache.fetch(key)` load a missing entry with this (concurrent fetches of a key share one
   * load) and, for a stale entry, answer the stale value at once while one reload runs in the
   * background (stale-while-revalidate).
   */
  load?: (key: K) => Promise<V>
}

/** A TTL in milliseconds as the caches of `lruCache` count it. */
export const lruTtl = (ms: number): number => Math.max(1, 2 * Math.ceil(ms) - 1)

export function lruCache<K extends {}, V extends {}>(o: LruOptions<K, V>): LRUCache<K, V> {
  const now = o.now ?? Date.now
  const load = o.load
  return new LRUCache<K, V>({
    max: o.max,
    ...(load ? { fetchMethod: (key: K) => load(key), allowStale: true, noDeleteOnFetchRejection: true } : {}),
    ...(o.ttlMs && o.ttlMs > 0 ? { ttl: lruTtl(o.ttlMs) } : {}),
    ttlResolution: 0,
    perf: { now: () => 2 * now() + 1 },
  })
}
