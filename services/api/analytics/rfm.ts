import { z } from 'zod'
import { SEGMENTS, SEGMENT_DESCRIPTIONS, type Segment } from '../../../pipelines/features/segments.ts'
import { CommonQuery, boolParam, limitParam, offsetParam } from './options.ts'
import { rfmExport, rfmPopulation, rfmSelection, type RfmCustomerRow } from './rfm-export.ts'
import { customerScope } from './customers.ts'
import { tenantWide } from './summary.ts'
import { selectCustomers, type CustomerColumns } from './customer-columns.ts'
import { PROCESSING_RESULTS_TTL_MS } from './cache.ts'
import { analyticsBody, pct, round2, select, signedPct, type AnalyticsContext, type AnalyticsEndpoint, type RowsExport } from './endpoint.ts'
import { SEGMENT_ACTIONS } from './segment-actions.ts'
import { iso } from '../../../common/time.ts'
import { Count, NullableTimestamp, Percentage, SignedPercent } from '../response-schemas.ts'

/**
 * GET /api/v2/cdp/analytics/rfm: the tenant's RFM overview, per-segment distribution, 30-day
 * trends and segment membership. Definitions: docs/analytics-rfm-clv-churn.md.
 */
export const RfmQuery = CommonQuery.extend({
  segment: z.enum(SEGMENTS).optional(),
  limit: limitParam(100),
  offset: offsetParam,
  include_details: boolParam.default(false),
}).strict()
export type RfmOptions = z.infer<typeof RfmQuery>

const DAY_MS = 86_400_000
/** Trends compare against the latest snapshot at least this many days old. */
export const TREND_WINDOW_DAYS = 30
/** next_update = processing_date + this: the features tick refreshes every customer at least hourly (models refit every hour). */
export const RFM_REFRESH_MS = 60 * 60_000
/** Provinces listed per segment. */
const TOP_PROVINCES = 3

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v))
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v))

/**
 * One group of the scored customers in scope: segment × province × age segment × generation (at
 * most 11 × 25 × 6 × 6 groups), with the sums and counts every figure of the body is made of. The
 * overview, the per-segment figures, the top provinces and the age mixes all add these up, so
 * one scan of the customers answers them all.
 */
interface GroupRow {
  segment: Segment
  province: string | null
  age_segment: string | null
  generation: string | null
  customers: string
  n_recency: string
  sum_recency: number
  sum_frequency: number
  /** Integer cents, exact: the sums and averages do not depend on the order of a float summation. */
  monetary_cents: string
  with_age: string
  sum_age: number
  with_gender: string
  male: string
  female: string
}

/** Sums of GroupRow, and the averages and counts read from them. */
class Tally {
  customers = 0
  nRecency = 0
  recency = 0
  frequency = 0
  monetaryCents = 0
  withAge = 0
  age = 0
  withGender = 0
  male = 0
  female = 0
  withLocation = 0
  add(r: GroupRow): void {
    this.customers += num(r.customers)
    this.nRecency += num(r.n_recency)
    this.recency += num(r.sum_recency)
    this.frequency += num(r.sum_frequency)
    this.monetaryCents += num(r.monetary_cents)
    this.withAge += num(r.with_age)
    this.age += num(r.sum_age)
    this.withGender += num(r.with_gender)
    this.male += num(r.male)
    this.female += num(r.female)
    if (r.province !== null) this.withLocation += num(r.customers)
  }
  get avgRecency(): number {
    return this.nRecency ? this.recency / this.nRecency : 0
  }
  get avgFrequency(): number {
    return this.customers ? this.frequency / this.customers : 0
  }
  get monetary(): number {
    return this.monetaryCents / 100
  }
  get avgMonetary(): number {
    return this.customers ? this.monetaryCents / this.customers / 100 : 0
  }
  get avgAge(): number | null {
    return this.withAge ? this.age / this.withAge : null
  }
}

