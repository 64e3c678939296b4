import type { CustomerAggregates } from './order-facts.ts'
import { customerAgeDays, utcDay } from './order-facts.ts'
import { tenantBoundaries, type TenantBoundaries } from './rfm.ts'
import { medianIntervalDays } from './churn.ts'
import { fitGammaGamma, REFERENCE_FITS, REFERENCE_PRIOR_PRECISION, TRANSACTION_MODELS, type GammaGammaFit, type GammaGammaParams, type TransactionFit, type TransactionFitOptions, type TransactionModelName, type TransactionParams } from './clv/index.ts'

/**
 * A tenant's model: the RFM quintile thresholds and the fitted CLV parameters. Pure: built from
 * the aggregates of the tenant's customers; stored as JSON in `tenant_models` by model-store.ts.
 *
 * Time unit of the CLV models is the day (T = today − first purchase day, t_x in days).
 * Gamma-Gamma is fitted on currency units (zbar in pesos, not cents) for conditioning.
 */
/**
 * How a tenant's CLV parameters were estimated: `maximum_likelihood` on its own customers
 * (PRIOR_BELOW or more), or `reference_prior` below that: a MAP estimate that starts from the
 * reference shop's fit and moves toward the tenant's data as customers arrive
 * (clv/reference-prior.ts), with each customer's own mean spend per purchase day as the spend
 * below 20 buyers (too few repeat buyers for Gamma-Gamma).
 */
export type ClvMethod = 'maximum_likelihood' | 'reference_prior'

export interface ClvFit {
  model: TransactionModelName
  /** Absent in fits stored before small shops got a CLV: maximum_likelihood. */
  method?: ClvMethod
  params: TransactionParams
  ll: number
  gg: GammaGammaParams | null
  fittedAt: number
  /** UTC day of the reference the fit measured T against; a fit for another day is refitted. Absent in fits stored before it existed. */
  referenceDay?: number
  /** Customers and repeat buyers the fit saw. */
  customers: number
  repeaters: number
}

export interface TenantModel {
  /** Milliseconds since epoch of the last change; rows record which model scored them. */
  version: number
  customers: number
  boundaries: TenantBoundaries | null
  clv: ClvFit | null
  /** Median inter-purchase interval (days) of the repeat buyers: the expected interval of one-time buyers. */
  medianIntervalDays: number | null
}

/**
 * Below this many buyers the CLV parameters are a MAP estimate under the reference prior
 * (ClvMethod `reference_prior`): twenty customers cannot identify four parameters, and a few
 * hundred can still run the plain fit to a degenerate corner (no heterogeneity, no dropout). The
 * prior's weight is fixed while the likelihood grows with every customer, so the estimate moves
 * to the tenant's own maximum smoothly; at 1,000 buyers the difference is below the fit's noise.
 */
export const PRIOR_BELOW = 1_000
/** Gamma-Gamma (the spend model) needs at least this many buyers; below, each customer's own spend. */
export const MIN_CUSTOMERS_FOR_SPEND_MODEL = 20

/** RFM inputs of the customers with a counting order; F = purchase days (same-day orders are one purchase, as in the models). */
export function rfmInputs(aggs: readonly CustomerAggregates[]) {
  const out: { lastOrderDay: number; frequency: number; monetary: number }[] = []
  for (const a of aggs) if (a.orderCount > 0) out.push({ lastOrderDay: a.lastDay!, frequency: a.purchaseDays, monetary: a.monetaryCents })
  return out
}

export function medianInterval(aggs: readonly CustomerAggregates[]): number | null {
  const xs: number[] = []
  for (const a of aggs) if (a.repeatPurchases > 0) xs.push(a.repeatSpanDays / a.repeatPurchases)
  return medianIntervalDays(xs)
}

/**
 * `nowMs` is the wall clock (when the fit was made); `referenceMs` the tenant's reference instant
 * (common/reference-date.ts), against which T is measured. They differ for imported history.
 */
export function fitClv(aggs: readonly CustomerAggregates[], nowMs: number, modelName: TransactionModelName, referenceMs: number = nowMs): ClvFit | null {
  const inputs = clvInputs(aggs, modelName, referenceMs)
  return inputs ? fitClvOn(inputs, nowMs).clv : null
}

/** The CLV fit of its inputs on this thread, with the purchase model's own fit (iterations, evaluations). */
export function fitClvOn(inputs: ClvInputs, nowMs: number): { clv: ClvFit; transaction: TransactionFit } {
  const transaction = TRANSACTION_MODELS[inputs.model].fit(inputs.data, inputs.options)
  return { clv: clvFitOf(inputs, transaction, inputs.fitsSpend ? fitGammaGamma(inputs.spend) : null, nowMs), transaction }
}

