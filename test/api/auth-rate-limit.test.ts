import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import { Writable } from 'node:stream'
import type { AddressInfo } from 'node:net'
import type { Express } from 'express'
import type { Store } from '../../common/store/clickhouse.ts'
import { openEventLog } from '../../common/runtime/context.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { createLogger } from '../../common/logger.ts'
import { loadConfig, redactConfig } from '../../common/config.ts'
import { createApp } from '../../services/api/app.ts'
import { ApiKeyStore, hashKey, type CreatedKey } from '../../common/store/api-keys.ts'
import type { AuthDeps } from '../../services/api/auth.ts'
import { defaultRateLimits, isJobRequest, isOperationsPath, replicaShare } from '../../services/api/rate-limit.ts'
import { silentLogger, testConfig, migratedStore } from '../helpers.ts'
import { expectDocumented, expectErrorBody } from './documented.ts'

const ADMIN = 'test-admin-token-0123456789abcdef'

let store: Store
let log: EventLog
let codec: EventCodec
let keys: ApiKeyStore
let keyA: CreatedKey // tenant 1
let keyB: CreatedKey // tenant 2
const servers: http.Server[] = []

beforeAll(async () => {
  store = await migratedStore()
  ;({ log, codec } = await openEventLog(testConfig('embedded'), silentLogger))
  keys = new ApiKeyStore(store)
  keyA = await keys.create(1, 'tenant one')
  keyB = await keys.create(2, 'tenant two')
})
afterAll(async () => {
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()))
  await log?.close()
  await store?.close()
})

/** A clock the tests move by hand. */
function clock(start = Date.UTC(2025, 0, 1)) {
  let t = start
  return { now: () => t, advance: (ms: number) => void (t += ms) }
}

