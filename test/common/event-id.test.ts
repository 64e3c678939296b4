import { describe, expect, it } from 'vitest'
import { newEventId } from '../../common/event-id.ts'

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('newEventId', () => {
  it('gives version-4 UUIDs in randomUUID’s form, none twice, across many refills', () => {
    const ids = Array.from({ length: 20_000 }, newEventId)
    for (const id of ids) expect(id).toMatch(V4)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it('spreads every random digit evenly (each position, each of 16 values: expected 1,250 of 20,000)', () => {
    const ids = Array.from({ length: 20_000 }, newEventId)
    const fixed = new Set([8, 13, 14, 18, 19, 23]) // dashes, the version, the variant digit
    for (let pos = 0; pos < 36; pos++) {
      if (fixed.has(pos)) continue
      const counts = new Map<string, number>()
      for (const id of ids) counts.set(id[pos]!, (counts.get(id[pos]!) ?? 0) + 1)
      expect(counts.size, `position ${pos}`).toBe(16)
      // Binomial(20,000, 1/16): sd ≈ 34, so 1,000–1,500 is over seven sd either side.
      for (const n of counts.values()) expect(n).toBeGreaterThan(1_000), expect(n).toBeLessThan(1_500)
    }
    // The variant digit takes 8, 9, a or b evenly (expected 5,000 each).
    const variant = new Map<string, number>()
    for (const id of ids) variant.set(id[19]!, (variant.get(id[19]!) ?? 0) + 1)
    expect([...variant.keys()].sort()).toEqual(['8', '9', 'a', 'b'])
    for (const n of variant.values()) expect(Math.abs(n - 5_000)).toBeLessThan(500)
  })
})