/** What a CLV fit is fitted on: the purchase patterns, the spend of the repeat buyers, and how. */
export interface ClvInputs {
  model: TransactionModelName
  method: ClvMethod
  today: number
  data: { x: number; tx: number; T: number }[]
  spend: { x: number; zbar: number }[]
  /** The transaction fit's options (the prior, below PRIOR_BELOW buyers). */
  options: TransactionFitOptions | undefined
  /** Whether Gamma-Gamma is fitted (else each customer's own mean spend: features.ts). */
  fitsSpend: boolean
}

/** The inputs of a CLV fit from the customers' aggregates; null without a buyer. */
export function clvInputs(aggs: readonly CustomerAggregates[], modelName: TransactionModelName, referenceMs: number): ClvInputs | null {
  const today = utcDay(referenceMs)
  const data: { x: number; tx: number; T: number }[] = []
  const spend: { x: number; zbar: number }[] = []
  for (const a of aggs) {
    if (a.orderCount === 0) continue
    data.push({ x: a.repeatPurchases, tx: a.repeatSpanDays, T: customerAgeDays(a, today) })
    if (a.repeatPurchases > 0 && a.repeatAvgCents > 0) spend.push({ x: a.repeatPurchases, zbar: a.repeatAvgCents / 100 })
  }
  if (data.length === 0) return null
  // Below PRIOR_BELOW buyers the prior steadies the fit (its weight fades as customers accumulate:
  // no cliff where it stops); from there on the tenant's own maximum likelihood.
  const method: ClvMethod = data.length < PRIOR_BELOW ? 'reference_prior' : 'maximum_likelihood'
  const options = method === 'reference_prior' ? { prior: { params: REFERENCE_FITS[modelName], precision: REFERENCE_PRIOR_PRECISION } } : undefined
  // Without usable repeat buyers, or with a handful of customers, the spend model is not
  // identifiable: CLV falls back to each customer's own mean spend per purchase day (features.ts).
  const fitsSpend = spend.length >= 2 && data.length >= MIN_CUSTOMERS_FOR_SPEND_MODEL
  return { model: modelName, method, today, data, spend, options, fitsSpend }
}

/** The tenant's CLV fit from its inputs and the two models' fits. */
export function clvFitOf(inputs: ClvInputs, fit: TransactionFit, ggFit: GammaGammaFit | null, nowMs: number): ClvFit {
  const gg = ggFit && ggFit.customers > 0 ? ggFit.params : null
  return { model: inputs.model, method: inputs.method, params: fit.params, ll: fit.ll, gg, fittedAt: nowMs, referenceDay: inputs.today, customers: inputs.data.length, repeaters: inputs.spend.length }
}

/**
 * Whether buildTenantModel fits the CLV again: asked to, no fit yet, another model, or a fit for
 * another reference day. A caller that fits elsewhere (on several threads: parallel-fit.ts) passes
 * its fit as `fitted` when this says so.
 */
export function clvRefitNeeded(opts: { clvModel: TransactionModelName; refitClv: boolean; previous?: TenantModel | null; referenceMs?: number }, nowMs = Date.now()): boolean {
  const prevClv = opts.previous?.clv ?? null
  const referenceMs = opts.referenceMs ?? nowMs
  const stale = !prevClv || prevClv.model !== opts.clvModel || (prevClv.referenceDay ?? utcDay(prevClv.fittedAt)) !== utcDay(referenceMs)
  return opts.refitClv || stale
}

/** What a tenant's model holds besides the CLV fit: the RFM quintile thresholds and the median interval. */
export type RfmModelPart = Pick<TenantModel, 'customers' | 'boundaries' | 'medianIntervalDays'>

export function rfmModelPart(aggs: readonly CustomerAggregates[], nowMs: number): RfmModelPart {
  const inputs = rfmInputs(aggs)
  return { customers: inputs.length, boundaries: tenantBoundaries(inputs, nowMs), medianIntervalDays: medianInterval(aggs) }
}

/**
 * Builds (or refreshes) a tenant's model. Quintile thresholds are always recomputed (cheap;
 * `rfm`: already computed by the caller from the same aggregates), the CLV fit is redone when
 * `refitClv` is set or there is none yet, else carried over.
 */
export function buildTenantModel(
  aggs: readonly CustomerAggregates[],
  nowMs: number,
  opts: { clvModel: TransactionModelName; refitClv: boolean; previous?: TenantModel | null; referenceMs?: number; fitted?: ClvFit | null; rfm?: RfmModelPart },
): TenantModel {
  const prevClv = opts.previous?.clv ?? null
  const referenceMs = opts.referenceMs ?? nowMs
  const clv = clvRefitNeeded(opts, nowMs) ? (opts.fitted !== undefined ? opts.fitted : fitClv(aggs, nowMs, opts.clvModel, referenceMs)) : prevClv
  const rfm = opts.rfm ?? rfmModelPart(aggs, nowMs)
  return {
    version: Math.max(nowMs, (opts.previous?.version ?? 0) + 1),
    customers: rfm.customers,
    boundaries: rfm.boundaries,
    clv,
    medianIntervalDays: rfm.medianIntervalDays,
  }
}
