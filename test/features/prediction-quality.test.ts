/**
 * How good are the predictions: the calibration/holdout report (pipelines/features/validation.ts)
 * against lifetimes on CDNOW, and its behaviour on hand-made histories.
 *
 * Reference figures: the 2,357-customer CDNOW sample (../shared/data/clv/CDNOW_sample.txt),
 * calibration 1997-01-01 – 1997-09-30, holdout to 1998-06-30 (273 days), as lifetimes 0.11.3
 * computes them: calibration_and_holdout_data(freq='D'), BetaGeoFitter / ModifiedBetaGeoFitter
 * (penalizer 0), conditional_expected_number_of_purchases_up_to_time(273, …) and
 * conditional_probability_alive, summed per calibration frequency. Produced by
 * test/third-party/cdnow_holdout_lifetimes.py (lifetimes 0.11.3, pandas 1.5.3, numpy 1.23.5, scipy 1.12.0).
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { validatePredictions, ValidationRangeError, VALIDATION_BUCKETS } from '../../pipelines/features/validation.ts'
import { utcDay, type OrderHistory } from '../../pipelines/features/order-facts.ts'
import { within } from '../cdnow.ts'

const SAMPLE = path.resolve(import.meta.dirname, '../../../shared/data/clv/CDNOW_sample.txt')
const haveSample = fs.existsSync(SAMPLE)
const skipped = haveSample ? '' : ` [SKIPPED: ${SAMPLE} not found; the ../shared data folder is absent]`

/** Per bucket 0 … 6, 7+: holdout purchases (actual), lifetimes' predicted sum, mean P(alive), share who bought. */
const LIFETIMES = {
  actual: [334, 306, 298, 156, 157, 112, 112, 407],
  customers: [1411, 439, 214, 100, 62, 38, 29, 64],
  purchased_share: [0.136782, 0.357631, 0.584112, 0.59, 0.790323, 0.684211, 0.655172, 0.875],
  bgnbd: {
    predicted: [317.5982, 229.6546, 223.4447, 152.028, 134.1597, 100.8461, 101.6172, 394.0602],
    p_alive: [1.0, 0.47359, 0.539567, 0.552117, 0.616741, 0.61135, 0.691009, 0.721625],
    total_predicted: 1653.40872418,
    mae: 0.785454243,
  },
  mbgnbd: {
    predicted: [261.2625, 242.0464, 224.4757, 149.2933, 130.4671, 97.415, 97.4638, 374.3046],
    p_alive: [0.408808, 0.436268, 0.515904, 0.534201, 0.601764, 0.600074, 0.678524, 0.713662],
    total_predicted: 1576.72826589,
    mae: 0.764778943,
  },
}

/** CDNOW_sample.txt: master_id, sample_id, date YYYYMMDD, cds, dollars; one history per sample customer. */
function cdnowHistories(): OrderHistory[] {
  const by = new Map<string, OrderHistory>()
  for (const line of fs.readFileSync(SAMPLE, 'utf8').split(/\r?\n/)) {
    const [, id, date, , dollars] = line.trim().split(/\s+/)
    if (!id || !date) continue
    const t = Date.UTC(Number(date.slice(0, 4)), Number(date.slice(4, 6)) - 1, Number(date.slice(6, 8)))
    const h = by.get(id) ?? { times: [], cents: [] }
    h.times.push(t)
    // Eight purchases of $0: the models count purchases, not money; a cent keeps them counting.
    h.cents.push(Math.max(1, Math.round(Number(dollars) * 100)))
    by.set(id, h)
  }
  return [...by.values()]
}

const day = (iso: string) => utcDay(Date.parse(`${iso}T00:00:00Z`))

