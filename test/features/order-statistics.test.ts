import { describe, expect, it } from 'vitest'
import { valuesAtRanks } from '../../pipelines/features/order-statistics.ts'

describe('valuesAtRanks', () => {
  // A small deterministic generator, so a failure can be replayed.
  const lcg = (seed: number) => () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32

  it('gives the values a sort puts at each rank: distinct values, heavy ties, sorted and reversed runs, negatives', () => {
    const rand = lcg(7)
    const cases: Float64Array[] = [
      Float64Array.from({ length: 10_001 }, () => rand() * 1e6),
      Float64Array.from({ length: 20_000 }, () => 1 + Math.floor(rand() * rand() * 6)), // mostly 1s and 2s
      Float64Array.from({ length: 5_000 }, (_, i) => i),
      Float64Array.from({ length: 5_000 }, (_, i) => -i),
      Float64Array.from({ length: 3_000 }, () => 42),
      Float64Array.of(3),
      Float64Array.of(2, 1),
    ]
    for (const values of cases) {
      const n = values.length
      const sorted = Float64Array.from(values).sort()
      const ranks = [n - 1, 0, Math.floor(n / 2), ...[1, 2, 3, 4].map((k) => Math.ceil((k * n) / 5) - 1), Math.floor(n / 2)]
      expect(valuesAtRanks(Float64Array.from(values), ranks)).toEqual(ranks.map((k) => sorted[k]))
    }
  })

  it('refuses a rank outside the array', () => {
    expect(() => valuesAtRanks(Float64Array.of(1, 2), [2])).toThrow(RangeError)
    expect(() => valuesAtRanks(Float64Array.of(1, 2), [0.5])).toThrow(RangeError)
  })
})
