import type { CustomerAggregates } from './order-facts.ts'
import { customerAgeDays, utcDay } from './order-facts.ts'
import { recencyDays, rfmScore } from './rfm.ts'
import { churnDetails, type ValueTier } from './churn.ts'
import { checkHorizon, clvTier, DAYS_PER_MONTH, discountedSum, expectedAverageSpend, TRANSACTION_MODELS } from './clv/index.ts'
import type { ClvFit, TenantModel } from './model.ts'
import { Hash53 } from '../../common/hash53.ts'

/**
 * One customer's derived features at a moment: the spec's RFM record plus CLV and churn. Pure:
 * a function of the aggregates, the tenant's model and the clock, nothing else. The streaming
 * consumer, the tick and the batch recompute all call this, which is why they agree.
 */
export interface FeatureOptions {
  /** CLV horizon in months (default 12). */
  horizonMonths: number
  /** Monthly discount rate of the CLV (default 0.01, about 12.7 % a year). */
  monthlyDiscountRate: number
}

export const DEFAULT_FEATURE_OPTIONS: FeatureOptions = { horizonMonths: 12, monthlyDiscountRate: 0.01 }

export interface FeatureValues {
  recency_days: number | null
  frequency: number
  monetary_cents: number
  r_score: number | null
  f_score: number | null
  m_score: number | null
  rfm_score: string | null
  segment: string | null
  avg_order_value: number
  historical_value_cents: number
  predicted_value: number | null
  total_clv: number | null
  clv_tier: string | null
  expected_purchases: number | null
  p_alive: number | null
  churn_risk: string | null
  churn_probability: number | null
  order_frequency_days: number | null
  expected_order_date: string | null
  days_overdue: number | null
  potential_loss: number | null
  recommended_action: string | null
  model_version: number
}

const round = (v: number, dp: number) => {
  const f = 10 ** dp
  return Math.round(v * f) / f
}

export interface ClvPart {
  p_alive: number
  expected_purchases: number
  predicted_value: number
  /** Discounted value over the horizon had the customer stayed active (predicted_value = P(alive) × this, before rounding). */
  value_if_active: number
}

/**
 * The costly part of clvFeatures: a customer's cumulative expected purchases if alive at each
 * month's end of the horizon, one hypergeometric series each. It depends on (x, T) alone, not on
 * t_x (TransactionModel.expectedPurchasesIfAlive), and customers of a tenant share those (every
 * one-time buyer of a day has the same): a caller scoring many of them passes one memo, and each
 * (x, T) has its series summed once. P(alive), the only part t_x changes, is a closed form
 * computed for each customer.
 */
export class ClvMemo {
  /** @param limit curves kept before it starts again (MEMO_LIMIT: about 100 MB). */
  constructor(private readonly limit = MEMO_LIMIT) {}

  private fits = new WeakMap<ClvFit, { months: number; curves: Map<number, readonly number[]> }>()
  private entries = 0
  private lastClv: ClvFit | null = null
  private lastFit: { months: number; curves: Map<number, readonly number[]> } | undefined

  /** The cumulative expected purchases if alive of (x, T) under a fit, at each month's end of an n-month horizon. */
  curve(clv: ClvFit, x: number, T: number, months: number): readonly number[] {
    const key = memoKey(x, T)
    // A scoring pass asks under one fit a million times: the last one is at hand.
    const fit = clv === this.lastClv ? this.lastFit : this.fits.get(clv)
    const hit = key !== null && fit?.months === months ? fit.curves.get(key) : undefined
    if (hit) return hit
    const curve = expectedCurve(clv, x, T, months)
    if (key !== null) this.put(clv, months, key, curve)
    return curve
  }

  /** Whether the memo can hold `n` more curves of this fit without starting again. */
  room(n: number): boolean {
    return this.entries + n <= this.limit
  }

