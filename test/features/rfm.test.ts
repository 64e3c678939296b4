import { describe, expect, it } from 'vitest'
import { ALL_SCORES, SEGMENTS, SEGMENT_DESCRIPTIONS, SEGMENT_MAP, SEGMENT_SOURCE, nearestListedSegment, segmentOf, type Segment } from '../../pipelines/features/segments.ts'
import { quintileThresholds, recencyDays, rfmScore, scoreAgainst, tenantBoundaries, type RfmInput } from '../../pipelines/features/rfm.ts'
import { aggregate, EMPTY_AGGREGATES, type OrderFact } from '../../pipelines/features/order-facts.ts'
import { buildTenantModel, rfmInputs } from '../../pipelines/features/model.ts'
import { computeFeatures } from '../../pipelines/features/features.ts'

const DAY = 86_400_000

/** The spec's table (cdp-service-interface.md, "RFM segments"), copied as written. */
const SPEC_TABLE: Record<string, string> = {
  Champions: '555, 554, 544, 545, 454, 455, 445',
  'Loyal Customers': '543, 444, 435, 355, 354, 345, 344, 335',
  'Potential Loyalists': '553, 551, 552, 541, 542, 533, 532, 531, 452, 451',
  'Recent Customers': '512, 511, 422, 421, 412, 411, 311',
  Promising: '525, 524, 523, 522, 521, 515, 514, 513, 425, 424, 413, 414, 415, 315, 314, 313',
  'Need Attention': '535, 534, 443, 434, 343, 334, 325, 324',
  'About to Sleep': '331, 321, 312, 221, 213, 231, 241, 251',
  'At Risk': '255, 254, 245, 244, 253, 252, 243, 242, 235, 234, 225, 224, 153, 152, 145, 143, 142, 135, 134, 133, 125, 124',
  'Cannot Lose Them': '155, 154, 144, 214, 215, 115, 114, 113',
  Hibernating: '332, 322, 231, 241, 151, 141, 131, 121, 112, 122, 123, 132, 211, 212, 222, 223, 232, 233',
  Lost: '111',
}
const SPEC_MEANINGS: Record<string, string> = {
  Champions: 'Recent, frequent, high spend',
  'Loyal Customers': 'Good spend, respond to promotions',
  'Potential Loyalists': 'Recent with potential',
  'Recent Customers': 'First purchase recently',
  Promising: 'Recent buyers with growth potential',
  'Need Attention': 'Above average but at risk',
  'About to Sleep': 'Below average on all metrics',
  'At Risk': 'Spent much, long ago',
  'Cannot Lose Them': 'Big buyers who have not returned',
  Hibernating: 'Last purchase long ago',
  Lost: 'Lowest scores on all metrics',
}
const UNMAPPED = ['323', '333', '341', '342', '351', '352', '353', '423', '431', '432', '433', '441', '442', '453']

function listings(): Map<string, string[]> {
  const m = new Map<string, string[]>()
  for (const [seg, list] of Object.entries(SPEC_TABLE)) for (const s of list.split(', ')) m.set(s, [...(m.get(s) ?? []), seg])
  return m
}

/** mulberry32: a small seeded PRNG, so the property loops are reproducible. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The rank rule, brute force: 1 + floor(5 · #{strictly smaller} / n), capped at 5 for a new value above everyone. */
function rankScore(v: number, population: number[]): number {
  const less = population.filter((x) => x < v).length
  return Math.min(5, 1 + Math.floor((5 * less) / population.length))
}

