import { z } from 'zod'
import { CLV_TIER_HIGH_ABOVE, CLV_TIER_MEDIUM_FROM, DEFAULT_CLV_MONTHS } from '../../../pipelines/features/clv/lifetime-value.ts'
import { CommonQuery, limitParam, offsetParam } from './options.ts'
import { customerFilter, idsFilter, type SqlFilter } from './filters.ts'
import { customerScope } from './customers.ts'
import { descendingBy, emailOf, indexesMarked, indexOfCustomer, isoDay, once, orNull, Population, releaseMarks, pageInOrder, rowsOf, selection, smallerSide, topRows, type CustomerColumns, type Condition, type Selection } from './customer-columns.ts'
import { tenantWide, tenantWidePage } from './summary.ts'
import { PROCESSING_RESULTS_TTL_MS } from './cache.ts'
import { float64Of } from '../../../common/typed-arrays.ts'
import { analyticsBody, fieldColumns, pct, round2, select, type AnalyticsContext, type AnalyticsEndpoint, type RowsExport } from './endpoint.ts'
import { Count, DateOnly, Percentage } from '../response-schemas.ts'

/**
 * GET /api/v2/cdp/analytics/clv: lifetime value overview, tiers, top customers and insights.
 * min_value / max_value bound `total_clv` here (not net spend). Definitions:
 * docs/analytics-rfm-clv-churn.md.
 */
export const CLV_TIERS = ['high', 'medium', 'low'] as const
export const ClvQuery = CommonQuery.extend({
  tier: z.enum(CLV_TIERS).optional(),
  sort_by: z.enum(['clv', 'orders', 'recency']).default('clv'),
  sort_order: z.enum(['asc', 'desc']).default('desc'),
  limit: limitParam(100),
  offset: offsetParam,
}).strict()
export type ClvOptions = z.infer<typeof ClvQuery>

export const CLV_THRESHOLDS: Readonly<Record<(typeof CLV_TIERS)[number], string>> = {
  high: `> ${CLV_TIER_HIGH_ABOVE}`,
  medium: `${CLV_TIER_MEDIUM_FROM} - ${CLV_TIER_HIGH_ABOVE}`,
  low: `< ${CLV_TIER_MEDIUM_FROM}`,
}
/** Share of customers (by total_clv, highest first) in high_value_concentration. */
const TOP_SHARE = 0.2
const DAY_MS = 86_400_000

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v))

/** Customers with a CLV (a model fit and a counting order) matching the filters; min/max on total_clv. */
export function clvFilter(q: ClvOptions, nowMs: number): SqlFilter {
  const { min_value, max_value, ...rest } = q
  const f = customerFilter(rest, nowMs)
  const c = [f.where, 'f.total_clv IS NOT NULL']
  const params = { ...f.params }
  if (q.tier) {
    c.push('f.clv_tier = {tier:String}')
    params.tier = q.tier
  }
  if (min_value !== undefined) {
    c.push('f.total_clv >= {clv_min:Float64}')
    params.clv_min = min_value
  }
  if (max_value !== undefined) {
    c.push('f.total_clv <= {clv_max:Float64}')
    params.clv_max = max_value
  }
  return { where: c.join(' AND '), params }
}

export interface ClvCustomerRow {
  customer_id: number
  email: string
  historical_value: number
  predicted_value: number
  total_clv: number
  total_orders: number
  avg_order_value: number
  customer_since: string | null
  days_as_customer: number | null
  clv_tier: string | null
  growth_rate: number | null
}

const SORT_COLUMN = { clv: 'f.total_clv', orders: 'length(f.order_times)', recency: 'f.recency_days' } as const

/** The columnar twin of clvFilter: the same customers from the summary's customer columns. */
function clvSelection(c: CustomerColumns, q: ClvOptions, nowMs: number): Selection | null {
  const { min_value, max_value, ...rest } = q
  // A bound on total_clv already fails a missing one.
  const tests: Condition[] = min_value === undefined && max_value === undefined ? [{ present: c.totalClv }] : []
  if (q.tier) tests.push({ oneOf: c.clvTier.codes, codes: [c.clvTier.code(q.tier)] })
  if (min_value !== undefined) tests.push({ atLeast: c.totalClv, value: min_value })
  if (max_value !== undefined) tests.push({ atMost: c.totalClv, value: max_value })
  return selection(c, rest, nowMs, tests)
}

