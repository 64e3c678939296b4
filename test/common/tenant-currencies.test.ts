/** TenantCurrencies' cache (common/store/tenant-settings.ts): its TTL, and least-recently-used eviction when full. */
import { describe, expect, it } from 'vitest'
import { TenantCurrencies, defaultSettings, type TenantSettingsStore } from '../../common/store/tenant-settings.ts'

/** Settings in a Map, counting reads. */
function settings(currencies: Record<number, string>) {
  const reads: number[] = []
  const store = {
    async get(t: number) {
      reads.push(t)
      return { ...defaultSettings(t), currency: currencies[t] ?? null }
    },
    async currencyOrAdopt(t: number, candidate: string) {
      reads.push(t)
      return (currencies[t] ??= candidate)
    },
  }
  return { store: store as unknown as TenantSettingsStore, reads, currencies }
}

describe('tenant currencies cache', () => {
  it('holds a currency for its TTL, then reads it again; forget drops it at once', async () => {
    let now = 0
    const s = settings({ 1: 'ARS' })
    const c = new TenantCurrencies(s.store, () => now, 60_000)
    expect(await c.current(1)).toBe('ARS')
    now = 59_999
    expect(await c.of(1, 'USD')).toBe('ARS')
    expect(s.reads).toEqual([1])
    now = 60_000
    s.currencies[1] = 'EUR'
    expect(await c.current(1)).toBe('EUR')
    c.forget(1)
    expect(await c.current(1)).toBe('EUR')
    expect(s.reads).toEqual([1, 1, 1])
  })

  it('a tenant without a currency is not cached; its first order adopts one', async () => {
    const s = settings({})
    const c = new TenantCurrencies(s.store)
    expect(await c.current(5)).toBeNull()
    expect(await c.of(5, 'GBP')).toBe('GBP')
    expect(await c.current(5)).toBe('GBP')
    expect(s.reads).toEqual([5, 5])
  })

  it('when full, drops the least recently used tenant: one read recently stays cached', async () => {
    const s = settings({ 1: 'ARS', 2: 'BRL', 3: 'CLP' })
    const c = new TenantCurrencies(s.store, () => 0, 60_000, 2)
    await c.current(1)
    await c.current(2)
    await c.current(1) // a hit: tenant 1 is now the most recently used
    await c.current(3) // full: tenant 2 goes, not tenant 1 (cached first)
    s.reads.length = 0
    await c.current(1)
    await c.current(2)
    expect(s.reads).toEqual([2])
  })
})