describe.skipIf(!haveSample)(`CDNOW, 39 weeks calibration and 39 holdout, against lifetimes${skipped}`, () => {
  const customers = haveSample ? cdnowHistories() : []

  it.each(['bgnbd', 'mbgnbd'] as const)('%s: the holdout counts equal lifetimes\', the predictions per bucket within 1 %%', (model) => {
    const report = validatePredictions({ customers, calibrationEndDay: day('1997-09-30'), holdoutEndDay: day('1998-06-30'), model })
    expect(report.model).toBe(model)
    expect(report.method).toBe('maximum_likelihood')
    expect(report.calibration).toEqual({ end: '1997-09-30', customers: 2357, repeat_buyers: 2357 - 1411 })
    expect(report.holdout).toEqual({ start: '1997-10-01', end: '1998-06-30', days: 273 })
    expect(report.purchases.buckets.map((b) => b.frequency_cal)).toEqual([...VALIDATION_BUCKETS])
    expect(report.purchases.buckets.map((b) => b.customers)).toEqual(LIFETIMES.customers)
    expect(report.purchases.buckets.map((b) => b.actual_purchases)).toEqual(LIFETIMES.actual)
    const ref = LIFETIMES[model]
    report.purchases.buckets.forEach((b, i) => {
      within(b.predicted_purchases, ref.predicted[i]!, 0.01)
      within(b.p_alive_mean, ref.p_alive[i]!, 0.01)
      expect(b.purchased_share).toBeCloseTo(LIFETIMES.purchased_share[i]!, 4)
      expect(b.predicted_mean).toBeCloseTo(b.predicted_purchases / b.customers, 3)
    })
    expect(report.purchases.totals.actual_purchases).toBe(1882)
    within(report.purchases.totals.predicted_purchases, ref.total_predicted, 0.01)
    within(report.purchases.totals.mae, ref.mae, 0.01)
    within(report.purchases.totals.bias!, (ref.total_predicted - 1882) / 1882, 0.02)
    expect(report.churn.purchased_share).toBeCloseTo(684 / 2357, 4)
    // The churn levels split every customer; the likelier the product said churn, the likelier nothing was bought.
    expect(report.churn.levels.reduce((s, l) => s + l.customers, 0)).toBe(2357)
    const churned = report.churn.levels.find((l) => l.churn_risk === 'churned')!
    const active = report.churn.levels.find((l) => l.churn_risk === 'active')!
    expect(churned.no_purchase_share).toBeGreaterThan(active.no_purchase_share)
    expect(report.churn.brier_score).toBeGreaterThan(0)
    expect(report.churn.brier_score).toBeLessThan(0.25)
  })
})

describe('the validation report on hand-made histories', () => {
  const at = (iso: string) => Date.parse(`${iso}T12:00:00Z`)
  const h = (...isos: string[]): OrderHistory => ({ times: isos.map(at), cents: isos.map(() => 5000) })

  it('counts holdout purchase days (same-day orders once), leaves out customers who first bought later, and refuses an empty holdout', () => {
    const customers = [
      h('2024-01-05', '2024-02-01', '2024-03-01', '2024-04-10', '2024-04-10'),
      h('2024-01-20', '2024-03-15'),
      h('2024-02-10'),
      h('2024-05-01'), // after the calibration: not in it
      ...Array.from({ length: 20 }, (_, i) => h(`2024-01-${String(i + 1).padStart(2, '0')}`, `2024-02-${String(i + 1).padStart(2, '0')}`)),
    ]
    const report = validatePredictions({ customers, calibrationEndDay: day('2024-02-29'), holdoutEndDay: day('2024-04-30'), model: 'mbgnbd' })
    expect(report.calibration.customers).toBe(23)
    expect(report.holdout).toEqual({ start: '2024-03-01', end: '2024-04-30', days: 61 })
    const byBucket = Object.fromEntries(report.purchases.buckets.map((b) => [b.frequency_cal, b]))
    expect(byBucket['0']).toMatchObject({ customers: 2, actual_purchases: 1 }) // the 2024-01-20 buyer came back 03-15
    expect(byBucket['1']).toMatchObject({ customers: 21, actual_purchases: 2 }) // 03-01 and 04-10 (twice that day) are two days
    expect(report.purchases.totals.actual_purchases).toBe(3)
    for (const b of report.purchases.buckets) expect(Number.isFinite(b.predicted_purchases)).toBe(true)
    expect(() => validatePredictions({ customers, calibrationEndDay: day('2024-04-30'), holdoutEndDay: day('2024-04-30'), model: 'mbgnbd' })).toThrow(ValidationRangeError)
    expect(() => validatePredictions({ customers, calibrationEndDay: day('2023-01-01'), holdoutEndDay: day('2024-04-30'), model: 'mbgnbd' })).toThrow(/no customer bought/)
  })

  it('a small shop is validated with the method that answers for it (the reference prior)', () => {
    const customers = [h('2024-01-05', '2024-02-01'), h('2024-01-20'), h('2024-02-10', '2024-02-20', '2024-04-01')]
    const report = validatePredictions({ customers, calibrationEndDay: day('2024-02-29'), holdoutEndDay: day('2024-04-30'), model: 'bgnbd' })
    expect(report.method).toBe('reference_prior')
    expect(report.purchases.totals).toMatchObject({ customers: 3, actual_purchases: 1 })
    expect(report.purchases.totals.predicted_purchases).toBeGreaterThan(0)
  })
})
