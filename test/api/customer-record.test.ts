/**
 * GET /api/cdp/v2/customers/{customerId}: the per-customer record against the stored rows the
 * recompute wrote, the list item of the same customer and the orders by hand; 404, 403 and 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { ApiKeyStore, type CreatedKey } from '../../common/store/api-keys.ts'
import { createApp } from '../../services/api/app.ts'
import { createRecomputeEngine } from '../../pipelines/features/recompute.ts'
import { RECENT_ORDERS } from '../../services/api/analytics/customer-record.ts'
import { silentLogger, serve, migratedStore } from '../helpers.ts'
import { readDocumented } from './documented.ts'

const NOW = Date.UTC(2025, 5, 15, 12)
const T = 701
const OTHER = 702
/** A tenant where customers 1 and 2 are one person (profile 1). */
const MERGED = 703
const ADMIN = 'an-admin-token-long-enough-for-tests'

let store: Store
let closeServer: (() => Promise<void>) | undefined
let base: string
let keyA: CreatedKey
let keyB: CreatedKey
let keyM: CreatedKey

let n = 0
const day = (d: number) => new Date(NOW - d * 86_400_000).toISOString().replace('T', ' ').replace('Z', '')
function order(tenant: number, customer: number, daysAgo: number, total: number, cancelled = 0) {
  n++
  return {
    tenant_id: tenant, customer_id: customer, order_id: `o${n}`, last_event_id: `e${n}`, status: cancelled ? 'cancelled' : 'paid', total: total.toFixed(2),
    refunded_amount: null, currency: 'ARS', items_count: 1, placed_at: day(daysAgo), updated_at: day(daysAgo), is_cancelled: cancelled, source: 'test', version: 1,
  }
}
const customer = (tenant: number, id: number) => ({
  tenant_id: tenant, customer_id: id, last_event_id: `c${id}`, email: `c${id}@t${tenant}.test`, first_name: `First${id}`, last_name: `Last${id}`,
  created_at: day(800), source: 'test', updated_at: day(800), version: 1,
})

/** Customer 1 of T: 14 orders (12 counting, one cancelled, one fully refunded to 0) over two years. */
const ONE = [...Array.from({ length: 12 }, (_, i) => order(T, 1, 700 - i * 55, 100 + i)), order(T, 1, 20, 999, 1), order(T, 1, 15, 0)]

beforeAll(async () => {
  store = await migratedStore()
  const orders = [...ONE]
  for (let c = 2; c <= 30; c++) for (let k = 0; k < 1 + (c % 4); k++) orders.push(order(T, c, 30 + ((c * 37 + k * 91) % 600), 20 + ((c * 13 + k) % 200)))
  orders.push(order(OTHER, 1, 10, 5000), order(OTHER, 50, 10, 70))
  orders.push(order(MERGED, 1, 300, 100), order(MERGED, 1, 200, 50), order(MERGED, 2, 100, 70), order(MERGED, 2, 90, 30, 1), order(MERGED, 3, 10, 10))
  await store.insert({ table: 'customer_profiles', format: 'JSONEachRow', values: [[1, 1], [2, 1], [3, 3]].map(([customer_id, profile_id]) => ({ tenant_id: MERGED, customer_id, profile_id, updated_at: day(1), version: 1 })) })
  // The cancelled order's earlier state (paid), in an insert of its own: the table holds both rows
  // until its parts merge, and the record must count and list the order once, as cancelled.
  await store.insert({ table: 'orders', values: [{ ...ONE[12]!, last_event_id: 'e-earlier', status: 'paid', is_cancelled: 0, version: 0 }], format: 'JSONEachRow' })
  await store.insert({ table: 'orders', values: orders, format: 'JSONEachRow' })
  await store.insert({ table: 'customers', values: [...Array.from({ length: 31 }, (_, i) => customer(T, i + 1)), customer(OTHER, 1), customer(OTHER, 50), ...[1, 2, 3].map((c) => customer(MERGED, c))], format: 'JSONEachRow' })
  const engine = createRecomputeEngine({ store, logger: silentLogger, partitions: 4, now: () => NOW })
  for (const t of [T, OTHER, MERGED]) await engine.run(t, { analyses: ['rfm', 'clv', 'churn'], batchSize: 100, force: true, signal: new AbortController().signal })
  const keys = new ApiKeyStore(store)
  keyA = await keys.create(T, 'tenant A')
  keyB = await keys.create(OTHER, 'tenant B')
  keyM = await keys.create(MERGED, 'tenant M')
  const app = createApp({ logger: silentLogger, log: {} as EventLog, codec: {} as EventCodec, readiness: [], analytics: { store, logger: silentLogger, now: () => NOW }, auth: { adminToken: ADMIN, keys } })
  ;({ base, close: closeServer } = await serve(app))
}, 120_000)

