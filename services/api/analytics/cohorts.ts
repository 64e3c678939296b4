import { z } from 'zod'
import { CommonQuery, dateParam, type CommonOptions } from './options.ts'
import type { AnalyticsContext, AnalyticsEndpoint, BodyExport } from './endpoint.ts'
import { analyticsBody, bodyTable, round2, select, signedPct, signedPctValue } from './endpoint.ts'
import { Count, DateOnly, Percentage, SignedPercent } from '../response-schemas.ts'
import { PROCESSING_RESULTS_TTL_MS } from './cache.ts'
import { customerScope } from './customers.ts'
import { lowerBound, selectCustomers, type CustomerColumns } from './customer-columns.ts'
import { tenantWide } from './summary.ts'

export const COHORT_PERIODS = ['daily', 'weekly', 'monthly'] as const
export type CohortPeriod = (typeof COHORT_PERIODS)[number]

/** The retention offsets of the spec: `month_k` = the k-th period after the cohort's own. */
export const RETENTION_OFFSETS = [0, 1, 2, 3, 6, 12] as const

/** At most this many cohort periods between start_date and end_date (spec "Limits": 1000 results). */
export const MAX_COHORT_PERIODS = 1000

const DAY = 86_400_000

export const CohortsQuery = CommonQuery.extend({
  period: z.enum(COHORT_PERIODS).default('monthly'),
  start_date: dateParam.optional(),
  end_date: dateParam.optional(),
})
  .strict()
  .superRefine((q, ctx) => {
    if (q.start_date && q.end_date && q.start_date > q.end_date) {
      ctx.addIssue({ code: 'custom', path: ['start_date'], message: 'start_date must not be after end_date', params: { code: 'invalid_range' } })
    }
  })

export type CohortsOptions = Omit<CommonOptions, 'period'> & { period: CohortPeriod; start_date?: string; end_date?: string }

// ------------------------------------------------------------------------------------------
// Calendar (UTC), pure.

const ymd = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const parseDay = (d: string) => Date.parse(`${d}T00:00:00Z`)

/** Start (ms, UTC midnight) of the period holding `ms`: the day, its ISO week's Monday, or the 1st of the month. */
export function periodStart(period: CohortPeriod, ms: number): number {
  const day = Math.floor(ms / DAY) * DAY
  if (period === 'daily') return day
  if (period === 'weekly') return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY
  const d = new Date(day)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}

/** The start of the period `k` periods after the one starting at `start`. */
export function addPeriods(period: CohortPeriod, start: number, k: number): number {
  if (period === 'daily') return start + k * DAY
  if (period === 'weekly') return start + 7 * k * DAY
  const d = new Date(start)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + k, 1)
}

/** Cohort label: `YYYY-MM-DD` (daily), ISO week `YYYY-Www` (weekly), `YYYY-MM` (monthly). */
export function cohortLabel(period: CohortPeriod, start: number): string {
  if (period === 'daily') return ymd(start)
  if (period === 'monthly') return ymd(start).slice(0, 7)
  // ISO 8601 week: the week (Monday start) belongs to the year of its Thursday.
  const thursday = start + 3 * DAY
  const year = new Date(thursday).getUTCFullYear()
  const week = Math.floor((thursday - Date.UTC(year, 0, 1)) / (7 * DAY)) + 1
  return `${year}-W${String(week).padStart(2, '0')}`
}

/** Default window: end_date = today (UTC) of the clock, start_date = the same day 12 months before (clamped to the month's end). */
export function cohortWindow(q: Pick<CohortsOptions, 'start_date' | 'end_date'>, nowMs: number): { start: string; end: string } {
  const end = q.end_date ?? ymd(nowMs)
  if (q.start_date) return { start: q.start_date, end }
  const e = new Date(parseDay(end))
  const y = e.getUTCFullYear() - 1
  const m = e.getUTCMonth()
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate()
  return { start: ymd(Date.UTC(y, m, Math.min(e.getUTCDate(), lastDay))), end }
}

