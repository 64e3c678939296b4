import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { Writable } from 'node:stream'
import type { AddressInfo } from 'node:net'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { openStore, type Store } from '../../common/store/clickhouse.ts'
import { runPipeline, type RunningPipeline } from '../../common/runtime/pipeline.ts'
import { createLogger } from '../../common/logger.ts'
import { parseKeyring, type SecretBox } from '../../common/secrets.ts'
import { projectionPipeline } from '../../pipelines/projection/pipeline.ts'
import { runFeatures } from '../../pipelines/features/run.ts'
import { runConnectors } from '../../pipelines/connectors/run.ts'
import { mailBody, startSmtpServer } from '../smtp.ts'
import { SyncQueue, type SyncJob } from '../../pipelines/connectors/queue.ts'
import { SecretDecryptError } from '../../common/secrets.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import { createSyncSource } from '../../pipelines/connectors/sources/source.ts'
import { createApp } from '../../services/api/app.ts'
import { ApiKeyStore } from '../../common/store/api-keys.ts'
import { integrationsRouter } from '../../services/api/integrations/router.ts'
import * as commerceSim from '../../services/simulators/commerce-platform/index.ts'
import * as marketplaceSim from '../../services/simulators/marketplace/index.ts'
import type { ConnectorEndpoints } from '../../pipelines/connectors/sources/types.ts'
import { TOPICS } from '../../common/topics.ts'
import { groupLag } from '../../common/eventlog/port.ts'
import { testConfig, tmpDir, uniqueName, waitFor } from '../helpers.ts'

const ADMIN = 'test-admin-token-connectors-0123'
const BASE = '/api/v2/tenant-integrations'
const SIM_NOW = Date.UTC(2025, 5, 1)
const SIM_END = new Date(SIM_NOW)
/** The runners' clock: after the simulators' data, moved by hand (leases, retries, schedules). */
const clock = { t: SIM_NOW + 3_600_000 }
const now = () => clock.t
const WEBHOOK_SECRET = 'sync-webhook-secret-0123456789abcdef'
const TENANT = 700_000 + Math.floor(Math.random() * 100_000)

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

let store: Store
let rt: Runtime
let box: SecretBox
let api: string
let endpoints: ConnectorEndpoints
let shop: commerceSim.RunningCommercePlatformSimulator
let big: commerceSim.RunningCommercePlatformSimulator
let market: marketplaceSim.RunningMarketplaceSimulator
let projection: RunningPipeline
/** Receives the sync notifications. */
let hookUrl: string
const projectionGroup = uniqueName('proj')
const servers: http.Server[] = []
const stops: (() => Promise<void>)[] = []
const hooks: { headers: http.IncomingHttpHeaders; raw: string }[] = []
const analysed: number[] = []
const logLines: string[] = []

const logger = createLogger({
  level: 'debug',
  destination: new Writable({
    write(chunk, _e, cb) {
      logLines.push(String(chunk))
      cb()
    },
  }),
})