/** The columnar twin of the groups query: the same rows from the summary's customer columns. */
function groupsOf(c: CustomerColumns, q: RfmOptions, nowMs: number): GroupRow[] | null {
  const rows = selectCustomers(c, q, nowMs, [{ nonzero: c.segment }])
  if (!rows) return null
  const [segs, provinces, ageSegments, generations, recencies, frequencies, monetary, ages, genders] = [c.segment, c.province.codes, c.ageSegment.codes, c.generation.codes, c.recencyDays, c.frequency, c.monetaryCents, c.age, c.gender.codes]
  // Sums per group in dense arrays indexed by the group's key (segment × province × age segment × generation codes).
  const [P, A, G] = [c.province.values.length, c.ageSegment.values.length, c.generation.values.length]
  const keys = (SEGMENTS.length + 1) * P * A * G
  if (keys > 4_000_000) return null // an unusual spread of values: let ClickHouse group them
  const [male, female] = [c.gender.code('M'), c.gender.code('F')]
  const customers = new Float64Array(keys)
  const nRecency = new Float64Array(keys)
  const recency = new Float64Array(keys)
  const frequency = new Float64Array(keys)
  const cents = new Float64Array(keys)
  const withAge = new Float64Array(keys)
  const ageSum = new Float64Array(keys)
  const withGender = new Float64Array(keys)
  const males = new Float64Array(keys)
  const females = new Float64Array(keys)
  const first = new Int32Array(keys).fill(-1)
  for (let j = 0; j < rows.length; j++) {
    const i = rows[j]!
    const key = (((segs[i]! * P + provinces[i]!) * A + ageSegments[i]!) * G + generations[i]!) | 0 // an int index: a double one takes V8's slow path
    if (first[key] === -1) first[key] = i
    customers[key] = customers[key]! + 1
    const r = recencies[i]!
    if (r === r) {
      nRecency[key] = nRecency[key]! + 1
      recency[key] = recency[key]! + r
    }
    frequency[key] = frequency[key]! + frequencies[i]!
    cents[key] = cents[key]! + monetary[i]!
    const age = ages[i]!
    if (age === age) {
      withAge[key] = withAge[key]! + 1
      ageSum[key] = ageSum[key]! + age
    }
    const gender = genders[i]!
    if (gender !== 0) {
      withGender[key] = withGender[key]! + 1
      if (gender === male) males[key] = males[key]! + 1
      if (gender === female) females[key] = females[key]! + 1
    }
  }
  const out: GroupRow[] = []
  for (let key = 0; key < keys; key++) {
    const i = first[key]!
    if (i === -1) continue
    out.push({
      segment: SEGMENTS[segs[i]! - 1]!,
      province: c.province.get(i),
      age_segment: c.ageSegment.get(i),
      generation: c.generation.get(i),
      customers: String(customers[key]),
      n_recency: String(nRecency[key]),
      sum_recency: recency[key]!,
      sum_frequency: frequency[key]!,
      monetary_cents: String(cents[key]),
      with_age: String(withAge[key]),
      sum_age: ageSum[key]!,
      with_gender: String(withGender[key]),
      male: String(males[key]),
      female: String(females[key]),
    })
  }
  return out
}

/** The scored customers (a segment) matching the shared filters, each with its demographics (pipelines/demographics; null until enriched). */
function base(q: RfmOptions, nowMs: number) {
  const f = rfmPopulation(q, nowMs)
  const from = `customer_features AS f FINAL
    LEFT JOIN (SELECT customer_id, estimated_age AS age, gender, corrected_province AS province, age_segment, generation
               FROM customer_demographics FINAL WHERE tenant_id = {tenant_id:UInt64}) AS c
      ON c.customer_id = f.customer_id`
  return { from, where: f.where, params: f.params }
}