/** The columnar twin of the page query: the ids of a page in the requested order, or null (live) when a sort key is missing. */
function clvPageIds(c: CustomerColumns, q: ClvOptions, sel: Selection | null, limit: number, offset: number): number[] | null {
  if (!sel) return null
  if (q.sort_by === 'clv' && q.sort_order === 'desc') {
    // The default order: walk the CLV order shared by all requests.
    return pageInOrder(descendingBy(c, c.totalClv), sel.keep, limit, offset).map((i) => c.customerId[i]!)
  }
  const rows = rowsOf(sel.keep)
  const key = { clv: c.totalClv, orders: c.orders, recency: c.recencyDays }[q.sort_by]
  for (let j = 0; j < rows.length; j++) if (Number.isNaN(key[rows[j]!]!)) return null
  const desc = q.sort_order !== 'asc'
  const before = (a: number, b: number) => key[a] !== key[b] ? (desc ? key[a]! > key[b]! : key[a]! < key[b]!) : c.customerId[a]! < c.customerId[b]!
  return topRows(rows, before, limit, offset).map((i) => c.customerId[i]!)
}

async function customerRows(ctx: AnalyticsContext, q: ClvOptions, limit: number, offset: number, ids?: number[]): Promise<ClvCustomerRow[]> {
  const nowMs = ctx.now()
  const f = ids ? idsFilter(q.tenant_id, ids) : clvFilter(q, nowMs)
  const dir = q.sort_order === 'asc' ? 'ASC' : 'DESC'
  const rows = await select<{
    customer_id: string
    email: string
    historical_value: number
    predicted_value: number | null
    total_clv: number
    total_orders: number
    avg_order_value: number
    first_ms: string | null
    clv_tier: string | null
  }>(
    ctx.store,
    `SELECT f.customer_id AS customer_id, f.email AS email, toFloat64(f.historical_value) AS historical_value, f.predicted_value AS predicted_value,
            f.total_clv AS total_clv, length(f.order_times) AS total_orders, f.avg_order_value AS avg_order_value,
            toUnixTimestamp64Milli(f.first_order_at) AS first_ms, f.clv_tier AS clv_tier
     FROM customer_features AS f FINAL WHERE ${f.where}
     ORDER BY ${SORT_COLUMN[q.sort_by]} ${dir}, f.customer_id ASC
     LIMIT {limit:UInt64} OFFSET {offset:UInt64}`,
    { ...f.params, limit, offset },
  )
  return rows.map((r) => {
    const historical = num(r.historical_value)
    const predicted = num(r.predicted_value)
    const firstMs = r.first_ms === null ? null : Number(r.first_ms)
    return {
      customer_id: Number(r.customer_id),
      email: r.email,
      historical_value: round2(historical),
      predicted_value: round2(predicted),
      total_clv: round2(num(r.total_clv)),
      total_orders: num(r.total_orders),
      avg_order_value: round2(num(r.avg_order_value)),
      customer_since: firstMs === null ? null : new Date(firstMs).toISOString().slice(0, 10),
      days_as_customer: firstMs === null ? null : Math.max(0, Math.floor((nowMs - firstMs) / DAY_MS)),
      clv_tier: r.clv_tier,
      growth_rate: historical > 0 && r.predicted_value !== null ? Math.round((predicted / historical - 1) * 10_000) / 10_000 : null,
    }
  })
}

/** The columnar twin of customerRows for a page's ids: the same rows from the summary's customer columns. */
function clvRowsOf(c: CustomerColumns, ids: number[], nowMs: number): ClvCustomerRow[] {
  return ids.flatMap((id) => {
    const i = indexOfCustomer(c, id)
    if (i < 0) return []
    const historical = c.historicalCents[i]! / 100
    const p = c.predictedValue[i]!
    const predicted = p === p ? p : 0
    const firstMs = orNull(c.firstOrderMs[i]!)
    return [{
      customer_id: id,
      email: emailOf(c, i),
      historical_value: round2(historical),
      predicted_value: round2(predicted),
      total_clv: round2(c.totalClv[i]!),
      total_orders: c.orders[i]!,
      avg_order_value: round2(c.avgOrderValue[i]!),
      customer_since: firstMs === null ? null : isoDay(firstMs),
      days_as_customer: firstMs === null ? null : Math.max(0, Math.floor((nowMs - firstMs) / DAY_MS)),
      clv_tier: c.clvTier.get(i),
      growth_rate: historical > 0 && p === p ? Math.round((predicted / historical - 1) * 10_000) / 10_000 : null,
    }]
  })
}

