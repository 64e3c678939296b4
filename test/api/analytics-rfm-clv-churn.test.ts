import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Store } from '../../common/store/clickhouse.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { createApp } from '../../services/api/app.ts'
import { ctxFor } from '../../services/api/analytics/router.ts'
import { clvEndpoint, ClvQuery } from '../../services/api/analytics/clv.ts'
import { churnEndpoint, ChurnQuery } from '../../services/api/analytics/churn.ts'
import { SEGMENTS, SEGMENT_DESCRIPTIONS } from '../../pipelines/features/segments.ts'
import { CHURN_DEFINITIONS } from '../../pipelines/features/churn.ts'
import { SEGMENT_ACTIONS } from '../../services/api/analytics/segment-actions.ts'
import { orderHistoryOf, silentLogger, migratedStore } from '../helpers.ts'
import { readDocumented } from './documented.ts'

const DAY = 86_400_000
const FIXED = Date.UTC(2025, 5, 15, 12, 0, 0)
const T = 9101
const OTHER = 9102
const UNKNOWN = 9199
const BASE = '/api/v2/cdp/analytics'

const ts = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '')
const ago = (days: number) => FIXED - days * DAY

interface C {
  id: number
  email: string
  segment: string | null
  recency: number | null
  frequency: number
  monetary: number
  first: number | null
  last: number | null
  hist: number
  pred: number | null
  clv: number | null
  tier: string | null
  risk: string | null
  prob: number | null
  loss: number | null
  province: string | null
}

// Tenant T: six customers with a segment (c1..c5, c7) and one who never bought (c6).
const CUSTOMERS: C[] = [
  { id: 1, email: 'a1@shop.com', segment: 'Champions', recency: 5, frequency: 10, monetary: 1000, first: ago(40), last: ago(5), hist: 1000, pred: 59000, clv: 60000, tier: 'high', risk: 'active', prob: 0.05, loss: 5, province: 'Buenos Aires' },
  { id: 2, email: 'a2@shop.com', segment: 'Champions', recency: 10, frequency: 6, monetary: 600, first: ago(100), last: ago(10), hist: 600, pred: 19400, clv: 20000, tier: 'medium', risk: 'active', prob: 0.1, loss: 8, province: 'Córdoba' },
  { id: 3, email: 'b3@other.com', segment: 'At Risk', recency: 45, frequency: 3, monetary: 300, first: ago(45), last: ago(45), hist: 300, pred: 4700, clv: 5000, tier: 'low', risk: 'at_risk', prob: 0.4, loss: 120, province: 'Buenos Aires' },
  { id: 4, email: 'b4@other.com', segment: 'Hibernating', recency: 75, frequency: 2, monetary: 100, first: ago(75), last: ago(75), hist: 100, pred: 900, clv: 1000, tier: 'low', risk: 'churning', prob: 0.7, loss: 300, province: null },
  { id: 5, email: 'a5@shop.com', segment: 'Lost', recency: 200, frequency: 1, monetary: 50, first: ago(200), last: ago(200), hist: 50, pred: 50, clv: 100, tier: 'low', risk: 'churned', prob: 0.95, loss: 10, province: '' },
  { id: 6, email: 'a6@shop.com', segment: null, recency: null, frequency: 0, monetary: 0, first: null, last: null, hist: 0, pred: null, clv: null, tier: null, risk: null, prob: null, loss: null, province: 'Mendoza' },
  { id: 7, email: 'c7@else.org', segment: 'Hibernating', recency: 100, frequency: 1, monetary: 200, first: ago(100), last: ago(100), hist: 200, pred: 100, clv: 300, tier: 'low', risk: 'churned', prob: 0.9, loss: 20, province: null },
]

/** Orders of T (counting unless cancelled): the churn windows are computed from these. */
const ORDERS: { customer: number; days: number; cancelled?: boolean }[] = [
  { customer: 1, days: 40 },
  { customer: 1, days: 5 },
  { customer: 2, days: 100 },
  { customer: 2, days: 10 },
  { customer: 3, days: 45 },
  { customer: 4, days: 75 },
  { customer: 5, days: 200 },
  { customer: 5, days: 3, cancelled: true },
  { customer: 7, days: 100 },
]

