import { z } from 'zod'
import { CommonQuery, type CommonOptions } from './options.ts'
import type { AnalyticsContext, AnalyticsEndpoint, BodyExport } from './endpoint.ts'
import { analyticsBody, bodyTable, round2, select, signedPct, signedPctValue } from './endpoint.ts'
import { Count, Fraction, SignedPercent } from '../response-schemas.ts'
import { PROCESSING_RESULTS_TTL_MS } from './cache.ts'
import { customerScope } from './customers.ts'
import { indexesMarked, Population, selectMask, smallerSide, type CustomerColumns } from './customer-columns.ts'
import { tenantWide } from './summary.ts'
import { SEGMENTS, type Segment } from '../../../pipelines/features/segments.ts'

const DAY = 86_400_000
/** A customer is retained when their last counting order is at most this many days old. */
export const RETENTION_WINDOW_DAYS = 90
/** growth_rate and vs_last_month compare with the segment_daily snapshot this many days before today. */
export const COMPARISON_DAYS = 30

/**
 * Recommendations: a segment with customers gets its action; potential_impact = share × the
 * segment's revenue (net spend of its customers), as a money string with 2 decimals.
 */
export const RECOMMENDATION_RULES: ReadonlyArray<{ segment: Segment; action: string; share: number }> = [
  { segment: 'Champions', action: 'reward and referral program', share: 0.05 },
  { segment: 'Potential Loyalists', action: 'loyalty program enrolment', share: 0.1 },
  { segment: 'Recent Customers', action: 'onboarding sequence with a second-purchase offer', share: 0.1 },
  { segment: 'Need Attention', action: 'personalised limited-time offer', share: 0.1 },
  { segment: 'About to Sleep', action: 'reactivation campaign', share: 0.15 },
  { segment: 'At Risk', action: 'win-back campaign', share: 0.25 },
  { segment: 'Cannot Lose Them', action: 'personal outreach with an exclusive offer', share: 0.3 },
]

interface SegRow {
  segment: string
  size: number
  revenue: number
  orders: number
  retained: number
}

const frac = (n: number, d: number) => (d ? Math.round((n / d) * 10_000) / 10_000 : 0)

/** Per customer, once per columns object and retention start: its segment code, orders and whether it ordered since the start; the sums over every scored customer. */
interface PerformanceFacts {
  retainedFrom: number
  segment: Uint8Array
  orders: Uint32Array
  retained: Uint8Array
  scored: Population
  all: Float64Array
}
const factsOf = new WeakMap<CustomerColumns, PerformanceFacts>()
function performanceFacts(c: CustomerColumns, retainedFrom: number): PerformanceFacts {
  const cached = factsOf.get(c)
  if (cached?.retainedFrom === retainedFrom) return cached
  const n = c.size
  const f: PerformanceFacts = {
    retainedFrom,
    segment: Uint8Array.from(c.segment.subarray(0, n)),
    orders: Uint32Array.from(c.orders.subarray(0, n)),
    retained: Uint8Array.from(c.lastOrderMs.subarray(0, n), (t) => (t >= retainedFrom ? 1 : 0)),
    scored: new Population(n, (i) => c.segment[i] !== 0),
    all: new Float64Array(0),
  }
  f.all = performanceSums(c, f, indexesMarked(f.scored.marks, 1), 1, new Float64Array(4 * (SEGMENTS.length + 1)))
  factsOf.set(c, f)
  return f
}

/** Adds (sign 1) or subtracts (sign -1) the customers `rows`: per segment code, size, cents, orders, retained (all integers: exact either way). */
function performanceSums(c: CustomerColumns, f: PerformanceFacts, rows: Uint32Array, sign: 1 | -1, s: Float64Array): Float64Array {
  const { segment, orders, retained } = f
  const monetary = c.monetaryCents
  for (let j = 0; j < rows.length; j++) {
    const i = rows[j]!
    const o = 4 * segment[i]!
    s[o] = s[o]! + sign
    s[o + 1] = s[o + 1]! + sign * monetary[i]!
    s[o + 2] = s[o + 2]! + sign * orders[i]!
    s[o + 3] = s[o + 3]! + sign * retained[i]!
  }
  return s
}

