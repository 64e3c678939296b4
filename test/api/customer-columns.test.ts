import { describe, expect, it } from 'vitest'
import { quantileExactInclusive, sumOfLargest, topRows } from '../../services/api/analytics/customer-columns.ts'

/** The in-memory order statistics of the filtered answers, against sorting (a seeded generator, with ties). */
function rng(seed: number) {
  let s = seed >>> 0
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32)
}

describe('customer columns: order statistics', () => {
  const cases = [1, 2, 3, 10, 101, 1000, 4096].flatMap((n) => [1, 2, 3].map((seed) => [n, seed] as const))
  it.each(cases)('n=%i seed=%i: median (R7, as ClickHouse quantileExactInclusive) and the sum of the k largest equal a sort', (n, seed) => {
    const r = rng(seed * 7919 + n)
    const xs = Array.from({ length: n }, () => (seed === 3 ? Math.floor(r() * 5) : Math.round(r() * 1e6) / 100)) // seed 3: many ties
    const sorted = [...xs].sort((a, b) => a - b)
    for (const level of [0, 0.25, 0.5, 0.9, 1]) {
      const h = (n - 1) * level
      const lo = Math.floor(h)
      const want = lo + 1 < n ? sorted[lo]! + (h - lo) * (sorted[lo + 1]! - sorted[lo]!) : sorted[lo]!
      expect(quantileExactInclusive(Float64Array.from(xs), level)).toBeCloseTo(want, 9)
    }
    for (const k of [0, 1, Math.ceil(n * 0.2), n, n + 3]) {
      const want = sorted.slice(Math.max(0, n - k)).reduce((s, v) => s + v, 0)
      expect(sumOfLargest(Float64Array.from(xs), k)).toBeCloseTo(want, 6)
    }
  })

  it('a page of the top rows equals the same page of a full sort, ties broken by the second key', () => {
    const r = rng(42)
    const key = Float64Array.from({ length: 5000 }, () => Math.floor(r() * 300))
    const rows = Uint32Array.from({ length: 5000 }, (_, i) => i).filter((i) => i % 3 !== 0)
    const before = (a: number, b: number) => (key[a] !== key[b] ? key[a]! > key[b]! : a < b)
    const sorted = [...rows].sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0))
    for (const [limit, offset] of [[10, 0], [50, 7], [1000, 0], [5, 3300], [10, 3330]] as const) {
      expect(topRows(rows, before, limit, offset)).toEqual(sorted.slice(offset, offset + limit))
    }
    expect(quantileExactInclusive(new Float64Array(0), 0.5)).toBeNaN()
  })
})
