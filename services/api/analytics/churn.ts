import { z } from 'zod'
import { CHURN_DEFINITIONS, CHURN_RISKS, CHURN_THRESHOLDS, churnRate } from '../../../pipelines/features/churn.ts'
import { CommonQuery, boolParam, limitParam, offsetParam } from './options.ts'
import { customerFilter, idsFilter, type SqlFilter } from './filters.ts'
import { customerScope } from './customers.ts'
import { descendingBy, emailOf, indexesMarked, indexOfCustomer, isoDay, lowerBound, once, orNull, Population, releaseMarks, selection, smallerSide, upperBound, type CustomerColumns, type Condition, type Selection } from './customer-columns.ts'
import { tenantWide, tenantWidePage } from './summary.ts'
import { PROCESSING_RESULTS_TTL_MS } from './cache.ts'
import { analyticsBody, fieldColumns, pct, round2, select, signedPct, type AnalyticsContext, type AnalyticsEndpoint, type RowsExport } from './endpoint.ts'
import { Count, DateOnly, Fraction, Percentage, SignedPercent } from '../response-schemas.ts'

/**
 * GET /api/v2/cdp/analytics/churn: risk levels, the at-risk list, predictions and 30-day
 * trends. Definitions: docs/analytics-rfm-clv-churn.md.
 */
export const ChurnQuery = CommonQuery.extend({
  risk_level: z.enum(CHURN_RISKS).optional(),
  days_inactive: z.coerce.number().int().min(0).max(100_000).optional(),
  include_predictions: boolParam.default(false),
  limit: limitParam(100),
  offset: offsetParam,
}).strict()
export type ChurnOptions = z.infer<typeof ChurnQuery>

const DAY_MS = 86_400_000
/** Trend and monthly windows. */
export const CHURN_WINDOW_DAYS = 30
/** |churn rate now − churn rate 30 days ago| below this (0.5 percentage points) is "stable". */
export const CHURN_TREND_STABLE_BAND = 0.005

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v))
const ratio = (n: number, d: number, dp = 4) => (d ? Math.round((n / d) * 10 ** dp) / 10 ** dp : null)

/** Scored customers (a churn level) matching the filters, risk_level and days_inactive. */
export function churnFilter(q: ChurnOptions, nowMs: number): SqlFilter {
  const f = customerFilter(q, nowMs)
  const c = [f.where, 'f.churn_risk IS NOT NULL']
  const params = { ...f.params }
  if (q.risk_level) {
    c.push('f.churn_risk = {risk_level:String}')
    params.risk_level = q.risk_level
  }
  if (q.days_inactive !== undefined) {
    c.push('f.recency_days >= {days_inactive:UInt32}')
    params.days_inactive = q.days_inactive
  }
  return { where: c.join(' AND '), params }
}

export interface AtRiskRow {
  customer_id: number
  email: string
  last_order_date: string | null
  days_since_last_order: number | null
  order_frequency_days: number | null
  expected_order_date: string | null
  days_overdue: number | null
  churn_probability: number | null
  churn_risk: string
  recommended_action: string | null
  potential_loss: number
}

/** The columnar twin of churnFilter. */
function churnSelection(c: CustomerColumns, q: ChurnOptions, nowMs: number): Selection | null {
  // The unscored (no churn risk) are left out by the population every part reads (windowFacts' scored).
  const tests: Condition[] = q.risk_level ? [{ oneOf: c.churnRisk.codes, codes: [c.churnRisk.code(q.risk_level)] }] : []
  if (q.days_inactive !== undefined) tests.push({ atLeast: c.recencyDays, value: q.days_inactive }) // NaN (no order) fails
  return selection(c, q, nowMs, tests)
}

const AT_RISK_LEVELS = ['at_risk', 'churning'] as const

/** The columnar twin of the at-risk page: its customer ids, highest potential loss first. */
function atRiskPageIds(c: CustomerColumns, nowMs: number, sel: Selection | null, limit: number, offset: number): number[] | null {
  if (!sel) return null
  // The request's selection narrowed to the at-risk levels, walked in the shared potential-loss order.
  const { keep } = sel
  const order = windowFacts(c, nowMs).atRiskOrder
  const out: number[] = []
  for (let p = 0, seen = 0; p < order.length && out.length < limit; p++) {
    const i = order[p]!
    if (!keep[i]) continue
    if (seen++ >= offset) out.push(c.customerId[i]!)
  }
  return out
}

