import { describe, expect, it } from 'vitest'
import {
  ACTION_TABLE,
  CHURN_RISKS,
  churnDetails,
  churnProbability,
  churnRisk,
  fallbackValueIfActive,
  HALF_LIFE_BOUNDS_DAYS,
  lapseProbability,
  medianIntervalDays,
  orderIntervalDays,
  rhythmHalfLife,
  roundTo,
  type ChurnInput,
} from '../../pipelines/features/churn.ts'
import { bgNbd, mbgNbd } from '../../pipelines/features/clv/index.ts'

const DAY = 86_400_000

describe('churn risk levels', () => {
  it('boundary days: [0,30) active, [30,60) at_risk, [60,90] churning, over 90 churned', () => {
    const at = (d: number) => churnRisk(d)
    expect([0, 29, 30, 59, 60, 89, 90, 91, 365].map(at)).toEqual(['active', 'active', 'at_risk', 'at_risk', 'churning', 'churning', 'churning', 'churned', 'churned'])
    expect(at(29.9)).toBe('active')
    expect(at(90.5)).toBe('churning')
    expect(at(-2)).toBe('active') // a clock slightly behind the order time
    expect(() => at(Number.NaN)).toThrow(RangeError)
  })

  it('churnDetails reports the same levels from the order time and the clock', () => {
    const last = Date.UTC(2025, 4, 1, 10)
    const base: ChurnInput = { nowMs: 0, firstOrderAt: last - 50 * DAY, lastOrderAt: last, orderCount: 3, purchaseDays: 3, netSpend: 30, pAlive: 0.5, valueIfActive: 100, tenantMedianIntervalDays: 30 }
    const levels = [29, 30, 59, 60, 89, 90, 91].map((d) => {
      const r = churnDetails({ ...base, nowMs: last + d * DAY + 3_600_000 })
      return r.churn_risk
    })
    expect(levels).toEqual(['active', 'at_risk', 'at_risk', 'churning', 'churning', 'churning', 'churned'])
    // one millisecond short of day 30 is still day 29
    expect(churnDetails({ ...base, nowMs: last + 30 * DAY - 1 }).churn_risk).toBe('active')
  })
})