function featureRow(tenant: number, c: C) {
  return {
    tenant_id: tenant,
    customer_id: c.id,
    email: c.email,
    recency_days: c.recency,
    frequency: c.frequency,
    monetary: c.monetary,
    segment: c.segment,
    rfm_score: c.segment ? '555' : null,
    processed_at: ts(FIXED - 60_000),
    first_order_at: c.first === null ? null : ts(c.first),
    last_order_at: c.last === null ? null : ts(c.last),
    avg_order_value: c.frequency ? c.monetary / c.frequency : 0,
    historical_value: c.hist,
    predicted_value: c.pred,
    total_clv: c.clv,
    clv_tier: c.tier,
    churn_risk: c.risk,
    churn_probability: c.prob,
    order_frequency_days: c.risk ? 30 : null,
    expected_order_date: c.last === null ? null : new Date(c.last + 30 * DAY).toISOString().slice(0, 10),
    days_overdue: c.recency === null ? null : Math.max(0, c.recency - 30),
    potential_loss: c.loss,
    recommended_action: c.risk === 'at_risk' ? 'nurture' : c.risk === 'churning' ? 'discount_offer' : c.risk ? 'none' : null,
    version: 1,
  }
}

let store: Store
let server: http.Server
let url: string

beforeAll(async () => {
  store = await migratedStore()
  const other: C = { ...CUSTOMERS[0]!, id: 1, email: 'x@shop.com', monetary: 99_999, hist: 99_999, clv: 999_999, recency: 95, risk: 'churned', loss: 99_999 }
  await store.insert({
    table: 'customers',
    format: 'JSONEachRow',
    values: [...CUSTOMERS.map((c) => ({ tenant_id: T, customer_id: c.id, email: c.email, province: c.province, updated_at: ts(FIXED), version: 1 })), { tenant_id: OTHER, customer_id: 1, email: 'x@shop.com', province: 'Salta', updated_at: ts(FIXED), version: 1 }],
  })
  // Enriched demographics (pipelines/demographics): c5 not enriched yet; the other tenant's row must never count.
  const demo = (tenant: number, id: number, age: number | null, segment: string | null, generation: string | null, gender: string | null, province: string | null) => ({
    tenant_id: tenant, customer_id: id, version: 1, estimated_age: age, age_segment: segment, generation, gender, corrected_province: province,
    location_confidence: province ? 0.9 : 0, issues: [], enriched_at: ts(FIXED),
  })
  await store.insert({
    table: 'customer_demographics',
    format: 'JSONEachRow',
    values: [
      demo(T, 1, 30, '25-34', 'Millennials/Gen Z', 'M', 'Buenos Aires'),
      demo(T, 2, 40, '35-44', 'Millennials', 'F', 'Córdoba'),
      demo(T, 3, 50, '45-54', 'Generación X', 'U', 'Buenos Aires'),
      demo(T, 4, null, null, null, 'F', null),
      demo(T, 6, 20, '18-24', 'Generación Z', 'M', 'Mendoza'),
      demo(T, 7, 60, '55+', 'Baby Boomers', null, null),
      demo(OTHER, 1, 99, '55+', 'Baby Boomers', 'M', 'Salta'),
    ],
  })
  const order = (tenant: number, customer: number, i: number, days: number, cancelled = false) => ({
    tenant_id: tenant,
    customer_id: customer,
    order_id: `o${i}`,
    status: cancelled ? 'cancelled' : 'completed',
    total: 100,
    currency: 'ARS',
    placed_at: ts(ago(days)),
    updated_at: ts(ago(days)),
    is_cancelled: cancelled ? 1 : 0,
    version: 1,
  })
  const orders = [...ORDERS.map((o, i) => order(T, o.customer, i, o.days, o.cancelled)), order(OTHER, 1, 99, 1), order(OTHER, 1, 98, 2)]
  await store.insert({ table: 'orders', format: 'JSONEachRow', values: orders })
  // Each feature row carries its customer's counting orders, as the feature pipeline writes them.
  const features = [...CUSTOMERS.map((c) => featureRow(T, c)), featureRow(OTHER, other)]
  await store.insert({ table: 'customer_features', format: 'JSONEachRow', values: features.map((f) => ({ ...f, ...orderHistoryOf(orders, f.tenant_id, f.customer_id) })) })
  // Snapshots: 31 days ago (the comparison base) and 10 days ago (too recent, ignored).
  const snap = (days: number, segment: string, customers: number, monetary: number) => ({
    tenant_id: T,
    day: new Date(ago(days)).toISOString().slice(0, 10),
    segment,
    customers,
    monetary,
    avg_recency: 0,
    avg_frequency: 0,
    avg_monetary: customers ? monetary / customers : 0,
    computed_at: ts(ago(days)),
  })
  await store.insert({
    table: 'segment_daily',
    format: 'JSONEachRow',
    values: [snap(31, 'Champions', 1, 500), snap(31, 'At Risk', 2, 700), snap(31, 'Lost', 1, 50), snap(10, 'Champions', 5, 5000)],
  })

  const app = createApp({ logger: silentLogger, log: {} as EventLog, codec: {} as EventCodec, readiness: [], analytics: { store, logger: silentLogger, now: () => FIXED } })
  server = http.createServer(app)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}, 60_000)