  /** Keeps a curve computed elsewhere (another thread: parallel-fit.ts) under its key (memoKey). */
  put(clv: ClvFit, months: number, key: number, curve: readonly number[]): void {
    let fit = this.fits.get(clv)
    if (this.entries >= this.limit) {
      this.fits = new WeakMap()
      this.entries = 0
      fit = undefined
    }
    if (!fit || fit.months !== months) this.fits.set(clv, (fit = { months, curves: new Map() }))
    if (!fit.curves.has(key)) this.entries++
    fit.curves.set(key, curve)
    this.lastClv = clv
    this.lastFit = fit
  }
}

/** A curve's key in a ClvMemo: one exact number while x < 2^21 and T < 2^16 whole days; null for the others (not kept). */
export function memoKey(x: number, T: number): number | null {
  const keyed = x < 2_097_152 && T < 65_536 && Number.isInteger(x) && Number.isInteger(T)
  return keyed ? x * 65_536 + T : null
}

/** The cumulative expected purchases if alive of (x, T) at each month's end (`[k − 1]`: k months), under a fit. */
export function expectedCurve(clv: Pick<ClvFit, 'model' | 'params'>, x: number, T: number, months: number): number[] {
  const tm = TRANSACTION_MODELS[clv.model]
  const cumulative: number[] = []
  // t_x plays no part (expectedPurchasesIfAlive): T stands in for it.
  for (let k = 1; k <= months; k++) cumulative.push(tm.expectedPurchasesIfAlive(clv.params, k * DAYS_PER_MONTH, x, T, T))
  return cumulative
}

/** Curves a memo keeps (about 200 bytes each with a 12-month horizon) before it starts again. */
const MEMO_LIMIT = 500_000

/**
 * The model-driven part of the features; it changes only with the fit, the day and the
 * customer's orders, so callers may cache it under that key (see FeatureEngine). `memo`: shared
 * by the calls of one scoring pass (ClvMemo); the values are the same with or without it.
 */
export function clvFeatures(agg: CustomerAggregates, clv: ClvFit, today: number, opts: FeatureOptions = DEFAULT_FEATURE_OPTIONS, memo: ClvMemo = new ClvMemo()): ClvPart {
  const x = agg.repeatPurchases
  const tx = agg.repeatSpanDays
  const T = customerAgeDays(agg, today)
  const months = opts.horizonMonths
  checkHorizon(months, opts.monthlyDiscountRate)
  const zbar = agg.repeatAvgCents / 100
  // E[M] per purchase (day): Gamma-Gamma, else the customer's own spend per purchase day.
  const spend = clv.gg ? expectedAverageSpend(clv.gg, x, zbar) : agg.monetaryCents / agg.purchaseDays / 100
  const tm = TRANSACTION_MODELS[clv.model]
  const pAlive = tm.probabilityAlive(clv.params, x, tx, T)
  const cumulative = memo.curve(clv, x, T, months)
  // Both models give E[Y(t)] = P(alive) · E[Y(t) | alive], so the CLV is P(alive) times the
  // value had the customer stayed active (discountedClv with ifAlive, from the memo's curve).
  const ifAlive = discountedSum(spend, cumulative, opts.monthlyDiscountRate)
  const horizonPurchases = months ? cumulative[months - 1]! : tm.expectedPurchasesIfAlive(clv.params, 0, x, tx, T)
  return {
    p_alive: round(pAlive, 6),
    expected_purchases: round(pAlive * horizonPurchases, 6),
    predicted_value: round(pAlive * ifAlive, 2),
    value_if_active: round(ifAlive, 2),
  }
}

