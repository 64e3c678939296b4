/**
 * How good are the predictions on a tenant's own history: a calibration/holdout check. Pure.
 *
 * The tenant's model is fitted as it would have been at the end of the calibration period (the
 * orders up to that day, the same fit and the same features the product computes), and its
 * predictions for the holdout (the days after, up to the reference date) are set against what the
 * customers did. Purchases are counted as in the models: distinct purchase days (same-day orders
 * are one purchase), repeat purchases in the calibration period, purchases in the holdout.
 *
 * The same quantities as lifetimes' `calibration_and_holdout_data` (freq 'D') and
 * `conditional_expected_number_of_purchases_up_to_time`: a customer belongs to the calibration
 * when their first purchase is on or before its last day; T = calibration end − first purchase
 * day; the holdout lasts holdout end − calibration end days. docs/prediction-quality.md.
 */
import { aggregate, DAY_MS, utcDay, type CustomerAggregates, type OrderFact, type OrderHistory } from './order-facts.ts'
import { buildTenantModel, type ClvMethod } from './model.ts'
import { computeFeatures, DEFAULT_FEATURE_OPTIONS } from './features.ts'
import { TRANSACTION_MODELS, type TransactionModelName, type TransactionParams } from './clv/index.ts'
import { CHURN_RISKS } from './churn.ts'
import { isoDay } from '../../common/time.ts'

/** Calibration frequencies 0 … 6 have a bucket each; 7 and more share one. */
export const VALIDATION_BUCKETS = ['0', '1', '2', '3', '4', '5', '6', '7+'] as const
const TOP_BUCKET = VALIDATION_BUCKETS.length - 1

export interface ValidationInput {
  /** Each customer's counting orders (the feature row's order history). */
  customers: readonly OrderHistory[]
  /** Last day of the calibration period (UTC epoch day, inclusive). */
  calibrationEndDay: number
  /** Last day of the holdout (UTC epoch day, inclusive): the tenant's reference date. */
  holdoutEndDay: number
  model: TransactionModelName
}

export interface PurchaseBucket {
  frequency_cal: (typeof VALIDATION_BUCKETS)[number]
  customers: number
  actual_purchases: number
  predicted_purchases: number
  actual_mean: number
  predicted_mean: number
  /** Mean P(alive) at the end of the calibration period. */
  p_alive_mean: number
  /** Share of the bucket's customers who bought in the holdout. */
  purchased_share: number
}

export interface ChurnLevelRow {
  churn_risk: string
  customers: number
  /** Mean churn probability the product gave them at the end of the calibration period. */
  churn_probability_mean: number
  /** Share who bought nothing in the holdout. */
  no_purchase_share: number
}

export interface ValidationReport {
  model: TransactionModelName
  method: ClvMethod
  parameters: TransactionParams
  calibration: { end: string; customers: number; repeat_buyers: number }
  holdout: { start: string; end: string; days: number }
  purchases: {
    buckets: PurchaseBucket[]
    totals: {
      customers: number
      actual_purchases: number
      predicted_purchases: number
      /** Mean over customers of |predicted − actual|. */
      mae: number
      rmse: number
      /** (predicted − actual) / actual over all customers; null when nobody bought. */
      bias: number | null
    }
  }
  churn: {
    levels: ChurnLevelRow[]
    /** Mean P(alive) at the calibration end against the share who bought in the holdout. */
    p_alive_mean: number
    purchased_share: number
    /** Mean of (churn probability − no purchase in the holdout)², 0 best; null without customers. */
    brier_score: number | null
  }
}

export class ValidationRangeError extends RangeError {}

const facts = (h: OrderHistory): OrderFact[] => h.times.map((t, i) => ({ version: 0, eventId: '', placedAt: t, cents: h.cents[i]!, cancelled: false }))

/** Distinct purchase days in (fromDay, toDay]. */
function purchaseDaysBetween(times: readonly number[], fromDay: number, toDay: number): number {
  const days = new Set<number>()
  for (const t of times) {
    const d = utcDay(t)
    if (d > fromDay && d <= toDay) days.add(d)
  }
  return days.size
}