describe('churn details', () => {
  it('a repeat buyer, hand-computed: the model says more than the rhythm', () => {
    const input: ChurnInput = {
      nowMs: Date.UTC(2025, 3, 10, 12), // 2025-04-10 12:00
      firstOrderAt: Date.UTC(2025, 0, 1, 9), // epoch-day span to the last order: 31 + 28 + 1 = 60
      lastOrderAt: Date.UTC(2025, 2, 2, 18), // 2025-03-02 18:00
      orderCount: 9,
      purchaseDays: 8, // 7 gaps → 60 / 7 = 8.5714 days
      netSpend: 450,
      pAlive: 0.35,
      valueIfActive: 2000,
      tenantMedianIntervalDays: 30, // not used: the customer has their own interval
      clvTier: 'high',
    }
    expect(churnDetails(input)).toEqual({
      churn_risk: 'at_risk', // 38.75 days since 03-02 18:00
      // max(1 − 0.35, 1 − 2^(−38/30) = 0.5844): half-life 8.57 is raised to the 30-day floor
      churn_probability: 0.65,
      order_frequency_days: 8.57,
      expected_order_date: '2025-03-11', // 03-02 18:00 + 8d 13.7h = 03-11 07:43
      days_overdue: 29, // floor(38 − 8.5714)
      recommended_action: 'personal_outreach',
      potential_loss: 1300, // 0.65 × 2000, the 12-month value had they stayed active
    })
    // Without a fit: the rhythm alone, and the value at stake is the customer's spend over their
    // tenure (99.1 days, under a year: all of the 450 spent).
    expect(churnDetails({ ...input, pAlive: null, valueIfActive: null })).toMatchObject({ churn_probability: 0.5844, potential_loss: 262.97 }) // 0.58438 × 450
  })

  it('a one-time buyer gets the tenant median interval; P(alive) = 1 from BG/NBD leaves the rhythm hazard', () => {
    const last = Date.UTC(2025, 0, 10, 15)
    const input: ChurnInput = {
      nowMs: last + 40 * DAY + 3 * 3_600_000,
      firstOrderAt: last - 2 * 3_600_000,
      lastOrderAt: last,
      orderCount: 2, // two orders on one day: one purchase day
      purchaseDays: 1,
      netSpend: 160,
      pAlive: 1,
      valueIfActive: 500,
      tenantMedianIntervalDays: 20,
    }
    expect(churnDetails(input)).toEqual({
      churn_risk: 'at_risk', // 40 days
      churn_probability: 0.6031, // 1 − 2^(−40/30): the median 20 days is raised to the 30-day floor
      order_frequency_days: 20,
      expected_order_date: '2025-01-30',
      days_overdue: 20,
      recommended_action: 'nurture', // at_risk, value unknown → medium
      potential_loss: 301.57, // 0.60315 × 500
    })
    // MBG/NBD's P(alive) 0.8 says less than the rhythm: the rhythm stands; 0.3 says more: 0.7
    expect(churnDetails({ ...input, pAlive: 0.8 }).churn_probability).toBe(0.6031)
    expect(churnDetails({ ...input, pAlive: 0.3 })).toMatchObject({ churn_probability: 0.7, potential_loss: 350 })
    // no repeat buyer in the tenant either: no interval, the 90-day half-life
    expect(churnDetails({ ...input, pAlive: null, valueIfActive: null, tenantMedianIntervalDays: null })).toMatchObject({
      order_frequency_days: null,
      expected_order_date: null,
      days_overdue: null,
      churn_probability: 0.2651, // 1 − 2^(−40/90) = 0.26513
      potential_loss: 42.42, // 0.26513 × 160 (tenure 40 days: the whole spend)
    })
  })

  it('an active customer stays below 0.5 whatever the model says; P(alive) is clamped', () => {
    const last = Date.UTC(2025, 5, 1)
    const input: ChurnInput = { nowMs: last + 5 * DAY, firstOrderAt: last - 100 * DAY, lastOrderAt: last, orderCount: 5, purchaseDays: 5, netSpend: 200, pAlive: 1.3, valueIfActive: 3000, tenantMedianIntervalDays: null }
    const r = churnDetails(input)
    // 25-day interval → half-life 30: 1 − 2^(−5/30) = 0.10910
    expect(r).toMatchObject({ order_frequency_days: 25, expected_order_date: '2025-06-26', days_overdue: 0, churn_probability: 0.1091, potential_loss: 327.3, churn_risk: 'active', recommended_action: 'none' })
    // a model that calls them dead is capped at the 30-day curve while they are active …
    expect(churnDetails({ ...input, pAlive: -0.2 }).churn_probability).toBe(0.1091)
    expect(churnDetails({ ...input, pAlive: 0.1, nowMs: last + 29 * DAY }).churn_probability).toBe(0.4883) // 1 − 2^(−29/30)
    // … and speaks in full from the at-risk line on
    expect(churnDetails({ ...input, pAlive: 0.1, nowMs: last + 30 * DAY }).churn_probability).toBe(0.9)
    expect(churnDetails({ ...input, pAlive: null }).churn_probability).toBe(roundTo(1 - 2 ** (-5 / 30), 4))
    // bought today: 0
    expect(churnDetails({ ...input, pAlive: 0.2, nowMs: last + 3_600_000 }).churn_probability).toBe(0)
    expect(() => churnDetails({ ...input, purchaseDays: 0 })).toThrow(RangeError)
    expect(() => churnDetails({ ...input, netSpend: Number.NaN })).toThrow(RangeError)
    expect(() => churnDetails({ ...input, valueIfActive: Number.POSITIVE_INFINITY })).toThrow(RangeError)
  })

  it('the half-life is the rhythm kept within the level lines [30, 90] days', () => {
    expect(HALF_LIFE_BOUNDS_DAYS).toEqual({ min: 30, max: 90 })
    expect([rhythmHalfLife(7), rhythmHalfLife(45.5), rhythmHalfLife(200), rhythmHalfLife(null), rhythmHalfLife(0)]).toEqual([30, 45.5, 90, 90, 90])
    expect(lapseProbability(45.5, 45.5)).toBeCloseTo(0.5, 12)
    expect(lapseProbability(91, 45.5)).toBeCloseTo(0.75, 12)
  })

  it('probability and level agree: every active customer below every churned one, for any rhythm and P(alive)', () => {
    const pAlives = [null, 0, 0.01, 0.3, 0.5, 0.9, 0.999, 1]
    const halfLives = [1, 7, 29.9, 30, 45, 90, 91, 400].map(rhythmHalfLife)
    let maxActive = 0
    let minChurned = 1
    for (const pa of pAlives) {
      for (const h of halfLives) {
        for (let d = 0; d <= 400; d++) {
          const p = churnProbability(d, pa, h)
          if (churnRisk(d) === 'active') maxActive = Math.max(maxActive, p)
          if (churnRisk(d) === 'churned') minChurned = Math.min(minChurned, p)
        }
      }
    }
    expect(maxActive).toBeCloseTo(1 - 2 ** (-29 / 30), 12) // 0.4883
    expect(minChurned).toBeCloseTo(1 - 2 ** (-91 / 90), 12) // 0.5038
    expect(maxActive).toBeLessThan(0.5)
    expect(minChurned).toBeGreaterThan(0.5)
  })

  it('monotone in days since the last order for a given history, with P(alive) from a model as T grows', () => {
    // BG/NBD and MBG/NBD in days with real dropout (CDNOW-like) and a near-degenerate one (retail-like).
    const fits = [
      { model: bgNbd, params: { r: 0.25, alpha: 38, a: 0.6, b: 2.6 } },
      { model: mbgNbd, params: { r: 0.65, alpha: 63, a: 0.54, b: 0.94 } },
      { model: mbgNbd, params: { r: 0.83, alpha: 69, a: 0.0019, b: 11.9 } },
    ]
    const histories = [
      { x: 0, tx: 0, interval: 40 }, // one-time buyer, tenant median 40
      { x: 1, tx: 200, interval: 200 },
      { x: 6, tx: 60, interval: 10 },
      { x: 30, tx: 300, interval: 10 },
    ]
    for (const { model, params } of fits) {
      for (const h of histories) {
        let prev = -1
        for (let d = 0; d <= 500; d++) {
          const pa = model.probabilityAlive(params, h.x, h.tx, h.tx + d)
          const p = churnProbability(d, pa, rhythmHalfLife(h.interval))
          expect(p, `${model.name} x=${h.x} day ${d}`).toBeGreaterThanOrEqual(prev)
          prev = p
        }
        expect(prev).toBeGreaterThan(0.97)
      }
    }
  })

  it('potential_loss never exceeds the value at stake; the fallback is spend per horizon over the tenure', () => {
    const first = Date.UTC(2023, 0, 1)
    // tenure 730.5 days: half of the 1,000 spent falls in a year
    expect(fallbackValueIfActive(1000, first, first + 730.5 * DAY)).toBe(500)
    expect(fallbackValueIfActive(1000, first, first + 100 * DAY)).toBe(1000)
    expect(fallbackValueIfActive(1000, first, first + 730.5 * DAY, 365.25 / 2)).toBe(250)
    expect(fallbackValueIfActive(-5, first, first)).toBe(0)
    const base: ChurnInput = { nowMs: first + 500 * DAY, firstOrderAt: first, lastOrderAt: first + 100 * DAY, orderCount: 3, purchaseDays: 3, netSpend: 900, pAlive: 0.001, valueIfActive: 1234.56, tenantMedianIntervalDays: 10 }
    for (const valueIfActive of [0, 1234.56, 1e7, null]) {
      const r = churnDetails({ ...base, valueIfActive })
      expect(r.churn_probability).toBe(0.999) // the model (0.999) over the rhythm (1 − 2^(−400/50) = 0.9961)
      expect(r.potential_loss).toBeLessThanOrEqual(valueIfActive ?? 900)
    }
    expect(churnDetails({ ...base, valueIfActive: null }).potential_loss).toBe(656.79) // 0.999 × 900 × 365.25 / 500
  })

  it('recommended actions by level and value', () => {
    expect(Object.keys(ACTION_TABLE)).toEqual([...CHURN_RISKS])
    const last = Date.UTC(2025, 0, 1)
    const at = (days: number, clvTier: 'high' | 'medium' | 'low') =>
      churnDetails({ nowMs: last + days * DAY, firstOrderAt: last - 10 * DAY, lastOrderAt: last, orderCount: 2, purchaseDays: 2, netSpend: 2, pAlive: 0.5, valueIfActive: 1, tenantMedianIntervalDays: null, clvTier }).recommended_action
    expect([at(10, 'high'), at(45, 'high'), at(75, 'medium'), at(120, 'high'), at(120, 'low')]).toEqual(['none', 'personal_outreach', 'discount_offer', 'win_back_campaign', 'none'])
  })

  it('intervals, medians and rounding helpers', () => {
    expect(orderIntervalDays(Date.UTC(2025, 0, 1, 23), Date.UTC(2025, 0, 11, 1), 3)).toBe(5)
    expect(orderIntervalDays(0, 0, 1)).toBeNull()
    expect(medianIntervalDays([9, 1, 4])).toBe(4)
    expect(medianIntervalDays([1, 2, 3, 10])).toBe(2.5)
    expect(medianIntervalDays([])).toBeNull()
    expect(roundTo(1.005, 2)).toBe(1.01)
    expect(roundTo(0.12345, 4)).toBe(0.1235)
    expect(roundTo(-2.5, 0)).toBe(-3)
    expect(roundTo(1e-9, 4)).toBe(0)
  })

  it('roundTo rounds the decimal text half up, on values at and near a half too', () => {
    // The definition: shift the decimal point in the shortest text, round, shift back.
    const byText = (x: number, dp: number) => {
      const a = Math.abs(x)
      const text = String(a)
      const r = text.includes('e') ? Math.round(a * 10 ** dp) / 10 ** dp : Number(`${Math.round(Number(`${text}e${dp}`))}e-${dp}`)
      return Math.sign(x) * r || 0
    }
    let seed = 11
    const random = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32
    for (let i = 0; i < 20_000; i++) {
      const x = (random() - 0.5) * 10 ** Math.floor(random() * 14 - 5)
      const half = Math.round(x * 100) / 100 + 0.005
      for (const v of [x, half, half / 100]) for (const dp of [0, 2, 4]) expect(roundTo(v, dp), `${v} to ${dp}`).toBe(byText(v, dp))
    }
  })
})