// ------------------------------------------------------------------------------------------

export interface Cohort {
  cohort: string
  size: number
  retention: Record<`month_${(typeof RETENTION_OFFSETS)[number]}`, number | null>
  revenue: { total: number; per_customer: number; growth: string | null }
}

export interface CohortInsights {
  best_cohort: string | null
  worst_cohort: string | null
  avg_retention_3m: number | null
  trend: 'improving' | 'declining' | 'stable'
}

/** Percentage points by which the later half must beat (or trail) the earlier half to be a trend. */
export const TREND_THRESHOLD_PP = 1

/**
 * Insights over the cohorts whose month_3 is known: best / worst by month_3 (ties: the earliest
 * cohort), the unweighted mean of month_3, and the trend = mean month_3 of the later half of
 * those cohorts minus that of the earlier half (the middle one dropped when odd): above +1
 * point improving, below −1 point declining, otherwise (or fewer than 2 cohorts) stable.
 */
export function cohortInsights(cohorts: Cohort[]): CohortInsights {
  const known = cohorts.filter((c) => c.retention.month_3 !== null) as (Cohort & { retention: { month_3: number } })[]
  if (known.length === 0) return { best_cohort: null, worst_cohort: null, avg_retention_3m: null, trend: 'stable' }
  let best = known[0]!
  let worst = known[0]!
  for (const c of known) {
    if (c.retention.month_3 > best.retention.month_3) best = c
    if (c.retention.month_3 < worst.retention.month_3) worst = c
  }
  const mean = (xs: typeof known) => xs.reduce((s, c) => s + c.retention.month_3, 0) / xs.length
  let trend: CohortInsights['trend'] = 'stable'
  const half = Math.floor(known.length / 2)
  if (half >= 1) {
    const diff = mean(known.slice(known.length - half)) - mean(known.slice(0, half))
    trend = diff > TREND_THRESHOLD_PP ? 'improving' : diff < -TREND_THRESHOLD_PP ? 'declining' : 'stable'
  }
  return { best_cohort: best.cohort, worst_cohort: worst.cohort, avg_retention_3m: round2(mean(known)), trend }
}

const BUCKET: Record<CohortPeriod, { fn: string; unit: string }> = {
  daily: { fn: 'toDate', unit: 'day' },
  weekly: { fn: 'toMonday', unit: 'week' },
  monthly: { fn: 'toStartOfMonth', unit: 'month' },
}

/** A day number's period index (days since the epoch; weeks from Monday; months as year · 12 + month) and the period's first day. */
function periodIndex(period: CohortPeriod): { of: (day: number) => number; start: (p: number) => number } {
  if (period === 'daily') return { of: (d) => d, start: (p) => p * DAY }
  if (period === 'weekly') return { of: (d) => Math.floor((d + 3) / 7), start: (p) => (p * 7 - 3) * DAY } // 1970-01-01 was a Thursday
  return {
    of: (d) => {
      const t = new Date(d * DAY)
      return t.getUTCFullYear() * 12 + t.getUTCMonth()
    },
    start: (p) => Date.UTC(Math.floor(p / 12), p % 12, 1),
  }
}

/**
 * The columnar twin of the cohort matrix: per selected customer, its counting orders before the
 * window's end (its order history), its cohort (the period of the first) and, per period offset
 * k it ordered in, one customer and the offset's revenue.
 */
