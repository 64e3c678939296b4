/**
 * clvFeatures with a shared ClvMemo gives exactly the values of the formula it replaced (P(alive),
 * discountedClv over the horizon if alive, and the horizon's expected purchases), bit for bit,
 * for both transaction models, with and without Gamma-Gamma, for horizons of 0 to 24 months.
 */
import { describe, expect, it } from 'vitest'
import { DAYS_PER_MONTH, discountedClv, expectedAverageSpend, REFERENCE_FITS, TRANSACTION_MODELS } from '../../pipelines/features/clv/index.ts'
import { ClvMemo, clvFeatures, type ClvPart } from '../../pipelines/features/features.ts'
import type { ClvFit } from '../../pipelines/features/model.ts'
import { aggregate, type CustomerAggregates } from '../../pipelines/features/order-facts.ts'
import { rng } from './histories.ts'

const round = (v: number, dp: number) => Math.round(v * 10 ** dp) / 10 ** dp

/** The formula as clvFeatures computed it before the memo, one customer at a time. */
function direct(agg: CustomerAggregates, clv: ClvFit, today: number, months: number, d: number): ClvPart {
  const x = agg.repeatPurchases
  const tx = agg.repeatSpanDays
  const T = Math.max(today - agg.firstDay!, tx)
  const tm = TRANSACTION_MODELS[clv.model]
  const zbar = agg.repeatAvgCents / 100
  const spend = clv.gg ? expectedAverageSpend(clv.gg, x, zbar) : agg.monetaryCents / agg.purchaseDays / 100
  const pAlive = tm.probabilityAlive(clv.params, x, tx, T)
  const ifAlive = discountedClv({ model: clv.model, params: clv.params, gg: clv.gg, x, tx, T, zbar, spend, months, monthlyDiscountRate: d, ifAlive: true })
  return {
    p_alive: round(pAlive, 6),
    expected_purchases: round(pAlive * tm.expectedPurchasesIfAlive(clv.params, months * DAYS_PER_MONTH, x, tx, T), 6),
    predicted_value: round(pAlive * ifAlive, 2),
    value_if_active: round(ifAlive, 2),
  }
}

describe('ClvMemo', () => {
  it('changes no value, bit for bit, whether customers share patterns or not', () => {
    const rand = rng(7)
    const today = 20_000
    const customers: CustomerAggregates[] = []
    for (let i = 0; i < 600; i++) {
      // Few distinct days, so many customers share a pattern.
      const days = 1 + Math.floor(rand() * 4)
      const first = today - 1 - Math.floor(rand() * 30)
      customers.push(aggregate(Array.from({ length: days }, (_, k) => ({ placedAt: (first + k * Math.floor(1 + rand() * 3)) * 86_400_000, cents: 1_000 + Math.floor(rand() * 3) * 500, cancelled: false }))))
    }
    for (const model of ['bgnbd', 'mbgnbd'] as const) {
      for (const gg of [null, { p: 6.25, q: 3.74, gamma: 15.44 }]) {
        const clv: ClvFit = { model, params: REFERENCE_FITS[model], ll: 0, gg, fittedAt: 1, customers: 600, repeaters: 400 }
        for (const [months, d] of [[12, 0.01], [0, 0.01], [1, 0], [24, 0.02]] as const) {
          const memo = new ClvMemo()
          for (const agg of customers) {
            const want = direct(agg, clv, today, months, d)
            expect(clvFeatures(agg, clv, today, { horizonMonths: months, monthlyDiscountRate: d }, memo)).toStrictEqual(want)
            expect(clvFeatures(agg, clv, today, { horizonMonths: months, monthlyDiscountRate: d })).toStrictEqual(want)
          }
        }
      }
    }
  })

  it('keeps one fit apart from another, and a horizon from another', () => {
    const agg = aggregate([{ placedAt: 19_900 * 86_400_000, cents: 5_000, cancelled: false }, { placedAt: 19_950 * 86_400_000, cents: 7_000, cancelled: false }])
    const memo = new ClvMemo()
    const a: ClvFit = { model: 'bgnbd', params: REFERENCE_FITS.bgnbd, ll: 0, gg: null, fittedAt: 1, customers: 1, repeaters: 1 }
    const b: ClvFit = { ...a, params: { ...a.params, r: a.params.r * 2 } }
    const opts = { horizonMonths: 12, monthlyDiscountRate: 0.01 }
    const first = clvFeatures(agg, a, 20_000, opts, memo)
    expect(clvFeatures(agg, b, 20_000, opts, memo)).toStrictEqual(direct(agg, b, 20_000, 12, 0.01))
    expect(clvFeatures(agg, b, 20_000, opts, memo)).not.toStrictEqual(first)
    expect(clvFeatures(agg, a, 20_000, { ...opts, horizonMonths: 6 }, memo)).toStrictEqual(direct(agg, a, 20_000, 6, 0.01))
    expect(clvFeatures(agg, a, 20_000, opts, memo)).toStrictEqual(first)
  })

  it('refuses a horizon that is not a whole number of months, as discountedClv does', () => {
    const agg = aggregate([{ placedAt: 19_900 * 86_400_000, cents: 5_000, cancelled: false }])
    const clv: ClvFit = { model: 'mbgnbd', params: REFERENCE_FITS.mbgnbd, ll: 0, gg: null, fittedAt: 1, customers: 1, repeaters: 0 }
    expect(() => clvFeatures(agg, clv, 20_000, { horizonMonths: 1.5, monthlyDiscountRate: 0.01 })).toThrow(RangeError)
    expect(() => clvFeatures(agg, clv, 20_000, { horizonMonths: 12, monthlyDiscountRate: -1 })).toThrow(RangeError)
  })
})