afterAll(async () => {
  if (server) await new Promise<void>((r) => server.close(() => r()))
  await store?.close()
})

// Response bodies are checked field by field, and each against its documented schema (documented.ts).
const get = async (path: string, query: string) => readDocumented('GET', await fetch(`${url}${BASE}${path}?${query}`))
const keys = (o: object) => Object.keys(o).sort()

describe('GET /analytics/rfm', () => {
  it('answers every spec field with hand-computed values', async () => {
    const r = await get('/rfm', `tenant_id=${T}`)
    expect(r.status).toBe(200)
    expect(r.headers.get('cache-control')).toContain('max-age=300')
    const b = r.body
    expect(keys(b)).toEqual(['data', 'message', 'metadata', 'success'])
    expect(b.success).toBe(true)
    expect(b.message).toBe(`RFM analysis for tenant ${T}`)
    expect(keys(b.data)).toEqual(['distribution', 'overview', 'segments_detail', 'trends'])
    const o = b.data.overview
    expect(keys(o)).toEqual(['avg_frequency', 'avg_monetary', 'avg_recency', 'demographics', 'last_calculation', 'total_customers', 'total_revenue'])
    // c1..c5, c7 (c6 has no segment).
    expect(o.total_customers).toBe(6)
    expect(o.avg_recency).toBe(72.5) // (5+10+45+75+200+100)/6
    expect(o.avg_frequency).toBe(3.83) // 23/6
    expect(o.avg_monetary).toBe(375) // 2250/6
    expect(o.total_revenue).toBe(2250)
    expect(o.last_calculation).toBe(new Date(FIXED - 60_000).toISOString())
    // Of c1..c5, c7: ages 30, 40, 50, 60 (c4 none, c5 not enriched); M c1; F c2, c4; U c3 counts as a gender; located c1, c2, c3.
    expect(o.demographics).toEqual({
      customers_with_age: 4,
      avg_age: 45,
      male_customers: 1,
      female_customers: 2,
      customers_with_location: 3,
      completion_rates: { age: 66.67, gender: 66.67, location: 50 },
    })

    expect(b.data.distribution.map((d: { segment: string }) => d.segment)).toEqual([...SEGMENTS])
    const champions = b.data.distribution[0]
    expect(keys(champions)).toEqual(['avg_frequency', 'avg_monetary', 'avg_recency', 'characteristics', 'customer_count', 'demographics', 'percentage', 'segment'])
    expect(champions).toMatchObject({ customer_count: 2, percentage: 33.33, avg_recency: 7.5, avg_frequency: 8, avg_monetary: 800 })
    expect(champions.characteristics).toEqual({ description: SEGMENT_DESCRIPTIONS.Champions, recommended_actions: [...SEGMENT_ACTIONS.Champions] })
    expect(champions.demographics).toEqual({
      avg_age: 35,
      male_count: 1,
      female_count: 1,
      top_provinces: ['Buenos Aires', 'Córdoba'],
      age_segments: { '25-34': 1, '35-44': 1 },
      generations: { 'Millennials/Gen Z': 1, Millennials: 1 },
    })
    const hib = b.data.distribution.find((d: { segment: string }) => d.segment === 'Hibernating')
    expect(hib).toMatchObject({ customer_count: 2, percentage: 33.33, avg_recency: 87.5, avg_frequency: 1.5, avg_monetary: 150 })
    const promising = b.data.distribution.find((d: { segment: string }) => d.segment === 'Promising')
    expect(promising).toMatchObject({ customer_count: 0, percentage: 0, avg_recency: 0, avg_frequency: 0, avg_monetary: 0 })

    // Now (live): Champions 2, At Risk 1, avg monetary 375; 31 days ago: 1, 2, 1250/4 = 312.5.
    expect(b.data.trends).toEqual({ champions_growth: '+100%', at_risk_increase: '-50%', avg_monetary_change: '+20%' })

    expect(keys(b.data.segments_detail)).toEqual([...SEGMENTS].sort())
    expect(b.data.segments_detail.Champions).toEqual({ count: 2, percentage: 33.33 })
    expect(b.data.segments_detail.Lost).toEqual({ count: 1, percentage: 16.67 })

    expect(b.metadata).toEqual({
      tenant_id: T,
      processing_date: new Date(FIXED - 60_000).toISOString(),
      next_update: new Date(FIXED - 60_000 + 3_600_000).toISOString(),
      // The tenant has no settings: its customers age against the (test's) wall clock.
      reference_date: new Date(FIXED).toISOString().slice(0, 10),
      reference_date_setting: 'now',
      reference_date_source: 'setting',
    })
  })

  it('segment narrows the distribution; include_details pages customer ids', async () => {
    const r = await get('/rfm', `tenant_id=${T}&segment=Hibernating&include_details=true`)
    expect(r.status).toBe(200)
    expect(r.body.data.overview.total_customers).toBe(6)
    expect(r.body.data.distribution).toHaveLength(1)
    expect(r.body.data.segments_detail).toEqual({ Hibernating: { count: 2, percentage: 33.33, customer_ids: [4, 7] } })
    const page = await get('/rfm', `tenant_id=${T}&include_details=true&limit=1&offset=1`)
    expect(page.body.data.segments_detail.Hibernating.customer_ids).toEqual([7])
    expect(page.body.data.segments_detail.Champions.customer_ids).toEqual([2])
    expect(page.body.data.segments_detail.Lost.customer_ids).toEqual([])
  })

  it('shared filters change the numbers', async () => {
    const total = async (q: string) => (await get('/rfm', `tenant_id=${T}&${q}`)).body.data.overview.total_customers
    expect(await total('segments[]=Champions')).toBe(2)
    expect(await total('segments[]=Champions&segments[]=Lost')).toBe(3)
    expect(await total('exclude_segments[]=Champions')).toBe(4)
    expect(await total('customer_ids[]=1&customer_ids[]=3')).toBe(2)
    expect(await total('email_domain=shop.com')).toBe(3)
    expect(await total('min_value=300')).toBe(3) // monetary >= 300: c1, c2, c3
    expect(await total('max_value=100')).toBe(2) // c4, c5
    const f = await get('/rfm', `tenant_id=${T}&email_domain=other.com`)
    expect(f.body.data.overview).toMatchObject({ total_customers: 2, avg_recency: 60, total_revenue: 400 })
    expect(f.body.data.segments_detail.Champions).toEqual({ count: 0, percentage: 0 })
  })

  it('never shows another tenant', async () => {
    const r = await get('/rfm', `tenant_id=${OTHER}`)
    expect(r.body.data.overview).toMatchObject({ total_customers: 1, total_revenue: 99_999 })
    expect(r.body.data.trends).toEqual({ champions_growth: null, at_risk_increase: null, avg_monetary_change: null })
    const mine = await get('/rfm', `tenant_id=${T}&customer_ids[]=1`)
    expect(mine.body.data.overview.total_revenue).toBe(1000)
  })
})

