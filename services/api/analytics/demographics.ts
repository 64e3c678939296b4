import { z } from 'zod'
import { AGE_SEGMENTS, GENERATION_ALIASES, GENERATION_BY_SEGMENT, GENERATIONS, resolveGenerationFilter } from '../../../pipelines/demographics/age.ts'
import { GENDERS, GENDER_LABELS, NO_GENDER_LABEL } from '../../../pipelines/demographics/gender.ts'
import { REGION_ALIASES, REGIONS, resolveRegionFilter } from '../../../pipelines/demographics/location.ts'
import { CommonQuery, type CommonOptions } from './options.ts'
import { customerScope } from './customers.ts'
import { DEMOGRAPHICS_TTL_MS } from './cache.ts'
import { analyticsBody, bodyTable, NO_CONTENT, pct, round2, select, type AnalyticsContext, type AnalyticsEndpoint, type BodyExport } from './endpoint.ts'
import { Count, Percentage } from '../response-schemas.ts'
import { tenantWide } from './summary.ts'

/**
 * GET /api/v2/cdp/analytics/demographics (alias /api/cdp/v2/analytics/demographics): age,
 * gender, geography, their crossings and the ads-targetable groups of the tenant's customers,
 * from `customer_demographics` (pipelines/demographics) joined to `customer_features`.
 * Definitions: docs/demographics.md §"The demographics endpoint".
 */

/** The filters of the spec (planned there, active here); a value outside the allowed set is a 422. */
export const DEMOGRAPHIC_FILTERS = ['age_segment', 'gender', 'region', 'generation'] as const

/**
 * A filter: the values it resolves (`resolve`), shown in the document as the `spelled` ones (the
 * canonical values and their aliases; `note` says what else is tolerated, such as case).
 */
const oneOf = (field: string, allowed: readonly string[], resolve: (v: string) => readonly string[] | null, spelled: readonly string[] = allowed, note?: string) =>
  z
    .string()
    .transform((v, ctx) => {
      const r = resolve(v)
      if (r === null) {
        ctx.addIssue({ code: 'custom', message: `${field} must be one of ${allowed.join(', ')}`, params: { code: 'invalid_filter_value' } })
        return z.NEVER
      }
      return [...r]
    })
    .meta({ enum: [...new Set(spelled)], description: `Another value is a 422.${note ? ` ${note}` : ''}` })

export const DemographicsQuery = CommonQuery.extend({
  age_segment: oneOf('age_segment', AGE_SEGMENTS, (v) => ((AGE_SEGMENTS as readonly string[]).includes(v) ? [v] : null)).optional(),
  gender: oneOf('gender', GENDERS, (v) => ((GENDERS as readonly string[]).includes(v.toUpperCase()) ? [v.toUpperCase()] : null), GENDERS, 'Case is ignored.').optional(),
  region: oneOf(
    'region',
    REGIONS,
    (v) => {
      const r = resolveRegionFilter(v)
      return r === null ? null : [r]
    },
    [...REGIONS, ...Object.keys(REGION_ALIASES)],
    'A short name selects its region; case and accents are ignored.',
  ).optional(),
  generation: oneOf('generation', GENERATIONS, resolveGenerationFilter, [...Object.keys(GENERATION_ALIASES), ...GENERATIONS], 'A short name selects its generations; case is ignored.').optional(),
}).strict()
export type DemographicsOptions = CommonOptions & Partial<Record<(typeof DEMOGRAPHIC_FILTERS)[number], string[]>>

/** "millennials_core" of the gender analysis: customers whose age segment is 25-34 or 35-44 (generation labels "Millennials/Gen Z" and "Millennials"). */
export const MILLENNIALS_CORE_SEGMENTS = ['25-34', '35-44'] as const

interface GroupRow {
  g: number
  age_segment: string | null
  gender: string | null
  province: string | null
  region: string | null
  social: string | null
  search: string | null
  customers: number
  with_age: number
  with_gender: number
  with_location: number
  age_sum: number
  spent_sum: number
  orders_sum: number
  high_value: number
  champions: number
  millennials_core: number
  male: number
  female: number
}

/** Grouping sets of the one scan, and the bit pattern `grouping()` gives each (1 = not grouped by that key). */
const KEYS = ['age_segment', 'gender', 'province', 'region', 'social', 'search'] as const
const SETS = {
  total: [],
  age: ['age_segment'],
  gender: ['gender'],
  geo: ['province', 'region'],
  cross: ['age_segment', 'gender', 'region'],
  marketing: ['social', 'search', 'gender'],
} as const satisfies Record<string, readonly (typeof KEYS)[number][]>
const bits = (set: readonly string[]) => KEYS.reduce((m, k, i) => m | ((set.includes(k) ? 0 : 1) << (KEYS.length - 1 - i)), 0)