async function listen(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${api}${path}`, { method, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : {} }
}

async function runner(over: Partial<Parameters<typeof runConnectors>[1]> = {}) {
  // The webhook receiver listens on 127.0.0.1: allowed here as in development.
  const r = await runConnectors(rt, { secrets: box, triggerAnalysis: async (t) => void analysed.push(t), endpoints, pollMs: 3_600_000, now, leaseMs: 60_000, runnerId: uniqueName('runner'), allowPrivateWebhooks: true, ...over })
  stops.push(() => r.stop())
  return r
}

async function scalar(sql: string, params: Record<string, unknown> = {}): Promise<number> {
  const rs = await store.query({ query: sql, query_params: params, format: 'JSONEachRow' })
  const [row] = await rs.json<{ n: number | string }>()
  return Number(row?.n ?? 0)
}
const distinctOrders = (tenant: number) => scalar('SELECT uniqExact(order_id) AS n FROM orders FINAL WHERE tenant_id = {t:UInt64}', { t: tenant })
const orderEvents = (tenant: number) => scalar('SELECT count() AS n FROM order_events FINAL WHERE tenant_id = {t:UInt64}', { t: tenant })
const customers = (tenant: number) => scalar('SELECT count() AS n FROM customers FINAL WHERE tenant_id = {t:UInt64}', { t: tenant })

async function create(tenant: number, body: Json): Promise<number> {
  const r = await call('POST', BASE, { tenant_id: tenant, ...body })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body.data.id
}

const queue = () => new SyncQueue(store, now)

/** The projection has committed everything the topics hold (so a count now includes every published event). */
async function caughtUp(): Promise<boolean> {
  return (await groupLag(rt.log, projectionGroup, TOPICS.orders.name)) === 0 && (await groupLag(rt.log, projectionGroup, TOPICS.customers.name)) === 0
}
const job = async (id: number, syncId: string) => (await queue().get(id, syncId))!

/** Visible orders and events of a commerce simulator at its clock, as the connector publishes them. */
function expected(sim: commerceSim.RunningCommercePlatformSimulator) {
  const rows = sim.state.ordersIn({ updated: {}, created: {} })
  const ids = new Set(rows.map((o) => o.order.seq))
  let events = 0
  for (const seq of ids) {
    const o = sim.state.order(seq)!
    events += 1 + (o.deliveredAt !== null || o.refund ? 1 : 0) + (o.cancelledAt !== null ? 1 : 0) + (o.refund ? 1 : 0)
  }
  return { orders: ids.size, events }
}

beforeAll(async () => {
  store = await openStore({ database: 'cdp', chdbPath: tmpDir() })
  rt = await openRuntime(testConfig('distributed'), logger, { store })
  box = parseKeyring(`k1:${'3c'.repeat(32)}`)
  // This shop lives on the runners' clock (new orders, incremental windows); the others stand still.
  shop = await commerceSim.start({ customers: 60, end: SIM_END, now, anomalies: { duplicateOrders: 3, totalMismatches: 2, guestCustomers: 2 } })
  big = await commerceSim.start({ accountName: 'bigshop', appKeys: [{ appKey: 'appkey-bigshop-BIG0001', appToken: 'big-app-token-0123456789abcdef' }], customers: 150, end: SIM_END, now: () => SIM_NOW, seed: 'big' })
  market = await marketplaceSim.start({ customers: 40, end: SIM_END, now: () => SIM_NOW })
  endpoints = { commercePlatform: shop.url, marketplace: market.url, searchAds: 'http://127.0.0.1:9', socialAds: 'http://127.0.0.1:9' }
  hookUrl = await listen((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      hooks.push({ headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') })
      res.writeHead(204).end()
    })
  })
  const keys = new ApiKeyStore(store)
  // One API per commerce simulator: the base URL is per deployment, not per integration.
  api = await listen(createApp({ logger, log: rt.log, codec: rt.codec, readiness: [], auth: { adminToken: ADMIN, keys }, integrations: integrationsRouter({ store, secrets: box, allowPrivateWebhooks: true, endpoints, logger, now }) }))
  projection = await runPipeline(projectionPipeline(store, { name: projectionGroup }), { log: rt.log, codec: rt.codec, logger, fromBeginning: true, maxBatch: 5000 })
})
afterAll(async () => {
  for (const s of stops.reverse()) await s().catch(() => {})
  await projection?.stop()
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()))
  await Promise.all([shop?.close(), big?.close(), market?.close()])
  await rt?.close()
  await store?.close()
})


describe('a full sync from the commerce platform', () => {
  let id: number
  let syncId: string

  // Its waits are bounded one by one; the whole needs more than the default minute on a loaded machine.
  it('publishes its customers then orders to Kafka, triggers the analysis and posts a signed notification', { timeout: 300_000 }, async () => {
    id = await create(TENANT, { integration_type: 'commerce_platform', account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken, configuration: { initial_sync: false, webhook_url: hookUrl, webhook_secret: WEBHOOK_SECRET, sync_interval: 'manual' } })
    const q = await call('POST', `${BASE}/${id}/sync`, { sync_type: 'full', entities: ['products', 'customers', 'orders'] })
    expect(q.status).toBe(202)
    syncId = q.body.data.sync_id
    const r = await runner()
    const t0 = performance.now()
    expect(await r.runOnce()).toBe(1)
    const ms = performance.now() - t0

    const j = await job(id, syncId)
    expect(j).toMatchObject({ status: 'success', attempt: 1, failures: 0, error: null })
    const { orders, events } = expected(shop)
    const s = j.stats!
    expect(s.entities.customers).toEqual({ pages: 1, received: 58, expected: 58, published: 58 })
    expect(s.entities.orders).toMatchObject({ received: orders + 3, expected: orders + 3, published: orders })
    expect(s.entities.products!.published).toBeGreaterThan(10)
    expect(s.events_published).toEqual({ customers: 58 + 2, orders: events })
    expect(s.integrity).toMatchObject({ duplicates: 3, total_mismatches: 2, unknown_customers: 2, invalid_records: 0, count_mismatches: [] })
    expect(s.integrity.samples.unknown_customers).toHaveLength(2)
    expect(s.analysis_triggered).toBe(true)
    expect(analysed).toContain(TENANT)

    // The projection reads them back from Kafka: every order and customer, each once.
    await waitFor(async () => (await distinctOrders(TENANT)) === orders && (await customers(TENANT)) === 60, { what: 'projected orders', timeoutMs: 60_000 })
    expect(await orderEvents(TENANT)).toBe(events)

    // The feature pipeline scores them (RFM per customer): the analytics read these rows.
    const group = uniqueName('features')
    let featuresNow = clock.t
    const features = await runFeatures(rt, { now: () => featuresNow, tickMs: 3_600_000, name: group })
    try {
      await waitFor(async () => (await groupLag(rt.log, group, TOPICS.orders.name)) + (await groupLag(rt.log, group, TOPICS.customers.name)) === 0, { what: 'features caught up', timeoutMs: 60_000 })
      featuresNow += 3_600_000 // an hour later the punctuator refreshes the quintile thresholds and scores
      await features.tick()
    } finally {
      await features.stop()
    }
    const rs = await store.query({
      query: 'SELECT count() AS n, sum(frequency) AS f, countIf(rfm_score IS NOT NULL) AS scored FROM customer_features FINAL WHERE tenant_id = {t:UInt64}',
      query_params: { t: TENANT },
      format: 'JSONEachRow',
    })
    const [f] = await rs.json<{ n: number; f: number; scored: number }>()
    expect(Number(f!.n)).toBe(60)
    expect(Number(f!.f)).toBeGreaterThan(orders / 2)
    expect(Number(f!.f)).toBeLessThanOrEqual(orders)
    expect(Number(f!.scored)).toBeGreaterThan(0)

    // The notification: signed over its raw body with the integration's secret.
    await waitFor(async () => hooks.some((h) => h.raw.includes(syncId)), { what: 'webhook' })
    const hook = hooks.find((h) => h.raw.includes(syncId))!
    const want = `sha256=${createHmac('sha256', WEBHOOK_SECRET).update(hook.raw).digest('hex')}`
    expect(timingSafeEqual(Buffer.from(String(hook.headers['x-cdp-signature'])), Buffer.from(want))).toBe(true)
    expect(hook.headers['x-cdp-event']).toBe('sync.completed')
    expect(JSON.parse(hook.raw)).toMatchObject({ event: 'sync.completed', sync_id: syncId, integration_id: id, tenant_id: TENANT, status: 'success', stats: { events_published: { orders: events } } })
    expect((await job(id, syncId)).notification).toMatchObject({ status: 'delivered', http_status: 204, signed: true })
    process.stderr.write(`[connectors] full sync: ${orders} orders (${events} events) and 60 customers in ${Math.round(ms)} ms\n`)
  })

  it('statistics, sync_status and health reflect the run', async () => {
    const d = (await call('GET', `${BASE}/integration/${id}`)).body.data
    expect(d).toMatchObject({ sync_status: 'success', last_sync: expect.any(String), statistics: { total_syncs: 1, successful_syncs: 1, failed_syncs: 0, last_error: null, avg_sync_time: expect.stringMatching(/^\d+(\.\d)?s$/) } })
    const h = (await call('GET', `${BASE}/health`)).body.data
    expect(h.by_type.commerce_platform.last_24h_syncs).toBeGreaterThanOrEqual(1)
  })

  it('an incremental sync reads only what changed since the watermark', async () => {
    shop.state.addOrder(1, [{ sku: 'ALM-0203', quantity: 2 }], clock.t - 60_000)
    const q = await call('POST', `${BASE}/${id}/sync`, { sync_type: 'incremental', entities: ['customers', 'orders'] })
    const r = await runner()
    await r.runOnce()
    const j = await job(id, q.body.data.sync_id)
    expect(j.status).toBe('success')
    // The window starts 10 minutes before the watermark: the new order, nothing older (listed
    // twice by the platform's pagination overlap, published once).
    expect(j.stats!.entities.orders).toMatchObject({ received: 2, published: 1 })
    expect(j.stats!.integrity.duplicates).toBe(1)
    expect(j.stats!.entities.customers).toMatchObject({ received: 0 })
    const { orders } = expected(shop)
    await waitFor(async () => (await distinctOrders(TENANT)) === orders, { what: 'the new order' })
  })
})

describe('a sync killed halfway', () => {
  it('resumes from its checkpoint in another runner; the rerun counts no order twice', async () => {
    const tenant = TENANT + 1
    const e = { ...endpoints, commercePlatform: big.url }
    const bigApi = await listen(createApp({ logger, log: rt.log, codec: rt.codec, readiness: [], auth: { adminToken: ADMIN, keys: new ApiKeyStore(store) }, integrations: integrationsRouter({ store, secrets: box, allowPrivateWebhooks: true, endpoints: e, logger, now }) }))
    const res = await fetch(`${bigApi}${BASE}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tenant_id: tenant, integration_type: 'commerce_platform', account_name: 'bigshop', environment: 'commerce_stable', app_key: 'appkey-bigshop-BIG0001', app_token: 'big-app-token-0123456789abcdef', configuration: { batch_size: 25, sync_interval: 'manual' } }),
    })
    const created = (await res.json()) as Json
    const id = created.data.id as number
    const syncId = created.data.initial_sync.sync_id as string
    const { orders, events } = expected(big)
    expect(orders).toBeGreaterThan(100)

    // Runner A: its connection hangs for good on the 4th page of orders, as if the process died there.
    let orderPages = 0
    let release: (err: Error) => void = () => {}
    const hung = new Promise<never>((_, reject) => (release = reject))
    const frozen = clock.t
    const a = await runConnectors(rt, {
      secrets: box, triggerAnalysis: async () => {}, endpoints: e, pollMs: 3_600_000, now: () => frozen, leaseMs: 60_000, runnerId: 'runner-A',
      fetch: (input, init) => (String(input).includes('/oms/orders') && ++orderPages > 3 ? hung : fetch(input, init)),
    })
    const aTick = a.runOnce().catch(() => 0)
    await waitFor(async () => {
      const j = await job(id, syncId)
      return j.checkpoint?.stats.entities.orders?.pages === 3 && j.checkpoint.cursor !== null && j.entities[j.checkpoint.entity_index] === 'orders'
    }, { what: 'three pages of orders checkpointed', timeoutMs: 60_000 })
    const beforeKill = (await job(id, syncId)).stats!
    expect(beforeKill.entities.orders!.published).toBe(75)

    // Runner B, after the lease: takes the job over and finishes it from page 4.
    clock.t += 120_000
    const b = await runner({ endpoints: e, runnerId: 'runner-B' })
    await b.runOnce()
    const j = await job(id, syncId)
    expect(j).toMatchObject({ status: 'success', attempt: 2, runner_id: '' })
    expect(j.stats!.entities.orders).toMatchObject({ received: orders, published: orders, pages: Math.ceil(orders / 25) })
    const runs = await queue().runs(id, syncId)
    expect(runs.map((r) => [r.attempt, r.status])).toEqual([[1, 'interrupted'], [2, 'success']])
    await waitFor(async () => (await distinctOrders(tenant)) === orders, { what: 'all orders projected', timeoutMs: 60_000 })
    expect(await orderEvents(tenant)).toBe(events)

    // Rerun the whole sync: every event is published again, identical, and counted once.
    const rerun = await fetch(`${bigApi}${BASE}/${id}/sync`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ sync_type: 'full' }) })
    const rerunId = ((await rerun.json()) as Json).data.sync_id as string
    await b.runOnce()
    expect((await job(id, rerunId)).status).toBe('success')
    await waitFor(caughtUp, { what: 'the projection to consume the rerun', timeoutMs: 60_000 })
    expect(await distinctOrders(tenant)).toBe(orders)
    expect(await orderEvents(tenant)).toBe(events)

    // Runner A wakes up (its connection fails): the job is no longer its own, it writes nothing.
    release(new Error('connection reset'))
    await aTick
    expect((await job(id, rerunId)).status).toBe('success')
    expect((await job(id, syncId)).status).toBe('success')
    await a.stop()
  })
})