interface OverviewRow { customers: string; avg_clv: number | null; median_clv: number | null; total_clv: number; top_clv: number; growing: string; predicted_sum: number; retention: number }
interface TierRow { tier: string; customers: string; avg_value: number }

/**
 * Per customer with a CLV, computed once per columns object: its flags (bit 0: has a CLV, bit 1:
 * predicted above its history, bit 2: at risk or churning) and its tier code, plus the sums of
 * the overview and tier queries over every such customer.
 */
const clvNarrow = once((c: CustomerColumns) => {
  const n = c.size
  const flags = new Uint8Array(n)
  const tier = new Uint8Array(n)
  const clv = new Float64Array(n)
  const predicted = new Float64Array(n)
  const [atRisk, churning] = [c.churnRisk.code('at_risk'), c.churnRisk.code('churning')]
  for (let i = 0; i < n; i++) {
    const v = c.totalClv[i]!
    if (v !== v) continue // no CLV: not in the population
    const p = c.predictedValue[i]!
    const risk = c.churnRisk.codes[i]!
    flags[i] = ((p === p ? p : 0) > c.historicalCents[i]! / 100 ? 1 : 0) | (risk === atRisk || risk === churning ? 2 : 0)
    tier[i] = c.clvTier.codes[i]!
    clv[i] = v
    predicted[i] = p === p ? p : 0
  }
  // The CLV order shared by every request, with the values in that order (read in sequence).
  const order = descendingBy(c, c.totalClv)
  const values = float64Of(order.length, (k) => c.totalClv[order[k]!]!)
  const present = new Population(n, (i) => c.totalClv[i] === c.totalClv[i])
  const narrow = { flags, tier, clv, predicted, tiers: c.clvTier.values.length, order, values, present }
  return { ...narrow, all: addClvSums(narrow, indexesMarked(present.marks, 1), 1, newClvSums(narrow.tiers)) }
})

/** total, growing, predicted, retention, then count and sum per tier code. */
const newClvSums = (tiers: number) => new Float64Array(4 + 2 * tiers)

interface ClvNarrow {
  /** Bit 0: predicted above its history; bit 1: at risk or churning. */
  flags: Uint8Array
  tier: Uint8Array
  /** total_clv, 0 without one; predicted_value, 0 without one. */
  clv: Float64Array
  predicted: Float64Array
}

/**
 * Adds (sign 1) or subtracts (sign -1) the customers `rows`, with no branch per customer. The
 * CLV sums are of floats: everyone's sum less the few left out can differ from the sum of the
 * many kept in the last bits, which the two-decimal answers do not show (the live query's sums
 * are in no set order either).
 */
function addClvSums(g: ClvNarrow, rows: Uint32Array, sign: 1 | -1, s: Float64Array): Float64Array {
  const { flags, tier, clv: clvs, predicted } = g
  for (let j = 0; j < rows.length; j++) {
    const i = rows[j]!
    const f = flags[i]!
    const clv = sign * clvs[i]!
    s[0] = s[0]! + clv
    s[1] = s[1]! + sign * (f & 1)
    s[2] = s[2]! + sign * predicted[i]!
    s[3] = s[3]! + clv * (f >> 1)
    const t = 4 + 2 * tier[i]!
    s[t] = s[t]! + sign
    s[t + 1] = s[t + 1]! + clv
  }
  return s
}