type WindowRow = Record<'existed_prev' | 'churned_prev' | 'crossed' | 'was_at_risk' | 'saved' | 'existed_now' | 'churned_now' | 'orders_30d' | 'orders_365d', string>

/** Per customer, what the 30-day window sums: flag bits (WINDOW_*) and the order counts. */
interface WindowFacts {
  nowMs: number
  flags: Uint8Array
  orders30: Uint32Array
  orders365: Uint32Array
  /** The churn risk code (0: none). */
  risk: Uint8Array
  /** churn_probability and potential_loss, 0 where null. */
  probability: Float64Array
  loss: Float64Array
  atRiskCodes: number[]
  /** 1 for a customer with a churn risk (the population of the levels and window queries). */
  scored: Population
  atRiskOrder: Uint32Array
  /** Every scored customer's sums (churnSums), for a selection of most customers. */
  all: Float64Array
}
const EXISTED_PREV = 1, CHURNED_PREV = 2, CROSSED = 4, WAS_AT_RISK = 8, SAVED = 16, EXISTED_NOW = 32, CHURNED_NOW = 64

/**
 * Each customer's part of the window, computed once per columns object and clock (a summary's
 * columns are as of one reference): a filtered request then only sums the parts of the customers
 * it selects, instead of searching every selected order history again.
 */
const windowFactsOf = new WeakMap<CustomerColumns, WindowFacts>()
function windowFacts(c: CustomerColumns, nowMs: number): WindowFacts {
  const cached = windowFactsOf.get(c)
  if (cached?.nowMs === nowMs) return cached
  const { orderStart: starts, orderTimes: times } = c
  const prevMs = nowMs - CHURN_WINDOW_DAYS * DAY_MS
  const yearMs = nowMs - 365 * DAY_MS
  const { at_risk: atRiskDays, churned: churnedDays } = CHURN_THRESHOLDS
  const flags = new Uint8Array(c.size)
  const orders30 = new Uint32Array(c.size)
  const orders365 = new Uint32Array(c.size)
  for (let i = 0; i < c.size; i++) {
    const s = starts[i]!
    const e = starts[i + 1]!
    if (s === e) continue // notEmpty(order_times)
    const last = times[e - 1]! // binary searches only where a bound falls inside the history
    const prevEnd = last < prevMs ? e : lowerBound(times, s, e, prevMs) // orders before prev_ms: [s, prevEnd)
    const nowEnd = last <= nowMs ? e : upperBound(times, s, e, nowMs) // orders up to now: [s, nowEnd)
    const lastPrev = prevEnd > s ? times[prevEnd - 1]! : 0
    const lastNow = nowEnd > s ? times[nowEnd - 1]! : 0
    const recent = nowEnd - prevEnd
    orders30[i] = recent
    orders365[i] = nowEnd - (last < yearMs ? e : lowerBound(times, s, e, yearMs))
    const daysPrev = Math.trunc((prevMs - lastPrev) / DAY_MS)
    const daysNow = Math.trunc((nowMs - lastNow) / DAY_MS)
    let f = 0
    if (lastPrev > 0) {
      f |= EXISTED_PREV
      if (daysPrev >= churnedDays) f |= CHURNED_PREV
      else if (daysNow >= churnedDays) f |= CROSSED
      if (daysPrev >= atRiskDays && daysPrev <= churnedDays - 1) {
        f |= WAS_AT_RISK
        if (recent > 0) f |= SAVED
      }
    }
    if (lastNow > 0) {
      f |= EXISTED_NOW
      if (daysNow >= churnedDays) f |= CHURNED_NOW
    }
    flags[i] = f
  }
  const risk = Uint8Array.from(c.churnRisk.codes.subarray(0, c.size))
  const probability = new Float64Array(c.size)
  const loss = new Float64Array(c.size)
  for (let i = 0; i < c.size; i++) {
    if (risk[i] === 0) {
      // Unscored: never in the window query's population; its sums land on code 0, never read.
      flags[i] = 0
      orders30[i] = 0
      orders365[i] = 0
      continue
    }
    const p = c.churnProbability[i]!
    const l = c.potentialLoss[i]!
    probability[i] = p === p ? p : 0
    loss[i] = l === l ? l : 0
  }
  const atRiskCodes = AT_RISK_LEVELS.map((l) => c.churnRisk.code(l)).filter((code) => code > 0)
  const scored = new Population(c.size, (i) => risk[i] !== 0)
  // The at-risk customers in the shared potential-loss order (the at-risk page walks only them).
  const atRiskOrder = descendingBy(c, c.potentialLoss, 0).filter((i) => atRiskCodes.includes(risk[i]!))
  const facts: WindowFacts = { nowMs, flags, orders30, orders365, risk, probability, loss, atRiskCodes, atRiskOrder, scored, all: new Float64Array(0) }
  facts.all = churnSums(facts, indexesMarked(scored.marks, 1), 1, newChurnSums(c))
  windowFactsOf.set(c, facts)
  return facts
}

