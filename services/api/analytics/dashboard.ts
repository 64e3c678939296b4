import { z } from 'zod'
import { CommonQuery, resolveWindow, type CommonOptions } from './options.ts'
import type { AnalyticsContext, AnalyticsEndpoint, BodyExport } from './endpoint.ts'
import { analyticsBody, bodyTable, round2, select, signedPct, signedPctValue } from './endpoint.ts'
import { Count, DateOnly, Fraction, Percentage, SignedPercent } from '../response-schemas.ts'
import { PROCESSING_RESULTS_TTL_MS } from './cache.ts'
import { customerScope, scopeClause } from './customers.ts'
import { countIn, indexesMarked, indexOfCustomer, keptMarks, lowerBound, once, Population, releaseMarks, selectMask, smallerSide, type CustomerColumns } from './customer-columns.ts'
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

/**
 * Each customer's part of a period's customers query, computed once per columns object and
 * window (a summary's columns are as of one clock): the window's orders (count, cents, and their
 * days and cents in `wStart`…), the previous window's cents, flags, and the sums over everyone.
 * A filtered request then adds up only the smaller side of its selection (periodSums).
 */
interface PeriodFacts {
  key: string
  /** Bit 0: an order in the window (active); 1: active and first ordered before it (returning); 2: first ordered in the window or later, with an order before its end (new); 3: lapsed; 4: churned; 5: has a churn level. */
  flags: Uint8Array
  orders: Uint32Array
  cents: Float64Array
  prevCents: Float64Array
  /** total_clv, 0 without one; 1 with one. */
  clv: Float64Array
  hasClv: Uint8Array
  segment: Uint32Array
  /** Customer i's window orders: day index wDay and cents wCents over [wStart[i], wStart[i + 1]). */
  wStart: Uint32Array
  wDay: Uint16Array
  wCents: Float64Array
  /** The customers with something to add beyond the count, and the others. */
  active: Population
  others: Population
  all: Float64Array
}
const ACTIVE = 1, RETURNING = 2, NEW = 4, LAPSED = 8, CHURNED = 16, WITH_LEVEL = 32

/** Sum slots: total, churned, with_level, clv sum, clv count, active, orders, cents, prev_cents, new, returning, lapsed, then per segment code, then per day. */
const SLOTS = 12

const periodFactsOf = new WeakMap<CustomerColumns, Map<string, PeriodFacts>>()
function periodFacts(c: CustomerColumns, win: ReturnType<typeof dashboardWindows>, now: number): PeriodFacts {
  const key = `${win.from}:${win.to}:${now}`
  let byKey = periodFactsOf.get(c)
  if (!byKey) periodFactsOf.set(c, (byKey = new Map()))
  const cached = byKey.get(key)
  if (cached) return cached
  const { orderStart: starts, orderTimes: times, orderCents: allCents } = c
  const n = c.size
  const risks = c.churnRisk.codes
  const churnedCode = c.churnRisk.code('churned')
  const [churnFrom, churnTo] = [win.from - CHURN_DAYS * DAY, now - CHURN_DAYS * DAY]
  const flags = new Uint8Array(n)
  const orders = new Uint32Array(n)
  const cents = new Float64Array(n)
  const prevCents = new Float64Array(n)
  const clv = new Float64Array(n)
  const hasClv = new Uint8Array(n)
  const wStart = new Uint32Array(n + 1)
  const wDayList: number[] = []
  const wCentsList: number[] = []
  for (let i = 0; i < n; i++) {
    wStart[i] = wDayList.length
    const risk = risks[i]!
    let f = (risk !== 0 ? WITH_LEVEL : 0) | (risk === churnedCode && risk !== 0 ? CHURNED : 0)
    const v = c.totalClv[i]!
    if (v === v) {
      clv[i] = v
      hasClv[i] = 1
    }
    const s = starts[i]!
    const e = starts[i + 1]!
    if (e > s) {
      const end = times[e - 1]! < win.to ? e : lowerBound(times, s, e, win.to) // orders before the window's end: [s, end)
      if (end > s) {
        const from = times[end - 1]! < win.from ? end : lowerBound(times, s, end, win.from)
        const prevFrom = from === s || times[from - 1]! < win.prevFrom ? from : lowerBound(times, s, from, win.prevFrom)
        const first = times[s]!
        const last = times[end - 1]!
        if (end > from) {
          f |= ACTIVE
          if (first < win.from) f |= RETURNING
        }
        orders[i] = end - from
        let sum = 0
        for (let k = from; k < end; k++) {
          wDayList.push(Math.trunc((times[k]! - win.from) / DAY))
          wCentsList.push(allCents[k]!)
          sum += allCents[k]!
        }
        cents[i] = sum
        let prev = 0
        for (let k = prevFrom; k < from; k++) prev += allCents[k]!
        prevCents[i] = prev
        if (first >= win.from) f |= NEW
        if (last >= churnFrom && last < churnTo) f |= LAPSED
      }
    }
    flags[i] = f
  }
  wStart[n] = wDayList.length
  // A customer with nothing but a place in the count (no order, level, CLV or segment) adds only
  // to `total`: counted, not walked.
  const plain = (i: number) => flags[i] === 0 && wStart[i + 1] === wStart[i] && cents[i] === 0 && prevCents[i] === 0 && orders[i] === 0 && hasClv[i] === 0 && c.segment[i] === 0
  const active = new Population(n, (i) => !plain(i))
  const others = new Population(n, plain)
  const facts: PeriodFacts = { key, flags, orders, cents, prevCents, clv, hasClv, segment: c.segment, wStart, wDay: Uint16Array.from(wDayList), wCents: Float64Array.from(wCentsList), active, others, all: new Float64Array(0) }
  facts.all = periodSums(facts, indexesMarked(active.marks, 1), 1, new Float64Array(SLOTS + SEGMENTS.length + 1 + win.days + 1))
  byKey.set(key, facts)
  return facts
}

