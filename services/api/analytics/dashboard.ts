import { z } from 'zod'
import { CommonQuery, resolveWindow, type CommonOptions } from './options.ts'
import type { AnalyticsContext, AnalyticsEndpoint, BodyExport } from './endpoint.ts'
import { analyticsBody, bodyTable, round2, select, signedPct, signedPctValue } from './endpoint.ts'
import { Count, DateOnly, Fraction, Percentage, SignedPercent } from '../response-schemas.ts'
import { PROCESSING_RESULTS_TTL_MS } from './cache.ts'
import { customerScope, scopeClause } from './customers.ts'
import { indexOfCustomer, lowerBound, once, selectCustomers, type CustomerColumns } from './customer-columns.ts'
import { tenantWide } from './summary.ts'
import { SEGMENTS, type Segment } from '../../../pipelines/features/segments.ts'
import { churnRate } from '../../../pipelines/features/churn.ts'

const DAY = 86_400_000
/** Churned = more than this many days without a counting order (the churn model's boundary). */
export const CHURN_DAYS = 90

export const DASHBOARD_PERIODS = ['today', 'week', 'month', 'year'] as const

export const DashboardQuery = CommonQuery.extend({ period: z.enum(DASHBOARD_PERIODS).default('month') }).strict()
export type DashboardOptions = CommonOptions & { period: (typeof DASHBOARD_PERIODS)[number] }

/**
 * Segment rank for movements: the spec's table order, Champions (0, best) … Lost (10, worst).
 * A change to a lower rank number is an upgrade, to a higher one a downgrade.
 */
export const SEGMENT_RANK: Readonly<Record<string, number>> = Object.fromEntries(SEGMENTS.map((s, i) => [s, i]))

/** Alert rules, checked in this order. */
export const ALERT_RULES = {
  churnRate: 0.3,
  revenueDropPct: -20,
  atRiskShare: 0.2,
} as const

/** The dashboard window [from, to) and the same-length window before it. */
export function dashboardWindows(period: DashboardOptions['period'], nowMs: number) {
  const w = resolveWindow({ period }, nowMs)!
  const len = w.to - w.from
  return { from: w.from, to: w.to, prevFrom: w.from - len, prevTo: w.from, days: Math.ceil((w.to - w.from) / DAY) }
}

interface CustomersRow { total: number; churned: number; with_level: number; clv: number | null; active: number; orders: number; cents: number; prev_cents: number; new_customers: number; returning: number; lapsed: number; daily: [number[], number[]] }

/** The columnar twin of the customers query: each customer's order history by binary search, the window's days summed in place. */
function customersOf(c: CustomerColumns, rows: Uint32Array | null, win: ReturnType<typeof dashboardWindows>, now: number): CustomersRow[] | null {
  if (!rows) return null
  const { orderStart: starts, orderTimes: times, orderCents: cents, totalClv: clvs } = c
  const risks = c.churnRisk.codes
  const churnedCode = c.churnRisk.code('churned')
  const [churnFrom, churnTo] = [win.from - CHURN_DAYS * DAY, now - CHURN_DAYS * DAY]
  const dayCents = new Float64Array(win.days + 1)
  const r: CustomersRow = { total: rows.length, churned: 0, with_level: 0, clv: null, active: 0, orders: 0, cents: 0, prev_cents: 0, new_customers: 0, returning: 0, lapsed: 0, daily: [[], []] }
  let clvSum = 0
  let clvCount = 0
  for (let j = 0; j < rows.length; j++) {
    const i = rows[j]!
    const risk = risks[i]!
    if (risk !== 0) r.with_level++
    if (risk === churnedCode) r.churned++
    const clv = clvs[i]!
    if (clv === clv) {
      clvSum += clv
      clvCount++
    }
    const s = starts[i]!
    const e = starts[i + 1]!
    if (e === s) continue
    // Binary searches only where a bound falls inside the history (most end before the windows).
    const end = times[e - 1]! < win.to ? e : lowerBound(times, s, e, win.to) // orders before the window's end: [s, end)
    if (end === s) continue
    const from = times[end - 1]! < win.from ? end : lowerBound(times, s, end, win.from)
    const prevFrom = from === s || times[from - 1]! < win.prevFrom ? from : lowerBound(times, s, from, win.prevFrom)
    const first = times[s]!
    const last = times[end - 1]!
    const n = end - from
    if (n > 0) {
      r.active++
      r.orders += n
      if (first < win.from) r.returning++
    }
    for (let k = from; k < end; k++) {
      const d = Math.trunc((times[k]! - win.from) / DAY)
      dayCents[d] = dayCents[d]! + cents[k]!
      r.cents += cents[k]!
    }
    for (let k = prevFrom; k < from; k++) r.prev_cents += cents[k]!
    if (first >= win.from) r.new_customers++
    if (last >= churnFrom && last < churnTo) r.lapsed++
  }
  r.clv = clvCount ? clvSum / clvCount : null
  for (let d = 0; d < dayCents.length; d++) {
    if (!dayCents[d]) continue
    r.daily[0].push(d)
    r.daily[1].push(dayCents[d]!)
  }
  return [r]
}