async function body(ctx: AnalyticsContext, q: RfmOptions) {
  const nowMs = ctx.now()
  const b = base(q, nowMs)
  // Without a customer filter, the tenant-wide parts come from the tenant summary (summary.ts).
  const whole = !customerScope(q, nowMs).filtered
  const wide = <T>(name: string, live: () => Promise<T>, columnar?: (c: CustomerColumns) => T | null) => tenantWide(ctx, q.tenant_id, `rfm.${name}`, whole, live, columnar)
  const selected = rfmSelection(q, nowMs)

  // Per-segment figures are computed for every segment; `segment` picks what is shown.
  const [groupRows, processedRows, idRows, trends] = await Promise.all([
    wide('groups', () =>
      select<GroupRow>(
        ctx.store,
        `SELECT assumeNotNull(f.segment) AS segment, c.province AS province, c.age_segment AS age_segment, c.generation AS generation,
                count() AS customers, count(f.recency_days) AS n_recency, sum(f.recency_days) AS sum_recency, sum(f.frequency) AS sum_frequency,
                toString(toInt64(sum(f.monetary) * 100)) AS monetary_cents, count(c.age) AS with_age, sum(c.age) AS sum_age, count(c.gender) AS with_gender,
                countIf(c.gender = 'M') AS male, countIf(c.gender = 'F') AS female
         FROM ${b.from} WHERE ${b.where}
         GROUP BY segment, province, age_segment, generation`,
        b.params,
      ),
      (c) => groupsOf(c, q, nowMs),
    ),
    // Tenant-wide: the summary's whenever there is one, filtered or not.
    tenantWide(ctx, q.tenant_id, 'rfm.processed', true, () =>
      select<{ processed_ms: string | null }>(
        ctx.store,
        `SELECT toUnixTimestamp64Milli(maxOrNull(processed_at)) AS processed_ms FROM customer_features FINAL WHERE tenant_id = {tenant_id:UInt64}`,
        { tenant_id: q.tenant_id },
      ),
    ),
    q.include_details
      ? select<{ segment: Segment; ids: string[] }>(
          ctx.store,
          `SELECT segment, groupArray(customer_id) AS ids FROM (
             SELECT assumeNotNull(f.segment) AS segment, f.customer_id AS customer_id,
                    row_number() OVER (PARTITION BY f.segment ORDER BY f.customer_id) AS rn
             FROM customer_features AS f FINAL WHERE ${selected.where}
             ORDER BY segment, customer_id
           ) WHERE rn > {offset:UInt64} AND rn <= {offset:UInt64} + {limit:UInt64}
           GROUP BY segment`,
          { ...selected.params, offset: q.offset, limit: q.limit },
        )
      : Promise.resolve([]),
    tenantWide(ctx, q.tenant_id, 'rfm.trends', true, () => rfmTrends(ctx, q.tenant_id, nowMs)),
  ])

  const overall = new Tally()
  const bySeg = new Map<string, Tally>()
  const provinceCounts = new Map<string, Map<string, number>>()
  const ages = new Map<string, { age_segments: Record<string, number>; generations: Record<string, number> }>()
  for (const r of groupRows) {
    overall.add(r)
    let t = bySeg.get(r.segment)
    if (!t) bySeg.set(r.segment, (t = new Tally()))
    t.add(r)
    const n = num(r.customers)
    if (r.province !== null) {
      let m = provinceCounts.get(r.segment)
      if (!m) provinceCounts.set(r.segment, (m = new Map()))
      m.set(r.province, (m.get(r.province) ?? 0) + n)
    }
    if (r.age_segment) {
      let m = ages.get(r.segment)
      if (!m) ages.set(r.segment, (m = { age_segments: {}, generations: {} }))
      m.age_segments[r.age_segment] = (m.age_segments[r.age_segment] ?? 0) + n
      if (r.generation) m.generations[r.generation] = (m.generations[r.generation] ?? 0) + n
    }
  }
  // The most frequent provinces of each segment, ties by name.
  const provinces = new Map<string, string[]>()
  for (const [segment, m] of provinceCounts) {
    const top = [...m].sort(([pa, a], [pb, b]) => b - a || (pa < pb ? -1 : pa > pb ? 1 : 0)).slice(0, TOP_PROVINCES)
    provinces.set(segment, top.map(([p]) => p))
  }
  const total = overall.customers
  const withLocation = overall.withLocation
  const ids = new Map(idRows.map((r) => [r.segment, r.ids.map(Number)]))
  const processedMs = numOrNull(processedRows[0]?.processed_ms)
  const shown = q.segment ? [q.segment] : [...SEGMENTS]

  const distribution = shown.map((segment) => {
    const r = bySeg.get(segment) ?? new Tally()
    const n = r.customers
    const avgAge = r.avgAge
    return {
      segment,
      customer_count: n,
      percentage: pct(n, total),
      avg_recency: round2(r.avgRecency),
      avg_frequency: round2(r.avgFrequency),
      avg_monetary: round2(r.avgMonetary),
      characteristics: { description: SEGMENT_DESCRIPTIONS[segment], recommended_actions: [...SEGMENT_ACTIONS[segment]] },
      demographics: {
        avg_age: avgAge === null ? null : round2(avgAge),
        male_count: r.male,
        female_count: r.female,
        top_provinces: provinces.get(segment) ?? [],
        age_segments: ages.get(segment)?.age_segments ?? {},
        generations: ages.get(segment)?.generations ?? {},
      },
    }
  })

  const segments_detail: Record<string, { count: number; percentage: number; customer_ids?: number[] }> = {}
  for (const d of distribution) {
    segments_detail[d.segment] = { count: d.customer_count, percentage: d.percentage, ...(q.include_details ? { customer_ids: ids.get(d.segment) ?? [] } : {}) }
  }

  return {
    success: true,
    message: `RFM analysis for tenant ${q.tenant_id}`,
    data: {
      overview: {
        total_customers: total,
        avg_recency: round2(overall.avgRecency),
        avg_frequency: round2(overall.avgFrequency),
        avg_monetary: round2(overall.avgMonetary),
        total_revenue: round2(overall.monetary),
        last_calculation: iso(processedMs),
        demographics: {
          customers_with_age: overall.withAge,
          avg_age: overall.avgAge === null ? null : round2(overall.avgAge),
          male_customers: overall.male,
          female_customers: overall.female,
          customers_with_location: withLocation,
          completion_rates: { age: pct(overall.withAge, total), gender: pct(overall.withGender, total), location: pct(withLocation, total) },
        },
      },
      distribution,
      trends,
      segments_detail,
    },
    metadata: {
      tenant_id: q.tenant_id,
      processing_date: iso(processedMs),
      next_update: iso(processedMs === null ? null : processedMs + RFM_REFRESH_MS),
    },
  }
}