describe('GET /analytics/clv', () => {
  it('answers every spec field with hand-computed values', async () => {
    const r = await get('/clv', `tenant_id=${T}`)
    expect(r.status).toBe(200)
    expect(r.headers.get('cache-control')).toContain('max-age=300')
    const d = r.body.data
    expect(keys(r.body)).toEqual(['data', 'metadata', 'success'])
    expect(keys(d)).toEqual(['insights', 'overview', 'top_customers'])
    expect(d.overview).toEqual({
      total_customers: 6,
      avg_clv: 14400, // 86400 / 6
      median_clv: 3000, // (1000 + 5000) / 2
      total_clv: 86400,
      distribution: {
        high: { count: 1, percentage: 16.67, avg_value: 60000, threshold: '> 50000' },
        medium: { count: 1, percentage: 16.67, avg_value: 20000, threshold: '10000 - 50000' },
        low: { count: 4, percentage: 66.67, avg_value: 1600, threshold: '< 10000' },
      },
    })
    expect(d.top_customers.map((c: { customer_id: number }) => c.customer_id)).toEqual([1, 2, 3, 4, 7, 5])
    const c1 = d.top_customers[0]
    expect(keys(c1)).toEqual(['avg_order_value', 'clv_tier', 'customer_id', 'customer_since', 'days_as_customer', 'email', 'growth_rate', 'historical_value', 'predicted_value', 'total_clv', 'total_orders'].sort())
    expect(c1).toEqual({
      customer_id: 1,
      email: 'a1@shop.com',
      historical_value: 1000,
      predicted_value: 59000,
      total_clv: 60000,
      total_orders: 2, // length of its order history (frequency counts purchase days)
      avg_order_value: 100,
      customer_since: '2025-05-06',
      days_as_customer: 40,
      clv_tier: 'high',
      growth_rate: 58,
    })
    expect(d.top_customers.at(-1).growth_rate).toBe(0) // c5: 50 / 50 - 1
    expect(d.insights).toEqual({
      high_value_concentration: 'Top 20% of customers (2 of 6) hold 92.59% of total CLV', // 80000 / 86400
      growth_opportunity: '4 of 6 customers (66.67%) are predicted to spend more in the next 12 months than they have spent so far; predicted value is 97.4% of total CLV', // 84150 / 86400
      retention_impact: 'At-risk and churning customers hold 6000 of CLV (6.94% of total CLV)',
    })
  })

  it('tier, min/max on CLV, sorting and paging', async () => {
    const low = await get('/clv', `tenant_id=${T}&tier=low`)
    expect(low.body.data.overview.total_customers).toBe(4)
    expect(low.body.data.overview.distribution.high.count).toBe(0)
    // min_value bounds total_clv here: c1, c2, c3, c4 (on net spend it would be c1 only).
    const min = await get('/clv', `tenant_id=${T}&min_value=1000`)
    expect(min.body.data.overview.total_customers).toBe(4)
    expect((await get('/clv', `tenant_id=${T}&max_value=300`)).body.data.overview.total_customers).toBe(2)
    const byOrders = await get('/clv', `tenant_id=${T}&sort_by=orders&sort_order=asc&limit=3`)
    expect(byOrders.body.data.top_customers.map((c: { customer_id: number }) => c.customer_id)).toEqual([3, 4, 5]) // one order each (ties by id)
    const byRecency = await get('/clv', `tenant_id=${T}&sort_by=recency&sort_order=desc&limit=2&offset=1`)
    expect(byRecency.body.data.top_customers.map((c: { customer_id: number }) => c.customer_id)).toEqual([7, 4])
    const shop = await get('/clv', `tenant_id=${T}&email_domain=shop.com`)
    expect(shop.body.data.overview).toMatchObject({ total_customers: 3, total_clv: 80100 })
    const other = await get('/clv', `tenant_id=${OTHER}`)
    expect(other.body.data.overview.total_clv).toBe(999_999)
  })

  it('export count and rows follow the filters and the sort', async () => {
    const ctx = ctxFor({ store, logger: silentLogger, now: () => FIXED })
    const q = ClvQuery.parse({ tenant_id: String(T), tier: 'low', sort_by: 'clv', sort_order: 'asc' })
    expect(await clvEndpoint.export!.count(ctx, q)).toBe(4)
    const rows = await clvEndpoint.export!.rows(ctx, q, 50_000)
    expect((rows as { customer_id: number }[]).map((r) => r.customer_id)).toEqual([5, 7, 4, 3])
    expect(clvEndpoint.export!.columns.map((c) => c.header)).toEqual(['customer_id', 'email', 'historical_value', 'predicted_value', 'total_clv', 'total_orders', 'avg_order_value', 'customer_since', 'days_as_customer', 'clv_tier', 'growth_rate'])
  })
})

