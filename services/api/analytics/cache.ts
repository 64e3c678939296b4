/**
 * Server-side response cache of the analytics endpoints, per tenant. Entries live `ttlMs` (spec
 * "Limits": processing results 1 hour, demographic results 15 minutes) and a processing run of
 * the tenant drops all of that tenant's entries.
 */
export class ResponseCache {
  private readonly entries = new Map<number, Map<string, { at: number; ttl: number; value: unknown }>>()
  private sets = 0
  /** Bumped by invalidateTenant: an answer computed before it must not be stored after it. */
  private readonly epochs = new Map<number, number>()
  constructor(private readonly now: () => number = Date.now, private readonly maxPerTenant = 500) {}

  get<T>(tenantId: number, key: string): T | undefined {
    const e = this.entries.get(tenantId)?.get(key)
    if (!e) return undefined
    if (this.now() - e.at >= e.ttl) {
      this.entries.get(tenantId)!.delete(key)
      return undefined
    }
    return e.value as T
  }

  /** The tenant's epoch now: pass it to set() with an answer computed from here on. */
  epoch(tenantId: number): number {
    return this.epochs.get(tenantId) ?? 0
  }

  set(tenantId: number, key: string, value: unknown, ttlMs: number, epoch = this.epoch(tenantId)): void {
    if (this.maxPerTenant <= 0) return // a cache of size 0 is off
    if (epoch !== this.epoch(tenantId)) return // invalidated while it was computed: possibly stale
    if (++this.sets % 1000 === 0) this.sweep()
    let m = this.entries.get(tenantId)
    if (!m) this.entries.set(tenantId, (m = new Map()))
    if (m.size >= this.maxPerTenant) m.delete(m.keys().next().value!)
    m.set(key, { at: this.now(), ttl: ttlMs, value })
  }

  /** Drops expired entries of every tenant (an entry is otherwise dropped only when read). */
  sweep(): void {
    const now = this.now()
    for (const [tenantId, m] of this.entries) {
      for (const [key, e] of m) if (now - e.at >= e.ttl) m.delete(key)
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
