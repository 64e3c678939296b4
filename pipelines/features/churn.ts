/**
 * Churn detection for one customer: the spec's risk levels, the churn probability and the
 * at-risk fields of the churn response (cdp-service-interface.md, "Analytics"). Pure: the clock
 * is an argument. Rules and tables explained in docs/segments.md.
 */
import { recencyDays } from './rfm.ts'
import { DAY_MS, utcDay } from './order-facts.ts'
import { isoDay } from '../../common/time.ts'
import { valuesAtRanks } from './order-statistics.ts'


export const CHURN_RISKS = ['active', 'at_risk', 'churning', 'churned'] as const
export type ChurnRisk = (typeof CHURN_RISKS)[number]

/**
 * Whole days without a purchase at which each level starts. The spec gives active "under 30",
 * at_risk "30 to 60", churning "60 to 90", churned "over 90"; the shared ends 60 and 90 are
 * settled as [0,30) active, [30,60) at_risk, [60,90] churning, (90,∞) churned: 60 begins
 * churning, and 90 is still churning because churned is strictly "over 90".
 */
export const CHURN_THRESHOLDS = { at_risk: 30, churning: 60, churned: 91 } as const

/** The `definition` strings of the churn overview's distribution. */
export const CHURN_DEFINITIONS: Readonly<Record<ChurnRisk, string>> = {
  active: 'Last order under 30 days ago (0-29 days)',
  at_risk: '30 to 59 days since the last order',
  churning: '60 to 90 days since the last order',
  churned: 'Over 90 days since the last order (91+ days)',
}

/**
 * The churn rate, one definition for the dashboard, /churn and the processing results: churned
 * customers ÷ customers with a churn level (those with at least one counting order; a customer who
 * never bought can neither churn nor stay), a fraction with 4 decimals, 0 without any.
 */
export function churnRate(churned: number, withLevel: number): number {
  return withLevel > 0 ? Math.round((churned / withLevel) * 10_000) / 10_000 : 0
}

export function churnRisk(daysSinceLastOrder: number): ChurnRisk {
  if (Number.isNaN(daysSinceLastOrder)) throw new RangeError('days since last order is NaN')
  const d = Math.floor(daysSinceLastOrder)
  if (d < CHURN_THRESHOLDS.at_risk) return 'active'
  if (d < CHURN_THRESHOLDS.churning) return 'at_risk'
  if (d < CHURN_THRESHOLDS.churned) return 'churning'
  return 'churned'
}

/** The spec's CLV tiers, used as the customer's value in the action table. */
export type ValueTier = 'high' | 'medium' | 'low'

export const RECOMMENDED_ACTIONS = ['none', 'nurture', 'discount_offer', 'personal_outreach', 'win_back_campaign'] as const
export type RecommendedAction = (typeof RECOMMENDED_ACTIONS)[number]

/**
 * What to do, by risk level and value. Active customers need nothing; the more valuable the
 * customer, the more personal (and costly) the contact; churned low-value customers are not
 * worth a campaign.
 */
export const ACTION_TABLE: Readonly<Record<ChurnRisk, Readonly<Record<ValueTier, RecommendedAction>>>> = {
  active: { high: 'none', medium: 'none', low: 'none' },
  at_risk: { high: 'personal_outreach', medium: 'nurture', low: 'nurture' },
  churning: { high: 'personal_outreach', medium: 'discount_offer', low: 'discount_offer' },
  churned: { high: 'win_back_campaign', medium: 'win_back_campaign', low: 'none' },
}

/**
 * The churn probability is read off an exponential lapse curve, 1 − 2^(−days / h), whose
 * half-life h is the customer's purchase rhythm (their mean interval between purchase days, else
 * the tenant's median) kept within the tenant's own level lines: never shorter than the at-risk
 * line, never longer than the last churning day. Quiet for one interval → 0.5, two → 0.75.
 * The bounds make probability and level agree for every customer (see churnProbability):
 * every active customer is below 1 − 2^(−29/30) = 0.488, every churned one at or above
 * 1 − 2^(−91/90) = 0.504.
 */
export const HALF_LIFE_BOUNDS_DAYS = { min: CHURN_THRESHOLDS.at_risk, max: CHURN_THRESHOLDS.churned - 1 } as const

/** Half-life when no interval is known at all (no repeat buyer in the tenant): the churned line. */
export const FALLBACK_HALF_LIFE_DAYS = HALF_LIFE_BOUNDS_DAYS.max

/** Horizon of the value at stake (potential_loss): the CLV horizon, 12 months of 30.4375 days. */
export const DEFAULT_LOSS_HORIZON_DAYS = 365.25