/** The columnar twin of the per-segment query: the smaller side of the selection, summed. */
function performanceOf(c: CustomerColumns, q: CommonOptions, nowMs: number, retainedFrom: number): SegRow[] | null {
  const f = performanceFacts(c, retainedFrom)
  const keep = selectMask(c, q, nowMs)
  if (!keep) return null
  const { rows, sign } = smallerSide(keep, f.scored)
  const s = performanceSums(c, f, rows, sign, sign < 0 ? f.all.slice() : new Float64Array(f.all.length))
  const out: SegRow[] = []
  for (let g = 1; g <= SEGMENTS.length; g++) if (s[4 * g]) out.push({ segment: SEGMENTS[g - 1]!, size: s[4 * g]!, revenue: s[4 * g + 1]! / 100, orders: s[4 * g + 2]!, retained: s[4 * g + 3]! })
  return out
}

export async function segmentPerformanceBody(ctx: AnalyticsContext, q: CommonOptions) {
  const now = ctx.now()
  const scope = customerScope(q, now)
  const today = Math.floor(now / DAY) * DAY
  const whole = !scope.filtered
  const rows = await tenantWide(ctx, q.tenant_id, 'segments.performance', whole, () => select<SegRow>(
    ctx.store,
    `SELECT f.segment AS segment, count() AS size, toFloat64(sum(f.monetary)) AS revenue, sum(length(f.order_times)) AS orders,
            countIf(f.last_order_at >= fromUnixTimestamp64Milli({retained_from:Int64}, 'UTC')) AS retained
     FROM customer_features AS f FINAL
     WHERE ${scope.where} AND f.segment IS NOT NULL
     GROUP BY segment`,
    { ...scope.params, retained_from: now - RETENTION_WINDOW_DAYS * DAY },
  ), (c) => performanceOf(c, q, now, now - RETENTION_WINDOW_DAYS * DAY))
  const by = new Map(rows.map((r) => [r.segment, { size: Number(r.size), revenue: Number(r.revenue), orders: Number(r.orders), retained: Number(r.retained) }]))
  // segment_daily is tenant-wide: compared only when no customer filter narrows the sizes.
  let before: Map<string, number> | null = null
  if (!scope.filtered) {
    const snap = await tenantWide(ctx, q.tenant_id, 'segments.snapshot', true, () => select<{ segment: string; customers: number }>(
      ctx.store,
      `SELECT segment, customers FROM segment_daily FINAL WHERE tenant_id = {tenant_id:UInt64} AND day = toDate({day:String})`,
      { tenant_id: q.tenant_id, day: new Date(today - COMPARISON_DAYS * DAY).toISOString().slice(0, 10) },
    ))
    if (snap.length) before = new Map(snap.map((r) => [r.segment, Number(r.customers)]))
  }
  const total = { size: 0, revenue: 0, retained: 0 }
  for (const v of by.values()) {
    total.size += v.size
    total.revenue += v.revenue
    total.retained += v.retained
  }
  const avgRevenuePerCustomer = total.size ? total.revenue / total.size : 0
  const avgRetention = frac(total.retained, total.size)
  const segments = SEGMENTS.map((name) => {
    const v = by.get(name) ?? { size: 0, revenue: 0, orders: 0, retained: 0 }
    const prev = before ? (before.get(name) ?? 0) : null
    const retention = frac(v.retained, v.size)
    return {
      name,
      metrics: {
        size: v.size,
        revenue: round2(v.revenue),
        avg_order_value: v.orders ? round2(v.revenue / v.orders) : 0,
        order_frequency: v.size ? round2(v.orders / v.size) : 0,
        retention_rate: retention,
        growth_rate: prev ? frac(v.size - prev, prev) : null,
      },
      comparison: {
        vs_avg_revenue: v.size ? signedPct(v.revenue / v.size, avgRevenuePerCustomer) : null,
        vs_avg_retention: v.size ? signedPct(retention, avgRetention) : null,
        vs_last_month: prev ? signedPct(v.size, prev) : null,
      },
    }
  })
  const recommendations = RECOMMENDATION_RULES.flatMap((r) => {
    const v = by.get(r.segment)
    if (!v?.size) return []
    return [{ segment: r.segment, action: r.action, potential_impact: (round2(v.revenue * r.share)).toFixed(2) }]
  })
  return { success: true, data: { segments, recommendations } }
}