/** ISO 8601 without zone (the spec's `timestamp`): UTC wall time, milliseconds. */
export const isoWithoutZone = (ms: number) => new Date(ms).toISOString().slice(0, 23)

/** Whether a customer or demographic filter narrows the request. */
function narrowedBy(q: DemographicsOptions, nowMs: number): boolean {
  return customerScope(q, nowMs).filtered || DEMOGRAPHIC_FILTERS.some((f) => q[f] !== undefined)
}

async function groups(ctx: AnalyticsContext, q: DemographicsOptions): Promise<GroupRow[]> {
  const s = customerScope(q, ctx.now())
  const c: string[] = []
  const params: Record<string, unknown> = { ...s.params }
  if (q.age_segment) (c.push('d.age_segment IN {f_age:Array(String)}'), (params.f_age = q.age_segment))
  if (q.gender) (c.push('d.gender IN {f_gender:Array(String)}'), (params.f_gender = q.gender))
  if (q.region) (c.push('d.region IN {f_region:Array(String)}'), (params.f_region = q.region))
  if (q.generation) (c.push('d.generation IN {f_generation:Array(String)}'), (params.f_generation = q.generation))
  const narrowed = narrowedBy(q, ctx.now())
  const where = [s.where, ...c].join(' AND ')
  return tenantWide(ctx, q.tenant_id, 'demographics.groups', !narrowed, () =>
    select<GroupRow>(
      ctx.store,
      `SELECT grouping(${KEYS.join(', ')}) AS g, ${KEYS.join(', ')},
              count() AS customers, count(age) AS with_age, count(gender) AS with_gender, count(province) AS with_location,
              sum(age) AS age_sum, sum(spent) AS spent_sum, sum(orders) AS orders_sum,
              countIf(clv_tier = 'high') AS high_value, countIf(segment = 'Champions') AS champions,
              countIf(age_segment IN {core:Array(String)}) AS millennials_core,
              countIf(gender = 'M') AS male, countIf(gender = 'F') AS female
       FROM (
         SELECT d.estimated_age AS age, d.age_segment AS age_segment, d.gender AS gender, d.corrected_province AS province, d.region AS region,
                d.social_ads_age_range AS social, d.search_ads_age_range AS search,
                toFloat64(f.monetary) AS spent, length(f.order_times) AS orders, f.clv_tier AS clv_tier, f.segment AS segment
         FROM customer_features AS f FINAL
         LEFT JOIN (SELECT customer_id, estimated_age, age_segment, gender, corrected_province, region, social_ads_age_range, search_ads_age_range, generation
                    FROM customer_demographics FINAL WHERE tenant_id = {tenant_id:UInt64}) AS d ON d.customer_id = f.customer_id
         WHERE ${where}
       )
       GROUP BY GROUPING SETS (${Object.values(SETS).map((set) => `(${set.join(', ')})`).join(', ')})
       SETTINGS join_use_nulls = 1, group_by_use_nulls = 1`,
      { ...params, core: MILLENNIALS_CORE_SEGMENTS },
    ),
  )
}

const avg = (sum: number, n: number) => (n ? round2(sum / n) : 0)
const avgOrNull = (sum: number, n: number) => (n ? round2(sum / n) : null)