export interface ChurnInput {
  nowMs: number
  /** Epoch ms of the first and last counting orders. */
  firstOrderAt: number
  lastOrderAt: number
  /** Counting orders (≥ 1). */
  orderCount: number
  /** Distinct UTC days with a counting order (same-day orders are one purchase, as in BG/NBD). */
  purchaseDays: number
  /** Net spend so far, in currency units (not cents). */
  netSpend: number
  /** P(alive) from the CLV model; null when the tenant has no fit. */
  pAlive: number | null
  /**
   * The customer's discounted value over the horizon had they stayed active (the CLV model's
   * purchases conditional on being alive × expected spend, currency units); null without a fit,
   * then {@link fallbackValueIfActive} stands in.
   */
  valueIfActive: number | null
  /** Horizon of valueIfActive in days (default 365.25, 12 months); used by the fallback. */
  horizonDays?: number
  /** The tenant's median inter-purchase interval in days over its repeat buyers; null if it has none. */
  tenantMedianIntervalDays: number | null
  /** CLV tier, for the recommended action; unknown counts as medium. */
  clvTier?: ValueTier
}

export interface ChurnDetails {
  churn_risk: ChurnRisk
  /** 0..1, 4 decimals. */
  churn_probability: number
  /** Mean days between purchase days (2 decimals); the tenant median for one-time buyers; null if neither is known. */
  order_frequency_days: number | null
  /** ISO date (UTC) of last order + order_frequency_days; null when the frequency is unknown. */
  expected_order_date: string | null
  /** Whole days past the expected order (0 when not yet due); null when the frequency is unknown. */
  days_overdue: number | null
  recommended_action: RecommendedAction
  /**
   * churn_probability × the value over the horizon had the customer stayed active (currency
   * units, 2 decimals): the expected value lost to churn, never more than that value.
   */
  potential_loss: number
}

/** Half away from zero at `dp` decimals, without the binary artefacts of x * 10^dp (1.005 → 1.01). */
export function roundTo(x: number, dp: number): number {
  const a = Math.abs(x)
  // Fast path: away from a half, rounding the binary product gives the same integer as rounding
  // the decimal text, and an integer over 10^dp is the nearest double to that decimal either way.
  const scale = 10 ** dp
  const y = a * scale
  // (Below 1e8 the product's error is under 1e-7, far inside the margin.)
  if (y < 1e8) {
    const f = y - Math.floor(y)
    if (Math.abs(f - 0.5) > 1e-6) return Math.sign(x) * (Math.round(y) / scale) || 0
  }
  const text = String(a)
  // Shift the decimal point in the decimal text; fall back to arithmetic for exponent notation.
  const r = text.includes('e') ? Math.round(a * 10 ** dp) / 10 ** dp : Number(`${Math.round(Number(`${text}e${dp}`))}e-${dp}`)
  return Math.sign(x) * r || 0
}

/**
 * A customer's mean interval between purchase days: (last day − first day) / (purchase days − 1),
 * UTC days; null for a one-time buyer.
 */
export function orderIntervalDays(firstOrderAt: number, lastOrderAt: number, purchaseDays: number): number | null {
  if (purchaseDays <= 1) return null
  return (utcDay(lastOrderAt) - utcDay(firstOrderAt)) / (purchaseDays - 1)
}

/** The median of the repeat buyers' intervals (mean of the middle two for an even count); null if none. */
export function medianIntervalDays(intervals: ArrayLike<number>): number | null {
  const n = intervals.length
  if (n === 0) return null
  const values = Float64Array.from(intervals)
  if (n % 2) return valuesAtRanks(values, [(n - 1) / 2])[0]!
  const [a, b] = valuesAtRanks(values, [n / 2 - 1, n / 2])
  return (a! + b!) / 2
}

const clamp01 = (x: number) => Math.min(1, Math.max(0, x))
const isoDate = (ms: number) => isoDay(utcDay(ms))

/** 1 − 2^(−days / halfLife): the share lapsed after `days` on an exponential curve with that half-life. */
export function lapseProbability(days: number, halfLifeDays: number): number {
  return -Math.expm1(-(Math.max(0, days) / halfLifeDays) * Math.LN2)
}

/** The rhythm half-life: the interval (own, else tenant median, else 90 days) clamped to [30, 90] days. */
export function rhythmHalfLife(intervalDays: number | null): number {
  const h = intervalDays !== null && Number.isFinite(intervalDays) && intervalDays > 0 ? intervalDays : FALLBACK_HALF_LIFE_DAYS
  return Math.min(HALF_LIFE_BOUNDS_DAYS.max, Math.max(HALF_LIFE_BOUNDS_DAYS.min, h))
}

