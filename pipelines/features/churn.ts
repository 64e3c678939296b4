/**
 * Churn detection for one customer: the spec's risk levels, the churn probability and the
 * at-risk fields of the churn response (cdp-service-interface.md, "Analytics"). Pure: the clock
 * is an argument. Rules and tables explained in docs/segments.md.
 */
import { recencyDays } from './rfm.ts'
import { DAY_MS, utcDay } from './order-facts.ts'


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
 * Without a usable P(alive), a customer's chance of having churned is read off an exponential
 * survival curve whose half-life is their expected interval between orders: quiet for one
 * interval → 0.5, two → 0.75. With no interval known at all, this many days (the spec's churned
 * line) is the half-life.
 */
export const FALLBACK_HALF_LIFE_DAYS = 90

/** Months ahead for potential_loss: expected orders in the next 12 months. */
const LOSS_HORIZON_DAYS = 365

export interface ChurnInput {
  nowMs: number
  /** Epoch ms of the first and last counting orders. */
  firstOrderAt: number
  lastOrderAt: number
  /** Counting orders (≥ 1). */
  orderCount: number
  /** Distinct UTC days with a counting order (same-day orders are one purchase, as in BG/NBD). */
  purchaseDays: number
  /** Mean counting order value, in currency units (not cents). */
  avgOrderValue: number
  /** P(alive) from the CLV model; null when the customer has no fit. */
  pAlive: number | null
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
  /** Currency units, 2 decimals. */
  potential_loss: number
}

/** Half away from zero at `dp` decimals, without the binary artefacts of x * 10^dp (1.005 → 1.01). */
export function roundTo(x: number, dp: number): number {
  const a = Math.abs(x)
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
  const sorted = Float64Array.from(intervals).sort()
  return n % 2 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2
}

const clamp01 = (x: number) => Math.min(1, Math.max(0, x))
const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10)

export function churnDetails(input: ChurnInput): ChurnDetails {
  const { nowMs, firstOrderAt, lastOrderAt, orderCount, purchaseDays, avgOrderValue, pAlive, tenantMedianIntervalDays } = input
  for (const [name, v] of Object.entries({ nowMs, firstOrderAt, lastOrderAt, orderCount, purchaseDays, avgOrderValue })) {
    if (!Number.isFinite(v)) throw new RangeError(`${name} must be a finite number, got ${v}`)
  }
  if (orderCount < 1 || purchaseDays < 1) throw new RangeError('churn needs at least one counting order')
  if (pAlive !== null && Number.isNaN(pAlive)) throw new RangeError('pAlive is NaN')

  const daysSince = recencyDays(lastOrderAt, nowMs)
  const risk = churnRisk(daysSince)
  const oneTime = purchaseDays <= 1

  const ownInterval = orderIntervalDays(firstOrderAt, lastOrderAt, purchaseDays)
  const tenantInterval = tenantMedianIntervalDays !== null && Number.isFinite(tenantMedianIntervalDays) && tenantMedianIntervalDays > 0 ? tenantMedianIntervalDays : null
  const interval = ownInterval ?? tenantInterval

  // BG/NBD gives P(alive) = 1 to anyone without a repeat purchase: no information, so one-time
  // buyers (and customers without a fit) use the survival rule instead.
  const modelSays = pAlive !== null && !(oneTime && pAlive >= 1)
  const probability = modelSays
    ? clamp01(1 - pAlive)
    : clamp01(1 - Math.pow(2, -daysSince / (interval ?? FALLBACK_HALF_LIFE_DAYS)))

  const expectedMs = interval === null ? null : lastOrderAt + interval * DAY_MS
  const expectedOrders = interval === null ? 1 : LOSS_HORIZON_DAYS / Math.max(1, interval)

  return {
    churn_risk: risk,
    churn_probability: roundTo(probability, 4),
    order_frequency_days: interval === null ? null : roundTo(interval, 2),
    expected_order_date: expectedMs === null ? null : isoDate(expectedMs),
    days_overdue: interval === null ? null : Math.max(0, Math.floor(daysSince - interval)),
    recommended_action: ACTION_TABLE[risk][input.clvTier ?? 'medium'],
    potential_loss: roundTo(probability * Math.max(0, avgOrderValue) * expectedOrders, 2),
  }
}