/**
 * Adds (sign 1) or subtracts (sign -1) the customers `rows`, with no branch per customer but the
 * walk of their window orders. Counts and cents are integers (exact either way); the CLV sum is
 * of floats and can differ in the last bits, which the two-decimal answer does not show.
 */
function periodSums(f: PeriodFacts, rows: Uint32Array, sign: 1 | -1, s: Float64Array): Float64Array {
  const { flags, orders, cents, prevCents, clv, hasClv, segment, wStart, wDay, wCents } = f
  const day0 = SLOTS + SEGMENTS.length + 1
  for (let j = 0; j < rows.length; j++) {
    const i = rows[j]!
    const g = flags[i]!
    s[0] = s[0]! + sign
    s[1] = s[1]! + sign * ((g >> 4) & 1)
    s[2] = s[2]! + sign * ((g >> 5) & 1)
    s[3] = s[3]! + sign * clv[i]!
    s[4] = s[4]! + sign * hasClv[i]!
    s[5] = s[5]! + sign * (g & 1)
    s[6] = s[6]! + sign * orders[i]!
    s[7] = s[7]! + sign * cents[i]!
    s[8] = s[8]! + sign * prevCents[i]!
    s[9] = s[9]! + sign * ((g >> 2) & 1)
    s[10] = s[10]! + sign * ((g >> 1) & 1)
    s[11] = s[11]! + sign * ((g >> 3) & 1)
    const k = SLOTS + segment[i]!
    s[k] = s[k]! + sign
    for (let o = wStart[i]!, e = wStart[i + 1]!; o < e; o++) {
      const d = day0 + wDay[o]!
      s[d] = s[d]! + sign * wCents[o]!
    }
  }
  return s
}

/** The columnar twins of the customers and segments queries, from one pass over the smaller side of the selection. */
function periodAnswers(c: CustomerColumns, keep: Uint8Array | null, win: ReturnType<typeof dashboardWindows>, now: number): { customers: CustomersRow[]; segments: { segment: string; n: number }[] } | null {
  if (!keep) return null
  const f = periodFacts(c, win, now)
  const { rows, sign } = smallerSide(keep, f.active)
  const s = periodSums(f, rows, sign, sign < 0 ? f.all.slice() : new Float64Array(f.all.length))
  s[0] = s[0]! + countIn(keep, f.others)
  const day0 = SLOTS + SEGMENTS.length + 1
  const daily: [number[], number[]] = [[], []]
  for (let d = 0; d <= win.days; d++) {
    const v = s[day0 + d]!
    if (!v) continue
    daily[0].push(d)
    daily[1].push(v)
  }
  const customers: CustomersRow = {
    total: s[0]!, churned: s[1]!, with_level: s[2]!, clv: s[4] ? s[3]! / s[4]! : null, active: s[5]!, orders: s[6]!, cents: s[7]!, prev_cents: s[8]!,
    new_customers: s[9]!, returning: s[10]!, lapsed: s[11]!, daily,
  }
  const segments: { segment: string; n: number }[] = []
  for (let k = 1; k <= SEGMENTS.length; k++) if (s[SLOTS + k]) segments.push({ segment: SEGMENTS[k - 1]!, n: s[SLOTS + k]! })
  return { customers: [customers], segments }
}