/**
 * Tenant-wide (the shared filters do not apply: snapshots are per segment only). Current = the
 * live features; previous = the latest `segment_daily` snapshot dated at least 30 days before
 * today (UTC). Null when there is no such snapshot or its base is 0.
 */
export async function rfmTrends(ctx: AnalyticsContext, tenantId: number, nowMs: number) {
  const cutoffDay = new Date(Math.floor(nowMs / DAY_MS) * DAY_MS - TREND_WINDOW_DAYS * DAY_MS).toISOString().slice(0, 10)
  const [now, prev] = await Promise.all([
    select<{ champions: string; at_risk: string; customers: string; monetary_sum: number }>(
      ctx.store,
      `SELECT countIf(segment = 'Champions') AS champions, countIf(segment = 'At Risk') AS at_risk, count() AS customers, sum(toFloat64(monetary)) AS monetary_sum
       FROM customer_features FINAL WHERE tenant_id = {tenant_id:UInt64} AND segment IS NOT NULL`,
      { tenant_id: tenantId },
    ),
    select<{ day: string; champions_n: string; at_risk_n: string; customers_n: string; monetary_sum: number }>(
      ctx.store,
      `SELECT day, sumIf(customers, segment = 'Champions') AS champions_n, sumIf(customers, segment = 'At Risk') AS at_risk_n, sum(customers) AS customers_n, sum(toFloat64(monetary)) AS monetary_sum
       FROM segment_daily FINAL
       WHERE tenant_id = {tenant_id:UInt64} AND day = (SELECT max(day) FROM segment_daily WHERE tenant_id = {tenant_id:UInt64} AND day <= toDate({cutoff:String}))
       GROUP BY day`,
      { tenant_id: tenantId, cutoff: cutoffDay },
    ),
  ])
  const c = now[0]!
  const p = prev[0]
  if (!p) return { champions_growth: null, at_risk_increase: null, avg_monetary_change: null }
  const avgNow = num(c.customers) ? num(c.monetary_sum) / num(c.customers) : 0
  const avgPrev = num(p.customers_n) ? num(p.monetary_sum) / num(p.customers_n) : 0
  return {
    champions_growth: signedPct(num(c.champions), num(p.champions_n)),
    at_risk_increase: signedPct(num(c.at_risk), num(p.at_risk_n)),
    avg_monetary_change: signedPct(avgNow, avgPrev),
  }
}