async function serve(overrides: Partial<AuthDeps> = {}): Promise<{ base: string; app: Express }> {
  const app = createApp({
    logger: silentLogger,
    log,
    codec,
    readiness: [{ name: 'store', check: async () => (await store.ping()).success }],
    analytics: { store, logger: silentLogger },
    auth: { adminToken: ADMIN, keys, ...overrides },
  })
  const server = http.createServer(app)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  servers.push(server)
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, app }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const get = (base: string, p: string, headers: Record<string, string> = {}) => fetch(`${base}${p}`, { headers })
const post = (base: string, p: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

const order = (tenant: number | string, id: string) => ({ tenant_id: tenant, customer_id: 7, order_id: id, currency: 'ARS', total: 10, occurred_at: '2025-03-01T12:00:00Z', items: [] })

/** The common error body; with the request's method, also the answer its operation documents (documented.ts). */
async function expectCommonError(res: Response, status: number, method?: string) {
  expect(res.status).toBe(status)
  const body = (await res.json()) as Record<string, unknown>
  expect(body).toMatchObject({ success: false, error: expect.any(String) })
  expect(body).toHaveProperty('details')
  expectErrorBody(body)
  if (method) expectDocumented(method, res.url, status, body)
  return body
}

describe('authentication', () => {
  let base: string
  beforeAll(async () => {
    ;({ base } = await serve())
  })

  it('401 with WWW-Authenticate and the common body without a usable bearer token; the token is never echoed', async () => {
    for (const headers of [{}, { authorization: 'Basic dXNlcjpwYXNz' }, { authorization: 'Bearer' }, bearer('cdp_1_not-a-real-key'), bearer(`${ADMIN}x`)]) {
      const res = await get(base, '/api/v2/cdp/analytics/rfm?tenant_id=1', headers)
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
      const body = await expectCommonError(res, 401, 'GET')
      expect(JSON.stringify(body)).not.toContain('not-a-real-key')
      expect(JSON.stringify(body)).not.toContain(ADMIN)
    }
    // A key of the right shape that was never issued.
    const forged = `cdp_1_${'A'.repeat(43)}`
    await expectCommonError(await get(base, '/api/v2/cdp/analytics/rfm?tenant_id=1', bearer(forged)), 401)
    // Every route family, including ones not mounted here, is behind the token.
    await expectCommonError(await post(base, '/api/v2/cdp/ingest/orders', { events: [order(1, 'X')] }), 401, 'POST')
    await expectCommonError(await post(base, '/api/v2/cdp/process/1', {}), 401, 'POST')
    await expectCommonError(await get(base, '/api/cdp/v2/customers?tenant_id=1'), 401, 'GET')
  })

  it('health, readiness, metrics and the API description stay public', async () => {
    expect((await get(base, '/health')).status).toBe(200)
    expect((await get(base, '/ready')).status).toBe(200)
    expect((await get(base, '/metrics')).status).toBe(200)
    for (const p of ['/openapi.json', '/docs']) expect([200, 301, 404]).toContain((await get(base, p)).status)
  })

  it('a tenant key reaches its tenant: query, path and ingest body', async () => {
    expect([200, 404]).toContain((await get(base, '/api/v2/cdp/analytics/rfm?tenant_id=1', bearer(keyA.key))).status)
    expect([200, 404]).toContain((await get(base, '/api/cdp/v2/customers?tenant_id=1', bearer(keyA.key))).status)
    // No processing router in this app: past auth means 404, not 401/403.
    expect((await post(base, '/api/v2/cdp/process/1', {}, bearer(keyA.key))).status).toBe(404)
    expect((await get(base, '/api/v2/cdp/process/status/1', bearer(keyA.key))).status).toBe(404)
    const res = await post(base, '/api/v2/cdp/ingest/orders', { events: [order(1, 'A-1'), order('1', 'A-2')] }, bearer(keyA.key))
    expect(res.status).toBe(202)
  })

  /** The documented operations among the 403 cases, by method (the others are not mounted here, or not routes). */
  const FORBIDDEN_METHODS: Record<string, string> = {
    analytics: 'GET',
    'analytics, upper-case path': 'GET',
    'analytics, repeated tenant_id': 'GET',
    'analytics, odd spelling': 'GET',
    customers: 'GET',
    'demographics alias': 'GET',
    process: 'POST',
    'process status': 'GET',
    'process schedule': 'POST',
    'process cancel': 'DELETE',
    ingest: 'POST',
    'ingest, one of many': 'POST',
    'ingest customers': 'POST',
    'audience syncs': 'GET',
    'audience sync create': 'POST',
    'other tenant the other way': 'GET',
  }

  it('a tenant key asking for another tenant gets 403 on every route family', async () => {
    const cases: [string, Promise<Response>][] = [
      ['analytics', get(base, '/api/v2/cdp/analytics/rfm?tenant_id=2', bearer(keyA.key))],
      ['analytics, upper-case path', get(base, '/API/v2/cdp/analytics/rfm?tenant_id=2', bearer(keyA.key))],
      ['analytics, repeated tenant_id', get(base, '/api/v2/cdp/analytics/rfm?tenant_id=1&tenant_id=2', bearer(keyA.key))],
      ['analytics, odd spelling', get(base, '/api/v2/cdp/analytics/rfm?tenant_id=0x2', bearer(keyA.key))],
      ['customers', get(base, '/api/cdp/v2/customers?tenant_id=2', bearer(keyA.key))],
      ['demographics alias', get(base, '/api/cdp/v2/analytics/demographics?tenant_id=2', bearer(keyA.key))],
      ['process', post(base, '/api/v2/cdp/process/2', {}, bearer(keyA.key))],
      ['process status', get(base, '/api/v2/cdp/process/status/2', bearer(keyA.key))],
      ['process schedule', post(base, '/api/v2/cdp/process/2/schedule', {}, bearer(keyA.key))],
      ['process cancel', fetch(`${base}/api/v2/cdp/process/2/cancel`, { method: 'DELETE', headers: bearer(keyA.key) })],
      ['ingest', post(base, '/api/v2/cdp/ingest/orders', { events: [order(2, 'B-1')] }, bearer(keyA.key))],
      ['ingest, one of many', post(base, '/api/v2/cdp/ingest/orders', { events: [order(1, 'A-3'), order(2, 'B-2')] }, bearer(keyA.key))],
      ['ingest customers', post(base, '/api/v2/cdp/ingest/customers', { events: [{ tenant_id: 2, customer_id: 1 }] }, bearer(keyA.key))],
      ['audience syncs', get(base, '/api/v2/cdp/audience-syncs?tenant_id=2', bearer(keyA.key))],
      ['audience sync create', post(base, '/api/v2/cdp/audience-syncs?tenant_id=1', { tenant_id: 2 }, bearer(keyA.key))],
      ['unknown route family', get(base, '/api/v2/cdp/not-a-route-family/2', bearer(keyA.key))],
      ['other tenant the other way', get(base, '/api/v2/cdp/analytics/clv?tenant_id=1', bearer(keyB.key))],
    ]
    for (const [what, p] of cases) {
      const res = await p
      expect(res.status, what).toBe(403)
      const body = await expectCommonError(res, 403, FORBIDDEN_METHODS[what])
      expect(JSON.stringify(body)).not.toContain(keyA.key)
    }
  })

  it('the admin token reaches every tenant', async () => {
    for (const t of [1, 2, 99]) expect([200, 404]).toContain((await get(base, `/api/v2/cdp/analytics/rfm?tenant_id=${t}`, bearer(ADMIN))).status)
    expect((await post(base, '/api/v2/cdp/ingest/orders', { events: [order(2, 'ADM-1'), order(3, 'ADM-2')] }, bearer(ADMIN))).status).toBe(202)
    expect((await post(base, '/api/v2/cdp/process/2', {}, bearer(ADMIN))).status).toBe(404)
  })

  it('errors keep the common body and never leak a stack or SQL', async () => {
    const res = await fetch(`${base}/api/v2/cdp/ingest/orders`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(keyA.key) }, body: '{nope' })
    const body = await expectCommonError(res, 400, 'POST')
    expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+|SELECT /)
  })
})

