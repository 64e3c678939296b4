import { describe, expect, it } from 'vitest'
import { lruCache } from '../../common/lru.ts'

describe('lruCache with a loader (stale-while-revalidate)', () => {
  it('loads a missing entry once for concurrent reads, answers a stale entry at once and reloads it once in the background', async () => {
    let clock = 1_000
    let loads = 0
    let release: (() => void) | null = null
    const cache = lruCache<number, string>({
      max: 10,
      ttlMs: 5_000,
      now: () => clock,
      load: async (k) => {
        loads++
        if (loads > 1) await new Promise<void>((r) => (release = r))
        return `v${k}-${loads}`
      },
    })
    expect(await Promise.all([cache.fetch(7), cache.fetch(7), cache.fetch(7)])).toEqual(['v7-1', 'v7-1', 'v7-1'])
    expect(loads).toBe(1)
    clock += 4_999
    expect(await cache.fetch(7)).toBe('v7-1') // fresh: no load
    expect(loads).toBe(1)
    clock += 1 // stale from exactly ttlMs on
    expect(await Promise.all([cache.fetch(7), cache.fetch(7)])).toEqual(['v7-1', 'v7-1']) // the stale value, without waiting
    expect(loads).toBe(2) // one reload for both
    release!()
    await new Promise((r) => setTimeout(r, 0))
    expect(await cache.fetch(7)).toBe('v7-2')
    cache.delete(7) // an invalidation: the next read waits for a fresh load
    const next = cache.fetch(7)
    await new Promise((r) => setTimeout(r, 0))
    release!()
    expect(await next).toBe('v7-3')
  })
})
