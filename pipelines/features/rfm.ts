/**
 * RFM scoring: 1..5 per dimension from quintiles within one tenant. Pure, no I/O.
 *
 * The rank rule, for a dimension whose values over the tenant's n scored customers are v_1..v_n:
 *
 *   score(v) = 1 + floor(5 · less(v) / n),   less(v) = #{i : v_i < v}
 *
 * Only strictly smaller values count, so equal inputs always get equal scores, and a score is
 * never raised by a tie. If every customer has the same value, less = 0 for all and all score 1.
 * The same rule as four stored thresholds (the boundaries):
 *
 *   t_k = sorted[ceil(k · n / 5) − 1]  (k = 1..4),   score(v) = 1 + #{k : v > t_k}
 *
 * They agree for every v in the population: sorted[j] < v ⟺ j < less(v), so
 * v > t_k ⟺ less(v) ≥ ceil(k·n/5) ⟺ k ≤ 5·less(v)/n, and less(v) ≤ n − 1 keeps the rank rule
 * at 5 or below. For a new value the same holds with less(v) counted in the stored population,
 * capped at 5 (a value above everyone has less = n). Scoring against stored boundaries is
 * therefore the rank rule against the population they were computed from, which lets the
 * stream score a changed customer between full recomputes.
 *
 * Recency ranks on the epoch day of the last counting order (a later day scores higher), not on
 * "days since": the day of a past order never changes, so the boundaries do not drift with the
 * clock, and ranking by last day is the same as ranking by days since at any fixed instant.
 * Frequency counts purchase days (same-day orders merge into one purchase, as in the models).
 * Customers without a counting order are not in the population and get no RFM score.
 */
import { SEGMENT_MAP, type Segment } from './segments.ts'
import { DAY_MS } from './order-facts.ts'
import { valuesAtRanks } from './order-statistics.ts'


export type Score = 1 | 2 | 3 | 4 | 5
/** r, f, m digits concatenated, e.g. '543'. */
export type RfmKey = `${Score}${Score}${Score}`
/** t_1..t_4: a value scores 1 + the number of thresholds it exceeds. */
export type Thresholds = [number, number, number, number]

export interface RfmInput {
  /** UTC epoch day (floor(ms / 86,400,000)) of the last counting order. */
  lastOrderDay: number
  /**
   * Purchase days: distinct UTC days with a counting order. Same-day orders are one purchase, the
   * definition the CLV and churn models use (BTYD, lifetimes freq="D"), so F and the models agree.
   */
  frequency: number
  /** Net spend in integer cents (safe-integer range). */
  monetary: number
  /** Time of the last counting order (epoch ms), when known: only used for `recency_days`. */
  lastOrderAtMs?: number
}

export interface TenantBoundaries {
  /** Thresholds over lastOrderDay (epoch days). */
  recency: Thresholds
  /** Thresholds over purchase days. */
  frequency: Thresholds
  /** Thresholds over net spend in cents. */
  monetary: Thresholds
  /** n: the number of customers the thresholds were computed from. */
  customers: number
  /** ISO 8601 UTC. */
  computedAt: string
}

export interface RfmScore {
  r_score: Score
  f_score: Score
  m_score: Score
  rfm_score: RfmKey
  segment: Segment
}

/** The thresholds of n ≥ 1 values: the values a sort would put at ranks ceil(k·n/5) − 1, k = 1 … 4 (`values` is reordered). */
function thresholdsOf(values: Float64Array): Thresholds {
  const n = values.length
  return valuesAtRanks(values, [1, 2, 3, 4].map((k) => Math.ceil((k * n) / 5) - 1)) as Thresholds
}

/**
 * The four quintile thresholds of a dimension's values, or null for an empty population
 * (n = 0: nothing to rank against). Throws RangeError on a non-finite value. O(n) over a
 * Float64Array copy (order-statistics.ts); the input is not modified.
 */
export function quintileThresholds(values: ArrayLike<number>): Thresholds | null {
  const n = values.length
  if (n === 0) return null
  const copy = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    const v = values[i]!
    if (!Number.isFinite(v)) throw new RangeError(`value ${i} is not a finite number: ${v}`)
    copy[i] = v
  }
  return thresholdsOf(copy)
}

/** 1 + the number of thresholds v exceeds (strictly). */
export function scoreAgainst(v: number, thresholds: Readonly<Thresholds>): Score {
  let s = 1
  for (let k = 0; k < 4; k++) if (v > thresholds[k]!) s++
  return s as Score
}

/**
 * The tenant's boundaries over its scored customers (those with at least one counting order),
 * or null when there are none. One pass into typed arrays, then each threshold by quickselect
 * (order-statistics.ts).
 */
export function tenantBoundaries(customers: ArrayLike<RfmInput>, nowMs: number = Date.now()): TenantBoundaries | null {
  const n = customers.length
  if (n === 0) return null
  const days = new Float64Array(n)
  const freq = new Float64Array(n)
  const money = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    const c = customers[i]!
    if (!Number.isFinite(c.lastOrderDay) || !Number.isFinite(c.frequency) || !Number.isFinite(c.monetary)) {
      throw new RangeError(`customer ${i} has a non-finite RFM input`)
    }
    days[i] = c.lastOrderDay
    freq[i] = c.frequency
    money[i] = c.monetary
  }
  return {
    recency: thresholdsOf(days),
    frequency: thresholdsOf(freq),
    monetary: thresholdsOf(money),
    customers: days.length,
    computedAt: new Date(nowMs).toISOString(),
  }
}

/** Whole UTC days elapsed since the last order: floor((now − last) / 86,400,000), never negative. */
export function recencyDays(lastOrderAtMs: number, nowMs: number): number {
  return Math.max(0, Math.floor((nowMs - lastOrderAtMs) / DAY_MS))
}

/**
 * Scores one customer against stored boundaries. With `nowMs`, the result also carries the
 * stored record's `recency_days`: {@link recencyDays} from `lastOrderAtMs` when given, else
 * from the start of the last order's day (= calendar days between the two UTC dates).
 */
/** The 125 score texts, '111' … '555', one string each: a million customers share them instead of holding a copy each. */
const RFM_KEYS = Array.from({ length: 125 }, (_, i) => `${Math.floor(i / 25) + 1}${(Math.floor(i / 5) % 5) + 1}${(i % 5) + 1}` as RfmKey)

export function rfmScore(customer: RfmInput, boundaries: TenantBoundaries): RfmScore
export function rfmScore(customer: RfmInput, boundaries: TenantBoundaries, nowMs: number): RfmScore & { recency_days: number }
export function rfmScore(customer: RfmInput, boundaries: TenantBoundaries, nowMs?: number): RfmScore & { recency_days?: number } {
  const r = scoreAgainst(customer.lastOrderDay, boundaries.recency)
  const f = scoreAgainst(customer.frequency, boundaries.frequency)
  const m = scoreAgainst(customer.monetary, boundaries.monetary)
  const key = RFM_KEYS[(r - 1) * 25 + (f - 1) * 5 + (m - 1)]!
  const out: RfmScore & { recency_days?: number } = { r_score: r, f_score: f, m_score: m, rfm_score: key, segment: SEGMENT_MAP[key]! }
  if (nowMs !== undefined) out.recency_days = recencyDays(customer.lastOrderAtMs ?? customer.lastOrderDay * DAY_MS, nowMs)
  return out
}