describe('key storage and revocation', () => {
  it('stores only hashes: the plain key appears nowhere in the table', async () => {
    const rs = await store.query({ query: 'SELECT * FROM api_keys', format: 'TabSeparatedWithNames' })
    const dump = await rs.text()
    expect(dump).toContain(hashKey(keyA.key))
    expect(dump).not.toContain(keyA.key)
    expect(dump).not.toContain(keyA.key.slice(-20))
    const listed = JSON.stringify(await keys.list(1))
    expect(listed).toContain(keyA.key_id)
    expect(listed).not.toContain(keyA.key)
    expect(listed).not.toContain(hashKey(keyA.key))
  })

  it('a revoked key is refused once the cache entry expires (60 s)', async () => {
    const c = clock()
    const { base } = await serve({ now: c.now })
    const k = await keys.create(3, 'to revoke')
    const url = '/api/v2/cdp/analytics/rfm?tenant_id=3'
    expect([200, 404]).toContain((await get(base, url, bearer(k.key))).status)
    expect(await keys.revoke(k.key_id)).toMatchObject({ key_id: k.key_id, revoked_at: expect.any(String) })
    expect(await keys.verify(k.key)).toBeNull()
    // Still cached: accepted until the entry expires.
    c.advance(59_000)
    expect([200, 404]).toContain((await get(base, url, bearer(k.key))).status)
    c.advance(1_001)
    await expectCommonError(await get(base, url, bearer(k.key)), 401)
    expect((await keys.list(3))[0]).toMatchObject({ key_id: k.key_id, revoked_at: expect.any(String) })
    // Revoking twice is harmless; an unknown id is null.
    expect((await keys.revoke(k.key_id))?.revoked_at).toBeTruthy()
    expect(await keys.revoke('key_nope')).toBeNull()
  })
})