export async function dashboardBody(ctx: AnalyticsContext, q: DashboardOptions) {
  const now = ctx.now()
  const win = dashboardWindows(q.period, now)
  // period is the dashboard's window, date_from/date_to do not apply; the other filters choose customers.
  const scope = customerScope(q, now, ['period', 'date_from', 'date_to'])
  const inScope = scopeClause(scope)
  // segment_order, not segments: the customer filter binds its own `segments` list.
  const p = { ...scope.params, from: win.from, to: win.to, prev_from: win.prevFrom, churn_from: win.from - CHURN_DAYS * DAY, churn_to: now - CHURN_DAYS * DAY, segment_order: SEGMENTS }
  const ts = (name: string) => `fromUnixTimestamp64Milli({${name}:Int64}, 'UTC')`
  // Without a customer filter, every part comes from the tenant summary (summary.ts) of this period.
  const wide = <T>(name: string, live: () => Promise<T>, columnar?: (c: CustomerColumns) => T | null | Promise<T | null>) => tenantWide(ctx, q.tenant_id, `dashboard.${q.period}.${name}`, !scope.filtered, live, columnar)
  const selected = once((c) => selectCustomers(c, q, now, [], ['period', 'date_from', 'date_to']))

  const [customers, segRows, moves] = await Promise.all([
    // One pass over the customers in scope: their scores, and from each one's counting orders
    // placed before the window's end (order_times / order_cents of its feature row) the orders and
    // revenue in the window and the one before it, first and last order, and the window's revenue
    // per day (sumMap of day index → cents).
    wide('customers', () => select<CustomersRow>(
      ctx.store,
      `SELECT count() AS total, countIf(churn_risk = 'churned') AS churned, countIf(churn_risk IS NOT NULL) AS with_level, avgOrNull(clv) AS clv,
              countIf(n_cur > 0) AS active, sum(n_cur) AS orders, sum(cents_cur) AS cents, sum(cents_prev) AS prev_cents,
              countIf(notEmpty(ts) AND first_at >= {from:Int64}) AS new_customers,
              countIf(n_cur > 0 AND first_at < {from:Int64}) AS returning,
              countIf(notEmpty(ts) AND last_at >= {churn_from:Int64} AND last_at < {churn_to:Int64}) AS lapsed,
              sumMap(arrayMap(t -> intDiv(t - {from:Int64}, 86400000), win_ts), win_cents) AS daily
       FROM (
         SELECT f.churn_risk AS churn_risk, f.total_clv AS clv,
                arrayFilter(t -> t < {to:Int64}, f.order_times) AS ts, ts[1] AS first_at, ts[-1] AS last_at,
                arrayFilter(t -> t >= {from:Int64} AND t < {to:Int64}, f.order_times) AS win_ts,
                arrayFilter((c, t) -> t >= {from:Int64} AND t < {to:Int64}, f.order_cents, f.order_times) AS win_cents,
                length(win_ts) AS n_cur, arraySum(win_cents) AS cents_cur,
                arraySum((t, c) -> if(t >= {prev_from:Int64} AND t < {from:Int64}, c, 0), f.order_times, f.order_cents) AS cents_prev
         FROM customer_features AS f FINAL
         WHERE ${scope.where}
       )`,
      p,
    ), (c) => customersOf(c, selected(c), win, now)),
    wide('segments', () => select<{ segment: string; n: number }>(
      ctx.store,
      `SELECT f.segment AS segment, count() AS n FROM customer_features AS f FINAL WHERE ${scope.where} AND f.segment IS NOT NULL GROUP BY segment`,
      p,
    ), (c) => {
      const rows = selected(c)
      if (!rows) return null
      const segs = c.segment
      const n = new Float64Array(SEGMENTS.length + 1)
      for (let j = 0; j < rows.length; j++) {
        const g = segs[rows[j]!]! | 0
        n[g] = n[g]! + 1
      }
      const out: { segment: string; n: number }[] = []
      for (let k = 1; k < n.length; k++) if (n[k]) out.push({ segment: SEGMENTS[k - 1]!, n: n[k]! })
      return out
    }),
    // A change published twice (at least once delivery) has another event_id but the same content: counted once.
    // A change published twice (at least once delivery) has another event_id but the same content: counted once.
    wide('movements', () => select<{ upgrades: number; downgrades: number }>(
      ctx.store,
      `SELECT uniqExactIf(key, indexOf({segment_order:Array(String)}, segment) < indexOf({segment_order:Array(String)}, previous_segment)) AS upgrades,
              uniqExactIf(key, indexOf({segment_order:Array(String)}, segment) > indexOf({segment_order:Array(String)}, previous_segment)) AS downgrades
       FROM (
         SELECT tuple(customer_id, occurred_at, previous_segment, segment) AS key, assumeNotNull(previous_segment) AS previous_segment, assumeNotNull(segment) AS segment
         FROM segment_changes FINAL
         WHERE tenant_id = {tenant_id:UInt64} AND previous_segment IS NOT NULL AND segment IS NOT NULL
           AND has({segment_order:Array(String)}, previous_segment) AND has({segment_order:Array(String)}, segment)
           AND occurred_at >= ${ts('from')} AND occurred_at < ${ts('to')}${inScope}
       )`,
      p,
    ), async (c) => {
      // The window's distinct changes of every customer, kept when their customer is selected.
      const rows = selected(c)
      if (!rows) return null
      const inRows = new Uint8Array(c.size)
      for (let j = 0; j < rows.length; j++) inRows[rows[j]!] = 1
      const all = await select<{ customer_id: string; previous_segment: string; segment: string }>(
        ctx.store,
        `SELECT DISTINCT customer_id, occurred_at, assumeNotNull(previous_segment) AS previous_segment, assumeNotNull(segment) AS segment
         FROM segment_changes FINAL
         WHERE tenant_id = {tenant_id:UInt64} AND previous_segment IS NOT NULL AND segment IS NOT NULL
           AND has({segment_order:Array(String)}, previous_segment) AND has({segment_order:Array(String)}, segment)
           AND occurred_at >= ${ts('from')} AND occurred_at < ${ts('to')}`,
        p,
      )
      let upgrades = 0
      let downgrades = 0
      for (const r of all) {
        const i = indexOfCustomer(c, Number(r.customer_id))
        if (i < 0 || inRows[i] !== 1) continue
        const from = SEGMENTS.indexOf(r.previous_segment as Segment)
        const to = SEGMENTS.indexOf(r.segment as Segment)
        if (to < from) upgrades++
        if (to > from) downgrades++
      }
      return [{ upgrades, downgrades }]
    }),
  ])

  const c = customers[0] ?? { total: 0, churned: 0, with_level: 0, clv: null, active: 0, orders: 0, cents: 0, prev_cents: 0, new_customers: 0, returning: 0, lapsed: 0, daily: [[], []] }
  const totalCustomers = Number(c.total)
  const churn = churnRate(Number(c.churned), Number(c.with_level))
  const revenue = round2(Number(c.cents) / 100)
  const prevRevenue = round2(Number(c.prev_cents) / 100)
  const nOrders = Number(c.orders)
  const chart: number[] = Array.from({ length: win.days }, () => 0)
  const [days, dayCents] = c.daily
  days.forEach((d, i) => (chart[Number(d)] = round2(Number(dayCents[i]) / 100)))

  const counts = new Map(segRows.map((r) => [r.segment, Number(r.n)]))
  const segmented = [...counts.values()].reduce((a, b) => a + b, 0)
  const distribution = SEGMENTS.map((segment) => {
    const count = counts.get(segment) ?? 0
    return { segment, count, percentage: segmented ? round2((100 * count) / segmented) : 0 }
  })
  const change = signedPct(revenue, prevRevenue)

  const alerts: { type: string; message: string; action: string }[] = []
  if (churn > ALERT_RULES.churnRate) {
    alerts.push({ type: 'churn', message: `Churn rate is ${round2(churn * 100)}% (above ${ALERT_RULES.churnRate * 100}%)`, action: 'Run a win-back campaign for churned and at-risk customers' })
  }
  if (prevRevenue > 0 && (100 * (revenue - prevRevenue)) / prevRevenue < ALERT_RULES.revenueDropPct) {
    alerts.push({ type: 'revenue', message: `Revenue ${change} against the previous ${q.period}`, action: 'Review campaigns, stock and pricing of the period' })
  }
  const atRisk = (counts.get('At Risk') ?? 0) + (counts.get('Cannot Lose Them') ?? 0)
  if (segmented && atRisk / segmented > ALERT_RULES.atRiskShare) {
    alerts.push({ type: 'segments', message: `${round2((100 * atRisk) / segmented)}% of customers are At Risk or Cannot Lose Them`, action: 'Prioritise retention offers for high-value lapsing customers' })
  }

  return {
    success: true,
    data: {
      period: q.period,
      kpis: {
        total_customers: totalCustomers,
        active_customers: Number(c.active),
        total_revenue: revenue,
        avg_order_value: nOrders ? round2(revenue / nOrders) : 0,
        customer_lifetime_value: c.clv === null ? null : round2(Number(c.clv)),
        churn_rate: churn,
        nps_score: null,
      },
      trends: {
        revenue: { current: revenue, previous: prevRevenue, change, chart },
        customers: { new: Number(c.new_customers), returning: Number(c.returning), churned: Number(c.lapsed) },
      },
      segments: {
        distribution,
        movements: { upgrades: Number(moves[0]?.upgrades ?? 0), downgrades: Number(moves[0]?.downgrades ?? 0) },
      },
      alerts,
    },
  }
}