/**
 * A window's distinct segment changes, as (customer index, +1 upgrade / -1 downgrade / 0), read
 * once per columns object and window: a filtered request counts those of its customers.
 */
const movesOf = new WeakMap<CustomerColumns, Map<string, Promise<{ index: Int32Array; direction: Int8Array }>>>()
function windowMoves(c: CustomerColumns, key: string, read: () => Promise<{ customer_id: string; previous_segment: string; segment: string }[]>) {
  let byKey = movesOf.get(c)
  if (!byKey) movesOf.set(c, (byKey = new Map()))
  let moves = byKey.get(key)
  if (!moves) {
    moves = read().then((all) => {
      const index = new Int32Array(all.length)
      const direction = new Int8Array(all.length)
      all.forEach((r, k) => {
        index[k] = indexOfCustomer(c, Number(r.customer_id))
        const [from, to] = [SEGMENTS.indexOf(r.previous_segment as Segment), SEGMENTS.indexOf(r.segment as Segment)]
        direction[k] = to < from ? 1 : to > from ? -1 : 0
      })
      return { index, direction }
    })
    moves.catch(() => byKey.delete(key)) // a failed read is retried by the next request
    byKey.set(key, moves)
  }
  return moves
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
  // The selection's marks (its own copy: the sub-queries share it across awaits) and its sums.
  const held: Uint8Array[] = []
  const selected = once((c) => {
    const keep = selectMask(c, q, now, [], ['period', 'date_from', 'date_to'])
    if (!keep) return null
    const kept = keptMarks(keep)
    held.push(kept)
    return kept
  })
  const answers = once((c) => periodAnswers(c, selected(c), win, now))

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
    ), (c) => answers(c)?.customers ?? null),
    wide('segments', () => select<{ segment: string; n: number }>(
      ctx.store,
      `SELECT f.segment AS segment, count() AS n FROM customer_features AS f FINAL WHERE ${scope.where} AND f.segment IS NOT NULL GROUP BY segment`,
      p,
    ), (c) => answers(c)?.segments ?? null),
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
      const keep = selected(c)
      if (!keep) return null
      const { index, direction } = await windowMoves(c, `${win.from}:${win.to}`, () =>
        select<{ customer_id: string; previous_segment: string; segment: string }>(
          ctx.store,
          `SELECT DISTINCT customer_id, occurred_at, assumeNotNull(previous_segment) AS previous_segment, assumeNotNull(segment) AS segment
           FROM segment_changes FINAL
           WHERE tenant_id = {tenant_id:UInt64} AND previous_segment IS NOT NULL AND segment IS NOT NULL
             AND has({segment_order:Array(String)}, previous_segment) AND has({segment_order:Array(String)}, segment)
             AND occurred_at >= ${ts('from')} AND occurred_at < ${ts('to')}`,
          { tenant_id: q.tenant_id, segment_order: SEGMENTS, from: win.from, to: win.to },
        ),
      )
      let upgrades = 0
      let downgrades = 0
      for (let k = 0; k < index.length; k++) {
        const i = index[k]!
        if (i < 0 || keep[i] !== 1) continue
        if (direction[k] === 1) upgrades++
        if (direction[k] === -1) downgrades++
      }
      return [{ upgrades, downgrades }]
    }),
  ])
  for (const keep of held) releaseMarks(keep) // every sub-query is done

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
  prepare: async (c, nowMs) => {
    for (const period of DASHBOARD_PERIODS) {
      periodFacts(c, dashboardWindows(period, nowMs), nowMs)
      await new Promise<void>((resolve) => setImmediate(resolve)) // one period per turn of the event loop
    }
  },
  export: dashboardExport,
}