describe('API keys over HTTP (admin token)', () => {
  it('create, use, list and revoke while the service runs; tenant keys are refused; bad input is 400, an unknown key 404', async () => {
    const { base } = await serve()
    const admin = bearer(ADMIN)
    const created = await post(base, '/api/v2/admin/api-keys', { tenant_id: 3, name: 'reporting job' }, admin)
    expect(created.status).toBe(201)
    const body = (await created.json()) as { success: boolean; message: string; data: CreatedKey }
    expectDocumented('POST', created.url, 201, body)
    expect(body.data).toMatchObject({ tenant_id: 3, name: 'reporting job', revoked_at: null })
    expect(body.data.key.startsWith(body.data.key_prefix)).toBe(true)
    // The new key works at once, for its tenant only.
    expect([200, 404]).toContain((await get(base, '/api/v2/cdp/analytics/rfm?tenant_id=3', bearer(body.data.key))).status)
    expect((await get(base, '/api/v2/cdp/analytics/rfm?tenant_id=1', bearer(body.data.key))).status).toBe(403)
    // Listed without the key or its hash.
    const listed = await get(base, '/api/v2/admin/api-keys?tenant_id=3', admin)
    const list = (await listed.json()) as { data: Record<string, unknown>[]; count: number }
    expectDocumented('GET', listed.url, 200, list)
    expect(list.data.map((k) => k.key_id)).toContain(body.data.key_id)
    expect(JSON.stringify(list)).not.toContain(body.data.key)
    expect(JSON.stringify(list)).not.toContain(hashKey(body.data.key))
    // A tenant key cannot manage keys, not even its own tenant's.
    await expectCommonError(await post(base, '/api/v2/admin/api-keys', { tenant_id: 3 }, bearer(body.data.key)), 403, 'POST')
    await expectCommonError(await get(base, '/api/v2/admin/api-keys', bearer(keyA.key)), 403, 'GET')
    await expectCommonError(await fetch(`${base}/api/v2/admin/api-keys/${body.data.key_id}`, { method: 'DELETE', headers: bearer(keyA.key) }), 403, 'DELETE')
    // Bad input.
    for (const bad of [{}, { tenant_id: 0 }, { tenant_id: 'x' }, { tenant_id: 2 ** 53 }, { tenant_id: 1, name: 'n'.repeat(201) }, { tenant_id: 1, password: 'x' }]) {
      await expectCommonError(await post(base, '/api/v2/admin/api-keys', bad, admin), 400, 'POST')
    }
    await expectCommonError(await get(base, '/api/v2/admin/api-keys?tenant_id=-1', admin), 400, 'GET')
    await expectCommonError(await fetch(`${base}/api/v2/admin/api-keys/key_0000000000000000`, { method: 'DELETE', headers: admin }), 404, 'DELETE')
    await expectCommonError(await fetch(`${base}/api/v2/admin/api-keys/${"'; DROP TABLE api_keys; --"}`, { method: 'DELETE', headers: admin }), 404, 'DELETE')
    // Revoked: refused at once by this process (its key cache is dropped), twice is the same answer.
    const revoked = await fetch(`${base}/api/v2/admin/api-keys/${body.data.key_id}`, { method: 'DELETE', headers: admin })
    const r = (await revoked.json()) as { data: { revoked_at: string | null } }
    expectDocumented('DELETE', revoked.url, 200, r)
    expect(r.data.revoked_at).not.toBeNull()
    expect((await get(base, '/api/v2/cdp/analytics/rfm?tenant_id=3', bearer(body.data.key))).status).toBe(401)
    const again = await fetch(`${base}/api/v2/admin/api-keys/${body.data.key_id}`, { method: 'DELETE', headers: admin })
    expect(((await again.json()) as { data: { revoked_at: string } }).data.revoked_at).toBe(r.data.revoked_at)
  })
})

