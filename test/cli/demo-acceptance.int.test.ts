import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { tmpDir, waitFor } from '../helpers.ts'

/**
 * Acceptance on the embedded runtime with the demo tenant (`cdp start --demo`): every analytics
 * endpoint answers 200 with every field the spec lists, with the key the demo prints; and the
 * error statuses the spec and the issue name.
 */
const CDP = path.resolve(import.meta.dirname, '../../bin/cdp.mjs')
const TENANT = 1
const DEMO_CUSTOMERS = 2000

let child: ChildProcess
let url = ''
let key = ''
let admin = ''

const get = (p: string, token = key) => fetch(url + p, { headers: token ? { authorization: `Bearer ${token}` } : {} })

/** Every dotted path must exist (arrays: checked on their first element, which must exist). */
function missing(body: unknown, paths: string[]): string[] {
  const out: string[] = []
  for (const p of paths) {
    let v: unknown = body
    for (const part of p.split('.')) {
      if (Array.isArray(v)) v = v[0]
      if (v === null || typeof v !== 'object' || !(part in (v as object))) {
        out.push(p)
        break
      }
      v = (v as Record<string, unknown>)[part]
    }
  }
  return out
}

const SPEC_FIELDS: Record<string, string[]> = {
  '/api/v2/cdp/analytics/rfm': [
    'success', 'message', 'metadata.tenant_id', 'metadata.processing_date', 'metadata.next_update',
    ...['total_customers', 'avg_recency', 'avg_frequency', 'avg_monetary', 'total_revenue', 'last_calculation'].map((f) => `data.overview.${f}`),
    ...['customers_with_age', 'avg_age', 'male_customers', 'female_customers', 'customers_with_location', 'completion_rates.age', 'completion_rates.gender', 'completion_rates.location'].map((f) => `data.overview.demographics.${f}`),
    ...['segment', 'customer_count', 'percentage', 'avg_recency', 'avg_frequency', 'avg_monetary', 'characteristics.description', 'characteristics.recommended_actions',
      'demographics.avg_age', 'demographics.male_count', 'demographics.female_count', 'demographics.top_provinces', 'demographics.age_segments', 'demographics.generations'].map((f) => `data.distribution.${f}`),
    'data.trends.champions_growth', 'data.trends.at_risk_increase', 'data.trends.avg_monetary_change',
    'data.segments_detail.Champions.count', 'data.segments_detail.Champions.percentage', 'data.segments_detail.Champions.customer_ids',
  ],
  '/api/v2/cdp/analytics/clv': [
    'success', ...['total_customers', 'avg_clv', 'median_clv', 'total_clv'].map((f) => `data.overview.${f}`),
    ...['high', 'medium', 'low'].flatMap((t) => ['count', 'percentage', 'avg_value', 'threshold'].map((f) => `data.overview.distribution.${t}.${f}`)),
    ...['customer_id', 'email', 'historical_value', 'predicted_value', 'total_clv', 'total_orders', 'avg_order_value', 'customer_since', 'days_as_customer', 'clv_tier', 'growth_rate'].map((f) => `data.top_customers.${f}`),
    'data.insights.high_value_concentration', 'data.insights.growth_opportunity', 'data.insights.retention_impact',
  ],
  '/api/v2/cdp/analytics/churn': [
    'success', ...['total_customers', 'churn_rate', 'monthly_churn_rate', 'at_risk_count', 'save_rate'].map((f) => `data.overview.${f}`),
    ...['active', 'at_risk', 'churning', 'churned'].flatMap((l) => ['count', 'percentage', 'definition'].map((f) => `data.overview.distribution.${l}.${f}`)),
    ...['customer_id', 'email', 'last_order_date', 'days_since_last_order', 'order_frequency_days', 'expected_order_date', 'days_overdue', 'churn_probability', 'churn_risk', 'recommended_action', 'potential_loss'].map((f) => `data.at_risk_customers.${f}`),
    'data.predictions.next_month_churn', 'data.predictions.preventable_churn', 'data.predictions.potential_save_value',
    'data.trends.churn_rate_trend', 'data.trends.monthly_comparison', 'data.trends.seasonal_factor',
  ],
  '/api/v2/cdp/analytics/cohorts': [
    'success', 'data.cohorts.cohort', 'data.cohorts.size',
    ...[0, 1, 2, 3, 6, 12].map((k) => `data.cohorts.retention.month_${k}`),
    'data.cohorts.revenue.total', 'data.cohorts.revenue.per_customer', 'data.cohorts.revenue.growth',
    'data.insights.best_cohort', 'data.insights.worst_cohort', 'data.insights.avg_retention_3m', 'data.insights.trend',
  ],
  '/api/v2/cdp/analytics/segments/performance': [
    'success', 'data.segments.name',
    ...['size', 'revenue', 'avg_order_value', 'order_frequency', 'retention_rate', 'growth_rate'].map((f) => `data.segments.metrics.${f}`),
    ...['vs_avg_revenue', 'vs_avg_retention', 'vs_last_month'].map((f) => `data.segments.comparison.${f}`),
    'data.recommendations.segment', 'data.recommendations.action', 'data.recommendations.potential_impact',
  ],
  '/api/v2/cdp/analytics/dashboard': [
    'success', ...['total_customers', 'active_customers', 'total_revenue', 'avg_order_value', 'customer_lifetime_value', 'churn_rate', 'nps_score'].map((f) => `data.kpis.${f}`),
    'data.trends.revenue.current', 'data.trends.revenue.previous', 'data.trends.revenue.change', 'data.trends.revenue.chart',
    'data.trends.customers.new', 'data.trends.customers.returning', 'data.trends.customers.churned',
    'data.segments.distribution', 'data.segments.movements.upgrades', 'data.segments.movements.downgrades', 'data.alerts',
  ],
  '/api/v2/cdp/analytics/demographics': [
    'success', 'data.timestamp',
    ...['total_customers', 'customers_with_age', 'customers_with_gender', 'customers_with_location', 'overall_avg_age', 'completion_rates.age', 'completion_rates.gender', 'completion_rates.location'].map((f) => `data.summary.${f}`),
    ...['age_segment', 'generation', 'customer_count', 'avg_age', 'avg_spent', 'avg_orders', 'high_value_customers', 'male_count', 'female_count', 'percentage'].map((f) => `data.age_analysis.${f}`),
    ...['gender_label', 'gender_code', 'customer_count', 'avg_spent', 'avg_orders', 'avg_age', 'champions', 'millennials_core', 'percentage'].map((f) => `data.gender_analysis.${f}`),
    ...['province', 'region', 'customer_count', 'avg_spent', 'avg_orders', 'avg_age', 'male_count', 'female_count', 'percentage'].map((f) => `data.geographic_analysis.${f}`),
    ...['age_segment', 'gender', 'region', 'customer_count', 'avg_spent', 'avg_orders'].map((f) => `data.cross_demographic.${f}`),
    ...['social_ads_age_range', 'search_ads_age_range', 'gender', 'targetable_customers', 'avg_spent', 'high_value'].map((f) => `data.marketing_segments.${f}`),
  ],
  '/api/cdp/v2/customers': [
    'success', 'data.pagination.total', 'data.pagination.limit', 'data.pagination.offset', 'data.pagination.has_next',
    ...['profile_id', 'email', 'first_name', 'last_name', 'estimated_age', 'inferred_gender', 'age_segment', 'generation', 'social_ads_age_range',
      'search_ads_age_range', 'corrected_city', 'corrected_province', 'corrected_postal_code', 'region', 'location_confidence',
      'location_correction_needed', 'is_location_validated', 'rfm_segment', 'historical_value', 'order_count', 'created_at', 'last_order_date'].map((f) => `data.customers.${f}`),
  ],
}