describe('failures are recorded with the spec’s error and solution', () => {
  let id: number

  it('RATE_LIMIT_EXCEEDED: the attempt fails with retry_after, the job waits for it, then resumes', async () => {
    const tenant = TENANT + 2
    id = await create(tenant, { integration_type: 'commerce_platform', account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken, configuration: { initial_sync: false, sync_interval: 'manual', webhook_url: hookUrl } })
    const syncId = (await call('POST', `${BASE}/${id}/sync`, { entities: ['orders'] })).body.data.sync_id as string
    shop.state.setFaults({ rate429: 1, retryAfterSec: 60 })
    const r = await runner()
    try {
      await r.runOnce()
    } finally {
      shop.state.setFaults({ rate429: 0 })
    }
    let j: SyncJob = await job(id, syncId)
    expect(j).toMatchObject({ status: 'queued', failures: 1, error_code: 'RATE_LIMIT_EXCEEDED', error: { error: 'RATE_LIMIT_EXCEEDED', retry_after: 60, solution: expect.any(String) } })
    expect(j.not_before).toBe(clock.t + 60_000)
    let d = (await call('GET', `${BASE}/integration/${id}`)).body.data
    expect(d.sync_status).toBe('failed')
    expect(d.statistics).toMatchObject({ total_syncs: 1, failed_syncs: 1, last_error: { error: 'RATE_LIMIT_EXCEEDED', retry_after: 60, solution: expect.any(String), message: expect.any(String) } })
    expect(d.current_sync).toMatchObject({ status: 'queued', retry_at: new Date(clock.t + 60_000).toISOString() })
    expect(await r.runOnce()).toBe(0)
    clock.t += 61_000
    expect(await r.runOnce()).toBe(1)
    j = await job(id, syncId)
    expect(j).toMatchObject({ status: 'success', attempt: 2, failures: 1 })
    d = (await call('GET', `${BASE}/integration/${id}`)).body.data
    expect(d).toMatchObject({ sync_status: 'success', statistics: { total_syncs: 2, successful_syncs: 1, failed_syncs: 1 } })
  })

  it('SYNC_TIMEOUT: with its duration; no attempts left, the job fails, alerts and notifies by webhook and e-mail', async () => {
    await call('PUT', `${BASE}/${id}`, { configuration: { retry_attempts: 0, batch_size: 10, notification_emails: ['ops@shop.example'] } })
    const syncId = (await call('POST', `${BASE}/${id}/sync`, { entities: ['orders'] })).body.data.sync_id as string
    shop.state.setFaults({ latencyMs: 150 })
    const smtp = await startSmtpServer()
    const r = await runner({ timeoutMs: 1000, mail: { url: smtp.url, from: 'CDP <cdp@shop.example>' } })
    try {
      await r.runOnce()
    } finally {
      shop.state.setFaults({ latencyMs: 0 })
      await smtp.close()
    }
    // The e-mail went through the SMTP server, to the configured recipient, saying what failed.
    expect(smtp.received).toHaveLength(1)
    expect(smtp.received[0]!.to).toEqual(['ops@shop.example'])
    expect(smtp.received[0]!.raw).toMatch(/^Subject: \[CDP\] commerce_platform sync failed: integration \d+, tenant \d+\r?$/m)
    expect(mailBody(smtp.received[0]!.raw)).toContain(`sync ${syncId} of integration ${id}`)
    expect(mailBody(smtp.received[0]!.raw)).toContain('Error: SYNC_TIMEOUT')
    expect((await job(id, syncId)).notification!.email).toMatchObject({ status: 'delivered', recipients: ['ops@shop.example'], attempts: 1 })
    const j = await job(id, syncId)
    expect(j).toMatchObject({ status: 'failed', error: { error: 'SYNC_TIMEOUT', duration: '1s', solution: expect.any(String) } })
    expect(j.checkpoint!.cursor).not.toBeNull()
    const h = (await call('GET', `${BASE}/health`)).body.data
    const alert = h.alerts.find((x: Json) => x.integration_id === id)
    expect(alert).toMatchObject({ tenant_id: TENANT + 2, type: 'sync_failure', message: expect.stringContaining('SYNC_TIMEOUT'), since: expect.any(String) })
    await waitFor(async () => hooks.some((x) => x.raw.includes(syncId)), { what: 'failure notification' })
    const hook = hooks.find((x) => x.raw.includes(syncId))!
    expect(hook.headers['x-cdp-event']).toBe('sync.failed')
    expect(hook.headers['x-cdp-signature']).toBeUndefined()
    expect(JSON.parse(hook.raw).error).toMatchObject({ error: 'SYNC_TIMEOUT', duration: '1s' })
  })

  it('rejected stored credentials: INVALID_CREDENTIALS, not retried, validation_status invalid', async () => {
    const tenant = TENANT + 3
    const iid = await create(tenant, { integration_type: 'commerce_platform', account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken, configuration: { initial_sync: false, sync_interval: 'manual' } })
    const syncId = (await call('POST', `${BASE}/${iid}/sync`, {})).body.data.sync_id as string
    shop.state.appKeys.delete(commerceSim.DEFAULTS.appKey)
    try {
      await (await runner()).runOnce()
    } finally {
      shop.state.addAppKey({ appKey: commerceSim.DEFAULTS.appKey, appToken: commerceSim.DEFAULTS.appToken })
    }
    expect(await job(iid, syncId)).toMatchObject({ status: 'failed', failures: 1, error: { error: 'INVALID_CREDENTIALS' } })
    const d = (await call('GET', `${BASE}/integration/${iid}`)).body.data
    expect(d).toMatchObject({ validation_status: 'invalid', sync_status: 'failed' })
  })
})