describe('rate limits', () => {
  it('the 101st analytics request of a key in a minute is 429 with Retry-After; the next window allows it again', async () => {
    const c = clock()
    const { base } = await serve({ now: c.now })
    const url = '/api/v2/cdp/analytics/rfm?tenant_id=1'
    for (let i = 0; i < 100; i++) {
      const res = await get(base, url, bearer(keyA.key))
      expect([200, 404], `request ${i + 1}`).toContain(res.status)
      if (i === 0) {
        expect(res.headers.get('ratelimit-limit')).toBe('100')
        expect(res.headers.get('ratelimit-remaining')).toBe('99')
      }
    }
    c.advance(20_000)
    const limited = await get(base, url, bearer(keyA.key))
    expect(limited.headers.get('retry-after')).toBe('40')
    expect(limited.headers.get('ratelimit-remaining')).toBe('0')
    expect(await expectCommonError(limited, 429, 'GET')).toMatchObject({ details: { code: 'RATE_LIMIT_EXCEEDED', retry_after: 40 } })
    // Per key: another tenant's key is not affected, and the limit does not leak across keys.
    expect([200, 404]).toContain((await get(base, '/api/v2/cdp/analytics/rfm?tenant_id=2', bearer(keyB.key))).status)
    // Non-analytics routes are not counted.
    expect((await post(base, '/api/v2/cdp/process/1', {}, bearer(keyA.key))).status).toBe(404)
    c.advance(40_000)
    expect([200, 404]).toContain((await get(base, url, bearer(keyA.key))).status)
  })

  it('two API replicas with CDP_API_REPLICAS=2: a client spread over both gets the limit and not one request more; pinned to one, its share', async () => {
    const c = clock()
    const limits = replicaShare({ ...defaultRateLimits('production'), analyticsPerMinute: 100 }, 2)
    expect(limits).toEqual({ analyticsPerMinute: 50, demographicsPer15Min: 500, operationsPerMinute: 60, jobsPerMinute: 10 })
    expect(replicaShare({ analyticsPerMinute: 101, demographicsPer15Min: 1, operationsPerMinute: 120, jobsPerMinute: 20 }, 2)).toMatchObject({ analyticsPerMinute: 50, demographicsPer15Min: 1 })
    const replicas = [await serve({ now: c.now, rateLimits: limits }), await serve({ now: c.now, rateLimits: limits })]
    const url = '/api/v2/cdp/analytics/rfm?tenant_id=1'
    // Round robin, as a balancer would: 150 requests, of which exactly 100 pass.
    const statuses: number[] = []
    for (let i = 0; i < 150; i++) statuses.push((await get(replicas[i % 2]!.base, url, bearer(keyA.key))).status)
    expect(statuses.filter((s) => s !== 429)).toHaveLength(100)
    expect(statuses.slice(0, 100).every((s) => s !== 429)).toBe(true)
    // Pinned to one replica: its share. Another key: untouched on both.
    c.advance(60_000)
    const pinned: number[] = []
    for (let i = 0; i < 60; i++) pinned.push((await get(replicas[0]!.base, url, bearer(keyA.key))).status)
    expect(pinned.filter((s) => s !== 429)).toHaveLength(50)
    const limited = await get(replicas[0]!.base, url, bearer(keyA.key))
    expect(limited.headers.get('ratelimit-limit')).toBe('50')
    expect(await expectCommonError(limited, 429, 'GET')).toMatchObject({ details: { code: 'RATE_LIMIT_EXCEEDED', limit: 50 } })
    expect((await get(replicas[1]!.base, url, bearer(keyA.key))).status).not.toBe(429)
    expect((await get(replicas[0]!.base, '/api/v2/cdp/analytics/rfm?tenant_id=2', bearer(keyB.key))).status).not.toBe(429)
  })

  it('demographics-related paths: 1,000 per 15 minutes per IP in production, 10,000 in development, counted before auth', async () => {
    expect(defaultRateLimits('production').demographicsPer15Min).toBe(1000)
    expect(defaultRateLimits('development').demographicsPer15Min).toBe(10_000)
    expect(defaultRateLimits('production').analyticsPerMinute).toBe(100)

    const c = clock()
    const prod = await serve({ now: c.now, rateLimits: { ...defaultRateLimits('production'), analyticsPerMinute: 1_000_000 } })
    const url = '/api/cdp/v2/analytics/demographics?tenant_id=1'
    const first = await get(prod.base, url)
    expect(first.status).toBe(401) // counted even without a key
    expect(first.headers.get('ratelimit-limit')).toBe('1000')
    for (let i = 1; i < 1000; i++) expect((await get(prod.base, i % 2 ? url : '/api/cdp/v2/customers?tenant_id=1')).status).not.toBe(429)
    const limited = await get(prod.base, '/api/v2/cdp/analytics/demographics?tenant_id=1', bearer(ADMIN))
    expect(limited.headers.get('retry-after')).toBe('900')
    await expectCommonError(limited, 429, 'GET')
    // Other analytics endpoints are not demographics-related.
    expect([200, 404]).toContain((await get(prod.base, '/api/v2/cdp/analytics/rfm?tenant_id=1', bearer(ADMIN))).status)
    c.advance(15 * 60_000)
    expect((await get(prod.base, url, bearer(ADMIN))).status).not.toBe(429)

    const dev = await serve({ now: c.now })
    expect((await get(dev.base, url, bearer(ADMIN))).headers.get('ratelimit-limit')).toBe('100') // the tighter rule is shown
    const devCustomers = await get(dev.base, '/api/cdp/v2/customers?tenant_id=1')
    expect(devCustomers.status).toBe(401)
    expect(devCustomers.headers.get('ratelimit-limit')).toBe('10000')
  })
})