function cohortRowsOf(c: CustomerColumns, rows: Uint32Array, period: CohortPeriod, first: number, last: number, endExclusive: number) {
  const { orderStart: starts, orderTimes: times, orderCents: cents } = c
  const idx = periodIndex(period)
  // Period index of every day the histories or the window touch, in a table (no date arithmetic per order).
  const dayOf = (t: number) => Math.floor(t / DAY)
  const lowDay = Math.min(dayOf(first), c.orderTimes.length ? dayOf(minOrderTime(c)) : dayOf(first))
  const highDay = dayOf(endExclusive)
  const table = new Int32Array(highDay - lowDay + 1)
  for (let d = lowDay; d <= highDay; d++) table[d - lowDay] = idx.of(d)
  const pFirst = idx.of(dayOf(first))
  const pLast = idx.of(dayOf(last))
  const span = table[highDay - lowDay]! - pFirst + 1
  const cohorts = pLast - pFirst + 1
  const customers = new Float64Array(cohorts * span)
  const revenue = new Float64Array(cohorts * span)
  for (let j = 0; j < rows.length; j++) {
    const i = rows[j]!
    const s = starts[i]!
    const e = starts[i + 1]!
    if (s === e) continue
    const end = times[e - 1]! < endExclusive ? e : lowerBound(times, s, e, endExclusive)
    if (end === s) continue
    const p0 = table[dayOf(times[s]!) - lowDay]!
    if (p0 < pFirst || p0 > pLast) continue
    const row = (p0 - pFirst) * span
    let prevK = -1
    for (let o = s; o < end; o++) {
      const k = table[dayOf(times[o]!) - lowDay]! - p0
      if (k !== prevK) {
        customers[row + k] = customers[row + k]! + 1
        prevK = k
      }
      revenue[row + k] = revenue[row + k]! + cents[o]!
    }
  }
  const out: { cohort: string; k: number; customers: number; revenue: number }[] = []
  for (let ci = 0; ci < cohorts; ci++) {
    for (let k = 0; k < span; k++) {
      const n = customers[ci * span + k]!
      if (n) out.push({ cohort: ymd(idx.start(pFirst + ci)), k, customers: n, revenue: revenue[ci * span + k]! / 100 })
    }
  }
  return out
}

const earliest = new WeakMap<CustomerColumns, number>()
/** The earliest order time of the columns (their histories are ascending per customer), found once per columns. */
function minOrderTime(c: CustomerColumns): number {
  let m = earliest.get(c)
  if (m === undefined) {
    m = Number.POSITIVE_INFINITY
    for (let i = 0; i < c.size; i++) if (c.orderStart[i + 1]! > c.orderStart[i]!) m = Math.min(m, c.orderTimes[c.orderStart[i]!]!)
    earliest.set(c, m)
  }
  return m
}