describe('GET /analytics/churn', () => {
  it('answers every spec field with hand-computed values', async () => {
    const r = await get('/churn', `tenant_id=${T}&include_predictions=true`)
    expect(r.status).toBe(200)
    expect(r.headers.get('cache-control')).toContain('max-age=300')
    const d = r.body.data
    expect(keys(d)).toEqual(['at_risk_customers', 'overview', 'predictions', 'trends'])
    expect(d.overview).toEqual({
      total_customers: 6,
      churn_rate: 0.3333, // c5, c7 of 6
      // 30 days ago not churned: c1, c2, c3, c4, c7 (c5 already was); crossed since: c7.
      monthly_churn_rate: 0.2,
      at_risk_count: 2,
      // At risk or churning 30 days ago (30-90 days then): c2 (70), c4 (45), c7 (70); c2 ordered since.
      save_rate: 0.3333,
      distribution: {
        active: { count: 2, percentage: 33.33, definition: CHURN_DEFINITIONS.active },
        at_risk: { count: 1, percentage: 16.67, definition: CHURN_DEFINITIONS.at_risk },
        churning: { count: 1, percentage: 16.67, definition: CHURN_DEFINITIONS.churning },
        churned: { count: 2, percentage: 33.33, definition: CHURN_DEFINITIONS.churned },
      },
    })
    expect(d.at_risk_customers.map((c: { customer_id: number }) => c.customer_id)).toEqual([4, 3])
    expect(d.at_risk_customers[0]).toEqual({
      customer_id: 4,
      email: 'b4@other.com',
      last_order_date: '2025-04-01',
      days_since_last_order: 75,
      order_frequency_days: 30,
      expected_order_date: '2025-05-01',
      days_overdue: 45,
      churn_probability: 0.7,
      churn_risk: 'churning',
      recommended_action: 'discount_offer',
      potential_loss: 300,
    })
    // Non-churned probabilities 0.05 + 0.1 + 0.4 + 0.7 = 1.25; at risk + churning 1.1; losses 120 + 300.
    expect(d.predictions).toEqual({ next_month_churn: 1, preventable_churn: 1, potential_save_value: 420 })
    // Churned now 2/6 vs 1/6 thirty days ago; orders: 2 in the last 30 days, 8 in the last 365 → 2 / (8·30/365).
    expect(d.trends).toEqual({ churn_rate_trend: 'increasing', monthly_comparison: '+100%', seasonal_factor: 3.04 })
  })

  it('predictions are null unless asked for; filters narrow the population', async () => {
    const r = await get('/churn', `tenant_id=${T}`)
    expect(r.body.data.predictions).toEqual({ next_month_churn: null, preventable_churn: null, potential_save_value: null })
    const other = await get('/churn', `tenant_id=${T}&email_domain=other.com`)
    expect(other.body.data.overview).toMatchObject({ total_customers: 2, churn_rate: 0, at_risk_count: 2 })
    const churned = await get('/churn', `tenant_id=${T}&risk_level=churned`)
    expect(churned.body.data.overview).toMatchObject({ total_customers: 2, churn_rate: 1, at_risk_count: 0 })
    expect(churned.body.data.at_risk_customers).toEqual([])
    const inactive = await get('/churn', `tenant_id=${T}&days_inactive=70`)
    expect(inactive.body.data.overview.total_customers).toBe(3) // c4, c5, c7
    const seg = await get('/churn', `tenant_id=${T}&segments[]=Champions`)
    expect(seg.body.data.overview).toMatchObject({ total_customers: 2, churn_rate: 0, save_rate: 1 }) // c2 saved
    const paged = await get('/churn', `tenant_id=${T}&limit=1&offset=1`)
    expect(paged.body.data.at_risk_customers.map((c: { customer_id: number }) => c.customer_id)).toEqual([3])
    const leak = await get('/churn', `tenant_id=${OTHER}&include_predictions=true`)
    expect(leak.body.data.overview).toMatchObject({ total_customers: 1, churn_rate: 1 })
    expect(leak.body.data.trends.seasonal_factor).toBe(round(2 / ((2 * 30) / 365)))
  })

  it('export count and rows are the at-risk list', async () => {
    const ctx = ctxFor({ store, logger: silentLogger, now: () => FIXED })
    const q = ChurnQuery.parse({ tenant_id: String(T) })
    expect(await churnEndpoint.export!.count(ctx, q)).toBe(2)
    const rows = (await churnEndpoint.export!.rows(ctx, q, 50_000)) as { customer_id: number }[]
    expect(rows.map((r) => r.customer_id)).toEqual([4, 3])
  })
})