describe('recurring syncs and the marketplace', () => {
  it('queues the due occurrence of sync_interval and syncs a marketplace, refreshing its token mid-way', async () => {
    const tenant = TENANT + 4
    const id = await create(tenant, { integration_type: 'marketplace', client_id: marketplaceSim.DEFAULTS.clientId, client_secret: marketplaceSim.DEFAULTS.clientSecret, redirect_uri: marketplaceSim.DEFAULTS.redirectUri, configuration: { initial_sync: false, sync_interval: 'hourly', batch_size: 20 } })
    const detail = (await call('GET', `${BASE}/integration/${id}`)).body.data
    const next = Date.parse(detail.next_scheduled_sync)
    expect(next - Date.parse(detail.created_at)).toBe(3_600_000)
    // Its access token expires after the second page of orders: the client refreshes it and goes on.
    let orderPages = 0
    const r = await runner({
      fetch: async (input, init) => {
        const res = await fetch(input, init)
        if (String(input).includes('/orders/search') && res.ok && ++orderPages === 2) market.state.expireAccessTokens()
        return res
      },
    })
    expect(await r.runOnce()).toBe(0)
    const from = market.state.requestLog.length
    clock.t = next + 1000
    expect(await r.runOnce()).toBe(1)
    const jobs = await queue().recent(id)
    expect(jobs[0]).toMatchObject({ kind: 'scheduled', sync_type: 'incremental', status: 'success', scheduled_for: next, sync_id: `sync_sched_${id}_${next}` })
    const visible = market.state.ordersIn({ updated: {}, created: {} }).length
    expect(jobs[0]!.stats!.entities.orders).toMatchObject({ published: visible })
    expect(orderPages).toBeGreaterThan(2)
    expect(market.state.requestLog.slice(from).filter((x) => x.status === 401).map((x) => x.error)).toEqual(['expired_token'])
    expect(market.state.requestLog.slice(from).filter((x) => x.path === '/oauth/token').length).toBe(2)
    await waitFor(async () => (await distinctOrders(tenant)) === visible, { what: 'marketplace orders projected', timeoutMs: 60_000 })
    const after = (await call('GET', `${BASE}/integration/${id}`)).body.data
    expect(Date.parse(after.next_scheduled_sync)).toBe(next + 3_600_000)
    expect(await r.runOnce()).toBe(0)
  })
})