describe('RFM segment map', () => {
  it('names the 11 segments as the spec spells them, with its meanings', () => {
    expect([...SEGMENTS]).toEqual(Object.keys(SPEC_TABLE))
    expect(SEGMENT_DESCRIPTIONS).toEqual(SPEC_MEANINGS)
  })

  it('maps all 125 scores 111..555, in ascending order, each to one of the 11 segments', () => {
    const keys = Object.keys(SEGMENT_MAP)
    expect(keys).toHaveLength(125)
    expect(keys).toEqual([...ALL_SCORES])
    expect(keys).toEqual([...keys].sort())
    for (const k of keys) {
      expect(k).toMatch(/^[1-5]{3}$/)
      expect(SEGMENTS).toContain(SEGMENT_MAP[k])
    }
  })

  it('keeps every combination the spec lists under one segment where the spec puts it', () => {
    const l = listings()
    let n = 0
    for (const [score, segs] of l) {
      if (segs.length !== 1) continue
      expect(SEGMENT_MAP[score], score).toBe(segs[0])
      expect(SEGMENT_SOURCE[score]).toBe('listed')
      n++
    }
    expect(n).toBe(109)
  })

  it('231 and 241, listed twice, take the first listing in table order: About to Sleep', () => {
    const twice = [...listings()].filter(([, segs]) => segs.length > 1)
    expect(twice).toEqual([
      ['231', ['About to Sleep', 'Hibernating']],
      ['241', ['About to Sleep', 'Hibernating']],
    ])
    for (const s of ['231', '241']) {
      expect(SEGMENT_MAP[s]).toBe('About to Sleep')
      expect(SEGMENT_SOURCE[s]).toBe('first-listing')
    }
  })

  it('the 14 unlisted combinations are exactly the ones the spec leaves out, decided by the nearest-listed rule', () => {
    const l = listings()
    expect(ALL_SCORES.filter((s) => !l.has(s))).toEqual(UNMAPPED)
    expect(UNMAPPED.map((s) => [s, SEGMENT_MAP[s], SEGMENT_SOURCE[s]])).toEqual([
      ['323', 'Hibernating', 'nearest-listed'],
      ['333', 'Need Attention', 'nearest-listed'],
      ['341', 'About to Sleep', 'nearest-listed'],
      ['342', 'Need Attention', 'nearest-listed'],
      ['351', 'Potential Loyalists', 'nearest-listed'],
      ['352', 'Potential Loyalists', 'nearest-listed'],
      ['353', 'Loyal Customers', 'nearest-listed'],
      ['423', 'Promising', 'nearest-listed'],
      ['431', 'Recent Customers', 'nearest-listed'],
      ['432', 'Recent Customers', 'nearest-listed'],
      ['433', 'Need Attention', 'nearest-listed'],
      ['441', 'Potential Loyalists', 'nearest-listed'],
      ['442', 'Potential Loyalists', 'nearest-listed'],
      ['453', 'Potential Loyalists', 'nearest-listed'],
    ])
  })

  it('the rule, recomputed independently: Manhattan-nearest listed, then vote, then keep R then F, then the higher neighbour', () => {
    const resolved = new Map<string, Segment>()
    for (const [s, segs] of listings()) resolved.set(s, segs[0] as Segment)
    for (const u of UNMAPPED) {
      const d = (s: string) => [0, 1, 2].map((i) => Math.abs(Number(u[i]) - Number(s[i])))
      const dist = (s: string) => d(s).reduce((a, b) => a + b, 0)
      const best = Math.min(...[...resolved.keys()].map(dist))
      const near = [...resolved.keys()].filter((s) => dist(s) === best)
      const votes = new Map<string, number>()
      for (const s of near) votes.set(resolved.get(s)!, (votes.get(resolved.get(s)!) ?? 0) + 1)
      const top = Math.max(...votes.values())
      const finalists = near.filter((s) => votes.get(resolved.get(s)!) === top)
      // (|ΔR|, |ΔF|, |ΔM|) ascending, then the higher score: one sort key
      finalists.sort((a, b) => d(a).join('').localeCompare(d(b).join('')) || b.localeCompare(a))
      expect(SEGMENT_MAP[u], u).toBe(resolved.get(finalists[0]!))
      expect(nearestListedSegment(u, resolved)).toBe(SEGMENT_MAP[u])
    }
    // every unlisted combination has a listed one next to it (distance 1)
    for (const u of UNMAPPED) expect([...resolved.keys()].some((s) => [0, 1, 2].reduce((a, i) => a + Math.abs(Number(u[i]) - Number(s[i])), 0) === 1)).toBe(true)
  })

  it('segmentOf reads the map and rejects scores outside 1..5', () => {
    expect(segmentOf(5, 5, 5)).toBe('Champions')
    expect(segmentOf(1, 1, 1)).toBe('Lost')
    expect(segmentOf(3, 3, 3)).toBe('Need Attention')
    expect(() => segmentOf(0, 1, 1)).toThrow(RangeError)
    expect(() => segmentOf(1, 6, 1)).toThrow(RangeError)
    expect(() => segmentOf(1, 1, 2.5)).toThrow(RangeError)
  })
})