const round = (x: number) => Math.round(x * 100) / 100

describe('exports over HTTP', () => {
  it('an endpoint with rows downloads them in each format, as documented', async () => {
    const csv = await get('/clv', `tenant_id=${T}&format=csv&tier=low`)
    expect(csv.status).toBe(200)
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/)
    expect(csv.body.split('\r\n').filter(Boolean)).toHaveLength(5) // header and c3, c4, c5, c7
    const rows = await get('/churn', `tenant_id=${T}&format=json`)
    expect(rows.body.map((r: { customer_id: number }) => r.customer_id)).toEqual([4, 3])
    const xlsx = await get('/clv', `tenant_id=${T}&format=excel`)
    expect(xlsx.headers.get('content-disposition')).toBe(`attachment; filename="clv-${T}.xlsx"`)
  })

  it('every analytics endpoint takes format (the spec lists it on all): the overviews download their tables', async () => {
    for (const [path, name] of [['/rfm', 'rfm'], ['/cohorts', 'cohorts'], ['/segments/performance', 'segments-performance'], ['/dashboard', 'dashboard']]) {
      const r = await get(path!, `tenant_id=${T}&format=csv`)
      expect(r.status, path).toBe(200)
      expect(r.headers.get('content-type'), path).toBe('text/csv; charset=utf-8')
      expect(r.headers.get('content-disposition'), path).toBe(`attachment; filename="${name}-${T}.csv"`)
    }
    // rfm: one row per customer of the population (c1..c5, c7), as the overview counts it
    expect((await get('/rfm', `tenant_id=${T}&format=json`)).body.map((r: { customer_id: number }) => r.customer_id)).toEqual([1, 2, 3, 4, 5, 7])
  })
})

