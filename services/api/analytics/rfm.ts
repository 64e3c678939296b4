import { z } from 'zod'
import { SEGMENTS, SEGMENT_DESCRIPTIONS, type Segment } from '../../../pipelines/features/segments.ts'
import { CommonQuery, boolParam, limitParam, offsetParam } from './options.ts'
import { rfmExport, rfmPopulation, rfmSelection, type RfmCustomerRow } from './rfm-export.ts'
import { customerScope } from './customers.ts'
import { tenantWide } from './summary.ts'
import { indexesMarked, once, Population, selectMask, smallerSide, type CustomerColumns } from './customer-columns.ts'
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
  merge(t: Tally): void {
    this.customers += t.customers
    this.nRecency += t.nRecency
    this.recency += t.recency
    this.frequency += t.frequency
    this.monetaryCents += t.monetaryCents
    this.withAge += t.withAge
    this.age += t.age
    this.withGender += t.withGender
    this.male += t.male
    this.female += t.female
    this.withLocation += t.withLocation
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

/** What the body reads of the groups: each segment's sums, and its customers per province and per age segment and generation. */
interface SegmentTallies {
  bySeg: Map<Segment, Tally>
  provinces: Map<Segment, Map<string, number>>
  ages: Map<Segment, { age_segments: Record<string, number>; generations: Record<string, number> }>
}

function emptyTallies(): SegmentTallies {
  return { bySeg: new Map(), provinces: new Map(), ages: new Map() }
}

/** Adds `n` customers of a segment with a province, age segment and generation (null when unknown) to its counts. */
function countPlace(t: SegmentTallies, segment: Segment, province: string | null, ageSegment: string | null, generation: string | null, n: number): void {
  if (province !== null) {
    let m = t.provinces.get(segment)
    if (!m) t.provinces.set(segment, (m = new Map()))
    m.set(province, (m.get(province) ?? 0) + n)
  }
  if (ageSegment) {
    let m = t.ages.get(segment)
    if (!m) t.ages.set(segment, (m = { age_segments: {}, generations: {} }))
    m.age_segments[ageSegment] = (m.age_segments[ageSegment] ?? 0) + n
    if (generation) m.generations[generation] = (m.generations[generation] ?? 0) + n
  }
}

/** The tallies of the groups query's rows. */
function talliesOf(rows: GroupRow[]): SegmentTallies {
  const t = emptyTallies()
  for (const r of rows) {
    let seg = t.bySeg.get(r.segment)
    if (!seg) t.bySeg.set(r.segment, (seg = new Tally()))
    seg.add(r)
    countPlace(t, r.segment, r.province, r.age_segment, r.generation, num(r.customers))
  }
  return t
}

/**
 * Per customer, computed once per columns object: its group of the groups query (segment ×
 * province × age segment × generation) as a dense id, its segment with its gender class (null,
 * M, F, another) as `4 · segment + class`, and the numbers the sums read in the narrowest exact
 * type (a request is bound by the memory it reads: 22 bytes a customer instead of 40). Plus the
 * sums over every customer, so a request that selects most customers subtracts the few it leaves
 * out instead of adding up the many it keeps (all the sums are of integers: exact either way).
 */
const rfmGroups = once((c: CustomerColumns): Narrow & { scored: Population; all: GroupSums } => {
  const [P, A, G] = [c.province.values.length, c.ageSegment.values.length, c.generation.values.length]
  const [male, female] = [c.gender.code('M'), c.gender.code('F')]
  const ids = new Map<number, number>()
  const first: number[] = []
  const n = c.size
  const gid = new Uint32Array(n)
  const segClass = new Uint8Array(n)
  const recency = new Uint32Array(n)
  const frequency = new Uint32Array(n)
  const age = new Uint16Array(n)
  const has = new Uint8Array(n)
  for (let i = 0; i < n; i++) {
    const seg = c.segment[i]!
    const g = c.gender.codes[i]!
    segClass[i] = seg * 4 + (g === 0 ? 0 : g === male ? 1 : g === female ? 2 : 3)
    const key = ((seg * P + c.province.codes[i]!) * A + c.ageSegment.codes[i]!) * G + c.generation.codes[i]!
    let id = ids.get(key)
    if (id === undefined) {
      ids.set(key, (id = first.length))
      first.push(i)
    }
    gid[i] = id
    const r = c.recencyDays[i]!
    const a = c.age[i]!
    recency[i] = r === r ? r : 0
    age[i] = a === a ? a : 0
    has[i] = (r === r ? 1 : 0) | (a === a ? 2 : 0)
    frequency[i] = c.frequency[i]!
  }
  const g: Narrow = { gid: first.length <= 0x10000 ? Uint16Array.from(gid) : gid, first, segClass, recency, frequency, age, has, cents: c.monetaryCents }
  const scored = new Population(n, (i) => c.segment[i] !== 0)
  return { ...g, scored, all: sumGroups(g, indexesMarked(scored.marks, 1), 1, newSums(first.length)) }
})

/** The sums kept per `4 · segment + class`: customers, with recency, recency, frequency, cents, with age, age. */
const STRIDE = 8

interface GroupSums {
  acc: Float64Array
  /** Customers per group. */
  counts: Float64Array
}

const newSums = (groups: number): GroupSums => ({ acc: new Float64Array((SEGMENTS.length + 1) * 4 * STRIDE), counts: new Float64Array(groups) })

interface Narrow {
  gid: Uint16Array | Uint32Array
  first: number[]
  segClass: Uint8Array
  /** Days; 0 where null. */
  recency: Uint32Array
  frequency: Uint32Array
  /** Years; 0 where null. */
  age: Uint16Array
  /** Bit 0: has a recency; bit 1: has an age. */
  has: Uint8Array
  cents: Float64Array
}

/** Adds (sign 1) or subtracts (sign -1) the customers `rows` into `into`, with no branch per customer. */
function sumGroups(g: Narrow, rows: Uint32Array, sign: 1 | -1, into: GroupSums): GroupSums {
  const { gid, segClass, recency, frequency, age, has, cents } = g
  const { acc, counts } = into
  for (let j = 0; j < rows.length; j++) {
    const i = rows[j]!
    const k = gid[i]!
    counts[k] = counts[k]! + sign
    const o = segClass[i]! * STRIDE
    const h = has[i]!
    acc[o] = acc[o]! + sign
    acc[o + 1] = acc[o + 1]! + sign * (h & 1)
    acc[o + 2] = acc[o + 2]! + sign * recency[i]!
    acc[o + 3] = acc[o + 3]! + sign * frequency[i]!
    acc[o + 4] = acc[o + 4]! + sign * cents[i]!
    acc[o + 5] = acc[o + 5]! + sign * (h >> 1)
    acc[o + 6] = acc[o + 6]! + sign * age[i]!
  }
  return into
}

/** The columnar twin of the groups query: the same tallies from the summary's customer columns. */
function talliesFromColumns(c: CustomerColumns, q: RfmOptions, nowMs: number): SegmentTallies | null {
  const groups = rfmGroups(c)
  const keep = selectMask(c, q, nowMs)
  if (!keep) return null
  const { rows, sign } = smallerSide(keep, groups.scored)
  const { acc, counts } = sumGroups(groups, rows, sign, sign < 0 ? { acc: groups.all.acc.slice(), counts: groups.all.counts.slice() } : newSums(groups.first.length))
  const { first } = groups
  const t = emptyTallies()
  for (let seg = 1; seg <= SEGMENTS.length; seg++) {
    const tally = new Tally()
    for (let cls = 0; cls < 4; cls++) {
      const o = (seg * 4 + cls) * STRIDE
      const n = acc[o]!
      tally.customers += n
      tally.nRecency += acc[o + 1]!
      tally.recency += acc[o + 2]!
      tally.frequency += acc[o + 3]!
      tally.monetaryCents += acc[o + 4]!
      tally.withAge += acc[o + 5]!
      tally.age += acc[o + 6]!
      if (cls !== 0) tally.withGender += n
      if (cls === 1) tally.male += n
      if (cls === 2) tally.female += n
    }
    if (tally.customers) t.bySeg.set(SEGMENTS[seg - 1]!, tally)
  }
  // The groups in the order of their keys, as the query's rows.
  const order = first.map((_, g) => g).filter((g) => counts[g]! > 0 && c.segment[first[g]!] !== 0)
  const [P, A, G] = [c.province.values.length, c.ageSegment.values.length, c.generation.values.length]
  const keyOf = (i: number) => ((c.segment[i]! * P + c.province.codes[i]!) * A + c.ageSegment.codes[i]!) * G + c.generation.codes[i]!
  order.sort((a, b) => keyOf(first[a]!) - keyOf(first[b]!))
  for (const g of order) {
    const i = first[g]!
    const segment = SEGMENTS[c.segment[i]! - 1]!
    const n = counts[g]!
    if (c.province.codes[i] !== 0) t.bySeg.get(segment)!.withLocation += n
    countPlace(t, segment, c.province.get(i), c.ageSegment.get(i), c.generation.get(i), n)
  }
  return t
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
  const [tallies, processedRows, idRows, trends] = await Promise.all([
    wide('groups', async () =>
      talliesOf(await select<GroupRow>(
        ctx.store,
        `SELECT assumeNotNull(f.segment) AS segment, c.province AS province, c.age_segment AS age_segment, c.generation AS generation,
                count() AS customers, count(f.recency_days) AS n_recency, sum(f.recency_days) AS sum_recency, sum(f.frequency) AS sum_frequency,
                toString(toInt64(sum(f.monetary) * 100)) AS monetary_cents, count(c.age) AS with_age, sum(c.age) AS sum_age, count(c.gender) AS with_gender,
                countIf(c.gender = 'M') AS male, countIf(c.gender = 'F') AS female
         FROM ${b.from} WHERE ${b.where}
         GROUP BY segment, province, age_segment, generation`,
        b.params,
      )),
      (c) => talliesFromColumns(c, q, nowMs),
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

  const { bySeg, provinces: provinceCounts, ages } = tallies
  const overall = new Tally()
  for (const t of bySeg.values()) overall.merge(t)
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
  prepare: (c) => void rfmGroups(c),
  revive: {
    'rfm.groups': (copy) => {
      const t = copy as SegmentTallies
      return { ...t, bySeg: new Map([...t.bySeg].map(([segment, plain]) => [segment, Object.assign(new Tally(), plain)])) }
    },
  },
  export: rfmExport,
}