/** Per risk code: customers, probability, loss; then the window's nine sums (WINDOW_SUMS). */
const newChurnSums = (c: CustomerColumns) => new Float64Array(3 * c.churnRisk.values.length + 9)

/**
 * Adds (sign 1) or subtracts (sign -1) the customers `rows`, with no branch per customer: the
 * levels' counts and sums and each customer's part of the window (windowFacts). Counts are
 * exact either way; the probability and loss sums are floats that can differ in the last bits
 * (the answers show two decimals).
 */
function churnSums(w: Omit<WindowFacts, 'all' | 'atRiskCodes' | 'nowMs' | 'scored' | 'atRiskOrder'>, rows: Uint32Array, sign: 1 | -1, s: Float64Array): Float64Array {
  const { flags, orders30: o30, orders365: o365, risk, probability, loss } = w
  const base = s.length - 9
  // The window's counts are integers: added up in locals (no store per customer for the next
  // add to wait on) and signed once at the end, exactly. The level sums stay in `s`, in order.
  let f0 = 0
  let f1 = 0
  let f2 = 0
  let f3 = 0
  let f4 = 0
  let f5 = 0
  let f6 = 0
  let n30 = 0
  let n365 = 0
  for (let j = 0; j < rows.length; j++) {
    const i = rows[j]!
    const o = 3 * risk[i]!
    s[o] = s[o]! + sign
    s[o + 1] = s[o + 1]! + sign * probability[i]!
    s[o + 2] = s[o + 2]! + sign * loss[i]!
    n30 += o30[i]!
    n365 += o365[i]!
    const f = flags[i]!
    f0 += f & 1
    f1 += (f >> 1) & 1
    f2 += (f >> 2) & 1
    f3 += (f >> 3) & 1
    f4 += (f >> 4) & 1
    f5 += (f >> 5) & 1
    f6 += f >> 6
  }
  const counts = [f0, f1, f2, f3, f4, f5, f6, n30, n365]
  for (let k = 0; k < counts.length; k++) s[base + k] = s[base + k]! + sign * counts[k]!
  return s
}

/** The columnar twins of the levels and window queries, from one pass over the selection (or what it leaves out). */
function churnFacts(c: CustomerColumns, sel: Selection | null, nowMs: number): { levels: LevelRow[]; window: WindowRow[] } | null {
  if (!sel) return null
  const w = windowFacts(c, nowMs)
  const { rows, sign } = smallerSide(sel.keep, w.scored)
  const s = churnSums(w, rows, sign, sign < 0 ? w.all.slice() : newChurnSums(c))
  const levels: LevelRow[] = []
  for (let r = 1; r < c.churnRisk.values.length; r++) {
    if (s[3 * r]) levels.push({ risk: c.churnRisk.values[r]!, customers: String(s[3 * r]), probability: s[3 * r + 1]!, loss: s[3 * r + 2]! })
  }
  const base = s.length - 9
  const str = (k: number) => String(s[base + k])
  return {
    levels,
    window: [{ existed_prev: str(0), churned_prev: str(1), crossed: str(2), was_at_risk: str(3), saved: str(4), existed_now: str(5), churned_now: str(6), orders_30d: str(7), orders_365d: str(8) }],
  }
}

