/**
 * common/rate-limit.ts: the two window algorithms as pure functions, the in-process limiter (its
 * LRU bound) and the store-backed one (counted before it resolves, one at a time per key).
 */
import { describe, expect, it } from 'vitest'
import {
  MemoryRateLimitStore,
  MemoryRateLimiter,
  RateLimiter,
  fixedWindow,
  slidingWindow,
  step,
  type RateLimitStore,
} from '../../common/rate-limit.ts'

const rule = { limit: 2, windowMs: 1000 }

describe('fixed window', () => {
  it('starts with its first call, refuses past the limit until it ends, then starts again', () => {
    let s = step(fixedWindow, undefined, rule, 100, true)
    expect(s.decision).toEqual({ allowed: true, limit: 2, used: 1, remaining: 1, resetAt: 1100, retryAt: null })
    s = step(fixedWindow, s.state, rule, 600, true)
    expect(s.decision).toMatchObject({ allowed: true, used: 2, remaining: 0, resetAt: 1100 })
    const refused = step(fixedWindow, s.state, rule, 1099, true)
    expect(refused).toMatchObject({ counted: false, decision: { allowed: false, used: 2, remaining: 0, resetAt: 1100, retryAt: 1100 } })
    expect(step(fixedWindow, s.state, rule, 1100, true).decision).toMatchObject({ allowed: true, used: 1, resetAt: 2100 })
  })
})

describe('sliding window', () => {
  it('refuses until the oldest counted call leaves the window; peeking counts nothing', () => {
    let st: number[] | undefined
    for (const t of [0, 400]) st = step(slidingWindow, st, rule, t, true).state
    expect(step(slidingWindow, st, rule, 999, false).decision).toEqual({ allowed: false, limit: 2, used: 2, remaining: 0, resetAt: 1000, retryAt: 1000 })
    const next = step(slidingWindow, st, rule, 1000, true)
    expect(next.decision).toMatchObject({ allowed: true, used: 2, remaining: 0, resetAt: 1400 })
    expect(next.state).toEqual([400, 1000])
    expect(step(slidingWindow, undefined, { limit: 0, windowMs: 1000 }, 5, true).decision).toMatchObject({ allowed: false, retryAt: Number.POSITIVE_INFINITY })
  })
})

describe('MemoryRateLimiter', () => {
  it('keys have their own windows', () => {
    const l = new MemoryRateLimiter({ algorithm: fixedWindow, now: () => 0 })
    expect([l.take('a', rule), l.take('a', rule), l.take('a', rule)].map((d) => d.allowed)).toEqual([true, true, false])
    expect(l.take('b', rule).allowed).toBe(true)
    expect(l.peek('b', rule)).toMatchObject({ used: 1, remaining: 1 })
  })

  it('when full, forgets the least recently used key: one used recently keeps its window', () => {
    const l = new MemoryRateLimiter({ algorithm: fixedWindow, maxKeys: 2, now: () => 0 })
    const one = { limit: 1, windowMs: 60_000 }
    l.take('old', one)
    l.take('other', one)
    expect(l.take('old', one).allowed).toBe(false) // used again: now the most recent
    l.take('new', one) // the map is full: 'other' goes, not 'old' (inserted first)
    expect(l.take('old', one).allowed).toBe(false)
    expect(l.take('other', one).allowed).toBe(true) // forgotten: a fresh window
  })
})

describe('RateLimiter over a store', () => {
  it('counts and saves before it resolves, one at a time per key, and a new limiter on the store remembers', async () => {
    const store = new MemoryRateLimitStore<number[]>()
    const saved: string[] = []
    const spy: RateLimitStore<number[]> = { load: (k) => store.load(k), save: async (k, s) => void (saved.push(k), await store.save(k, s)) }
    const l = new RateLimiter({ algorithm: slidingWindow, store: spy, now: () => 10 })
    const takes = await Promise.all([1, 2, 3].map(() => l.take('k', rule)))
    expect(takes.map((d) => d.allowed)).toEqual([true, true, false])
    expect(saved).toEqual(['k', 'k'])
    expect(await store.load('k')).toEqual([10, 10])
    const again = new RateLimiter({ algorithm: slidingWindow, store, now: () => 1009 })
    expect(await again.peek('k', rule)).toMatchObject({ allowed: false, retryAt: 1010 })
    expect(await new RateLimiter({ algorithm: slidingWindow, store, now: () => 1010 }).take('k', rule)).toMatchObject({ allowed: true, used: 1 })
  })
})