/** The columnar twins of the overview and tiers queries, from one pass over the selection (or what it leaves out). */
function clvFacts(c: CustomerColumns, sel: Selection | null): { overview: OverviewRow[]; tiers: TierRow[] } | null {
  if (!sel) return null
  const g = clvNarrow(c)
  const { rows, sign, kept } = smallerSide(sel.keep, g.present)
  const s = addClvSums(g, rows, sign, sign < 0 ? g.all.slice() : newClvSums(g.tiers))
  // The median (quantileExactInclusive) and the sum of the top share, in one walk down the
  // shared CLV order: the sum in descending order, as the SQL's arraySum of a reverse sort.
  const n = kept
  const k = Math.ceil(n * TOP_SHARE)
  const h = (n - 1) * 0.5
  const lo = Math.floor(h)
  const [aPos, bPos] = [n - 1 - lo, n - 2 - lo] // descending positions of ascending lo and lo + 1
  // The walk reads each position's customer's mark (a gather, within a 1 MB table) and stops at
  // the median: marking every selected customer's position first was a scatter over the whole
  // selection, the largest part of the request.
  const { order, values } = g
  const keep = sel.keep
  const last = Math.max(aPos, k - 1)
  let top = 0
  let a = Number.NaN
  let b = Number.NaN
  for (let p = 0, d = 0; d <= last && p < order.length; p++) {
    if (!keep[order[p]!]) continue
    const v = values[p]!
    if (d < k) top += v
    if (d === aPos) a = v
    if (d === bPos) b = v
    d++
  }
  const tiers: TierRow[] = []
  for (let t = 1; t < g.tiers; t++) {
    const count = s[4 + 2 * t]!
    if (count) tiers.push({ tier: c.clvTier.values[t]!, customers: String(count), avg_value: s[5 + 2 * t]! / count })
  }
  const overview: OverviewRow = {
    customers: String(n),
    avg_clv: n ? s[0]! / n : null,
    median_clv: n ? (lo + 1 < n ? a + (h - lo) * (b - a) : a) : null,
    total_clv: s[0]!,
    top_clv: top,
    growing: String(s[1]!),
    predicted_sum: s[2]!,
    retention: s[3]!,
  }
  return { overview: [overview], tiers }
}

async function body(ctx: AnalyticsContext, q: ClvOptions) {
  const nowMs = ctx.now()
  const f = clvFilter(q, nowMs)
  // Without a filter, the overview and tiers come from the tenant summary (summary.ts).
  const whole = !customerScope(q, nowMs).filtered && !q.tier
  const held: Selection[] = []
  const selected = once((c) => {
    const s = clvSelection(c, q, nowMs)
    if (s) held.push(s)
    return s
  })
  const facts = once((c) => clvFacts(c, selected(c)))
  const [overviewRows, tierRows, top] = await Promise.all([
    tenantWide(ctx, q.tenant_id, 'clv.overview', whole, () => select<OverviewRow>(
      ctx.store,
      // top_clv: the sum of the ceil(n · top_share) largest values (ties do not change a sum), from
      // a sorted array of the values rather than a window over the rows (a third of the time).
      `SELECT count() AS customers, avg(clv) AS avg_clv, quantileExactInclusive(0.5)(clv) AS median_clv, sum(clv) AS total_clv,
              arraySum(arraySlice(arrayReverseSort(groupArray(clv)), 1, toUInt64(ceil(count() * {top_share:Float64})))) AS top_clv,
              countIf(predicted > historical) AS growing, sum(predicted) AS predicted_sum,
              sumIf(clv, risk IN ('at_risk', 'churning')) AS retention
       FROM (
         SELECT assumeNotNull(f.total_clv) AS clv, coalesce(f.predicted_value, 0) AS predicted, toFloat64(f.historical_value) AS historical, f.churn_risk AS risk
         FROM customer_features AS f FINAL WHERE ${f.where}
       )`,
      { ...f.params, top_share: TOP_SHARE },
    ), (c) => facts(c)?.overview ?? null),
    tenantWide(ctx, q.tenant_id, 'clv.tiers', whole, () => select<TierRow>(
      ctx.store,
      `SELECT assumeNotNull(f.clv_tier) AS tier, count() AS customers, avg(f.total_clv) AS avg_value
       FROM customer_features AS f FINAL WHERE ${f.where} AND f.clv_tier IS NOT NULL GROUP BY tier`,
      f.params,
    ), (c) => facts(c)?.tiers ?? null),
    // The first pages in the default order (CLV, highest first) come from the summary.
    tenantWidePage(ctx, q.tenant_id, 'clv.top', whole && q.sort_by === 'clv' && q.sort_order === 'desc', q, (limit, offset, ids) => customerRows(ctx, q, limit, offset, ids), (c, limit, offset) => clvPageIds(c, q, selected(c), limit, offset), (c, ids) => clvRowsOf(c, ids, nowMs)),
  ])
  for (const s of held) releaseMarks(s.keep) // every sub-query is done
  const o = overviewRows[0]!
  const total = num(o.customers)
  const totalClv = num(o.total_clv)
  const byTier = new Map(tierRows.map((r) => [r.tier, r]))
  const distribution = Object.fromEntries(
    CLV_TIERS.map((t) => {
      const r = byTier.get(t)
      const n = num(r?.customers)
      return [t, { count: n, percentage: pct(n, total), avg_value: round2(num(r?.avg_value)), threshold: CLV_THRESHOLDS[t] }]
    }),
  )
  const topCount = Math.ceil(total * TOP_SHARE)
  const growing = num(o.growing)
  const retention = num(o.retention)
  return {
    success: true,
    data: {
      overview: {
        total_customers: total,
        avg_clv: round2(num(o.avg_clv)),
        median_clv: round2(num(o.median_clv)),
        total_clv: round2(totalClv),
        distribution,
      },
      top_customers: top,
      insights: {
        high_value_concentration: `Top 20% of customers (${topCount} of ${total}) hold ${pct(num(o.top_clv), totalClv)}% of total CLV`,
        growth_opportunity: `${growing} of ${total} customers (${pct(growing, total)}%) are predicted to spend more in the next ${DEFAULT_CLV_MONTHS} months than they have spent so far; predicted value is ${pct(num(o.predicted_sum), totalClv)}% of total CLV`,
        retention_impact: `At-risk and churning customers hold ${round2(retention)} of CLV (${pct(retention, totalClv)}% of total CLV)`,
      },
    },
  }
}