/** The columnar twin of atRiskRows for a page's ids: the same rows from the summary's customer columns. */
function atRiskRowsOf(c: CustomerColumns, ids: number[]): AtRiskRow[] {
  return ids.flatMap((id) => {
    const i = indexOfCustomer(c, id)
    if (i < 0) return []
    const last = c.lastOrderMs[i]!
    const expected = c.expectedOrderDay[i]!
    return [{
      customer_id: id,
      email: emailOf(c, i),
      last_order_date: last === last ? isoDay(last) : null,
      days_since_last_order: orNull(c.recencyDays[i]!),
      order_frequency_days: orNull(c.orderFrequencyDays[i]!),
      expected_order_date: expected === expected ? isoDay(expected * DAY_MS) : null,
      days_overdue: orNull(c.daysOverdue[i]!),
      churn_probability: orNull(c.churnProbability[i]!),
      churn_risk: c.churnRisk.get(i)!,
      recommended_action: c.recommendedAction.get(i),
      potential_loss: round2(c.potentialLoss[i]! === c.potentialLoss[i]! ? c.potentialLoss[i]! : 0),
    }]
  })
}

interface LevelRow { risk: string; customers: string; probability: number; loss: number }

async function atRiskRows(ctx: AnalyticsContext, q: ChurnOptions, limit: number, offset: number, ids?: number[]): Promise<AtRiskRow[]> {
  const f = ids ? idsFilter(q.tenant_id, ids) : churnFilter(q, ctx.now())
  const rows = await select<AtRiskRow & { customer_id: string; potential_loss: number | null }>(
    ctx.store,
    `SELECT f.customer_id AS customer_id, f.email AS email, toString(toDate(f.last_order_at)) AS last_order_date, f.recency_days AS days_since_last_order,
            f.order_frequency_days AS order_frequency_days, toString(f.expected_order_date) AS expected_order_date, f.days_overdue AS days_overdue,
            f.churn_probability AS churn_probability, assumeNotNull(f.churn_risk) AS churn_risk, f.recommended_action AS recommended_action,
            f.potential_loss AS potential_loss
     FROM customer_features AS f FINAL WHERE ${f.where} AND f.churn_risk IN ('at_risk', 'churning')
     ORDER BY coalesce(f.potential_loss, 0) DESC, f.customer_id ASC
     LIMIT {limit:UInt64} OFFSET {offset:UInt64}`,
    { ...f.params, limit, offset },
  )
  return rows.map((r) => ({ ...r, customer_id: Number(r.customer_id), potential_loss: round2(num(r.potential_loss)) }))
}