export const SegmentPerformanceResponse = analyticsBody(
  z.strictObject({
    segments: z.array(
      z.strictObject({
        name: z.enum(SEGMENTS),
        metrics: z.strictObject({
          size: Count,
          revenue: z.number(),
          avg_order_value: z.number(),
          order_frequency: z.number(),
          retention_rate: Fraction,
          growth_rate: z.number().nullable().meta({ description: 'Size change against the snapshot 30 days before (fraction); null without one' }),
        }),
        comparison: z.strictObject({ vs_avg_revenue: SignedPercent, vs_avg_retention: SignedPercent, vs_last_month: SignedPercent }),
      }),
    ),
    recommendations: z.array(z.strictObject({ segment: z.enum(SEGMENTS), action: z.string(), potential_impact: z.string().regex(/^-?\d+\.\d{2}$/).meta({ description: 'Money, 2 decimals' }) })),
  }),
).meta({ id: 'SegmentPerformance' })

const percentChange = (description: string) => z.number().nullable().meta({ description: `${description}, in percent (\`+12.5%\` is 12.5); null as in the body` })

const SegmentPerformanceRow = z.strictObject({
  segment: z.enum(SEGMENTS),
  size: Count,
  revenue: z.number(),
  avg_order_value: z.number(),
  order_frequency: z.number(),
  retention_rate: Fraction,
  growth_rate: z.number().nullable(),
  vs_avg_revenue: percentChange('Revenue per customer against the scope'),
  vs_avg_retention: percentChange('Retention against the scope'),
  vs_last_month: percentChange('Size against the snapshot 30 days before'),
  recommended_action: z.string().nullable().meta({ description: "The segment's recommendation, null without one" }),
  potential_impact: z.number().nullable().meta({ description: "The recommendation's potential impact (money), null without one" }),
})

/** The export: one row per segment (all 11, spec order) with its metrics, comparisons and recommendation. */
export const segmentPerformanceExport: BodyExport<CommonOptions, Awaited<ReturnType<typeof segmentPerformanceBody>>> = {
  description:
    'one row per segment (all 11, in the body\'s order): `segment`, the `metrics` and `comparison` fields of the body (comparisons as percent numbers), and its recommendation (`recommended_action`, `potential_impact` as a number; null for a segment without one)',
  tables: { segments: SegmentPerformanceRow },
  fromBody: ({ data }) => {
    const advice = new Map(data.recommendations.map((r) => [r.segment, r]))
    return [
      bodyTable(
        'segments',
        SegmentPerformanceRow,
        data.segments.map(({ name, metrics, comparison }) => {
          const r = advice.get(name)
          return {
            segment: name,
            ...metrics,
            vs_avg_revenue: signedPctValue(comparison.vs_avg_revenue),
            vs_avg_retention: signedPctValue(comparison.vs_avg_retention),
            vs_last_month: signedPctValue(comparison.vs_last_month),
            recommended_action: r?.action ?? null,
            potential_impact: r ? Number(r.potential_impact) : null,
          }
        }),
      ),
    ]
  },
}

/** GET /api/v2/cdp/analytics/segments/performance — per-segment metrics; definitions in docs/analytics-cohorts-dashboard.md. */
export const segmentPerformanceEndpoint: AnalyticsEndpoint = {
  path: '/api/v2/cdp/analytics/segments/performance',
  summary:
    'Segment performance: per segment (all 11, spec order) size, revenue (net spend), average order value, orders per customer, 90-day retention, growth vs the snapshot 30 days before; comparisons and recommendations',
  query: CommonQuery.strict(),
  response: SegmentPerformanceResponse,
  overview: true,
  cacheTtlMs: PROCESSING_RESULTS_TTL_MS,
  body: segmentPerformanceBody,
  prepare: (c, nowMs) => void performanceFacts(c, nowMs - RETENTION_WINDOW_DAYS * DAY),
  export: segmentPerformanceExport,
}
