/**
 * Discounted customer lifetime value, the loop of lifetimes `_customer_lifetime_value`:
 *
 *   CLV = Σ_{k=1..months} E[M] · (E[Y(k·f)] − E[Y((k−1)·f)]) / (1 + d)^k
 *
 * with E[M] the Gamma-Gamma expected spend, E[Y(t)] the transaction model's conditional expected
 * purchases, f the model's time units per month and d a MONTHLY discount rate. With `ifAlive`,
 * E[Y(t)] is conditional on the customer being alive now as well: the value had they stayed
 * active, which bounds what their churn can cost (potential_loss, churn.ts). Both models give
 * E[Y(t)] = P(alive) · E[Y(t) | alive], so CLV = P(alive) · CLV(ifAlive) term by term.
 *
 * Units matter: f must be the unit the model was fitted in. lifetimes' default f = 30 assumes days
 * and its Quickstart applies it to weekly data (a 360-week horizon; issues #137/#194/#215/#233). The
 * product fits in days, so f defaults to 365.25/12 = 30.4375 days (a calendar-average month, not 30).
 */
import { bgNbd } from './bgnbd.ts'
import { expectedAverageSpend, type GammaGammaParams } from './gamma-gamma.ts'
import { mbgNbd } from './mbgnbd.ts'
import type { TransactionModel, TransactionModelName, TransactionParams } from './transaction-model.ts'

/** Average days per month (365.25 / 12): the default f for models fitted in days. */
export const DAYS_PER_MONTH = 365.25 / 12
/** Default horizon: 12 months. */
export const DEFAULT_CLV_MONTHS = 12
/**
 * Default monthly discount rate, 1 % (lifetimes' default): (1.01)^12 − 1 ≈ 12.7 % a year, a typical
 * cost of capital for a retailer. Set it per tenant when finance gives another rate.
 */
export const DEFAULT_MONTHLY_DISCOUNT_RATE = 0.01
/** CLV tiers: 'high' above 50,000; 'medium' from 10,000 to 50,000 inclusive; 'low' below 10,000. */
export const CLV_TIER_HIGH_ABOVE = 50_000
export const CLV_TIER_MEDIUM_FROM = 10_000

export type ClvTier = 'high' | 'medium' | 'low'

export const TRANSACTION_MODELS: Readonly<Record<TransactionModelName, TransactionModel>> = { bgnbd: bgNbd, mbgnbd: mbgNbd }

/** The transaction model for a name ('bgnbd' | 'mbgnbd'). */
export function transactionModel(name: TransactionModelName): TransactionModel {
  const model = TRANSACTION_MODELS[name]
  if (!model) throw new RangeError(`unknown transaction model '${String(name)}' (expected ${Object.keys(TRANSACTION_MODELS).join(' or ')})`)
  return model
}

export interface DiscountedClvInput {
  model: TransactionModelName | TransactionModel
  params: TransactionParams
  /** Spend model; may be omitted (or null, e.g. too few repeat buyers to fit) when `spend` is given. */
  gg?: GammaGammaParams | null
  /** Expected spend per purchase E[M], overriding the Gamma-Gamma estimate (a fallback such as the customer's average order). */
  spend?: number
  x: number
  tx: number
  T: number
  /** Mean value of the repeat purchases (ignored when x = 0: the population mean is used). */
  zbar: number
  /** Horizon in months (default 12). */
  months?: number
  /** Monthly discount rate d (default 0.01). */
  monthlyDiscountRate?: number
  /** Model time units per month (default 30.4375: days). Use 4.345 for weeks, 1 for months. */
  unitsPerMonth?: number
  /**
   * Value had the customer not dropped out by now: expected purchases conditional on being alive
   * at T (the model's expectedPurchasesIfAlive). The plain CLV is P(alive) times this.
   */
  ifAlive?: boolean
}

/** Discounted CLV over `months` (see the module comment), in the currency of z̄. */
export function discountedClv(input: DiscountedClvInput): number {
  const model = typeof input.model === 'string' ? transactionModel(input.model) : input.model
  const months = input.months ?? DEFAULT_CLV_MONTHS
  const d = input.monthlyDiscountRate ?? DEFAULT_MONTHLY_DISCOUNT_RATE
  const f = input.unitsPerMonth ?? DAYS_PER_MONTH
  checkHorizon(months, d, f)
  const spend = input.spend ?? (input.gg ? expectedAverageSpend(input.gg, input.x, input.zbar) : undefined)
  if (spend === undefined) throw new RangeError('discountedClv needs gg (Gamma-Gamma params) or spend')
  const purchases = input.ifAlive ? model.expectedPurchasesIfAlive : model.expectedPurchases
  const cumulative = Array.from({ length: months }, (_, i) => purchases(input.params, (i + 1) * f, input.x, input.tx, input.T))
  return discountedSum(spend, cumulative, d)
}

/** Throws a RangeError unless the horizon is a whole number of months ≥ 0, d > −1 and the unit positive. */
export function checkHorizon(months: number, monthlyDiscountRate: number, unitsPerMonth = DAYS_PER_MONTH): void {
  if (!Number.isInteger(months) || months < 0) throw new RangeError(`months must be a non-negative integer, got ${months}`)
  if (!(monthlyDiscountRate > -1)) throw new RangeError(`monthlyDiscountRate must be > -1, got ${monthlyDiscountRate}`)
  if (!(unitsPerMonth > 0)) throw new RangeError(`unitsPerMonth must be > 0, got ${unitsPerMonth}`)
}

/**
 * Σₖ spend · (E[Y(k)] − E[Y(k−1)]) / (1 + d)^k over the months k = 1 … n, from the cumulative
 * expected purchases at each month's end (`cumulative[k − 1]` = E[Y(k months)]).
 */
export function discountedSum(spend: number, cumulative: ArrayLike<number>, monthlyDiscountRate: number): number {
  const divisors = discountDivisors(monthlyDiscountRate, cumulative.length)
  let clv = 0
  let previous = 0
  for (let k = 1; k <= cumulative.length; k++) {
    const c = cumulative[k - 1]!
    clv += (spend * (c - previous)) / divisors[k]!
    previous = c
  }
  return clv
}

/** (1 + d)^k for k = 0 … months, kept for the last rate asked: the same numbers, without a power per month and customer. */
let divisorsOf: { rate: number; values: Float64Array } | null = null
function discountDivisors(rate: number, months: number): Float64Array {
  if (divisorsOf === null || !Object.is(divisorsOf.rate, rate) || divisorsOf.values.length <= months) {
    const values = new Float64Array(Math.max(months, 12) + 1)
    for (let k = 0; k < values.length; k++) values[k] = (1 + rate) ** k
    divisorsOf = { rate, values }
  }
  return divisorsOf.values
}

/** Tier of a CLV total: 'high' > 50,000; 'medium' 10,000..50,000 inclusive; 'low' < 10,000 (and NaN). */
export function clvTier(totalClv: number): ClvTier {
  if (totalClv > CLV_TIER_HIGH_ABOVE) return 'high'
  if (totalClv >= CLV_TIER_MEDIUM_FROM) return 'medium'
  return 'low'
}