export async function cohortsBody(ctx: AnalyticsContext, q: CohortsOptions) {
  const now = ctx.now()
  const w = cohortWindow(q, now)
  const first = periodStart(q.period, parseDay(w.start))
  const last = periodStart(q.period, parseDay(w.end))
  const endExclusive = parseDay(w.end) + DAY
  if (first > last) throw Object.assign(new Error('start_date must not be after end_date'), { status: 400 })
  const periods = q.period === 'daily' ? (last - first) / DAY + 1 : q.period === 'weekly' ? (last - first) / (7 * DAY) + 1 : 0
  if (periods > MAX_COHORT_PERIODS) throw Object.assign(new Error(`at most ${MAX_COHORT_PERIODS} cohort periods between start_date and end_date`), { status: 400 })
  const { fn, unit } = BUCKET[q.period]
  // The cohort's own start/end dates play the role of date_from/date_to; period is the cohort grain.
  const scope = customerScope({ ...q, period: undefined }, now, ['period', 'date_from', 'date_to'])
  // Without a customer filter, the matrix of the default window comes from the tenant summary (summary.ts).
  const name = `cohorts.${q.period}.${ymd(first)}.${ymd(last)}.${endExclusive}`
  const rows = await tenantWide(ctx, q.tenant_id, name, !scope.filtered, () => select<{ cohort: string; k: number; customers: number; revenue: number }>(
    ctx.store,
    // Per customer, from the order_times / order_cents of its feature row (ascending): its
    // counting orders before end_date's end, its cohort (the period of the first), and per
    // period offset k whether it ordered and how much.
    `SELECT toString(c0) AS cohort, k, count() AS customers, sum(arraySum((kk, c) -> if(kk = k, c, 0), ks, cs)) / 100 AS revenue
     FROM (
       SELECT ${fn}(fromUnixTimestamp64Milli(ts[1], 'UTC')) AS c0,
              arrayMap(t -> toInt64(dateDiff('${unit}', c0, ${fn}(fromUnixTimestamp64Milli(t, 'UTC')))), ts) AS ks,
              cs
       FROM (
         SELECT arrayFilter(t -> t < {end_ms:Int64}, f.order_times) AS ts,
                arrayFilter((c, t) -> t < {end_ms:Int64}, f.order_cents, f.order_times) AS cs
         FROM customer_features AS f FINAL
         WHERE ${scope.where} AND notEmpty(f.order_times)
       )
       WHERE notEmpty(ts) AND c0 >= toDate({first:String}) AND c0 <= toDate({last:String})
     )
     ARRAY JOIN arrayDistinct(ks) AS k
     GROUP BY c0, k
     ORDER BY c0, k`,
    { ...scope.params, end_ms: endExclusive, first: ymd(first), last: ymd(last) },
  ), (c) => {
    const selected = selectCustomers(c, { ...q, period: undefined }, now, [], ['period', 'date_from', 'date_to'])
    return selected && cohortRowsOf(c, selected, q.period, first, last, endExclusive)
  })
  const byCohort = new Map<string, Map<number, { customers: number; revenue: number }>>()
  for (const r of rows) {
    let m = byCohort.get(r.cohort)
    if (!m) byCohort.set(r.cohort, (m = new Map()))
    m.set(Number(r.k), { customers: Number(r.customers), revenue: Number(r.revenue) })
  }
  const cohorts: Cohort[] = []
  const endDay = parseDay(w.end)
  for (const [day, ks] of [...byCohort].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const start = parseDay(day)
    const size = ks.get(0)?.customers ?? 0
    if (size === 0) continue
    const retention = {} as Cohort['retention']
    for (const k of RETENTION_OFFSETS) {
      const elapsed = addPeriods(q.period, start, k) <= endDay
      retention[`month_${k}`] = elapsed ? round2((100 * (ks.get(k)?.customers ?? 0)) / size) : null
    }
    const total = round2([...ks.values()].reduce((s, v) => s + v.revenue, 0))
    const perCustomer = round2(total / size)
    const prev = cohorts.at(-1)
    cohorts.push({
      cohort: cohortLabel(q.period, start),
      size,
      retention,
      revenue: { total, per_customer: perCustomer, growth: prev ? signedPct(perCustomer, prev.revenue.per_customer) : null },
    })
  }
  return {
    success: true,
    data: {
      period: q.period,
      start_date: w.start,
      end_date: w.end,
      cohorts,
      insights: cohortInsights(cohorts),
    },
  }
}

export const CohortsResponse = analyticsBody(
  z.strictObject({
    period: z.enum(COHORT_PERIODS),
    start_date: DateOnly,
    end_date: DateOnly,
    cohorts: z.array(
      z.strictObject({
        cohort: z.string().meta({ description: '`YYYY-MM-DD` (daily), ISO week `YYYY-Www` (weekly), `YYYY-MM` (monthly)' }),
        size: Count,
        retention: z
          .strictObject(Object.fromEntries(RETENTION_OFFSETS.map((k) => [`month_${k}`, Percentage.nullable()])))
          .meta({ description: 'Percent of the cohort ordering k periods after its own; null when that period has not started by end_date' }),
        revenue: z.strictObject({ total: z.number(), per_customer: z.number(), growth: SignedPercent }),
      }),
    ),
    insights: z.strictObject({
      best_cohort: z.string().nullable(),
      worst_cohort: z.string().nullable(),
      avg_retention_3m: Percentage.nullable(),
      trend: z.enum(['improving', 'declining', 'stable']),
    }),
  }),
).meta({ id: 'CohortAnalysis' })