describe('rate limits of processing and integration endpoints (ours: the spec shows none)', () => {
  it('which requests are operations and which of them are jobs', () => {
    expect(defaultRateLimits('production')).toMatchObject({ operationsPerMinute: 120, jobsPerMinute: 20 })
    for (const p of ['/api/v2/cdp/process/1', '/api/v2/cdp/process/status/1', '/API/V2/Tenant-Integrations/1', '/api/v2/tenant-integrations', '/api/v2/cdp/audience-syncs/cfg_1']) {
      expect(isOperationsPath(p), p).toBe(true)
    }
    for (const p of ['/api/v2/cdp/ingest/orders', '/api/v2/cdp/processing', '/api/v2/tenant-integrationsx', '/webhooks/ads', '/api/v2/cdp/analytics/rfm']) {
      expect(isOperationsPath(p), p).toBe(false)
    }
    // Anything that starts work or checks credentials with a platform.
    const jobs: [string, string][] = [
      ['POST', '/api/v2/cdp/process/1'],
      ['POST', '/api/v2/cdp/process/1/'],
      ['POST', '/api/v2/cdp/process/1/schedule'],
      ['POST', '/api/v2/tenant-integrations'],
      ['POST', '/api/v2/tenant-integrations/validate/commerce_platform'],
      ['POST', '/api/v2/tenant-integrations/int_1/test'],
      ['POST', '/API/v2/tenant-integrations/int_1/SYNC'],
      ['POST', '/api/v2/cdp/audience-syncs'],
    ]
    for (const [m, p] of jobs) expect(isJobRequest(m, p), `${m} ${p}`).toBe(true)
    const notJobs: [string, string][] = [
      ['GET', '/api/v2/cdp/process/1'],
      ['GET', '/api/v2/cdp/process/status/1'],
      ['DELETE', '/api/v2/cdp/process/1/schedule'],
      ['DELETE', '/api/v2/cdp/process/1/cancel'],
      ['GET', '/api/v2/tenant-integrations/int_1/sync'],
      ['POST', '/api/v2/tenant-integrations/int_1/sync/extra'],
      ['DELETE', '/api/v2/tenant-integrations/int_1'],
      ['DELETE', '/api/v2/cdp/audience-syncs/cfg_1'],
    ]
    for (const [m, p] of notJobs) expect(isJobRequest(m, p), `${m} ${p}`).toBe(false)
    // An update is a job when it sends credentials, which are verified with the platform again.
    const put = (p: string, body: unknown) => isJobRequest('PUT', p, body)
    expect(put('/api/v2/tenant-integrations/7', { is_active: false, configuration: { sync_interval: 'daily' } })).toBe(false)
    expect(put('/api/v2/tenant-integrations/7', { app_token: 'new-token' })).toBe(true)
    expect(put('/api/v2/tenant-integrations/7', { configuration: { site_id: 'MLB' } })).toBe(true)
    expect(put('/api/v2/tenant-integrations/7', undefined)).toBe(false)
    expect(put('/api/v2/cdp/audience-syncs/cfg_1', { status: 'paused' })).toBe(false)
    expect(put('/api/v2/cdp/audience-syncs/cfg_1', { access_token: 'EAAB…' })).toBe(true)
  })

  it('the 21st job of a key in a minute and its 121st operation are 429 with the common body; other keys, reads while jobs are spent, and ingestion are not affected', async () => {
    const c = clock()
    const { base } = await serve({ now: c.now })
    const jobs = ['/api/v2/cdp/process/1', '/api/v2/tenant-integrations/validate/commerce_platform', '/api/v2/tenant-integrations/int_x/test', '/api/v2/tenant-integrations/int_x/sync', '/api/v2/tenant-integrations', '/api/v2/cdp/process/1/schedule', '/api/v2/cdp/audience-syncs?tenant_id=1', '/api/v2/tenant-integrations/validate/marketplace']
    for (let i = 0; i < 20; i++) {
      const res = await post(base, jobs[i % jobs.length]!, { tenant_id: 1 }, bearer(keyA.key))
      expect(res.status, `job ${i + 1}`).not.toBe(429)
      if (i === 0) {
        // The tighter of the two rules that apply is shown.
        expect(res.headers.get('ratelimit-limit')).toBe('20')
        expect(res.headers.get('ratelimit-remaining')).toBe('19')
      }
    }
    c.advance(15_000)
    for (const p of jobs) {
      const limited = await post(base, p, { tenant_id: 1 }, bearer(keyA.key))
      expect(limited.headers.get('retry-after')).toBe('45')
      expect(await expectCommonError(limited, 429, 'POST')).toMatchObject({ details: { code: 'RATE_LIMIT_EXCEEDED', limit: 20, window_seconds: 60, retry_after: 45 } })
    }
    // Reading and configuring are operations, not jobs: still open.
    let operations = 20 + jobs.length
    for (const p of ['/api/v2/tenant-integrations/1', '/api/v2/cdp/process/status/1', '/api/v2/cdp/audience-syncs?tenant_id=1']) {
      const res = await get(base, p, bearer(keyA.key))
      operations++
      expect(res.status, p).not.toBe(429)
      expect(res.headers.get('ratelimit-limit'), p).toBe('120')
    }
    // An update without credentials is an operation; with new credentials it is a job, refused now.
    const put = (p: string, body: unknown) => fetch(`${base}${p}`, { method: 'PUT', headers: { 'content-type': 'application/json', ...bearer(keyA.key) }, body: JSON.stringify(body) })
    expect((await put('/api/v2/tenant-integrations/7', { is_active: false })).status).not.toBe(429)
    operations++
    await expectCommonError(await put('/api/v2/tenant-integrations/7', { app_token: 'another-guess' }), 429, 'PUT')
    operations++
    // Another key has its own budgets.
    expect((await post(base, '/api/v2/cdp/process/2', {}, bearer(keyB.key))).status).not.toBe(429)
    // 120 operations a minute, jobs (allowed or refused) included.
    while (operations < 120) {
      expect((await get(base, '/api/v2/tenant-integrations/1', bearer(keyA.key))).status, `operation ${operations + 1}`).not.toBe(429)
      operations++
    }
    const over = await get(base, '/api/v2/tenant-integrations/1', bearer(keyA.key))
    expect(await expectCommonError(over, 429, 'GET')).toMatchObject({ details: { code: 'RATE_LIMIT_EXCEEDED', limit: 120, window_seconds: 60, retry_after: 45 } })
    // Ingestion carries data and is not limited; analytics has its own budget.
    expect((await post(base, '/api/v2/cdp/ingest/orders', { events: [order(1, 'RL-1')] }, bearer(keyA.key))).status).not.toBe(429)
    expect((await get(base, '/api/v2/cdp/analytics/rfm?tenant_id=1', bearer(keyA.key))).status).not.toBe(429)
    // The next window allows both again.
    c.advance(45_000)
    expect((await post(base, jobs[0]!, {}, bearer(keyA.key))).status).not.toBe(429)
    expect((await get(base, '/api/v2/tenant-integrations/1', bearer(keyA.key))).status).not.toBe(429)
  })
})

describe('secrets stay out of logs and config output', () => {
  it('the logger redacts authorization headers and tokens; the config masks the admin token', () => {
    const lines: string[] = []
    const sink = new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) })
    const logger = createLogger({ level: 'info', destination: sink as never })
    logger.info({ req: { headers: { authorization: `Bearer ${keyA.key}` } }, headers: { authorization: 'Bearer h1' }, adminToken: 'adm1', config: { adminToken: 'adm2' }, api_key: 'k1' }, 'x')
    const out = lines.join('')
    for (const s of [keyA.key, 'h1', 'adm1', 'adm2', 'k1']) expect(out).not.toContain(s)
    const c = loadConfig({ CDP_ADMIN_TOKEN: 'an-admin-token-long-enough' })
    expect(c.adminToken).toBe('an-admin-token-long-enough')
    expect(JSON.stringify(redactConfig(c))).not.toContain('an-admin-token-long-enough')
  })
})