export function computeFeatures(agg: CustomerAggregates, model: TenantModel | null, nowMs: number, opts: FeatureOptions = DEFAULT_FEATURE_OPTIONS, clvPart?: ClvPart | null): FeatureValues {
  const base: FeatureValues = {
    recency_days: null,
    // Purchase days: same-day orders are one purchase, for RFM as for the CLV and churn models.
    frequency: agg.purchaseDays,
    monetary_cents: agg.monetaryCents,
    r_score: null,
    f_score: null,
    m_score: null,
    rfm_score: null,
    segment: null,
    avg_order_value: agg.orderCount ? round(agg.monetaryCents / agg.orderCount / 100, 2) : 0,
    historical_value_cents: agg.monetaryCents,
    predicted_value: null,
    total_clv: null,
    clv_tier: null,
    expected_purchases: null,
    p_alive: null,
    churn_risk: null,
    churn_probability: null,
    order_frequency_days: null,
    expected_order_date: null,
    days_overdue: null,
    potential_loss: null,
    recommended_action: null,
    model_version: model?.version ?? 0,
  }
  if (agg.orderCount === 0 || agg.lastOrderAt === null) return base
  base.recency_days = recencyDays(agg.lastOrderAt, nowMs)
  if (model?.boundaries) {
    const s = rfmScore({ lastOrderDay: agg.lastDay!, frequency: agg.purchaseDays, monetary: agg.monetaryCents }, model.boundaries)
    Object.assign(base, { r_score: s.r_score, f_score: s.f_score, m_score: s.m_score, rfm_score: s.rfm_score, segment: s.segment })
  }
  const part = clvPart ?? (model?.clv ? clvFeatures(agg, model.clv, utcDay(nowMs), opts) : null)
  if (part) {
    base.p_alive = part.p_alive
    base.expected_purchases = part.expected_purchases
    base.predicted_value = part.predicted_value
    base.total_clv = round(agg.monetaryCents / 100 + part.predicted_value, 2)
    base.clv_tier = clvTier(base.total_clv)
  }
  const churn = churnDetails({
    nowMs,
    firstOrderAt: agg.firstOrderAt!,
    lastOrderAt: agg.lastOrderAt,
    orderCount: agg.orderCount,
    purchaseDays: agg.purchaseDays,
    netSpend: agg.monetaryCents / 100,
    pAlive: part?.p_alive ?? null,
    valueIfActive: part?.value_if_active ?? null,
    horizonDays: opts.horizonMonths * DAYS_PER_MONTH,
    tenantMedianIntervalDays: model?.medianIntervalDays ?? null,
    clvTier: (base.clv_tier ?? undefined) as ValueTier | undefined,
  })
  base.churn_risk = churn.churn_risk
  base.churn_probability = churn.churn_probability
  base.order_frequency_days = churn.order_frequency_days
  base.expected_order_date = churn.expected_order_date
  base.days_overdue = churn.days_overdue
  base.potential_loss = churn.potential_loss
  base.recommended_action = churn.recommended_action
  return base
}

/**
 * A 53-bit digest of the values (common/hash53.ts over each value's bits or characters): equal
 * values give equal digests, so the consumer keeps this number instead of the values to tell
 * whether a customer's features moved. A change goes unseen only if the digests collide
 * (probability 2^-53 for each change).
 */
export function featuresDigest(v: FeatureValues): number {
  const h = new Hash53()
  for (const k in v) {
    const x = v[k as keyof FeatureValues]
    if (x === null) h.word(0x6e756c6c)
    else if (typeof x === 'number') h.number(x)
    else h.number(stringHash(x))
  }
  return h.digest()
}

/**
 * The strings feature values take are few (segments, tiers, risks, actions, RFM codes, dates):
 * each one's 53-bit hash is computed once (up to STRING_HASHES of them, then afresh), where hashing
 * every character of every customer's was a tenth of scoring.
 */
const STRING_HASHES = 10_000
const stringHashes = new Map<string, number>()

function stringHash(s: string): number {
  let x = stringHashes.get(s)
  if (x === undefined) {
    if (stringHashes.size >= STRING_HASHES) stringHashes.clear()
    stringHashes.set(s, (x = new Hash53().string(s).digest()))
  }
  return x
}
