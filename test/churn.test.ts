import { describe, expect, it } from 'vitest'
import { ACTION_TABLE, CHURN_RISKS, churnDetails, churnRisk, medianIntervalDays, orderIntervalDays, roundTo, type ChurnInput } from '../pipelines/features/churn.ts'

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
    const base: ChurnInput = { nowMs: 0, firstOrderAt: last - 50 * DAY, lastOrderAt: last, orderCount: 3, purchaseDays: 3, avgOrderValue: 10, pAlive: 0.5, tenantMedianIntervalDays: 30 }
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
  it('a repeat buyer, hand-computed', () => {
    const r = churnDetails({
      nowMs: Date.UTC(2025, 3, 10, 12), // 2025-04-10 12:00
      firstOrderAt: Date.UTC(2025, 0, 1, 9), // epoch-day span to the last order: 31 + 28 + 1 = 60
      lastOrderAt: Date.UTC(2025, 2, 2, 18), // 2025-03-02 18:00
      orderCount: 9,
      purchaseDays: 8, // 7 gaps → 60 / 7 = 8.5714 days
      avgOrderValue: 50,
      pAlive: 0.35,
      tenantMedianIntervalDays: 30, // not used: the customer has their own interval
      clvTier: 'high',
    })
    expect(r).toEqual({
      churn_risk: 'at_risk', // 38.75 days since 03-02 18:00
      churn_probability: 0.65,
      order_frequency_days: 8.57,
      expected_order_date: '2025-03-11', // 03-02 18:00 + 8d 13.7h = 03-11 07:43
      days_overdue: 29, // floor(38 − 8.5714)
      recommended_action: 'personal_outreach',
      potential_loss: 1383.96, // 0.65 × 50 × 365 / (60 / 7) = 1383.958
    })
  })

  it('a one-time buyer gets the tenant median interval; P(alive) = 1 from BG/NBD is replaced by the survival rule', () => {
    const last = Date.UTC(2025, 0, 10, 15)
    const input: ChurnInput = {
      nowMs: last + 40 * DAY + 3 * 3_600_000,
      firstOrderAt: last - 2 * 3_600_000,
      lastOrderAt: last,
      orderCount: 2, // two orders on one day: one purchase day
      purchaseDays: 1,
      avgOrderValue: 80,
      pAlive: 1,
      tenantMedianIntervalDays: 20,
    }
    expect(churnDetails(input)).toEqual({
      churn_risk: 'at_risk', // 40 days
      churn_probability: 0.75, // 1 − 2^(−40/20)
      order_frequency_days: 20,
      expected_order_date: '2025-01-30',
      days_overdue: 20,
      recommended_action: 'nurture', // at_risk, value unknown → medium
      potential_loss: 1095, // 0.75 × 80 × 365 / 20
    })
    // a model that does say something for one-time buyers (MBG/NBD) is used as is
    expect(churnDetails({ ...input, pAlive: 0.8 }).churn_probability).toBe(0.2)
    // no repeat buyer in the tenant either: no interval, the 90-day half-life, one expected order
    expect(churnDetails({ ...input, pAlive: null, tenantMedianIntervalDays: null })).toMatchObject({
      order_frequency_days: null,
      expected_order_date: null,
      days_overdue: null,
      churn_probability: 0.2651, // 1 − 2^(−40/90) = 0.26513
      potential_loss: 21.21, // 0.26513 × 80 × 1
    })
  })

  it('not yet due: days_overdue is 0; P(alive) is clamped; a customer without a fit uses their own interval', () => {
    const last = Date.UTC(2025, 5, 1)
    const input: ChurnInput = { nowMs: last + 5 * DAY, firstOrderAt: last - 100 * DAY, lastOrderAt: last, orderCount: 5, purchaseDays: 5, avgOrderValue: 40, pAlive: 1.3, tenantMedianIntervalDays: null }
    const r = churnDetails(input)
    expect(r).toMatchObject({ order_frequency_days: 25, expected_order_date: '2025-06-26', days_overdue: 0, churn_probability: 0, potential_loss: 0, churn_risk: 'active', recommended_action: 'none' })
    expect(churnDetails({ ...input, pAlive: -0.2 }).churn_probability).toBe(1)
    // no fit: 1 − 2^(−5/25)
    expect(churnDetails({ ...input, pAlive: null }).churn_probability).toBe(roundTo(1 - 2 ** -0.2, 4))
    expect(() => churnDetails({ ...input, purchaseDays: 0 })).toThrow(RangeError)
    expect(() => churnDetails({ ...input, avgOrderValue: Number.NaN })).toThrow(RangeError)
  })

  it('recommended actions by level and value', () => {
    expect(Object.keys(ACTION_TABLE)).toEqual([...CHURN_RISKS])
    const last = Date.UTC(2025, 0, 1)
    const at = (days: number, clvTier: 'high' | 'medium' | 'low') =>
      churnDetails({ nowMs: last + days * DAY, firstOrderAt: last - 10 * DAY, lastOrderAt: last, orderCount: 2, purchaseDays: 2, avgOrderValue: 1, pAlive: 0.5, tenantMedianIntervalDays: null, clvTier }).recommended_action
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
})