export const DashboardResponse = analyticsBody(
  z.strictObject({
    period: z.enum(DASHBOARD_PERIODS),
    kpis: z.strictObject({
      total_customers: Count,
      active_customers: Count,
      total_revenue: z.number(),
      avg_order_value: z.number(),
      customer_lifetime_value: z.number().nullable(),
      churn_rate: Fraction,
      nps_score: z.null().meta({ description: 'Not measured: always null' }),
    }),
    trends: z.strictObject({
      revenue: z.strictObject({ current: z.number(), previous: z.number(), change: SignedPercent, chart: z.array(z.number()).meta({ description: 'Revenue per day of the period' }) }),
      customers: z.strictObject({ new: Count, returning: Count, churned: Count }),
    }),
    segments: z.strictObject({
      distribution: z.array(z.strictObject({ segment: z.enum(SEGMENTS), count: Count, percentage: Percentage })),
      movements: z.strictObject({ upgrades: Count, downgrades: Count }),
    }),
    alerts: z.array(z.strictObject({ type: z.enum(['churn', 'revenue', 'segments']), message: z.string(), action: z.string() })),
  }),
).meta({ id: 'Dashboard' })

type DashboardBody = Awaited<ReturnType<typeof dashboardBody>>

/** The KPI rows of the export, in order: the body's `kpis`, then the period's revenue and customer figures. */
const BODY_KPIS = ['total_customers', 'active_customers', 'total_revenue', 'avg_order_value', 'customer_lifetime_value', 'churn_rate', 'nps_score'] as const satisfies readonly (keyof DashboardBody['data']['kpis'])[]
const KPIS: Readonly<Record<string, (d: DashboardBody['data']) => number | null>> = {
  ...Object.fromEntries(BODY_KPIS.map((k) => [k, (d: DashboardBody['data']) => d.kpis[k]])),
  previous_revenue: (d) => d.trends.revenue.previous,
  revenue_change: (d) => signedPctValue(d.trends.revenue.change),
  new_customers: (d) => d.trends.customers.new,
  returning_customers: (d) => d.trends.customers.returning,
  churned_customers: (d) => d.trends.customers.churned,
  segment_upgrades: (d) => d.segments.movements.upgrades,
  segment_downgrades: (d) => d.segments.movements.downgrades,
}
const DailyRevenue = z.strictObject({ date: DateOnly, revenue: z.number() })
const Kpi = z.strictObject({
  kpi: z.enum(Object.keys(KPIS) as [string, ...string[]]),
  value: z.number().nullable().meta({ description: 'As in the body; revenue_change in percent (`+12.5%` is 12.5); null where the body has null' }),
})