export function validatePredictions(input: ValidationInput): ValidationReport {
  const { calibrationEndDay: cal, holdoutEndDay: end } = input
  if (end <= cal) throw new ValidationRangeError('the calibration must end before the reference date (the holdout needs at least one day)')
  const calEndMs = (cal + 1) * DAY_MS - 1
  const rows: { agg: CustomerAggregates; holdout: number }[] = []
  for (const h of input.customers) {
    const agg = aggregate(facts(h), calEndMs)
    if (agg.orderCount === 0) continue
    rows.push({ agg, holdout: purchaseDaysBetween(h.times, cal, end) })
  }
  if (rows.length === 0) throw new ValidationRangeError('no customer bought on or before the end of the calibration period')
  const tenant = buildTenantModel(
    rows.map((r) => r.agg),
    calEndMs,
    { clvModel: input.model, refitClv: true, referenceMs: calEndMs },
  )
  const fit = tenant.clv!
  const tm = TRANSACTION_MODELS[fit.model]
  const horizon = end - cal

  const buckets = VALIDATION_BUCKETS.map((frequency_cal) => ({ frequency_cal, customers: 0, actual_purchases: 0, predicted_purchases: 0, pAlive: 0, bought: 0 }))
  const levels = new Map<string, { customers: number; probability: number; none: number }>()
  let absErr = 0
  let sqErr = 0
  let brier = 0
  let brierN = 0
  for (const { agg, holdout } of rows) {
    const x = agg.repeatPurchases
    const T = Math.max(cal - agg.firstDay!, agg.repeatSpanDays)
    const predicted = tm.expectedPurchases(fit.params, horizon, x, agg.repeatSpanDays, T)
    const b = buckets[Math.min(x, TOP_BUCKET)]!
    b.customers++
    b.actual_purchases += holdout
    b.predicted_purchases += predicted
    b.pAlive += tm.probabilityAlive(fit.params, x, agg.repeatSpanDays, T)
    if (holdout > 0) b.bought++
    absErr += Math.abs(predicted - holdout)
    sqErr += (predicted - holdout) ** 2
    const f = computeFeatures(agg, tenant, calEndMs, DEFAULT_FEATURE_OPTIONS)
    if (f.churn_risk !== null && f.churn_probability !== null) {
      const level = levels.get(f.churn_risk) ?? { customers: 0, probability: 0, none: 0 }
      level.customers++
      level.probability += f.churn_probability
      if (holdout === 0) level.none++
      levels.set(f.churn_risk, level)
      brier += (f.churn_probability - (holdout === 0 ? 1 : 0)) ** 2
      brierN++
    }
  }
  const n = rows.length
  const actual = buckets.reduce((s, b) => s + b.actual_purchases, 0)
  const predicted = buckets.reduce((s, b) => s + b.predicted_purchases, 0)
  return {
    model: fit.model,
    method: fit.method ?? 'maximum_likelihood',
    parameters: fit.params,
    calibration: { end: isoDay(cal), customers: n, repeat_buyers: rows.filter((r) => r.agg.repeatPurchases > 0).length },
    holdout: { start: isoDay(cal + 1), end: isoDay(end), days: horizon },
    purchases: {
      buckets: buckets.map(({ pAlive, bought, ...b }) => ({
        ...b,
        predicted_purchases: round(b.predicted_purchases, 4),
        actual_mean: b.customers ? round(b.actual_purchases / b.customers, 4) : 0,
        predicted_mean: b.customers ? round(b.predicted_purchases / b.customers, 4) : 0,
        p_alive_mean: b.customers ? round(pAlive / b.customers, 4) : 0,
        purchased_share: b.customers ? round(bought / b.customers, 4) : 0,
      })),
      totals: {
        customers: n,
        actual_purchases: actual,
        predicted_purchases: round(predicted, 4),
        mae: round(absErr / n, 4),
        rmse: round(Math.sqrt(sqErr / n), 4),
        bias: actual > 0 ? round((predicted - actual) / actual, 4) : null,
      },
    },
    churn: {
      levels: CHURN_RISKS.filter((l) => levels.has(l)).map((l) => {
        const v = levels.get(l)!
        return { churn_risk: l, customers: v.customers, churn_probability_mean: round(v.probability / v.customers, 4), no_purchase_share: round(v.none / v.customers, 4) }
      }),
      p_alive_mean: round(buckets.reduce((s, b) => s + b.pAlive, 0) / n, 4),
      purchased_share: round(buckets.reduce((s, b) => s + b.bought, 0) / n, 4),
      brier_score: brierN ? round(brier / brierN, 4) : null,
    },
  }
}

const round = (v: number, dp: number) => Math.round(v * 10 ** dp) / 10 ** dp