/** The unit of a grain, naming the retention columns of an export (`month_3`, `week_3`, `day_3`). */
const UNIT: Record<CohortPeriod, string> = { daily: 'day', weekly: 'week', monthly: 'month' }

/** A row of the cohort matrix export at one grain: the cohort, its size, retention per offset, revenue. */
const cohortRow = (period: CohortPeriod) =>
  z
    .strictObject({
      cohort: z.string(),
      size: Count,
      ...Object.fromEntries(RETENTION_OFFSETS.map((k) => [`${UNIT[period]}_${k}`, Percentage.nullable()])),
      revenue_total: z.number(),
      revenue_per_customer: z.number(),
      revenue_growth: z.number().nullable().meta({ description: 'Percent change of revenue_per_customer against the previous cohort (`+12.5%` is 12.5); null for the first' }),
    })
    .meta({ title: `${period} cohort`, description: `retention columns \`${UNIT[period]}_k\`: the body's \`month_k\` at the ${period} grain` })
const COHORT_ROWS = Object.fromEntries(COHORT_PERIODS.map((p) => [p, cohortRow(p)])) as Record<CohortPeriod, ReturnType<typeof cohortRow>>

/** The export: the cohort matrix of the body, one row per cohort, its retention columns named after the request's grain. */
export const cohortsExport: BodyExport<CommonOptions, Awaited<ReturnType<typeof cohortsBody>>> = {
  description:
    'the cohort matrix of the body: one row per cohort (oldest first) with `cohort`, `size`, one retention column per offset of the body (`month_0` … `month_12`, named `week_k` / `day_k` for the weekly / daily grain), `revenue_total`, `revenue_per_customer` and `revenue_growth` (a percent number)',
  tables: { cohorts: z.union(COHORT_PERIODS.map((p) => COHORT_ROWS[p])) },
  fromBody: ({ data }) => [
    bodyTable(
      'cohorts',
      COHORT_ROWS[data.period],
      data.cohorts.map((c) => ({
        cohort: c.cohort,
        size: c.size,
        ...Object.fromEntries(RETENTION_OFFSETS.map((k) => [`${UNIT[data.period]}_${k}`, c.retention[`month_${k}`]])),
        revenue_total: c.revenue.total,
        revenue_per_customer: c.revenue.per_customer,
        revenue_growth: signedPctValue(c.revenue.growth),
      })),
    ),
  ],
}

/**
 * GET /api/v2/cdp/analytics/cohorts — acquisition cohorts (first counting order) with retention
 * at periods 0, 1, 2, 3, 6, 12 and revenue. Definitions: docs/analytics-cohorts-dashboard.md.
 */
export const cohortsEndpoint: AnalyticsEndpoint = {
  path: '/api/v2/cdp/analytics/cohorts',
  summary:
    'Cohorts by first counting order (period daily|weekly|monthly, default monthly; start_date default 12 months before end_date; end_date default today, UTC): size, retention month_0..month_12 in percent (null when that period has not started by end_date), revenue and insights',
  // The router only needs tenant_id and format from the parsed query; `period` here is the cohort grain.
  query: CohortsQuery as unknown as z.ZodType<CommonOptions>,
  response: CohortsResponse,
  notes: `\`start_date\` after \`end_date\`, or more than ${MAX_COHORT_PERIODS.toLocaleString('en')} daily or weekly periods between them, is a 400.`,
  ignores: ['date_from', 'date_to'],
  overview: true,
  cacheTtlMs: PROCESSING_RESULTS_TTL_MS,
  body: (ctx, q) => cohortsBody(ctx, q as unknown as CohortsOptions),
  export: cohortsExport,
}