describe('sync notifications: SSRF guard and secrets', () => {
  it('refuses loopback, private and link-local webhook destinations unless allowPrivateWebhooks; the sync still succeeds', async () => {
    const tenant = TENANT + 5
    const id = await create(tenant, { integration_type: 'commerce_platform', account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken, configuration: { initial_sync: false, sync_interval: 'manual', webhook_url: hookUrl } })
    const port = new URL(hookUrl).port
    const guarded = await runner({ allowPrivateWebhooks: false })
    for (const url of [hookUrl, `http://localhost:${port}/hook`, 'http://10.1.2.3/hook', 'http://169.254.169.254/latest/meta-data/', 'http://[::ffff:127.0.0.1]:' + port + '/', 'http://100.64.0.1/']) {
      expect((await call('PUT', `${BASE}/${id}`, { configuration: { webhook_url: url } })).status).toBe(200)
      const syncId = (await call('POST', `${BASE}/${id}/sync`, { entities: ['products'] })).body.data.sync_id as string
      expect(await guarded.runOnce()).toBe(1)
      const j = await job(id, syncId)
      expect(j.status, url).toBe('success')
      expect(j.notification, url).toMatchObject({ status: 'failed', url, http_status: null, attempts: 0, error: expect.stringMatching(/^refused: .*private or reserved address/) })
      expect(hooks.some((h) => h.raw.includes(syncId)), url).toBe(false)
    }
    // The same local receiver with the option on (development): delivered.
    await call('PUT', `${BASE}/${id}`, { configuration: { webhook_url: hookUrl } })
    const syncId = (await call('POST', `${BASE}/${id}/sync`, { entities: ['products'] })).body.data.sync_id as string
    await (await runner()).runOnce()
    expect((await job(id, syncId)).notification).toMatchObject({ status: 'delivered', http_status: 204 })
  })

  it('an integration secret that cannot be decrypted fails the notification instead of signing with the shared secret', async () => {
    const tenant = TENANT + 6
    const own = 'own-webhook-secret-that-is-lost-0123'
    const id = await create(tenant, { integration_type: 'commerce_platform', account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken, configuration: { initial_sync: false, sync_interval: 'manual', webhook_url: hookUrl, webhook_secret: own } })
    // A keyring that opens the credentials but not this integration's webhook secret.
    const broken = Object.create(box) as SecretBox
    broken.decrypt = (e, context) => {
      const plain = box.decrypt(e, context)
      if (plain === own) throw new SecretDecryptError(`no key ${e.key_id} in the keyring`)
      return plain
    }
    const syncId = (await call('POST', `${BASE}/${id}/sync`, { entities: ['products'] })).body.data.sync_id as string
    await (await runner({ secrets: broken, webhookSecret: 'shared-deployment-secret-0123456789' })).runOnce()
    const j = await job(id, syncId)
    expect(j.status).toBe('success')
    expect(j.notification).toMatchObject({ status: 'failed', signed: false, attempts: 0, error: expect.stringContaining('cannot be decrypted') })
    expect(hooks.some((h) => h.raw.includes(syncId))).toBe(false)
  })
})

