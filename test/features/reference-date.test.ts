/**
 * A shop's own history, end to end on the embedded runtime: orders of 2011 ingested through the
 * API, the real projection and feature consumers, the settings API, the analytics and the
 * processing API. The tenant's reference date decides "today" (now, data_end, a fixed date or
 * one request's as_of); its currency is adopted from the first order and held; credit notes lower
 * net spend; a refund above what was paid is refused. Plus the pure rules with hand-computed values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { runPipeline, type RunningPipeline } from '../../common/runtime/pipeline.ts'
import { endOfDay, resolveReference } from '../../common/reference-date.ts'
import { normaliseAmount } from '../../common/decimal.ts'
import { projectionPipeline } from '../../pipelines/projection/pipeline.ts'
import { runFeatures, type RunningFeatures } from '../../pipelines/features/run.ts'
import { aggregate, type OrderFact } from '../../pipelines/features/order-facts.ts'
import { createRecomputeEngine } from '../../pipelines/features/recompute.ts'
import { createApp } from '../../services/api/app.ts'
import { tenantSettingsRouter } from '../../services/api/tenant-settings-routes.ts'
import { AsOfSnapshots, ReferenceSource } from '../../services/api/analytics/reference.ts'
import { ResponseCache } from '../../services/api/analytics/cache.ts'
import { silentLogger, testConfig, uniqueName, waitFor } from '../helpers.ts'

const DAY = 86_400_000
const today = () => new Date().toISOString().slice(0, 10)
const DATA_END = Date.UTC(2011, 11, 9, 12)
const FIRST = Date.UTC(2011, 0, 3, 12)

describe('reference date, pure', () => {
  it('resolves now, data_end and a fixed date; a fixed date cuts later orders', () => {
    expect(resolveReference('now', { wallMs: 5, dataEndMs: 3 })).toEqual({ setting: 'now', source: 'setting', ms: 5, cutoffMs: Infinity })
    expect(resolveReference('data_end', { wallMs: 5, dataEndMs: 3 })).toEqual({ setting: 'data_end', source: 'setting', ms: 3, cutoffMs: Infinity })
    // A tenant without orders has no data end: the wall clock.
    expect(resolveReference('data_end', { wallMs: 5, dataEndMs: null }).ms).toBe(5)
    const end = Date.UTC(2011, 5, 30, 23, 59, 59, 999)
    expect(endOfDay('2011-06-30')).toBe(end)
    expect(resolveReference('2011-06-30', { wallMs: 5, dataEndMs: 3 }, 'as_of')).toEqual({ setting: '2011-06-30', source: 'as_of', ms: end, cutoffMs: end })
  })

  it('normalises float noise within 1e-6 of a cent and refuses other fractions of a cent', () => {
    expect(normaliseAmount(22.200000000000003)).toBe('22.20')
    expect(normaliseAmount('70.05000000000001')).toBe('70.05')
    expect(normaliseAmount('70.04999999999999')).toBe('70.05')
    expect(normaliseAmount('-27.499999999')).toBe('-27.50')
    expect(normaliseAmount(0.1 + 0.2)).toBe('0.30')
    expect(normaliseAmount('12.3400009')).toBe('12.34') // 9e-7 away
    expect(() => normaliseAmount('12.345')).toThrow(/more than 2 decimals/)
    expect(() => normaliseAmount('12.34001')).toThrow(/more than 2 decimals/) // 1e-5 away
    expect(() => normaliseAmount('0.001')).toThrow(/more than 2 decimals/)
  })

  it('credit notes lower net spend and zbar in proportion, never the order count; the cutoff leaves later facts out', () => {
    const f = (placedAt: number, cents: number, id: string): OrderFact => ({ version: placedAt * 4, eventId: id, placedAt, cents, cancelled: false })
    const orders = [f(FIRST, 10_000, 'a'), f(FIRST + 10 * DAY, 30_000, 'b'), f(FIRST + 20 * DAY, 10_000, 'c'), f(FIRST + 30 * DAY, -25_000, 'credit')]
    const a = aggregate(orders)
    // Gross 500.00, credited 250.00: net 250.00; repeat days spend 400.00 over 2 → 200.00, halved.
    expect(a).toMatchObject({ orderCount: 3, monetaryCents: 25_000, purchaseDays: 3, repeatPurchases: 2, repeatSpanDays: 20, repeatAvgCents: 10_000 })
    // More credit than spend: net 0, not negative.
    expect(aggregate([f(FIRST, 1000, 'a'), f(FIRST + DAY, -5000, 'c')]).monetaryCents).toBe(0)
    // As of day 15: the orders of days 20 and 30 (and the credit note) do not count yet.
    expect(aggregate(orders, FIRST + 15 * DAY)).toMatchObject({ orderCount: 2, monetaryCents: 40_000, lastOrderAt: FIRST + 10 * DAY })
  })
})

describe('a shop history on the embedded runtime', () => {
  let rt: Runtime
  let projection: RunningPipeline
  let features: RunningFeatures
  let server: http.Server
  let base: string
  const tenant = 7_000 + Math.floor(Math.random() * 1000)
  const admin = { 'content-type': 'application/json' }

  // Eight customers, each with a first order on 2011-01-03 and a last one this many days before
  // the data's end (2011-12-09): two per churn level once the tenant ages to data_end.
  const OFFSETS = [0, 10, 30, 45, 60, 90, 91, 200]
  const orders = OFFSETS.flatMap((d, i) => [
    { tenant_id: tenant, customer_id: i + 1, order_id: `F${i + 1}`, total: 100, occurred_at: FIRST, ...(i === 0 ? { currency: 'GBP' } : {}) },
    { tenant_id: tenant, customer_id: i + 1, order_id: `L${i + 1}`, total: '50.000000000001', occurred_at: DATA_END - d * DAY },
  ])

  const post = (path: string, body: unknown) => fetch(`${base}${path}`, { method: 'POST', headers: admin, body: JSON.stringify(body) })
  const put = (path: string, body: unknown) => fetch(`${base}${path}`, { method: 'PUT', headers: admin, body: JSON.stringify(body) })
  const get = async (path: string) => {
    const r = await fetch(`${base}${path}`)
    return { status: r.status, body: (await r.json()) as any }
  }
  const levels = async (query = '') => {
    const { body } = await get(`/api/v2/cdp/analytics/churn?tenant_id=${tenant}${query}`)
    const d = body.data.overview.distribution
    return { active: d.active.count, at_risk: d.at_risk.count, churning: d.churning.count, churned: d.churned.count, metadata: body.metadata }
  }
  const settled = async (what: string, check: () => Promise<boolean>) => waitFor(async () => (await check()) || undefined, { what, timeoutMs: 60_000, intervalMs: 100 })

  beforeAll(async () => {
    rt = await openRuntime(testConfig('embedded'), silentLogger)
    projection = await runPipeline(projectionPipeline(rt.store, { name: uniqueName('projection') }), { log: rt.log, codec: rt.codec, logger: silentLogger })
    features = await runFeatures(rt, { tickMs: 3_600_000, name: uniqueName('features') })
    const engine = createRecomputeEngine({ store: rt.store, logger: silentLogger, partitions: rt.config.partitions })
    const references = new ReferenceSource(rt.store, Date.now, 0)
    const cache = new ResponseCache(Date.now, 0) // no response cache: every read sees the rows
    const tenantSettings = tenantSettingsRouter({
      store: rt.store,
      logger: silentLogger,
      onChange: (t) => {
        references.invalidate(t)
        cache.invalidateTenant(t)
        features.engine.invalidateModel(t)
      },
    })
    const app = createApp({
      logger: silentLogger,
      log: rt.log,
      codec: rt.codec,
      store: rt.store,
      readiness: [],
      processing: { store: rt.store, engine, logger: silentLogger, replicaId: 'reference-test' },
      analytics: { store: rt.store, logger: silentLogger, cache, references, snapshots: new AsOfSnapshots(engine, silentLogger) },
      tenantSettings,
    })
    server = http.createServer(app)
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const r = await post('/api/v2/cdp/ingest/orders', { events: orders })
    expect(r.status, await r.clone().text()).toBe(202)
    await settled("8 feature rows", async () => (await get(`/api/v2/cdp/analytics/churn?tenant_id=${tenant}`)).body.data?.overview?.distribution?.churned?.count === 8)
  }, 120_000)

  afterAll(async () => {
    await new Promise<void>((r) => server?.close(() => r()))
    await features?.stop()
    await projection?.stop()
    await rt?.close()
  })

  it('a new tenant ages against the wall clock and adopts its first order currency', async () => {
    const before = today()
    const s = await get(`/api/v2/cdp/tenants/${tenant}/settings`)
    expect(s.status).toBe(200)
    expect(s.body.data).toMatchObject({ tenant_id: tenant, tenant_name: null, currency: 'GBP', reference_date: 'now' })
    // Every customer's last order is over 90 days before today.
    const l = await levels()
    expect(l).toMatchObject({ active: 0, at_risk: 0, churning: 0, churned: 8 })
    expect(l.metadata).toMatchObject({ reference_date_setting: 'now', reference_date_source: 'setting' })
    // Today's date (either side of a midnight the requests may straddle).
    expect([before, today()]).toContain(s.body.data.effective_reference_date)
    expect([before, today()]).toContain(l.metadata.reference_date)
  })

  it('settings are validated: 400 with field errors, nothing changed', async () => {
    const r = await put(`/api/v2/cdp/tenants/${tenant}/settings`, { reference_date: 'yesterday', currency: 'pounds', colour: 'red' })
    expect(r.status).toBe(400)
    const body = (await r.json()) as any
    expect(body.success).toBe(false)
    expect(body.details.errors.map((e: { path: string }) => e.path).sort()).toEqual(['', 'currency', 'reference_date'])
    expect((await put(`/api/v2/cdp/tenants/${tenant}/settings`, { reference_date: '2011-02-30' })).status).toBe(400)
    expect((await put(`/api/v2/cdp/tenants/abc/settings`, {})).status).toBe(400)
    // A fixed date must have come: from 1990-01-01 to today.
    expect((await put(`/api/v2/cdp/tenants/${tenant}/settings`, { reference_date: '2999-01-01' })).status).toBe(400)
    expect((await get(`/api/v2/cdp/analytics/churn?tenant_id=${tenant}&as_of=1970-01-01`)).status).toBe(400)
    // The currency of a tenant with orders cannot change: 409.
    const locked = await put(`/api/v2/cdp/tenants/${tenant}/settings`, { currency: 'EUR' })
    expect(locked.status).toBe(409)
    expect(((await locked.json()) as any).details.errors[0].code).toBe('currency_locked')
    expect((await get(`/api/v2/cdp/tenants/${tenant}/settings`)).body.data.reference_date).toBe('now')
    expect((await get(`/api/v2/cdp/tenants/99999999/settings`)).status).toBe(404)
  })

  it('data_end: churn levels as of 2011-12-09, two per level, and the name shows in the settings', async () => {
    const r = await put(`/api/v2/cdp/tenants/${tenant}/settings`, { reference_date: 'data_end', tenant_name: 'UCI-like shop' })
    expect(r.status).toBe(200)
    expect(((await r.json()) as any).data).toMatchObject({ reference_date: 'data_end', tenant_name: 'UCI-like shop', currency: 'GBP', effective_reference_date: '2011-12-09' })
    await features.tick()
    const l = await levels()
    expect(l).toEqual({ active: 2, at_risk: 2, churning: 2, churned: 2, metadata: { reference_date: '2011-12-09', reference_date_setting: 'data_end', reference_date_source: 'setting' } })
    // The stored rows agree: recency counted from the data's end.
    const rs = await rt.store.query({ query: 'SELECT customer_id, recency_days FROM customer_features FINAL WHERE tenant_id = {t:UInt64} ORDER BY customer_id', query_params: { t: tenant }, format: 'JSONEachRow' })
    expect((await rs.json<{ recency_days: number }>()).map((x) => x.recency_days)).toEqual(OFFSETS)
  })

  it('as_of answers one request as of that day (later orders left out) without changing the setting', async () => {
    // On 2011-06-30 only customer 8's last order (2011-05-23, 38 days before) had happened.
    const l = await levels('&as_of=2011-06-30')
    expect(l).toEqual({ active: 0, at_risk: 1, churning: 0, churned: 7, metadata: { reference_date: '2011-06-30', reference_date_setting: '2011-06-30', reference_date_source: 'as_of' } })
    const list = await get(`/api/cdp/v2/customers?tenant_id=${tenant}&as_of=2011-06-30&limit=1000`)
    expect(list.status).toBe(200)
    expect(list.body.metadata.reference_date).toBe('2011-06-30')
    const p = await post(`/api/v2/cdp/process/${tenant}?as_of=2011-06-30`, { analyses: ['churn'] })
    expect(p.status).toBe(200)
    const body = (await p.json()) as any
    expect(body.results.churn).toMatchObject({ processed: 8, at_risk: 1, churn_rate: 0.875 })
    expect(body.metadata).toEqual({ reference_date: '2011-06-30', reference_date_setting: '2011-06-30', reference_date_source: 'as_of' })
    expect((await post(`/api/v2/cdp/process/${tenant}?as_of=June`, { analyses: ['churn'] })).status).toBe(400)
    expect((await get(`/api/v2/cdp/analytics/churn?tenant_id=${tenant}&as_of=2011-13-01`)).status).toBe(400)
    // The tenant's own rows and setting are untouched.
    expect((await levels()).metadata.reference_date).toBe('2011-12-09')
    expect((await get(`/api/v2/cdp/tenants/${tenant}/settings`)).body.data.reference_date).toBe('data_end')
  })

  it('a processing run ages against the setting too', async () => {
    const p = await post(`/api/v2/cdp/process/${tenant}`, { analyses: ['churn'], force: true })
    expect(p.status).toBe(200)
    const body = (await p.json()) as any
    expect(body.results.churn).toMatchObject({ processed: 8, at_risk: 4, churn_rate: 0.25 })
    expect(body.metadata.reference_date).toBe('2011-12-09')
  })

  it('money: another currency is refused, a blank one takes the tenant currency, a refund above what was paid is refused', async () => {
    const usd = await post('/api/v2/cdp/ingest/orders', { events: [{ tenant_id: tenant, customer_id: 1, order_id: 'X1', total: 10, currency: 'USD', occurred_at: DATA_END }] })
    expect(usd.status).toBe(400)
    expect(((await usd.json()) as any).details.errors).toEqual([{ index: 0, path: 'currency', code: 'currency_mismatch', message: "USD is not the tenant's currency GBP; amounts in different currencies are never summed" }])
    // The placed total of L1 is 50.00: a refund of 60 is more than was paid.
    const refund = await post('/api/v2/cdp/ingest/orders', { events: [{ tenant_id: tenant, customer_id: 1, order_id: 'L1', event_type: 'refunded', total: 0, refunded_amount: 60, occurred_at: DATA_END + 1000, placed_at: DATA_END }] })
    expect(refund.status).toBe(400)
    expect(((await refund.json()) as any).details.errors[0]).toMatchObject({ index: 0, path: 'refunded_amount', code: 'invalid_refund' })
    const placed = await post('/api/v2/cdp/ingest/orders', { events: [{ tenant_id: tenant, customer_id: 1, order_id: 'P1', event_type: 'placed', total: 100, refunded_amount: 200, occurred_at: DATA_END }] })
    expect(placed.status).toBe(400)
    // A credit note of 30.00 for customer 1 (150.00 spent): net 120.00; still 2 orders.
    const credit = await post('/api/v2/cdp/ingest/orders', { events: [{ tenant_id: tenant, customer_id: 1, order_id: 'C1', total: -30, occurred_at: DATA_END }] })
    expect(credit.status).toBe(202)
    await settled('the credit note in customer 1', async () => {
      const rs = await rt.store.query({ query: 'SELECT toString(monetary) AS m, frequency FROM customer_features FINAL WHERE tenant_id = {t:UInt64} AND customer_id = 1', query_params: { t: tenant }, format: 'JSONEachRow' })
      const [row] = await rs.json<{ m: string; frequency: number }>()
      return row?.m === '120' && row.frequency === 2
    })
    const rs = await rt.store.query({ query: "SELECT currency, event_type FROM order_events WHERE tenant_id = {t:UInt64} AND order_id = 'C1'", query_params: { t: tenant }, format: 'JSONEachRow' })
    expect(await rs.json()).toEqual([{ currency: 'GBP', event_type: 'credit_note' }])

    // The credit note cancelled: it credits nothing, in the stream and in the batch recompute alike.
    const cancel = await post('/api/v2/cdp/ingest/orders', { events: [{ tenant_id: tenant, customer_id: 1, order_id: 'C1', event_type: 'cancelled', total: 0, occurred_at: DATA_END + 2000, placed_at: DATA_END }] })
    expect(cancel.status).toBe(202)
    const monetary = async () => {
      const r = await rt.store.query({ query: 'SELECT toString(monetary) AS m FROM customer_features FINAL WHERE tenant_id = {t:UInt64} AND customer_id = 1', query_params: { t: tenant }, format: 'JSONEachRow' })
      return (await r.json<{ m: string }>())[0]?.m
    }
    await settled('the cancelled credit note', async () => (await monetary()) === '150')
    await settled('the cancelled credit note in the projection', async () => {
      const r = await rt.store.query({ query: "SELECT is_cancelled FROM orders FINAL WHERE tenant_id = {t:UInt64} AND order_id = 'C1'", query_params: { t: tenant }, format: 'JSONEachRow' })
      return (await r.json<{ is_cancelled: number }>())[0]?.is_cancelled === 1
    })
    expect((await post(`/api/v2/cdp/process/${tenant}`, { analyses: ['rfm'], force: true })).status).toBe(200)
    expect(await monetary()).toBe('150')
  })

  it('two first batches of a new tenant in two currencies: one is adopted, the other refused, never both accepted', async () => {
    const fresh = tenant + 100_000
    const batch = (currency: string, n: number) => ({ events: [{ tenant_id: fresh, customer_id: n, order_id: `R${currency}`, total: 10, currency, occurred_at: DATA_END }] })
    const [a, b] = await Promise.all([post('/api/v2/cdp/ingest/orders', batch('GBP', 1)), post('/api/v2/cdp/ingest/orders', batch('EUR', 2))])
    expect([a.status, b.status].sort()).toEqual([202, 400])
    const refused = (await (a.status === 400 ? a : b).json()) as any
    expect(refused.details.errors[0].code).toBe('currency_mismatch')
    const adopted = a.status === 202 ? 'GBP' : 'EUR'
    expect((await get(`/api/v2/cdp/tenants/${fresh}/settings`)).body.data.currency).toBe(adopted)
  })

  it('a tenant from before settings existed is held to the currency its stored orders are in', async () => {
    const old = tenant + 200_000
    // Orders projected before the upgrade (in ARS, the old default); no settings row.
    await rt.store.insert({
      table: 'orders',
      format: 'JSONEachRow',
      values: [{ tenant_id: old, customer_id: 1, order_id: 'OLD-1', last_event_id: 'e1', status: 'paid', total: '10.00', refunded_amount: null, currency: 'ARS', items_count: 0, placed_at: '2011-01-03 12:00:00.000', updated_at: '2011-01-03 12:00:00.000', is_cancelled: 0, source: 'test', version: 1 }],
    })
    const usd = await post('/api/v2/cdp/ingest/orders', { events: [{ tenant_id: old, customer_id: 1, order_id: 'NEW-1', total: 10, currency: 'USD', occurred_at: DATA_END }] })
    expect(usd.status).toBe(400)
    expect(((await usd.json()) as any).details.errors[0]).toMatchObject({ path: 'currency', code: 'currency_mismatch' })
    // A blank currency takes the stored orders' one; the settings now say so and it cannot change.
    expect((await post('/api/v2/cdp/ingest/orders', { events: [{ tenant_id: old, customer_id: 1, order_id: 'NEW-2', total: 10, occurred_at: DATA_END }] })).status).toBe(202)
    expect((await get(`/api/v2/cdp/tenants/${old}/settings`)).body.data.currency).toBe('ARS')
    expect((await put(`/api/v2/cdp/tenants/${old}/settings`, { currency: 'USD' })).status).toBe(409)
  })

  it('back to now: the tenant ages as today', async () => {
    expect((await put(`/api/v2/cdp/tenants/${tenant}/settings`, { reference_date: 'now' })).status).toBe(200)
    await features.tick()
    expect(await levels()).toMatchObject({ active: 0, at_risk: 0, churning: 0, churned: 8 })
  })

  it('the tenant listing names the tenant with its customers, ascending, once', async () => {
    const r = await get('/api/v2/cdp/tenants')
    expect(r.status).toBe(200)
    const mine = r.body.data.filter((t: { tenant_id: number }) => t.tenant_id === tenant)
    expect(mine).toEqual([{ tenant_id: tenant, tenant_name: 'UCI-like shop', customers: 8 }])
    const ids: number[] = r.body.data.map((t: { tenant_id: number }) => t.tenant_id)
    expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b))
    expect(r.body.count).toBe(ids.length)
  })
})
