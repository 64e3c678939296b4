import type { LRUCache } from 'lru-cache'
import { lruCache, lruTtl } from '../../../common/lru.ts'

/**
 * Server-side response cache of the analytics endpoints, per tenant. Entries live `ttlMs` (spec
 * "Limits": processing results 1 hour, demographic results 15 minutes) and a processing run of
 * the tenant drops all of that tenant's entries. Each tenant's entries are an LRUCache
 * (common/lru.ts) of at most `maxPerTenant`: a full tenant forgets its least recently used answer.
 */
export class ResponseCache {
  private readonly entries = new Map<number, LRUCache<string, { value: unknown }>>()
  private sets = 0
  /** Bumped by invalidateTenant: an answer computed before it must not be stored after it. */
  private readonly epochs = new Map<number, number>()
  constructor(private readonly now: () => number = Date.now, private readonly maxPerTenant = 500) {}

  get<T>(tenantId: number, key: string): T | undefined {
    return this.entries.get(tenantId)?.get(key)?.value as T | undefined
  }

  /** The tenant's epoch now: pass it to set() with an answer computed from here on. */
  epoch(tenantId: number): number {
    return this.epochs.get(tenantId) ?? 0
  }

  set(tenantId: number, key: string, value: unknown, ttlMs: number, epoch = this.epoch(tenantId)): void {
    if (this.maxPerTenant <= 0 || ttlMs <= 0) return // a cache of size 0 is off; an answer that expires at once is not kept
    if (epoch !== this.epoch(tenantId)) return // invalidated while it was computed: possibly stale
    if (++this.sets % 1000 === 0) this.sweep()
    let m = this.entries.get(tenantId)
    if (!m) this.entries.set(tenantId, (m = lruCache({ max: this.maxPerTenant, now: this.now })))
    m.set(key, { value }, { ttl: lruTtl(ttlMs) })
  }

  /** Drops expired entries of every tenant (an entry is otherwise dropped when read or evicted). */
  sweep(): void {
    for (const [tenantId, m] of this.entries) {
      m.purgeStale()
      if (m.size === 0) this.entries.delete(tenantId)
    }
  }

  invalidateTenant(tenantId: number): void {
    this.entries.delete(tenantId)
    this.epochs.set(tenantId, this.epoch(tenantId) + 1)
  }
}

export const PROCESSING_RESULTS_TTL_MS = 60 * 60_000
export const DEMOGRAPHICS_TTL_MS = 15 * 60_000
/** Recommended client caching of overview responses (spec "Limits"). */
export const OVERVIEW_MAX_AGE_S = 300