const Rates = z.strictObject({ age: Percentage, gender: Percentage, location: Percentage }).meta({ description: 'Share of customers with each, in percent' })

export const RfmResponse = analyticsBody(
  z.strictObject({
    overview: z.strictObject({
      total_customers: Count,
      avg_recency: z.number().meta({ description: 'Days' }),
      avg_frequency: z.number(),
      avg_monetary: z.number(),
      total_revenue: z.number(),
      last_calculation: NullableTimestamp,
      demographics: z.strictObject({
        customers_with_age: Count,
        avg_age: z.number().nullable(),
        male_customers: Count,
        female_customers: Count,
        customers_with_location: Count,
        completion_rates: Rates,
      }),
    }),
    distribution: z.array(
      z.strictObject({
        segment: z.enum(SEGMENTS),
        customer_count: Count,
        percentage: Percentage,
        avg_recency: z.number(),
        avg_frequency: z.number(),
        avg_monetary: z.number(),
        characteristics: z.strictObject({ description: z.string(), recommended_actions: z.array(z.string()) }),
        demographics: z.strictObject({
          avg_age: z.number().nullable(),
          male_count: Count,
          female_count: Count,
          top_provinces: z.array(z.string()).max(TOP_PROVINCES),
          age_segments: z.record(z.string(), Count),
          generations: z.record(z.string(), Count),
        }),
      }),
    ),
    trends: z.strictObject({ champions_growth: SignedPercent, at_risk_increase: SignedPercent, avg_monetary_change: SignedPercent }),
    segments_detail: z
      .partialRecord(z.enum(SEGMENTS), z.strictObject({ count: Count, percentage: Percentage, customer_ids: z.array(z.int().min(1)).optional().meta({ description: 'With include_details=true: a page (limit, offset) of its customers' }) }))
      .meta({ description: 'The segments shown (all, or `segment`)' }),
  }),
  { message: true, metadata: { tenant_id: z.int().min(1), processing_date: NullableTimestamp, next_update: NullableTimestamp } },
).meta({ id: 'RfmAnalysis' })

export const rfmEndpoint: AnalyticsEndpoint<RfmOptions, RowsExport<RfmOptions, RfmCustomerRow>> = {
  path: '/api/v2/cdp/analytics/rfm',
  summary: 'RFM overview, segment distribution, 30-day trends and segment membership',
  query: RfmQuery,
  response: RfmResponse,
  overview: true,
  cacheTtlMs: PROCESSING_RESULTS_TTL_MS,
  body,
  export: rfmExport,
}