/**
 * The churn probability after `days` (whole days since the last order):
 *
 *   p = max( 1 − P(alive), lapse(days, h) ),   capped at lapse(days, 30) while active (days < 30)
 *
 * - `lapse(days, h)` is the rhythm hazard: with no dropout information (a degenerate fit where
 *   P(alive) ≈ 1 for everyone, BG/NBD's P(alive) = 1 for one-time buyers, no fit at all) it is the
 *   whole answer, never 0 for a silent customer.
 * - `1 − P(alive)` is the model's evidence of dropout; it raises p where the model sees more
 *   dropout than the rhythm does. Taking the larger of two estimates of the same event (not their
 *   product) counts the silence once.
 * - The cap, the fastest curve the level lines allow, keeps an active customer below 0.5: a model
 *   that lets customers drop out at their first purchase (MBG/NBD) does not call someone who
 *   bought last week likely churned. From the at-risk line on the model speaks in full.
 *
 * For a given history p is non-decreasing in days: P(alive) falls as T grows with t_x fixed, both
 * curves rise, and the cap only lifts (to none) at day 30. With h in [30, 90] an active customer
 * (d ≤ 29) has p ≤ lapse(29, 30) = 0.4884 and a churned one (d ≥ 91) p ≥ lapse(91, 90) = 0.5038:
 * every churned customer ranks above every active one, whatever the data and the fit.
 */
export function churnProbability(days: number, pAlive: number | null, halfLifeDays: number): number {
  const d = Math.max(0, Math.floor(days))
  const p = Math.max(pAlive === null ? 0 : clamp01(1 - pAlive), lapseProbability(d, halfLifeDays))
  return d < CHURN_THRESHOLDS.at_risk ? Math.min(p, lapseProbability(d, HALF_LIFE_BOUNDS_DAYS.min)) : p
}

/**
 * The value at stake without a CLV fit: the customer's net spend per horizon over their tenure
 * so far, `spend · horizon / max(horizon, tenure)` — a repeat of their average year, never more
 * than everything they have spent.
 */
export function fallbackValueIfActive(netSpend: number, firstOrderAt: number, nowMs: number, horizonDays = DEFAULT_LOSS_HORIZON_DAYS): number {
  const tenure = Math.max(0, (nowMs - firstOrderAt) / DAY_MS)
  return (Math.max(0, netSpend) * horizonDays) / Math.max(horizonDays, tenure)
}

export function churnDetails(input: ChurnInput): ChurnDetails {
  const { nowMs, firstOrderAt, lastOrderAt, orderCount, purchaseDays, netSpend, pAlive, valueIfActive, tenantMedianIntervalDays } = input
  // Checked one by one: a loop over an object's entries cost a third of this function per customer.
  if (!(Number.isFinite(nowMs) && Number.isFinite(firstOrderAt) && Number.isFinite(lastOrderAt) && Number.isFinite(orderCount) && Number.isFinite(purchaseDays) && Number.isFinite(netSpend))) {
    for (const [name, v] of Object.entries({ nowMs, firstOrderAt, lastOrderAt, orderCount, purchaseDays, netSpend })) {
      if (!Number.isFinite(v)) throw new RangeError(`${name} must be a finite number, got ${v}`)
    }
  }
  if (orderCount < 1 || purchaseDays < 1) throw new RangeError('churn needs at least one counting order')
  if (pAlive !== null && Number.isNaN(pAlive)) throw new RangeError('pAlive is NaN')
  if (valueIfActive !== null && !Number.isFinite(valueIfActive)) throw new RangeError(`valueIfActive must be finite or null, got ${valueIfActive}`)

  const daysSince = recencyDays(lastOrderAt, nowMs)
  const risk = churnRisk(daysSince)

  const ownInterval = orderIntervalDays(firstOrderAt, lastOrderAt, purchaseDays)
  const tenantInterval = tenantMedianIntervalDays !== null && Number.isFinite(tenantMedianIntervalDays) && tenantMedianIntervalDays > 0 ? tenantMedianIntervalDays : null
  const interval = ownInterval ?? tenantInterval

  const probability = churnProbability(daysSince, pAlive, rhythmHalfLife(interval))
  const atStake = valueIfActive ?? fallbackValueIfActive(netSpend, firstOrderAt, nowMs, input.horizonDays)
  const expectedMs = interval === null ? null : lastOrderAt + interval * DAY_MS

  return {
    churn_risk: risk,
    churn_probability: roundTo(probability, 4),
    order_frequency_days: interval === null ? null : roundTo(interval, 2),
    expected_order_date: expectedMs === null ? null : isoDate(expectedMs),
    days_overdue: interval === null ? null : Math.max(0, Math.floor(daysSince - interval)),
    recommended_action: ACTION_TABLE[risk][input.clvTier ?? 'medium'],
    potential_loss: roundTo(probability * Math.max(0, atStake), 2),
  }
}