async function body(ctx: AnalyticsContext, q: ChurnOptions) {
  const nowMs = ctx.now()
  const f = churnFilter(q, nowMs)
  // Without a filter, the levels and the window figures come from the tenant summary (summary.ts).
  const whole = !customerScope(q, nowMs).filtered && !q.risk_level && q.days_inactive === undefined
  const held: Selection[] = []
  const selected = once((c) => {
    const s = churnSelection(c, q, nowMs)
    if (s) held.push(s)
    return s
  })
  const facts = once((c) => churnFacts(c, selected(c), nowMs))
  const [levelRows, windowRows, atRisk] = await Promise.all([
    tenantWide(ctx, q.tenant_id, 'churn.levels', whole, () => select<LevelRow>(
      ctx.store,
      `SELECT assumeNotNull(f.churn_risk) AS risk, count() AS customers, sum(coalesce(f.churn_probability, 0)) AS probability, sum(coalesce(f.potential_loss, 0)) AS loss
       FROM customer_features AS f FINAL WHERE ${f.where} GROUP BY risk`,
      f.params,
    ), (c) => facts(c)?.levels ?? null),
    // The filtered customers' counting orders (not cancelled, total > 0) placed up to now, per
    // customer, from the order_times of its feature row (ascending; arrayLast of none is 0).
    tenantWide(ctx, q.tenant_id, 'churn.window', whole, () => select<WindowRow>(
      ctx.store,
      `SELECT countIf(last_prev > 0) AS existed_prev,
              countIf(last_prev > 0 AND intDiv({prev_ms:Int64} - last_prev, ${DAY_MS}) >= {churned_days:UInt32}) AS churned_prev,
              countIf(last_prev > 0 AND intDiv({prev_ms:Int64} - last_prev, ${DAY_MS}) < {churned_days:UInt32} AND intDiv({now_ms:Int64} - last_now, ${DAY_MS}) >= {churned_days:UInt32}) AS crossed,
              countIf(last_prev > 0 AND intDiv({prev_ms:Int64} - last_prev, ${DAY_MS}) BETWEEN {at_risk_days:UInt32} AND {churned_days:UInt32} - 1) AS was_at_risk,
              countIf(last_prev > 0 AND intDiv({prev_ms:Int64} - last_prev, ${DAY_MS}) BETWEEN {at_risk_days:UInt32} AND {churned_days:UInt32} - 1 AND recent > 0) AS saved,
              countIf(last_now > 0) AS existed_now,
              countIf(last_now > 0 AND intDiv({now_ms:Int64} - last_now, ${DAY_MS}) >= {churned_days:UInt32}) AS churned_now,
              sum(recent) AS orders_30d, sum(year) AS orders_365d
       FROM (
         SELECT arrayLast(t -> t < {prev_ms:Int64}, f.order_times) AS last_prev,
                arrayLast(t -> t <= {now_ms:Int64}, f.order_times) AS last_now,
                arrayCount(t -> t >= {prev_ms:Int64} AND t <= {now_ms:Int64}, f.order_times) AS recent,
                arrayCount(t -> t >= {year_ms:Int64} AND t <= {now_ms:Int64}, f.order_times) AS year
         FROM customer_features AS f FINAL
         WHERE ${f.where} AND notEmpty(f.order_times)
       )`,
      {
        ...f.params,
        now_ms: nowMs,
        prev_ms: nowMs - CHURN_WINDOW_DAYS * DAY_MS,
        year_ms: nowMs - 365 * DAY_MS,
        at_risk_days: CHURN_THRESHOLDS.at_risk,
        churned_days: CHURN_THRESHOLDS.churned,
      },
    ), (c) => facts(c)?.window ?? null),
    // The first pages of the at-risk list (highest potential loss first) come from the summary.
    tenantWidePage(ctx, q.tenant_id, 'churn.at_risk', whole, q, (limit, offset, ids) => atRiskRows(ctx, q, limit, offset, ids), (c, limit, offset) => atRiskPageIds(c, nowMs, selected(c), limit, offset), atRiskRowsOf),
  ])
  for (const s of held) releaseMarks(s.keep) // every sub-query is done

  const byLevel = new Map(levelRows.map((r) => [r.risk, r]))
  const count = (level: string) => num(byLevel.get(level)?.customers)
  const total = CHURN_RISKS.reduce((s, l) => s + count(l), 0)
  const distribution = Object.fromEntries(CHURN_RISKS.map((l) => [l, { count: count(l), percentage: pct(count(l), total), definition: CHURN_DEFINITIONS[l] }]))
  const sum = (levels: string[], k: 'probability' | 'loss') => levels.reduce((s, l) => s + num(byLevel.get(l)?.[k]), 0)

  const w = windowRows[0]!
  // Unrounded rates: the comparison is not distorted by rounding.
  const rateNow = num(w.existed_now) ? num(w.churned_now) / num(w.existed_now) : null
  const ratePrev = num(w.existed_prev) ? num(w.churned_prev) / num(w.existed_prev) : null
  const trend =
    rateNow === null || ratePrev === null || Math.abs(rateNow - ratePrev) < CHURN_TREND_STABLE_BAND ? 'stable' : rateNow > ratePrev ? 'increasing' : 'decreasing'
  const orders365 = num(w.orders_365d)

  return {
    success: true,
    data: {
      overview: {
        total_customers: total,
        churn_rate: churnRate(count('churned'), total),
        monthly_churn_rate: ratio(num(w.crossed), num(w.existed_prev) - num(w.churned_prev)),
        at_risk_count: count('at_risk') + count('churning'),
        save_rate: ratio(num(w.saved), num(w.was_at_risk)),
        distribution,
      },
      at_risk_customers: atRisk,
      predictions: q.include_predictions
        ? {
            // Churning customers (60-90 days) cross the 91-day line within 31 days unless they order.
            next_month_churn: Math.round(sum(['churning'], 'probability')),
            preventable_churn: Math.round(sum(['at_risk', 'churning'], 'probability')),
            potential_save_value: round2(sum(['at_risk', 'churning'], 'loss')),
          }
        : { next_month_churn: null, preventable_churn: null, potential_save_value: null },
      trends: {
        churn_rate_trend: trend,
        monthly_comparison: rateNow === null || ratePrev === null ? null : signedPct(rateNow, ratePrev),
        seasonal_factor: orders365 ? round2(num(w.orders_30d) / ((orders365 * CHURN_WINDOW_DAYS) / 365)) : null,
      },
    },
  }
}