/** A bigshop integration (created through an API whose endpoints point at the big simulator) and a queued orders sync. */
async function bigOrdersSync(tenant: number, batchSize: number): Promise<{ id: number; syncId: string }> {
  const bigApi = await listen(createApp({ logger, log: rt.log, codec: rt.codec, readiness: [], auth: { adminToken: ADMIN, keys: new ApiKeyStore(store) }, integrations: integrationsRouter({ store, secrets: box, allowPrivateWebhooks: true, endpoints: { ...endpoints, commercePlatform: big.url }, logger, now }) }))
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${bigApi}${BASE}${path}`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as Json }
  }
  const c = await post('', { tenant_id: tenant, integration_type: 'commerce_platform', account_name: 'bigshop', environment: 'commerce_stable', app_key: 'appkey-bigshop-BIG0001', app_token: 'big-app-token-0123456789abcdef', configuration: { initial_sync: false, sync_interval: 'manual', batch_size: batchSize } })
  expect(c.status, JSON.stringify(c.body)).toBe(201)
  const id = c.body.data.id as number
  const q = await post(`/${id}/sync`, { entities: ['orders'] })
  expect(q.status).toBe(202)
  return { id, syncId: q.body.data.sync_id as string }
}

describe('a runner that stalls past its lease', () => {
  it('writes neither a checkpoint nor a success once another runner took the job over', async () => {
    const tenant = TENANT + 7
    const { id, syncId } = await bigOrdersSync(tenant, 50)
    const e = { ...endpoints, commercePlatform: big.url }
    // Runner A stalls on its last page of orders; the answer comes after B finished the job.
    const lastPage = Math.ceil(expected(big).orders / 50)
    expect(lastPage).toBeGreaterThan(1)
    let pages = 0
    let resume: () => void = () => {}
    const gate = new Promise<void>((r) => (resume = r))
    const frozen = clock.t
    const aAnalysed: number[] = []
    const a = await runConnectors(rt, {
      secrets: box, triggerAnalysis: async (t) => void aAnalysed.push(t), endpoints: e, pollMs: 3_600_000, now: () => frozen, leaseMs: 60_000, runnerId: 'runner-stall-A',
      fetch: async (input, init) => {
        if (String(input).includes('/oms/orders') && ++pages === lastPage) await gate
        return fetch(input, init)
      },
    })
    stops.push(() => a.stop())
    const aTick = a.runOnce()
    await waitFor(async () => pages >= lastPage, { what: 'runner A stalled on its last page' })
    clock.t += 120_000
    await (await runner({ endpoints: e, runnerId: 'runner-stall-B' })).runOnce()
    const done = await job(id, syncId)
    expect(done).toMatchObject({ status: 'success', attempt: 2, runner_id: '' })
    resume()
    await aTick
    const after = await job(id, syncId)
    expect(after).toMatchObject({ status: 'success', attempt: 2, runner_id: '', finished_at: done.finished_at })
    expect(after.checkpoint).toEqual(done.checkpoint)
    expect(aAnalysed).toEqual([])
    const runs = await queue().runs(id, syncId)
    expect(runs.map((r) => [r.attempt, r.status]).sort()).toEqual([[1, 'interrupted'], [2, 'success']])
  })
})

describe('the heartbeat during a page', () => {
  it('persists the counts of the pages the checkpoint has passed, never half a page', async () => {
    const tenant = TENANT + 8
    const { id, syncId } = await bigOrdersSync(tenant, 25)
    // Publishing the 2nd page of orders takes long enough for heartbeats (every second) to write the job.
    let sends = 0
    let resume: () => void = () => {}
    const gate = new Promise<void>((r) => (resume = r))
    const slowLog: EventLog = Object.create(rt.log)
    slowLog.send = async (topic, records) => {
      if (topic === TOPICS.orders.name && ++sends === 2) await gate
      return rt.log.send(topic, records)
    }
    const r = await runConnectors({ ...rt, log: slowLog }, { secrets: box, triggerAnalysis: async () => {}, endpoints: { ...endpoints, commercePlatform: big.url }, pollMs: 3_600_000, now, leaseMs: 4_000, runnerId: uniqueName('runner') })
    stops.push(() => r.stop())
    const tick = r.runOnce()
    await waitFor(async () => sends >= 2, { what: 'the 2nd page publishing' })
    const before = performance.now()
    await waitFor(async () => (await job(id, syncId)).heartbeat_at !== null && performance.now() - before > 2_500, { what: 'heartbeats during the page', timeoutMs: 10_000 })
    const mid = await job(id, syncId)
    resume()
    await tick
    // One page read (25 orders) and its cursor: the stats written with it are that page's, whatever the heartbeat wrote.
    expect(mid.checkpoint!.stats.entities.orders).toMatchObject({ pages: 1, received: 25, published: 25 })
    expect(mid.stats!.entities.orders).toMatchObject({ pages: 1, received: 25, published: 25 })
    const j = await job(id, syncId)
    const { orders } = expected(big)
    expect(j.status).toBe('success')
    expect(j.stats!.entities.orders).toMatchObject({ received: orders, published: orders })
  })
})

describe('keyset paging over the updated window', () => {
  /** Every order id a source yields for the window, 10 a page, with `afterFirstPage` run between pages 1 and 2. */
  async function readOrders(source: ReturnType<typeof createSyncSource>, window: { from: null; to: number }, afterFirstPage: () => void): Promise<Set<string>> {
    const got = new Set<string>()
    let cursor: string | null = null
    let pages = 0
    do {
      const page = await source.page('orders', window, cursor, 10, new Map())
      for (const o of page.orders) got.add(o.externalId)
      if (++pages === 1) afterFirstPage()
      cursor = page.next
    } while (cursor !== null)
    return got
  }

  it('commerce platform: a record that changes between page 1 and page 2 moves no other record out of the sync', async () => {
    const t = { now: SIM_NOW }
    const sim = await commerceSim.start({ customers: 60, end: SIM_END, now: () => t.now, seed: 'keyset' })
    try {
      const window = { from: null, to: SIM_NOW }
      const want = sim.state.ordersIn({ updated: { to: window.to }, created: {} }).map((o) => o.order.seq)
      expect(want.length).toBeGreaterThan(30)
      const source = createSyncSource('commerce_platform', { account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken }, {}, { tenantId: 1, endpoints: { ...endpoints, commercePlatform: sim.url } })
      // After page 1 the shop cancels one of the orders already read: it leaves the window.
      const got = await readOrders(source, window, () => {
        t.now = SIM_NOW + 60_000
        sim.state.cancelOrder(want[3]!)
      })
      for (const seq of want) expect(got.has(commerceSim.orderIdOf(seq)), `order ${seq}`).toBe(true)
    } finally {
      await sim.close()
    }
  })

  it('marketplace: likewise with its offset-paged search', async () => {
    const t = { now: SIM_NOW }
    const sim = await marketplaceSim.start({ customers: 40, end: SIM_END, now: () => t.now, seed: 'keyset' })
    try {
      const window = { from: null, to: SIM_NOW }
      const want = sim.state.ordersIn({ updated: { to: window.to }, created: {} }).map((o) => marketplaceSim.orderIdOf(o.order.seq))
      expect(want.length).toBeGreaterThan(30)
      const source = createSyncSource('marketplace', { client_id: marketplaceSim.DEFAULTS.clientId, client_secret: marketplaceSim.DEFAULTS.clientSecret, redirect_uri: marketplaceSim.DEFAULTS.redirectUri }, {}, { tenantId: 1, endpoints: { ...endpoints, marketplace: sim.url }, now: () => t.now })
      const got = await readOrders(source, window, () => {
        t.now = SIM_NOW + 60_000
        sim.state.cancelOrder(want[3]!)
      })
      for (const oid of want) expect(got.has(String(oid)), `order ${oid}`).toBe(true)
    } finally {
      await sim.close()
    }
  })
})

describe('secrets', () => {
  it('no credential or webhook secret in any log line of the run', () => {
    expect(logLines.length).toBeGreaterThan(10)
    const secrets = [commerceSim.DEFAULTS.appToken, 'big-app-token-0123456789abcdef', marketplaceSim.DEFAULTS.clientSecret, WEBHOOK_SECRET]
    for (const l of logLines) for (const s of secrets) expect(l).not.toContain(s)
    for (const h of hooks) for (const s of secrets) expect(h.raw).not.toContain(s)
  })
})