describe('quintile scoring', () => {
  it('10 customers with ties: hand-computed thresholds and scores; equal values score equally', () => {
    const v = [10, 20, 20, 30, 40, 50, 50, 50, 90, 100]
    // t_k = sorted[ceil(2k) − 1] = sorted[1], [3], [5], [7]
    expect(quintileThresholds(v)).toEqual([20, 30, 50, 50])
    const t = quintileThresholds(v)!
    expect(v.map((x) => scoreAgainst(x, t))).toEqual([1, 1, 1, 2, 3, 3, 3, 3, 5, 5])
    expect(v.map((x) => rankScore(x, v))).toEqual([1, 1, 1, 2, 3, 3, 3, 3, 5, 5])
    // input order does not matter, and the input is not modified
    const shuffled = [50, 100, 20, 10, 90, 50, 30, 20, 50, 40]
    expect(quintileThresholds(shuffled)).toEqual([20, 30, 50, 50])
    expect(shuffled).toEqual([50, 100, 20, 10, 90, 50, 30, 20, 50, 40])
  })

  it('fewer than 5 customers', () => {
    expect(quintileThresholds([7])).toEqual([7, 7, 7, 7])
    expect(scoreAgainst(7, [7, 7, 7, 7])).toBe(1)
    expect(quintileThresholds([5, 7])).toEqual([5, 5, 7, 7])
    expect([5, 7].map((x) => scoreAgainst(x, [5, 5, 7, 7]))).toEqual([1, 3])
    expect(quintileThresholds([3, 1, 2])).toEqual([1, 2, 2, 3])
    expect([1, 2, 3].map((x) => scoreAgainst(x, [1, 2, 2, 3]))).toEqual([1, 2, 4])
  })

  it('all equal: everyone scores 1; no customers: no thresholds', () => {
    const t = quintileThresholds(Array(12).fill(4))!
    expect(t).toEqual([4, 4, 4, 4])
    expect(scoreAgainst(4, t)).toBe(1)
    expect(quintileThresholds([])).toBeNull()
    expect(tenantBoundaries([], 0)).toBeNull()
    expect(() => quintileThresholds([1, Number.NaN])).toThrow(RangeError)
  })

  it('thresholds reproduce the rank rule on random data, for population values and new ones', () => {
    const rand = rng(20240601)
    for (let trial = 0; trial < 400; trial++) {
      const n = 1 + Math.floor(rand() * 60)
      const spread = [3, 10, 1000][trial % 3]!
      const pop = Array.from({ length: n }, () => Math.floor(rand() * spread) - spread / 3)
      const t = quintileThresholds(pop)!
      for (const v of pop) {
        const less = pop.filter((x) => x < v).length
        expect(scoreAgainst(v, t)).toBe(1 + Math.floor((5 * less) / n)) // uncapped: never above 5 inside the population
      }
      for (let j = 0; j < 5; j++) {
        const fresh = Math.floor(rand() * (spread + 4)) - spread / 3 - 2
        expect(scoreAgainst(fresh, t)).toBe(rankScore(fresh, pop))
      }
    }
  })

  it('rfmScore: more recent scores higher R, more orders higher F, more spend higher M', () => {
    const customers: RfmInput[] = [100, 200, 300, 400, 500].map((day, i) => ({ lastOrderDay: day, frequency: i + 1, monetary: (5 - i) * 1000 }))
    const b = tenantBoundaries(customers, Date.UTC(2025, 0, 1))!
    expect(b).toEqual({ recency: [100, 200, 300, 400], frequency: [1, 2, 3, 4], monetary: [1000, 2000, 3000, 4000], customers: 5, computedAt: '2025-01-01T00:00:00.000Z' })
    const scores = customers.map((c) => rfmScore(c, b))
    expect(scores.map((s) => s.r_score)).toEqual([1, 2, 3, 4, 5])
    expect(scores.map((s) => s.f_score)).toEqual([1, 2, 3, 4, 5])
    expect(scores.map((s) => s.m_score)).toEqual([5, 4, 3, 2, 1])
    expect(scores[4]).toEqual({ r_score: 5, f_score: 5, m_score: 1, rfm_score: '551', segment: 'Potential Loyalists' })
    expect(scores[0]).toMatchObject({ rfm_score: '115', segment: 'Cannot Lose Them' })
    expect(scores[2]).toMatchObject({ rfm_score: '333', segment: 'Need Attention' })
  })

  it('rfmScore on a 10-customer tenant with ties, and recency_days when a clock is given', () => {
    const days = [20000, 20010, 20010, 20020, 20030, 20040, 20040, 20040, 20050, 20060]
    const freq = [1, 1, 1, 1, 2, 2, 3, 4, 6, 9]
    const cents = [500, 1500, 2500, 3500, 4500, 5500, 6500, 7500, 8500, 9500]
    const customers = days.map((d, i) => ({ lastOrderDay: d, frequency: freq[i]!, monetary: cents[i]! }))
    const b = tenantBoundaries(customers, 0)!
    expect(b.recency).toEqual([20010, 20020, 20040, 20040])
    expect(b.frequency).toEqual([1, 1, 2, 4])
    expect(b.monetary).toEqual([1500, 3500, 5500, 7500])
    const keys = customers.map((c) => rfmScore(c, b).rfm_score)
    // R: days → less = 0,1,1,3,4,5,5,5,8,9; F: less = 0,0,0,0,4,4,6,7,8,9; M: less = i
    expect(keys).toEqual(['111', '111', '112', '212', '333', '333', '344', '344', '555', '555'])
    expect(keys[1]).toBe(keys[0]) // same day, same frequency, adjacent spend in one quintile
    const now = Date.UTC(2024, 11, 31, 23, 0) // epoch day 20088
    expect(rfmScore(customers[9]!, b, now).recency_days).toBe(28)
    expect(rfmScore({ ...customers[9]!, lastOrderAtMs: 20060 * DAY + 23.5 * 3_600_000 }, b, now).recency_days).toBe(27)
  })

  it('F counts purchase days: same-day orders are one purchase, for RFM as for the models', () => {
    const order = (day: number, hour: number, cents: number, id: string): OrderFact => ({ version: 1, eventId: id, placedAt: Date.UTC(2025, 0, day, hour), cents, cancelled: false })
    // Three orders on 3 January, one on the 10th: 4 orders, 2 purchase days (BG/NBD x = 1).
    const busy = aggregate([order(3, 9, 1000, 'a'), order(3, 12, 2000, 'b'), order(3, 23, 500, 'c'), order(10, 8, 700, 'd')])
    const quiet = aggregate([order(4, 9, 4200, 'e'), order(8, 9, 100, 'f'), order(9, 9, 100, 'g')])
    expect([busy.orderCount, busy.purchaseDays, busy.repeatPurchases]).toEqual([4, 2, 1])
    expect(rfmInputs([busy, quiet, EMPTY_AGGREGATES]).map((c) => c.frequency)).toEqual([2, 3])
    const now = Date.UTC(2025, 0, 20)
    const model = buildTenantModel([busy, quiet], now, { clvModel: 'mbgnbd', refitClv: true })
    expect(model.boundaries!.frequency).toEqual([2, 2, 3, 3])
    const [b, q] = [busy, quiet].map((a) => computeFeatures(a, model, now))
    expect([b!.frequency, q!.frequency]).toEqual([2, 3])
    // More orders but fewer purchase days: the lower F.
    expect([b!.f_score, q!.f_score]).toEqual([1, 3])
    // The mean order stays per order: 4,200 over 4 orders.
    expect(b!.avg_order_value).toBe(10.5)
  })

  it('recencyDays: whole UTC days elapsed, never negative', () => {
    const last = Date.UTC(2025, 0, 1, 12)
    expect(recencyDays(last, last)).toBe(0)
    expect(recencyDays(last, last + DAY - 1)).toBe(0)
    expect(recencyDays(last, last + DAY)).toBe(1)
    expect(recencyDays(last, last + 45.9 * DAY)).toBe(45)
    expect(recencyDays(last, last - 5 * DAY)).toBe(0)
  })

  it('tenantBoundaries on 1,000,000 customers in shuffled order: the quintile thresholds of each column', () => {
    // Column values 0..999,999 (monetary), 0..729 (days, 1,370 customers each) and 1..5 (frequency,
    // 200,000 each), shuffled: the k-th threshold is the value at sorted index ceil(k·n/5) − 1.
    const n = 1_000_000
    const order = Array.from({ length: n }, (_, i) => i)
    const rand = rng(7)
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1))
      ;[order[i], order[j]] = [order[j]!, order[i]!]
    }
    const customers: RfmInput[] = order.map((i) => ({ lastOrderDay: 19_000 + Math.floor(i / 1370), frequency: 1 + Math.floor(i / 200_000), monetary: i }))
    const b = tenantBoundaries(customers, Date.UTC(2025, 0, 1))!
    expect(b.customers).toBe(n)
    expect(b.monetary).toEqual([199_999, 399_999, 599_999, 799_999])
    expect(b.frequency).toEqual([1, 2, 3, 4])
    expect(b.recency).toEqual([19_000 + 145, 19_000 + 291, 19_000 + 437, 19_000 + 583])
    expect(b.computedAt).toBe('2025-01-01T00:00:00.000Z')
  })
})
