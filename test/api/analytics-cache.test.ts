import { describe, expect, it } from 'vitest'
import { ResponseCache, PROCESSING_RESULTS_TTL_MS } from '../../services/api/analytics/cache.ts'
import { ProcessingEvents } from '../../pipelines/processing/events.ts'

describe('analytics response cache', () => {
  it('keeps an entry for its TTL, per tenant, and forgets a tenant on invalidation', () => {
    let now = 1_000_000
    const cache = new ResponseCache(() => now)
    cache.set(1, 'rfm?a', { n: 1 }, PROCESSING_RESULTS_TTL_MS)
    cache.set(2, 'rfm?a', { n: 2 }, PROCESSING_RESULTS_TTL_MS)
    now += PROCESSING_RESULTS_TTL_MS - 1
    expect(cache.get(1, 'rfm?a')).toEqual({ n: 1 })
    now += 1
    expect(cache.get(1, 'rfm?a')).toBeUndefined()
    cache.set(1, 'rfm?a', { n: 3 }, PROCESSING_RESULTS_TTL_MS)
    cache.invalidateTenant(1)
    expect(cache.get(1, 'rfm?a')).toBeUndefined()
    expect(cache.get(2, 'rfm?a')).toBeUndefined() // expired with the clock too
  })

  it('a processing run of a tenant drops only that tenant (the wiring of cdp start)', () => {
    const cache = new ResponseCache()
    const events = new ProcessingEvents()
    events.onTenantProcessed((e) => cache.invalidateTenant(e.tenantId))
    cache.set(1, 'k', 'one', 60_000)
    cache.set(2, 'k', 'two', 60_000)
    events.emitTenantProcessed({ tenantId: 1, jobId: 'j', replicaId: 'r', analyses: ['rfm'], results: {}, at: Date.now() } as never)
    expect(cache.get(1, 'k')).toBeUndefined()
    expect(cache.get(2, 'k')).toBe('two')
  })

  it('an answer computed before an invalidation is not stored after it', () => {
    const cache = new ResponseCache()
    const epoch = cache.epoch(1)
    cache.invalidateTenant(1) // the data moved while the answer was being computed
    cache.set(1, 'k', 'stale', 60_000, epoch)
    expect(cache.get(1, 'k')).toBeUndefined()
    cache.set(1, 'k', 'fresh', 60_000, cache.epoch(1))
    expect(cache.get(1, 'k')).toBe('fresh')
  })

  it('sweep drops expired entries of tenants that are never read again', () => {
    let now = 0
    const cache = new ResponseCache(() => now)
    cache.set(7, 'a', 1, 1000)
    cache.set(8, 'b', 2, 5000)
    now = 2000
    cache.sweep()
    expect(cache.get(8, 'b')).toBe(2)
    expect((cache as unknown as { entries: Map<number, unknown> }).entries.has(7)).toBe(false)
  })

  it('a full tenant forgets its least recently used answer: one read recently survives', () => {
    let now = 0
    const cache = new ResponseCache(() => now, 2)
    cache.set(1, 'first', 'a', 60_000)
    cache.set(1, 'second', 'b', 60_000)
    now = 10
    expect(cache.get(1, 'first')).toBe('a') // read: now the most recently used
    cache.set(1, 'third', 'c', 60_000) // full: 'second' goes, not 'first' (stored first)
    expect(cache.get(1, 'first')).toBe('a')
    expect(cache.get(1, 'second')).toBeUndefined()
    expect(cache.get(1, 'third')).toBe('c')
    cache.set(2, 'other', 'd', 60_000) // another tenant's entries do not count
    expect(cache.get(1, 'first')).toBe('a')
  })
})