export async function demographicsBody(ctx: AnalyticsContext, q: DemographicsOptions) {
  const rows = (await groups(ctx, q)).map((r) => {
    const n = (k: keyof GroupRow) => Number(r[k] ?? 0)
    return { ...r, g: n('g'), customers: n('customers'), with_age: n('with_age'), with_gender: n('with_gender'), with_location: n('with_location'), age_sum: n('age_sum'), spent_sum: n('spent_sum'), orders_sum: n('orders_sum'), high_value: n('high_value'), champions: n('champions'), millennials_core: n('millennials_core'), male: n('male'), female: n('female') }
  })
  const of = (set: readonly string[]) => rows.filter((r) => r.g === bits(set))
  const total = of(SETS.total)[0]
  // The tenant has no demographic data at all: nothing to analyse (204, no body). A filter that
  // matches nobody is an answer of zeros (200), not "no data".
  const empty = !total || (total.with_age === 0 && total.with_gender === 0 && total.with_location === 0)
  if (empty && !narrowedBy(q, ctx.now())) return NO_CONTENT
  if (!total) throw new Error('the grouping-sets query returned no total row')

  const byAge = new Map(of(SETS.age).map((r) => [r.age_segment, r]))
  const withSegment = [...byAge.entries()].filter(([k]) => k !== null).reduce((s, [, r]) => s + r.customers, 0)
  const age_analysis = AGE_SEGMENTS.map((segment) => {
    const r = byAge.get(segment)
    const n = r?.customers ?? 0
    return {
      age_segment: segment,
      generation: GENERATION_BY_SEGMENT[segment],
      customer_count: n,
      avg_age: avgOrNull(r?.age_sum ?? 0, r?.with_age ?? 0),
      avg_spent: avg(r?.spent_sum ?? 0, n),
      avg_orders: avg(r?.orders_sum ?? 0, n),
      high_value_customers: r?.high_value ?? 0,
      male_count: r?.male ?? 0,
      female_count: r?.female ?? 0,
      percentage: pct(n, withSegment),
    }
  })

  const byGender = new Map(of(SETS.gender).map((r) => [r.gender, r]))
  const gender_analysis = [...GENDERS, null].map((code) => {
    const r = byGender.get(code)
    const n = r?.customers ?? 0
    return {
      gender_label: code === null ? NO_GENDER_LABEL : GENDER_LABELS[code],
      gender_code: code,
      customer_count: n,
      avg_spent: avg(r?.spent_sum ?? 0, n),
      avg_orders: avg(r?.orders_sum ?? 0, n),
      avg_age: avgOrNull(r?.age_sum ?? 0, r?.with_age ?? 0),
      champions: r?.champions ?? 0,
      millennials_core: r?.millennials_core ?? 0,
      percentage: pct(n, total.customers),
    }
  })

  const geo = of(SETS.geo).filter((r) => r.province !== null)
  const located = geo.reduce((s, r) => s + r.customers, 0)
  const geographic_analysis = geo
    .sort((a, b) => b.customers - a.customers || String(a.province).localeCompare(String(b.province)))
    .map((r) => ({
      province: r.province!,
      region: r.region,
      customer_count: r.customers,
      avg_spent: avg(r.spent_sum, r.customers),
      avg_orders: avg(r.orders_sum, r.customers),
      avg_age: avgOrNull(r.age_sum, r.with_age),
      male_count: r.male,
      female_count: r.female,
      percentage: pct(r.customers, located),
    }))

  const cross_demographic = of(SETS.cross)
    .filter((r) => r.age_segment !== null && r.gender !== null && r.region !== null)
    .sort((a, b) => b.customers - a.customers || `${a.age_segment}${a.gender}${a.region}`.localeCompare(`${b.age_segment}${b.gender}${b.region}`))
    .map((r) => ({ age_segment: r.age_segment!, gender: r.gender!, region: r.region!, customer_count: r.customers, avg_spent: avg(r.spent_sum, r.customers), avg_orders: avg(r.orders_sum, r.customers) }))

  const marketing_segments = of(SETS.marketing)
    .filter((r) => r.social !== null && r.search !== null)
    .sort((a, b) => b.customers - a.customers || `${a.social}${a.search}${a.gender}`.localeCompare(`${b.social}${b.search}${b.gender}`))
    .map((r) => ({ social_ads_age_range: r.social!, search_ads_age_range: r.search!, gender: r.gender, targetable_customers: r.customers, avg_spent: avg(r.spent_sum, r.customers), high_value: r.high_value }))

  return {
    success: true,
    data: {
      summary: {
        total_customers: total.customers,
        customers_with_age: total.with_age,
        customers_with_gender: total.with_gender,
        customers_with_location: total.with_location,
        overall_avg_age: avgOrNull(total.age_sum, total.with_age),
        completion_rates: { age: pct(total.with_age, total.customers), gender: pct(total.with_gender, total.customers), location: pct(total.with_location, total.customers) },
      },
      age_analysis,
      gender_analysis,
      geographic_analysis,
      cross_demographic,
      marketing_segments,
      timestamp: isoWithoutZone(ctx.now()),
    },
  }
}

const Averages = { avg_spent: z.number(), avg_orders: z.number() }
const Rates = { age: Percentage, gender: Percentage, location: Percentage }
const Summary = {
  total_customers: Count,
  customers_with_age: Count,
  customers_with_gender: Count,
  customers_with_location: Count,
  overall_avg_age: z.number().nullable(),
}