const AtRiskCustomer = z.strictObject({
  customer_id: z.int().min(1),
  email: z.string(),
  last_order_date: DateOnly.nullable(),
  days_since_last_order: Count.nullable(),
  order_frequency_days: z.number().nullable(),
  expected_order_date: DateOnly.nullable(),
  days_overdue: z.number().nullable(),
  churn_probability: Fraction.nullable(),
  churn_risk: z.enum(CHURN_RISKS),
  recommended_action: z.string().nullable(),
  potential_loss: z.number(),
}).meta({ id: 'AtRiskCustomer' })

export const ChurnResponse = analyticsBody(
  z.strictObject({
    overview: z.strictObject({
      total_customers: Count,
      churn_rate: Fraction,
      monthly_churn_rate: Fraction.nullable(),
      at_risk_count: Count,
      save_rate: Fraction.nullable(),
      distribution: z.record(z.enum(CHURN_RISKS), z.strictObject({ count: Count, percentage: Percentage, definition: z.string() })),
    }),
    at_risk_customers: z.array(AtRiskCustomer).meta({ description: 'At risk and churning, highest potential loss first; a page (limit, offset)' }),
    predictions: z
      .strictObject({ next_month_churn: Count.nullable(), preventable_churn: Count.nullable(), potential_save_value: z.number().nullable() })
      .meta({ description: 'null unless include_predictions=true' }),
    trends: z.strictObject({ churn_rate_trend: z.enum(['increasing', 'decreasing', 'stable']), monthly_comparison: SignedPercent, seasonal_factor: z.number().nullable() }),
  }),
).meta({ id: 'ChurnAnalysis' })

export const churnEndpoint: AnalyticsEndpoint<ChurnOptions, RowsExport<ChurnOptions, AtRiskRow>> = {
  path: '/api/v2/cdp/analytics/churn',
  summary: 'Churn risk: levels, at-risk customers, predictions and 30-day trends',
  query: ChurnQuery,
  response: ChurnResponse,
  overview: true,
  cacheTtlMs: PROCESSING_RESULTS_TTL_MS,
  body,
  prepare: (c, nowMs) => void windowFacts(c, nowMs),
  export: {
    description: 'every at-risk and churning customer of the population (the `at_risk_customers` columns), highest potential loss first; `limit` and `offset` do not apply',
    row: AtRiskCustomer,
    columns: fieldColumns<AtRiskRow>([
      'customer_id', 'email', 'last_order_date', 'days_since_last_order', 'order_frequency_days', 'expected_order_date', 'days_overdue', 'churn_probability', 'churn_risk', 'recommended_action', 'potential_loss',
    ]),
    async count(ctx, q) {
      const f = churnFilter(q, ctx.now())
      const [r] = await select<{ n: string }>(ctx.store, `SELECT count() AS n FROM customer_features AS f FINAL WHERE ${f.where} AND f.churn_risk IN ('at_risk', 'churning')`, f.params)
      return num(r?.n)
    },
    rows: (ctx, q, limit) => atRiskRows(ctx, q, limit, 0),
  },
}