const ClvCustomer = z.strictObject({
  customer_id: z.int().min(1),
  email: z.string(),
  historical_value: z.number(),
  predicted_value: z.number(),
  total_clv: z.number(),
  total_orders: Count,
  avg_order_value: z.number(),
  customer_since: DateOnly.nullable(),
  days_as_customer: Count.nullable(),
  clv_tier: z.enum(CLV_TIERS).nullable(),
  growth_rate: z.number().nullable().meta({ description: 'predicted / historical − 1; null without a historical value or a prediction' }),
}).meta({ id: 'ClvCustomer' })

export const ClvResponse = analyticsBody(
  z.strictObject({
    overview: z.strictObject({
      total_customers: Count,
      avg_clv: z.number(),
      median_clv: z.number(),
      total_clv: z.number(),
      distribution: z.record(z.enum(CLV_TIERS), z.strictObject({ count: Count, percentage: Percentage, avg_value: z.number(), threshold: z.string() })),
    }),
    top_customers: z.array(ClvCustomer).meta({ description: 'A page (limit, offset) in sort_by / sort_order' }),
    insights: z.strictObject({ high_value_concentration: z.string(), growth_opportunity: z.string(), retention_impact: z.string() }),
  }),
).meta({ id: 'ClvAnalysis' })

export const clvEndpoint: AnalyticsEndpoint<ClvOptions, RowsExport<ClvOptions, ClvCustomerRow>> = {
  path: '/api/v2/cdp/analytics/clv',
  summary: 'Customer lifetime value: overview, tiers, top customers and insights',
  query: ClvQuery,
  response: ClvResponse,
  overview: true,
  cacheTtlMs: PROCESSING_RESULTS_TTL_MS,
  body,
  prepare: (c) => void clvNarrow(c),
  export: {
    description: 'every customer of the population (the `top_customers` columns) in the requested sort; `limit` and `offset` do not apply',
    row: ClvCustomer,
    columns: fieldColumns<ClvCustomerRow>(['customer_id', 'email', 'historical_value', 'predicted_value', 'total_clv', 'total_orders', 'avg_order_value', 'customer_since', 'days_as_customer', 'clv_tier', 'growth_rate']),
    async count(ctx, q) {
      const f = clvFilter(q, ctx.now())
      const [r] = await select<{ n: string }>(ctx.store, `SELECT count() AS n FROM customer_features AS f FINAL WHERE ${f.where}`, f.params)
      return num(r?.n)
    },
    rows: (ctx, q, limit) => customerRows(ctx, q, limit, 0),
  },
}