beforeAll(async () => {
  const dir = tmpDir()
  const dataDir = path.join(dir, 'data')
  child = spawn('node', [CDP, 'start', '--demo', '--api-port', '0'], {
    env: { ...process.env, CDP_DATA_DIR: dataDir, LOG_LEVEL: 'info', CDP_FEATURES_TICK_MS: '2000', CDP_AUDIENCE_SYNC_WINDOW_MS: '1000', CDP_AUDIENCE_SYNC_PACING_MS: '200', CDP_ANALYTICS_SUMMARY_INTERVAL_MS: '2000', NODE_ENV: 'development' },
  })
  let out = ''
  child.stdout!.on('data', (d) => (out += d))
  url = await waitFor(async () => /"url":"(http:[^"]+)"/.exec(out)?.[1], { what: 'the API url', timeoutMs: 60_000 })
  key = await waitFor(async () => /Demo API key for tenant 1[^\n]*\n\s+(\S+)/.exec(out)?.[1], { what: 'the printed demo key', timeoutMs: 30_000 })
  admin = fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim()
  await waitFor(async () => out.includes('demo: all events streamed'), { what: 'the demo stream', timeoutMs: 120_000 })
  // Every demo customer has its features before the processing run.
  await waitFor(
    async () => {
      const r = await get(`/api/cdp/v2/customers?tenant_id=${TENANT}&limit=1`)
      return r.ok && ((await r.json()) as { data: { pagination: { total: number } } }).data.pagination.total >= DEMO_CUSTOMERS
    },
    { what: 'the demo customers in ClickHouse', timeoutMs: 120_000, intervalMs: 1000 },
  ).catch((e: Error) => {
    throw new Error(`${e.message}\n${out.slice(-5000)}`)
  })
  const run = await fetch(`${url}/api/v2/cdp/process/${TENANT}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ analyses: ['rfm', 'clv', 'churn'], force: true }),
  })
  expect(run.status).toBe(200)
}, 300_000)

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
  }
})

describe('demo tenant on the embedded runtime', () => {
  it.each(Object.entries(SPEC_FIELDS))('%s answers 200 with every field of the spec', async (p, fields) => {
    const q = p.endsWith('/rfm') ? '&include_details=true' : p.endsWith('/churn') ? '&include_predictions=true' : ''
    const r = await get(`${p}?tenant_id=${TENANT}${q}`)
    expect(r.status).toBe(200)
    const body = await r.json()
    expect(missing(body, fields)).toEqual([])
    expect(body.success).toBe(true)
  })

  it('the demo has real numbers: customers, segments, CLV and churn levels', async () => {
    const rfm = (await (await get(`/api/v2/cdp/analytics/rfm?tenant_id=${TENANT}`)).json()) as { data: { overview: { total_customers: number; total_revenue: number }; distribution: { customer_count: number }[] } }
    expect(rfm.data.overview.total_customers).toBeGreaterThan(DEMO_CUSTOMERS / 2)
    expect(rfm.data.overview.total_revenue).toBeGreaterThan(0)
    expect(rfm.data.distribution.reduce((s, d) => s + d.customer_count, 0)).toBe(rfm.data.overview.total_customers)
    const clv = (await (await get(`/api/v2/cdp/analytics/clv?tenant_id=${TENANT}`)).json()) as { data: { overview: { avg_clv: number } } }
    expect(clv.data.overview.avg_clv).toBeGreaterThan(0)
    const churn = (await (await get(`/api/v2/cdp/analytics/churn?tenant_id=${TENANT}`)).json()) as { data: { overview: { total_customers: number } } }
    expect(churn.data.overview.total_customers).toBe(rfm.data.overview.total_customers)
    // The generator's messy ids, names and addresses are enriched: most customers get an age, a gender and a province.
    const demo = (await (await get(`/api/v2/cdp/analytics/demographics?tenant_id=${TENANT}`)).json()) as { data: { summary: { completion_rates: Record<string, number> } } }
    expect(demo.data.summary.completion_rates.age).toBeGreaterThan(50)
    expect(demo.data.summary.completion_rates.gender).toBeGreaterThan(50)
    expect(demo.data.summary.completion_rates.location).toBeGreaterThan(50)
  })

  it.each(['rfm', 'clv', 'churn', 'cohorts', 'segments/performance', 'dashboard', 'demographics'])('%s exports csv, excel and json with rows', async (ep) => {
    for (const format of ['csv', 'excel', 'json'] as const) {
      const r = await get(`/api/v2/cdp/analytics/${ep}?tenant_id=${TENANT}&format=${format}`)
      expect(r.status, `${ep} ${format}`).toBe(200)
      expect(r.headers.get('content-disposition'), `${ep} ${format}`).toMatch(/^attachment; filename=/)
      const bytes = Buffer.from(await r.arrayBuffer())
      if (format === 'csv') expect(bytes.toString('utf8').split('\r\n').filter(Boolean).length, ep).toBeGreaterThan(1)
      if (format === 'excel') expect(bytes.subarray(0, 2).toString('latin1'), ep).toBe('PK') // a zip: xlsx
      if (format === 'json') {
        const rows = JSON.parse(bytes.toString('utf8')) as unknown
        const n = Array.isArray(rows) ? rows.length : Object.values(rows as Record<string, unknown[]>).reduce((s, v) => s + (Array.isArray(v) ? v.length : 1), 0)
        expect(n, ep).toBeGreaterThan(0)
      }
    }
  })

  it('the per-customer record answers for a demo customer with every field; the dashboard and /churn give one churn rate', async () => {
    const list = (await (await get(`/api/cdp/v2/customers?tenant_id=${TENANT}&segments=Champions&limit=1`)).json()) as { data: { customers: { profile_id: string }[] } }
    const id = list.data.customers[0]!.profile_id
    const r = await get(`/api/cdp/v2/customers/${id}?tenant_id=${TENANT}`)
    expect(r.status).toBe(200)
    const body = await r.json()
    expect(
      missing(body, [
        ...['tenant_id', 'customer_id', 'email', 'recency_days', 'frequency', 'monetary', 'r_score', 'f_score', 'm_score', 'rfm_score', 'segment', 'processed_at'].map((f) => `data.rfm.${f}`),
        ...['profile_id', 'email', 'first_name', 'last_name', 'estimated_age', 'inferred_gender', 'age_segment', 'generation', 'rfm_segment', 'historical_value', 'order_count', 'created_at', 'last_order_date'].map((f) => `data.customer.${f}`),
        ...['historical_value', 'predicted_value', 'total_clv', 'clv_tier', 'expected_purchases', 'p_alive'].map((f) => `data.clv.${f}`),
        ...['churn_risk', 'churn_probability', 'expected_order_date', 'days_overdue'].map((f) => `data.churn.${f}`),
        ...['counting_orders', 'total_spent', 'first_order_at', 'last_order_at', 'recent'].map((f) => `data.orders.${f}`),
      ]),
    ).toEqual([])
    expect(body.data.rfm.segment).toBe('Champions')
    expect(body.data.clv.predicted_value).toBeGreaterThan(0)
    expect((await get(`/api/cdp/v2/customers/999999999?tenant_id=${TENANT}`)).status).toBe(404)
    // The demo's data still move (ticks, summary refreshes): compare the two answers of one moment,
    // i.e. a /churn read between two dashboard reads that agree.
    const dashRate = async () => ((await (await get(`/api/v2/cdp/analytics/dashboard?tenant_id=${TENANT}`)).json()) as { data: { kpis: { churn_rate: number } } }).data.kpis.churn_rate
    let rates: number[] = []
    for (let attempt = 0; attempt < 20; attempt++) {
      const before = await dashRate()
      const churn = ((await (await get(`/api/v2/cdp/analytics/churn?tenant_id=${TENANT}`)).json()) as { data: { overview: { churn_rate: number } } }).data.overview.churn_rate
      rates = [before, churn, await dashRate()]
      if (rates[0] === rates[2]) break
      await new Promise((r) => setTimeout(r, 1000))
    }
    expect(rates[0]).toBe(rates[2])
    expect(rates[0]).toBe(rates[1])
  })

  it("the demo's Champions sync fills a custom audience on the simulated ads platform", async () => {
    const sync = await waitFor(
      async () => {
        const r = (await (await get(`/api/v2/cdp/audience-syncs?tenant_id=${TENANT}`)).json()) as { data: { segment: string; audience: { id: string | null }; batches_done: number; access_token: string }[] }
        const s = r.data[0]
        return s && s.audience.id && s.batches_done > 0 ? s : undefined
      },
      { what: 'the first upload of the demo sync', timeoutMs: 90_000, intervalMs: 1000 },
    )
    expect(sync).toMatchObject({ segment: 'Champions', access_token: '********' })
  }, 120_000)

  it("tenant 2's commerce-platform and marketplace integrations sync one shop's buyers, and a person on both is one profile", async () => {
    const list = (await (await get('/api/v2/tenant-integrations/2', admin)).json()) as { count: number; data: { id: number; integration_type: string }[] }
    expect(list.count).toBe(2)
    expect(list.data.map((d) => d.integration_type).sort()).toEqual(['commerce_platform', 'marketplace'])
    for (const integration of list.data) {
      const detail = await waitFor(
        async () => {
          const d = (await (await get(`/api/v2/tenant-integrations/integration/${integration.id}`, admin)).json()) as { data: { sync_status: string; statistics: { successful_syncs: number } } }
          return d.data.statistics.successful_syncs > 0 ? d.data : undefined
        },
        { what: `the first sync of the demo's ${integration.integration_type}`, timeoutMs: 120_000, intervalMs: 1000 },
      )
      expect(detail.sync_status).toBe('success')
    }
    // 300 people, about 120 of them with a marketplace account too: without the identity
    // resolution the list would hold about 420 customers; with it, about one per person.
    const profiles = await waitFor(
      async () => {
        const r = (await (await get('/api/cdp/v2/customers?tenant_id=2&limit=1', admin)).json()) as { data?: { pagination: { total: number } } }
        const total = r.data?.pagination.total ?? 0
        return total >= 280 && total <= 340 ? total : undefined
      },
      { what: "tenant 2's buyers as one profile per person", timeoutMs: 120_000, intervalMs: 1000 },
    )
    expect(profiles).toBeGreaterThanOrEqual(280)
    // And the profiles hold both accounts: a good share of the first 25 are two customers (few
    // requests: the next tests share the admin token's rate limit).
    const page = (await (await get('/api/cdp/v2/customers?tenant_id=2&limit=25', admin)).json()) as { data: { customers: { profile_id: string }[] } }
    let joined = 0
    for (const c of page.data.customers) {
      const r = (await (await get(`/api/cdp/v2/profiles/${c.profile_id}?tenant_id=2`, admin)).json()) as { data?: { members: unknown[] } }
      if ((r.data?.members.length ?? 0) > 1) joined++
    }
    expect(joined).toBeGreaterThanOrEqual(3)
  }, 300_000)

  it('answers 400, 401, 403 and 404 with the common error body', async () => {
    const cases: [string, string, number][] = [
      [`/api/v2/cdp/analytics/clv?tenant_id=${TENANT}&tier=gold`, key, 400],
      [`/api/v2/cdp/analytics/rfm?tenant_id=${TENANT}`, '', 401],
      [`/api/v2/cdp/analytics/rfm?tenant_id=${TENANT}`, 'not-a-key-of-anyone-at-all', 401],
      [`/api/v2/cdp/analytics/rfm?tenant_id=2`, key, 403],
      [`/api/v2/cdp/analytics/rfm?tenant_id=424242`, admin, 404],
    ]
    for (const [p, token, status] of cases) {
      const r = await get(p, token)
      expect(r.status, p).toBe(status)
      expect(await r.json()).toMatchObject({ success: false, error: expect.any(String) })
    }
  })
})
