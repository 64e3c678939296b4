import { describe, expect, it } from 'vitest'
import { iso, isoDay, storedTime } from '../../common/time.ts'

describe('iso', () => {
  it('is Date#toISOString for any millisecond, and null for null', () => {
    const edges = [0, 1, 999, 59_999, 3_599_999, 86_399_999, 86_400_000, 951_782_400_000 /* 2000-02-29 */, 253_402_300_799_999, 253_402_300_800_000, -1, -86_400_001, 1.5, 1e15]
    let seed = 7
    const random = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32
    const sample = [...edges, ...Array.from({ length: 20_000 }, () => Math.floor(random() * 253_402_300_800_000))]
    for (const ms of sample) expect(iso(ms), String(ms)).toBe(new Date(ms).toISOString())
    expect(iso(null)).toBeNull()
    expect(iso(undefined)).toBeNull()
  })

  it('isoDay is the UTC day as YYYY-MM-DD', () => {
    expect([isoDay(0), isoDay(-1), isoDay(11_016), isoDay(20_270)]).toEqual(['1970-01-01', '1969-12-31', '2000-02-29', '2025-07-01'])
  })
})

describe('storedTime', () => {
  it('keeps whole milliseconds inside DateTime64(3)\'s range as the number, and gives the rest as ISO text', () => {
    expect(storedTime(0)).toBe(0)
    expect(storedTime(1_751_364_672_345)).toBe(1_751_364_672_345)
    expect(storedTime(10_413_791_999_999)).toBe(10_413_791_999_999) // 2299-12-31T23:59:59.999Z
    expect(storedTime(10_413_792_000_000)).toBe('2300-01-01T00:00:00.000Z')
    expect(storedTime(-1)).toBe('1969-12-31T23:59:59.999Z')
    expect(storedTime(1.5)).toBe(iso(1.5))
    expect(storedTime(null)).toBeNull()
    expect(storedTime(undefined)).toBeNull()
  })
})