/** The export: the period's daily revenue and its KPIs, two tables. */
export const dashboardExport: BodyExport<DashboardOptions, DashboardBody> = {
  description: `two tables: \`daily\`, one row per UTC day of the period, oldest first (\`date\`, \`revenue\`: the body's \`trends.revenue.chart\`), and \`kpis\`, one row per figure (\`kpi\`, \`value\`): ${Object.keys(KPIS).join(', ')} (the body's \`kpis\`, then \`trends.revenue.previous\` and \`.change\` in percent, \`trends.customers\` and \`segments.movements\`)`,
  tables: { daily: DailyRevenue, kpis: Kpi },
  tableColumn: 'table',
  fromBody: ({ data }, _q, at) => {
    const from = dashboardWindows(data.period, at).from
    return [
      bodyTable('daily', DailyRevenue, data.trends.revenue.chart.map((revenue, i) => ({ date: new Date(from + i * DAY).toISOString().slice(0, 10), revenue }))),
      bodyTable('kpis', Kpi, Object.entries(KPIS).map(([kpi, value]) => ({ kpi, value: value(data) }))),
    ]
  },
}

/** GET /api/v2/cdp/analytics/dashboard — KPIs, trends, segments and alerts of a period; definitions in docs/analytics-cohorts-dashboard.md. */
export const dashboardEndpoint: AnalyticsEndpoint<DashboardOptions> = {
  path: '/api/v2/cdp/analytics/dashboard',
  summary:
    'Dashboard of a period (today|week|month|year, default month; UTC days ending now): KPIs, revenue against the previous period of the same length with a daily chart, new/returning/churned customers, segment distribution and movements, alerts',
  query: DashboardQuery,
  response: DashboardResponse,
  ignores: ['date_from', 'date_to'],
  overview: true,
  cacheTtlMs: PROCESSING_RESULTS_TTL_MS,
  body: dashboardBody,
  export: dashboardExport,
}