/** The analyses of the body that are lists, each with the shape of its rows (the body's and the export's). */
const ANALYSES = {
  age_analysis: z.strictObject({
    age_segment: z.enum(AGE_SEGMENTS),
    generation: z.string(),
    customer_count: Count,
    avg_age: z.number().nullable(),
    ...Averages,
    high_value_customers: Count,
    male_count: Count,
    female_count: Count,
    percentage: Percentage,
  }),
  gender_analysis: z.strictObject({
    gender_label: z.string(),
    gender_code: z.enum(GENDERS).nullable(),
    customer_count: Count,
    ...Averages,
    avg_age: z.number().nullable(),
    champions: Count,
    millennials_core: Count,
    percentage: Percentage,
  }),
  geographic_analysis: z.strictObject({ province: z.string(), region: z.string().nullable(), customer_count: Count, ...Averages, avg_age: z.number().nullable(), male_count: Count, female_count: Count, percentage: Percentage }),
  cross_demographic: z.strictObject({ age_segment: z.enum(AGE_SEGMENTS), gender: z.enum(GENDERS), region: z.string(), customer_count: Count, ...Averages }),
  marketing_segments: z.strictObject({ social_ads_age_range: z.string(), search_ads_age_range: z.string(), gender: z.enum(GENDERS).nullable(), targetable_customers: Count, avg_spent: z.number(), high_value: Count }),
} as const
type Analysis = keyof typeof ANALYSES

export const DemographicsResponse = analyticsBody(
  z.strictObject({
    summary: z.strictObject({ ...Summary, completion_rates: z.strictObject(Rates) }),
    age_analysis: z.array(ANALYSES.age_analysis),
    gender_analysis: z.array(ANALYSES.gender_analysis),
    geographic_analysis: z.array(ANALYSES.geographic_analysis),
    cross_demographic: z.array(ANALYSES.cross_demographic),
    marketing_segments: z.array(ANALYSES.marketing_segments),
    timestamp: z.iso.datetime({ local: true }).meta({ description: 'ISO 8601 without zone (UTC wall time)' }),
  }),
).meta({ id: 'Demographics' })

/** The summary as one row of the export: `completion_rates` flattened to `completion_rate_<field>`. */
const SummaryRow = z.strictObject({ ...Summary, completion_rate_age: Rates.age, completion_rate_gender: Rates.gender, completion_rate_location: Rates.location })

/** The export: one table per analysis (a sheet each in a workbook), the summary first. */
export const demographicsExport: BodyExport<DemographicsOptions, Exclude<Awaited<ReturnType<typeof demographicsBody>>, typeof NO_CONTENT>> = {
  description: `one table per analysis: \`summary\` (one row, \`completion_rates\` as \`completion_rate_age\`, \`completion_rate_gender\`, \`completion_rate_location\`), then ${Object.keys(ANALYSES).map((a) => `\`${a}\``).join(', ')}, with the body's rows and fields`,
  tables: { summary: SummaryRow, ...ANALYSES },
  tableColumn: 'analysis',
  fromBody: ({ data }) => {
    const { completion_rates: rates, ...summary } = data.summary
    return [
      bodyTable('summary', SummaryRow, [{ ...summary, completion_rate_age: rates.age, completion_rate_gender: rates.gender, completion_rate_location: rates.location }]),
      ...(Object.keys(ANALYSES) as Analysis[]).map((name) => bodyTable(name, ANALYSES[name] as z.ZodObject, data[name])),
    ]
  },
}

export const demographicsEndpoint: AnalyticsEndpoint<DemographicsOptions> = {
  path: '/api/v2/cdp/analytics/demographics',
  aliases: ['/api/cdp/v2/analytics/demographics'],
  summary:
    'Demographics: age segments, gender, provinces and regions, their crossings and the ads-targetable groups, from the enriched customers (filters age_segment, gender, region, generation; 422 for a value outside the allowed set; 400 for an unknown tenant; 204 without a body when no customer has demographic data)',
  query: DemographicsQuery as unknown as z.ZodType<DemographicsOptions>,
  response: DemographicsResponse,
  noContent: 'No customer of the tenant has demographic data (no body)',
  overview: true,
  cacheTtlMs: DEMOGRAPHICS_TTL_MS,
  unknownTenantStatus: 400,
  filterErrorStatus: { fields: DEMOGRAPHIC_FILTERS, status: 422 },
  body: demographicsBody,
  export: demographicsExport,
}