describe('errors', () => {
  it('400 with field errors for bad parameters', async () => {
    const cases: [string, string, string][] = [
      ['/rfm', `tenant_id=${T}&limit=1001`, 'limit'],
      ['/rfm', `tenant_id=${T}&segment=Nobody`, 'segment'],
      ['/rfm', `tenant_id=${T}&unknown=1`, ''],
      ['/clv', `tenant_id=${T}&tier=gold`, 'tier'],
      ['/clv', `tenant_id=${T}&sort_by=x`, 'sort_by'],
      ['/churn', `tenant_id=${T}&risk_level=gone`, 'risk_level'],
      ['/churn', `tenant_id=${T}&days_inactive=1.5`, 'days_inactive'],
      ['/churn', '', 'tenant_id'],
    ]
    for (const [path, q, field] of cases) {
      const r = await get(path, q)
      expect(r.status, `${path}?${q}`).toBe(400)
      expect(r.body.success).toBe(false)
      expect(r.body.details.errors.map((e: { path: string }) => e.path)).toContain(field)
    }
  })

  it('404 for an unknown tenant', async () => {
    for (const p of ['/rfm', '/clv', '/churn']) {
      const r = await get(p, `tenant_id=${UNKNOWN}`)
      expect(r.status).toBe(404)
      expect(r.body).toMatchObject({ success: false, error: 'Tenant not found' })
    }
  })
})