afterAll(async () => {
  await closeServer?.()
  await store?.close()
})

const get = async (path: string, token = keyA.key) => readDocumented('GET', await fetch(base + path, { headers: { authorization: `Bearer ${token}` } }))

describe('the per-customer record', () => {
  it('answers the stored RFM record, the list item, the CLV parts, churn and the order summary', async () => {
    const { status, body } = await get(`/api/cdp/v2/customers/1?tenant_id=${T}`)
    expect(status).toBe(200)
    expect(Object.keys(body.data).sort()).toEqual(['churn', 'clv', 'customer', 'orders', 'rfm'])
    const rs = await store.query({ query: `SELECT * EXCEPT (order_times, order_cents) FROM customer_features FINAL WHERE tenant_id = ${T} AND customer_id = 1`, format: 'JSONEachRow' })
    const [stored] = await rs.json<Record<string, any>>()
    const d = body.data
    expect(d.rfm).toEqual({
      tenant_id: T, customer_id: 1, email: 'c1@t701.test', recency_days: stored!.recency_days, frequency: stored!.frequency, monetary: Number(stored!.monetary),
      r_score: stored!.r_score, f_score: stored!.f_score, m_score: stored!.m_score, rfm_score: stored!.rfm_score, segment: stored!.segment,
      processed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    })
    expect(d.rfm.rfm_score).toBe(`${d.rfm.r_score}${d.rfm.f_score}${d.rfm.m_score}`)
    expect(d.rfm.frequency).toBe(12)
    expect(d.rfm.monetary).toBe(Array.from({ length: 12 }, (_, i) => 100 + i).reduce((a, b) => a + b, 0))
    // The list item of the same customer, field for field.
    const list = await get(`/api/cdp/v2/customers?tenant_id=${T}&customer_ids=1`)
    expect(d.customer).toEqual(list.body.data.customers[0])
    expect(d.clv).toEqual({
      historical_value: Number(stored!.historical_value), predicted_value: stored!.predicted_value, total_clv: stored!.total_clv, clv_tier: stored!.clv_tier,
      expected_purchases: stored!.expected_purchases, p_alive: stored!.p_alive,
    })
    expect(d.clv.predicted_value).toBeGreaterThan(0)
    expect(d.clv.total_clv).toBeCloseTo(d.clv.historical_value + d.clv.predicted_value, 2)
    expect(d.churn).toMatchObject({ churn_risk: stored!.churn_risk, churn_probability: stored!.churn_probability, expected_order_date: stored!.expected_order_date, recommended_action: stored!.recommended_action })
    expect(d.churn.days_overdue).toBe(stored!.days_overdue)
    // Orders: 12 counting, 14 stored, 1 cancelled; the latest first.
    expect(d.orders).toMatchObject({ counting_orders: 12, purchase_days: 12, all_orders: 14, cancelled_orders: 1, total_spent: 1266, avg_order_value: 105.5 })
    expect(d.orders.first_order_at).toBe(new Date(Date.parse(`${day(700).replace(' ', 'T')}Z`)).toISOString())
    expect(d.orders.recent).toHaveLength(RECENT_ORDERS)
    expect(d.orders.recent.slice(0, 2)).toEqual([
      { order_id: ONE[13]!.order_id, placed_at: expect.any(String), status: 'paid', total: 0, currency: 'ARS', cancelled: false },
      { order_id: ONE[12]!.order_id, placed_at: expect.any(String), status: 'cancelled', total: 999, currency: 'ARS', cancelled: true },
    ])
    expect(body.metadata).toMatchObject({ reference_date: expect.any(String), reference_date_setting: 'now' })
  })

  it('every buyer of the tenant has a record whose segment and CLV match the list', async () => {
    for (const id of [2, 7, 19, 30]) {
      const r = await get(`/api/cdp/v2/customers/${id}?tenant_id=${T}`)
      expect(r.status).toBe(200)
      expect(r.body.data.customer.rfm_segment).toBe(r.body.data.rfm.segment)
      expect(r.body.data.clv.clv_tier).not.toBeNull()
    }
  })

  it('404 for a customer the tenant does not have (another tenant\'s included), 403 across tenants, 400 for bad ids', async () => {
    const missing = await get(`/api/cdp/v2/customers/999?tenant_id=${T}`)
    expect([missing.status, missing.body]).toEqual([404, { success: false, error: 'Customer not found', details: { tenant_id: T, customer_id: 999 } }])
    expect((await get(`/api/cdp/v2/customers/50?tenant_id=${T}`)).status).toBe(404)
    // Tenant B's key asking for tenant A's customer: refused whatever the customer.
    const cross = await get(`/api/cdp/v2/customers/1?tenant_id=${T}`, keyB.key)
    expect(cross.status).toBe(403)
    // Its own customer 1 is another person: tenant B's record, not A's.
    const own = await get(`/api/cdp/v2/customers/1?tenant_id=${OTHER}`, keyB.key)
    expect(own.status).toBe(200)
    expect(own.body.data.rfm).toMatchObject({ tenant_id: OTHER, monetary: 5000 })
    expect((await get(`/api/cdp/v2/customers/1?tenant_id=${OTHER}`, ADMIN)).status).toBe(200)
    for (const bad of ['/api/cdp/v2/customers/abc?tenant_id=701', '/api/cdp/v2/customers/0?tenant_id=701', '/api/cdp/v2/customers/1', '/api/cdp/v2/customers/1?tenant_id=701&extra=1']) {
      const r = await get(bad, ADMIN)
      expect(r.status, bad).toBe(400)
      expect(r.body).toMatchObject({ success: false, error: 'Invalid request', details: { errors: expect.any(Array) } })
    }
  })

  it('a profile\'s record counts the orders of all its members; a merged customer is a 404 that names its profile', async () => {
    const r = await get(`/api/cdp/v2/customers/1?tenant_id=${MERGED}`, keyM.key)
    expect(r.status).toBe(200)
    expect(r.body.data.rfm).toMatchObject({ customer_id: 1, frequency: 3, monetary: 220 })
    expect(r.body.data.orders).toMatchObject({ counting_orders: 3, total_spent: 220, all_orders: 4, cancelled_orders: 1 })
    expect(r.body.data.orders.recent.map((o: { order_id: string }) => o.order_id)).toHaveLength(4)
    const merged = await get(`/api/cdp/v2/customers/2?tenant_id=${MERGED}`, keyM.key)
    expect([merged.status, merged.body]).toEqual([404, {
      success: false,
      error: 'Customer merged into profile 1',
      details: { tenant_id: MERGED, customer_id: 2, profile_id: 1, record: `/api/cdp/v2/customers/1?tenant_id=${MERGED}` },
    }])
    // The customer list shows the person once.
    const list = await get(`/api/cdp/v2/customers?tenant_id=${MERGED}`, keyM.key)
    expect(list.body.data.customers.map((c: { profile_id: string }) => c.profile_id).sort()).toEqual(['1', '3'])
  })
})
