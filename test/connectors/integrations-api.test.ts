import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import { Writable } from 'node:stream'
import type { AddressInfo } from 'node:net'
import type { Store } from '../../common/store/clickhouse.ts'
import { openEventLog } from '../../common/runtime/context.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { createLogger } from '../../common/logger.ts'
import { parseKeyring, SecretDecryptError, type EncryptedSecret, type SecretBox } from '../../common/secrets.ts'
import { createApp } from '../../services/api/app.ts'
import { ApiKeyStore, type CreatedKey } from '../../common/store/api-keys.ts'
import { integrationsRouter } from '../../services/api/integrations/router.ts'
import { IntegrationStore, rotateIntegrationCredentials, sealContext } from '../../pipelines/connectors/store.ts'
import { SyncBody } from '../../pipelines/connectors/schemas.ts'
import { emptyStats, SyncQueue } from '../../pipelines/connectors/queue.ts'
import * as commerceSim from '../../services/simulators/commerce-platform/index.ts'
import * as marketplaceSim from '../../services/simulators/marketplace/index.ts'
import * as searchAdsSim from '../../services/simulators/search-ads/index.ts'
import { start as startAdsPlatform, type RunningAdsPlatformSimulator } from '../../services/simulators/ads-platform/index.ts'
import type { ConnectorEndpoints } from '../../pipelines/connectors/sources/types.ts'
import { literalDestinationProblem } from '../../pipelines/connectors/webhook-guard.ts'
import { silentLogger, testConfig, migratedStore } from '../helpers.ts'

const ADMIN = 'test-admin-token-integrations-0123'
const K1 = `k1:${'1a'.repeat(32)}`
const K2 = `k2:${'2b'.repeat(32)}`
const BASE = '/api/v2/tenant-integrations'

const CP = { account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken }
const MP = { client_id: marketplaceSim.DEFAULTS.clientId, client_secret: marketplaceSim.DEFAULTS.clientSecret, redirect_uri: marketplaceSim.DEFAULTS.redirectUri }
const SA = { customer_id: '123-456-7890', developer_token: searchAdsSim.DEFAULTS.developerToken, refresh_token: searchAdsSim.DEFAULTS.refreshToken }
const SOCIAL = { app_id: '777000111', app_secret: 'social-app-secret-0123456789', access_token: 'EAAsocial-access-token-0123456789' }
const WEBHOOK_SECRET = 'tenant-webhook-secret-0123456789'
const SECRETS = [CP.app_token, MP.client_secret, SA.developer_token, SA.refresh_token, SOCIAL.app_secret, SOCIAL.access_token, WEBHOOK_SECRET, 'rotated-app-token-0123456789-zz', 'wrong-token-0123456789']

let store: Store
let log: EventLog
let codec: EventCodec
let keys: ApiKeyStore
let tenant1: CreatedKey
let tenant2: CreatedKey
let box: SecretBox
let cp: commerceSim.RunningCommercePlatformSimulator
let mp: marketplaceSim.RunningMarketplaceSimulator
let sa: searchAdsSim.RunningSearchAdsSimulator
let ads: RunningAdsPlatformSimulator
let endpoints: ConnectorEndpoints
const servers: http.Server[] = []
/** Every log line and every response body of this file: checked for secrets at the end. */
const logLines: string[] = []
const bodies: string[] = []
const logger = createLogger({
  level: 'trace',
  destination: new Writable({
    write(chunk, _enc, cb) {
      logLines.push(String(chunk))
      cb()
    },
  }),
})

async function serve(secrets: SecretBox): Promise<string> {
  const app = createApp({ logger, log, codec, readiness: [], auth: { adminToken: ADMIN, keys, rateLimits: UNLIMITED_JOBS }, integrations: integrationsRouter({ store, secrets, endpoints, logger, tenantName: (t) => `Shop ${t}` }) })
  const server = http.createServer(app)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

let base: string
/** This file exercises the endpoints many times a minute; their limits are tested in auth-rate-limit.test.ts. */
const UNLIMITED_JOBS = { operationsPerMinute: 1_000_000, jobsPerMinute: 1_000_000 }

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

async function call(method: string, path: string, body?: unknown, token: string | null = ADMIN, at = base): Promise<{ status: number; body: Json }> {
  const headers: Record<string, string> = {}
  if (token) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${at}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  bodies.push(text)
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} }
}

async function rawRows(): Promise<string> {
  const rs = await store.query({ query: 'SELECT * FROM integrations', format: 'JSONEachRow' })
  return rs.text()
}

async function countIntegrations(): Promise<number> {
  const rs = await store.query({ query: 'SELECT count() AS n FROM integrations FINAL', format: 'JSONEachRow' })
  return Number((await rs.json<{ n: number }>())[0]!.n)
}

function expectCommonError(r: { status: number; body: Json }, status: number) {
  expect(r.status).toBe(status)
  expect(r.body).toMatchObject({ success: false, error: expect.any(String) })
  expect(r.body).toHaveProperty('details')
}

const createCommerce = (tenant = 1, over: Json = {}) => call('POST', BASE, { tenant_id: tenant, integration_type: 'commerce_platform', ...CP, ...over })

beforeAll(async () => {
  store = await migratedStore()
  ;({ log, codec } = await openEventLog(testConfig('embedded'), silentLogger))
  keys = new ApiKeyStore(store)
  tenant1 = await keys.create(1, 'tenant one')
  tenant2 = await keys.create(2, 'tenant two')
  box = parseKeyring(K1)
  const end = new Date(Date.UTC(2025, 5, 1))
  cp = await commerceSim.start({ customers: 30, end })
  mp = await marketplaceSim.start({ customers: 20, end })
  sa = await searchAdsSim.start({ customers: 20, end })
  ads = await startAdsPlatform({ appId: SOCIAL.app_id, appSecret: SOCIAL.app_secret, tokens: [SOCIAL.access_token] })
  endpoints = { commercePlatform: cp.url, marketplace: mp.url, searchAds: sa.url, socialAds: ads.url }
  base = await serve(box)
})
afterAll(async () => {
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()))
  await Promise.all([cp?.close(), mp?.close(), sa?.close(), ads?.close()])
  await log?.close()
  await store?.close()
})

describe('create (endpoint 3): credentials verified before anything is stored', () => {
  it('bad credentials: 400 Invalid credentials with details, nothing stored', async () => {
    const before = await countIntegrations()
    const r = await createCommerce(1, { app_token: 'wrong-token-0123456789' })
    expectCommonError(r, 400)
    expect(r.body).toEqual({ success: false, error: 'Invalid credentials', details: { validation_error: expect.any(String), account_name: 'demoshop', integration_type: 'commerce_platform' } })
    expect(await countIntegrations()).toBe(before)
    expect(await rawRows()).not.toContain('wrong-token-0123456789')
  })

  it('an app key not of the form appkey-{account_name}-{hash}: 400 INVALID_APP_KEY with a solution, nothing stored', async () => {
    const before = await countIntegrations()
    for (const app_key of ['vtexappkey-demoshop-ABC', 'appkey-othershop-SIM0001', 'appkey-demoshop-']) {
      const r = await createCommerce(1, { app_key })
      expectCommonError(r, 400)
      expect(r.body).toMatchObject({ error: 'INVALID_APP_KEY', solution: expect.stringContaining('appkey-{account_name}-{hash}') })
    }
    expect(await countIntegrations()).toBe(before)
  })

  it('shape errors: 400 with every field error (required fields per type, unknown type, unknown fields)', async () => {
    const missing = await call('POST', BASE, { tenant_id: 1, integration_type: 'commerce_platform', account_name: 'demoshop', environment: 'commerce_stable', app_key: CP.app_key })
    expectCommonError(missing, 400)
    expect(missing.body.details.errors).toEqual([{ path: 'app_token', code: 'required', message: 'is required' }])
    const mpMissing = await call('POST', BASE, { tenant_id: 1, integration_type: 'marketplace', client_id: 'x' })
    expect(mpMissing.body.details.errors.map((e: Json) => e.path).sort()).toEqual(['client_secret', 'redirect_uri'])
    const type = await call('POST', BASE, { tenant_id: 1, integration_type: 'erp' })
    expect(type.body.details.errors[0]).toMatchObject({ path: 'integration_type', code: 'invalid_value' })
    const extra = await createCommerce(1, { client_secret: 'x' })
    expect(extra.body.details.errors[0]).toMatchObject({ code: 'unknown_field' })
    const badConfig = await createCommerce(1, { configuration: { sync_interval: 'sometimes', api_key: 'x' } })
    expect(badConfig.status).toBe(400)
    const site = await createCommerce(1, { configuration: { site_id: 'MLA' } })
    expect(site.body.details.errors[0]).toMatchObject({ path: 'configuration.site_id', code: 'not_applicable' })
    const tenant = await createCommerce(0)
    expect(tenant.body.details.errors[0].path).toBe('tenant_id')
    const json = await fetch(`${base}${BASE}`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: '{"tenant_id":' })
    expect(json.status).toBe(400)
    // A credential with a control or non-ASCII character could not travel in a header: 400 naming it, not a 502 from a call that never left.
    for (const token of ['tok\u0001en', 'tok\nen', 'tokén', 'tok\u4e00']) {
      const bad = await call('POST', BASE, { tenant_id: 1, integration_type: 'social_ads', app_id: '52', app_secret: 'secret-value', access_token: token })
      expectCommonError(bad, 400)
      expect(bad.body.details.errors).toEqual([expect.objectContaining({ path: 'access_token' })])
    }
  })

  it('good credentials: 201; the stored row holds no plaintext secret, only the AES-256-GCM record', async () => {
    const r = await createCommerce(1, { configuration: { webhook_url: 'https://hooks.example.com/cdp', webhook_secret: WEBHOOK_SECRET, sync_interval: 'hourly' } })
    expect(r.status).toBe(201)
    expect(r.body).toEqual({
      success: true,
      message: expect.any(String),
      data: { id: expect.any(Number), tenant_id: 1, integration_type: 'commerce_platform', validation_status: 'valid', is_active: true, initial_sync: { sync_id: expect.any(String), status: 'queued' } },
    })
    const raw = await rawRows()
    expect(raw).not.toContain(CP.app_token)
    expect(raw).not.toContain(WEBHOOK_SECRET)
    const rs = await store.query({ query: 'SELECT credentials, webhook_secret FROM integrations FINAL WHERE integration_id = {i:UInt64}', query_params: { i: r.body.data.id }, format: 'JSONEachRow' })
    const [row] = await rs.json<{ credentials: string; webhook_secret: string }>()
    const sealed = JSON.parse(row!.credentials) as EncryptedSecret
    expect(sealed).toEqual({ key_id: 'k1', iv: expect.stringMatching(/^[0-9a-f]{32}$/), tag: expect.stringMatching(/^[0-9a-f]{32}$/), ciphertext: expect.stringMatching(/^[0-9a-f]+$/) })
    const id = r.body.data.id as number
    const ctx = sealContext(id, 1, 'credentials')
    expect(JSON.parse(box.decrypt(sealed, ctx))).toEqual(CP)
    // A tampered ciphertext (or tag) does not decrypt.
    const flip = (h: string) => (h[0] === '0' ? '1' : '0') + h.slice(1)
    expect(() => box.decrypt({ ...sealed, ciphertext: flip(sealed.ciphertext) }, ctx)).toThrow(SecretDecryptError)
    expect(() => box.decrypt({ ...sealed, tag: flip(sealed.tag) }, ctx)).toThrow(SecretDecryptError)
    expect(() => parseKeyring(K2).decrypt(sealed, ctx)).toThrow(SecretDecryptError)
    // Bound to its row: the same record read as another integration's, another tenant's or another field does not decrypt.
    expect(() => box.decrypt(sealed, sealContext(id + 1, 1, 'credentials'))).toThrow(SecretDecryptError)
    expect(() => box.decrypt(sealed, sealContext(id, 2, 'credentials'))).toThrow(SecretDecryptError)
    expect(() => box.decrypt(sealed, sealContext(id, 1, 'webhook_secret'))).toThrow(SecretDecryptError)
    expect(box.decrypt(JSON.parse(row!.webhook_secret) as EncryptedSecret, sealContext(id, 1, 'webhook_secret'))).toBe(WEBHOOK_SECRET)
  })

  it('the same account twice for a tenant: 409', async () => {
    const r = await createCommerce(1)
    expectCommonError(r, 409)
  })

  it('marketplace, search ads and social ads: validated against their platforms', async () => {
    const m = await call('POST', BASE, { tenant_id: 1, integration_type: 'marketplace', ...MP, configuration: { site_id: 'MLA' } })
    expect(m.status).toBe(201)
    const badSite = await call('POST', BASE, { tenant_id: 2, integration_type: 'marketplace', ...MP, configuration: { site_id: 'MLB' } })
    expectCommonError(badSite, 400)
    const s = await call('POST', BASE, { tenant_id: 1, integration_type: 'search_ads', ...SA })
    expect(s.status).toBe(201)
    expect(s.body.data.initial_sync).toBeNull()
    expectCommonError(await call('POST', BASE, { tenant_id: 2, integration_type: 'search_ads', ...SA, developer_token: 'wrong-token-0123456789' }), 400)
    const so = await call('POST', BASE, { tenant_id: 2, integration_type: 'social_ads', credentials: SOCIAL })
    expect(so.status).toBe(201)
    const soBad = await call('POST', BASE, { tenant_id: 1, integration_type: 'social_ads', ...SOCIAL, access_token: 'wrong-token-0123456789' })
    expectCommonError(soBad, 400)
    // An api_version the platform does not serve: its 404 is the caller's configuration, 400 (not a 502 outage).
    const soVersion = await call('POST', BASE, { tenant_id: 3, integration_type: 'social_ads', ...SOCIAL, configuration: { api_version: '0' } })
    expectCommonError(soVersion, 400)
    expect(soVersion.body.details.validation_error).toMatch(/404/)
  })

  it('an external system that does not answer: 502, nothing stored', async () => {
    const down = await serveWith({ ...endpoints, commercePlatform: 'http://127.0.0.1:9' })
    const before = await countIntegrations()
    const r = await call('POST', BASE, { tenant_id: 3, integration_type: 'commerce_platform', ...CP }, ADMIN, down)
    expectCommonError(r, 502)
    expect(await countIntegrations()).toBe(before)
  })
})

async function serveWith(e: ConnectorEndpoints): Promise<string> {
  const app = createApp({ logger, log, codec, readiness: [], auth: { adminToken: ADMIN, keys, rateLimits: UNLIMITED_JOBS }, integrations: integrationsRouter({ store, secrets: box, endpoints: e, logger, timeoutMs: 2000 }) })
  const server = http.createServer(app)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function commerceId(tenant = 1): Promise<number> {
  const list = await call('GET', `${BASE}/${tenant}`)
  return list.body.data.find((i: Json) => i.integration_type === 'commerce_platform').id
}

describe('list and detail (endpoints 1, 2)', () => {
  it('lists a tenant’s integrations with count; environment only for the commerce platform', async () => {
    const r = await call('GET', `${BASE}/1`)
    expect(r.status).toBe(200)
    expect(r.body.success).toBe(true)
    expect(r.body.count).toBe(r.body.data.length)
    expect(r.body.count).toBe(3)
    const c = r.body.data.find((i: Json) => i.integration_type === 'commerce_platform')
    expect(c).toEqual({ id: expect.any(Number), tenant_id: 1, integration_type: 'commerce_platform', account_name: 'demoshop', environment: 'commerce_stable', is_active: true, last_sync: null, sync_status: 'never_synced', created_at: expect.any(String), updated_at: expect.any(String) })
    const m = r.body.data.find((i: Json) => i.integration_type === 'marketplace')
    expect(m).not.toHaveProperty('environment')
    expect(m.account_name).toBe('DEMOSHOP')
    expect((await call('GET', `${BASE}/99`)).body).toEqual({ success: true, data: [], count: 0 })
    expectCommonError(await call('GET', `${BASE}/abc`), 400)
  })

  it('details an integration: tenant_name, configuration, masked credentials, statistics, next_scheduled_sync', async () => {
    const id = await commerceId()
    const r = await call('GET', `${BASE}/integration/${id}`)
    expect(r.status).toBe(200)
    const d = r.body.data
    expect(d).toMatchObject({ id, tenant_id: 1, tenant_name: 'Shop 1', integration_type: 'commerce_platform', account_name: 'demoshop', environment: 'commerce_stable', is_active: true, validation_status: 'valid', sync_status: 'never_synced', last_sync: null, deleted_at: null })
    expect(d.configuration).toMatchObject({ api_version: expect.any(String), sync_products: true, sync_orders: true, sync_customers: true, webhook_url: 'https://hooks.example.com/cdp', sync_interval: 'hourly', batch_size: 100, retry_attempts: 3, webhook_notifications: true, webhook_secret: '****' })
    expect(d.credentials).toEqual({ account_name: 'demoshop', environment: 'commerce_stable', app_key: CP.app_key, app_token: `****${CP.app_token.slice(-4)}` })
    expect(d.statistics).toEqual({ total_syncs: 0, successful_syncs: 0, failed_syncs: 0, last_error: null, avg_sync_time: '0s' })
    expect(Date.parse(d.next_scheduled_sync) - Date.parse(d.created_at)).toBe(3_600_000)
    expect(d.current_sync).toMatchObject({ status: 'queued', kind: 'initial' })
    expectCommonError(await call('GET', `${BASE}/integration/424242`), 404)
    expectCommonError(await call('GET', `${BASE}/integration/x`), 400)
  })
})

describe('update (endpoint 4)', () => {
  it('changes the configuration and is_active, with {old, new} per field path', async () => {
    const id = await commerceId()
    const r = await call('PUT', `${BASE}/${id}`, { is_active: false, configuration: { sync_interval: 'daily', batch_size: 50 } })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      success: true,
      message: expect.any(String),
      data: { id, changes: { is_active: { old: true, new: false }, 'configuration.sync_interval': { old: 'hourly', new: 'daily' }, 'configuration.batch_size': { old: 100, new: 50 } } },
    })
    const back = await call('PUT', `${BASE}/${id}`, { is_active: true })
    expect(back.body.data.changes).toEqual({ is_active: { old: false, new: true } })
    const d = (await call('GET', `${BASE}/integration/${id}`)).body.data
    expect(d.configuration.sync_interval).toBe('daily')
  })

  it('new credentials are verified first: a bad token is 400 and changes nothing; a good one shows masked in changes', async () => {
    const id = await commerceId()
    cp.state.addAppKey({ appKey: 'appkey-demoshop-ROT0002', appToken: 'rotated-app-token-0123456789-zz' })
    const bad = await call('PUT', `${BASE}/${id}`, { app_token: 'wrong-token-0123456789' })
    expectCommonError(bad, 400)
    expect(bad.body.error).toBe('Invalid credentials')
    const badKey = await call('PUT', `${BASE}/${id}`, { app_key: 'key-0002' })
    expect(badKey.body.error).toBe('INVALID_APP_KEY')
    const ok = await call('PUT', `${BASE}/${id}`, { app_key: 'appkey-demoshop-ROT0002', app_token: 'rotated-app-token-0123456789-zz', configuration: { webhook_secret: WEBHOOK_SECRET } })
    expect(ok.status).toBe(200)
    expect(ok.body.data.changes).toEqual({
      app_key: { old: CP.app_key, new: 'appkey-demoshop-ROT0002' },
      app_token: { old: `****${CP.app_token.slice(-4)}`, new: '****9-zz' },
      'configuration.webhook_secret': { old: '****', new: '[changed]' },
    })
    expect(JSON.parse(await new IntegrationStore(store, box).credentials(id).then(JSON.stringify))).toMatchObject({ app_token: 'rotated-app-token-0123456789-zz' })
    // Put the original credentials back for the rest of the file.
    const restore = await call('PUT', `${BASE}/${id}`, { app_key: CP.app_key, app_token: CP.app_token })
    expect(restore.status).toBe(200)
  })

  it('refuses fields the type has not, empty bodies and unknown fields', async () => {
    const id = await commerceId()
    expect((await call('PUT', `${BASE}/${id}`, { client_secret: 'x' })).body.details.errors[0]).toMatchObject({ path: 'client_secret', code: 'not_applicable' })
    expect((await call('PUT', `${BASE}/${id}`, {})).status).toBe(400)
    expect((await call('PUT', `${BASE}/${id}`, { colour: 'red' })).status).toBe(400)
    expectCommonError(await call('PUT', `${BASE}/987654`, { is_active: true }), 404)
  })
})

describe('webhook_url: a destination the connectors would never post to is refused when configured', () => {
  it('tells loopback, private, link-local and localhost destinations from public ones without resolving names', () => {
    for (const url of [
      'http://127.0.0.1:9/hook', 'https://10.1.2.3/x', 'http://169.254.169.254/latest/meta-data', 'http://[::1]/h', 'http://[::ffff:192.168.0.1]/h',
      'http://localhost:8080/h', 'http://api.LOCALHOST./h', 'http://0.0.0.0/',
      // Spellings the URL parser normalises to loopback.
      'http://2130706433/', 'http://0x7f.1/', 'http://0177.0.0.1/', 'http://127.1/',
      // IPv4 inside IPv6 (SIIT, local-use NAT64) and documentation ranges.
      'http://[::ffff:0:127.0.0.1]/', 'http://[64:ff9b:1::a00:1]/', 'http://192.0.2.10/', 'http://198.51.100.7/', 'http://203.0.113.9/', 'http://[2001:db8::1]/',
    ]) {
      expect(literalDestinationProblem(url), url).toMatch(/only public destinations are allowed/)
    }
    // Public literals, and names (resolved at every notification instead).
    for (const url of ['https://8.8.8.8/hook', 'https://[2001:4860:4860::8888]/h', 'https://hooks.example.com/cdp', 'http://internal.corp/h', 'not a url']) {
      expect(literalDestinationProblem(url), url).toBeNull()
    }
  })

  it('create and update: 400 with the field error and nothing stored or changed; the development switch accepts a local receiver', async () => {
    const before = await countIntegrations()
    const r = await createCommerce(3, { configuration: { webhook_url: 'http://169.254.169.254/latest/meta-data' } })
    expectCommonError(r, 400)
    expect(r.body.details.errors).toEqual([{ path: 'configuration.webhook_url', code: 'private_destination', message: expect.stringContaining('169.254.0.0/16') }])
    expect(await countIntegrations()).toBe(before)

    const id = await commerceId()
    const old = (await call('GET', `${BASE}/integration/${id}`)).body.data.configuration.webhook_url
    const put = await call('PUT', `${BASE}/${id}`, { configuration: { webhook_url: 'http://localhost:9999/hook' } })
    expectCommonError(put, 400)
    expect(put.body.details.errors).toEqual([expect.objectContaining({ path: 'configuration.webhook_url', code: 'private_destination' })])
    expect((await call('GET', `${BASE}/integration/${id}`)).body.data.configuration.webhook_url).toBe(old)

    const app = createApp({ logger, log, codec, readiness: [], auth: { adminToken: ADMIN, keys, rateLimits: UNLIMITED_JOBS }, integrations: integrationsRouter({ store, secrets: box, endpoints, logger, allowPrivateWebhooks: true }) })
    const server = http.createServer(app)
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res))
    servers.push(server)
    const dev = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const local = await call('PUT', `${BASE}/${id}`, { configuration: { webhook_url: 'http://127.0.0.1:9999/hook' } }, ADMIN, dev)
    expect(local.status).toBe(200)
    expect(local.body.data.changes['configuration.webhook_url']).toEqual({ old, new: 'http://127.0.0.1:9999/hook' })
    expect((await call('PUT', `${BASE}/${id}`, { configuration: { webhook_url: old } }, ADMIN, dev)).status).toBe(200)
  })
})

describe('validate, test, sync (endpoints 6, 7, 8)', () => {
  it('validates commerce platform credentials: 200 account_info, 400 INVALID_CREDENTIALS / INVALID_APP_KEY', async () => {
    const ok = await call('POST', `${BASE}/validate/commerce_platform`, CP)
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({
      success: true,
      message: expect.any(String),
      account_info: { account_name: 'demoshop', account_id: expect.any(String), is_active: true, hosts: expect.any(Array), apis_available: { catalog: true, orders: true, masterdata: true, payments: true } },
    })
    const bad = await call('POST', `${BASE}/validate/commerce_platform`, { ...CP, app_token: 'wrong-token-0123456789' })
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual({ success: false, message: expect.any(String), error: { code: 'INVALID_CREDENTIALS', details: expect.any(String), account_name: 'demoshop', environment: 'commerce_stable' } })
    const key = await call('POST', `${BASE}/validate/commerce_platform`, { ...CP, app_key: 'appkey-demoshop' })
    expect(key.status).toBe(400)
    expect(key.body.error).toMatchObject({ code: 'INVALID_APP_KEY', account_name: 'demoshop', environment: 'commerce_stable', solution: expect.any(String) })
    expectCommonError(await call('POST', `${BASE}/validate/commerce_platform`, { account_name: 'demoshop' }), 400)
    // A tenant key may validate too (no tenant is involved).
    expect((await call('POST', `${BASE}/validate/commerce_platform`, CP, tenant2.key)).status).toBe(200)
  })

  it('tests the connection: status connected, timings of catalog, orders, masterdata', async () => {
    const id = await commerceId()
    const r = await call('POST', `${BASE}/${id}/test`)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({
      success: true,
      message: expect.any(String),
      data: {
        integration_id: id,
        type: 'commerce_platform',
        status: 'connected',
        response_time: expect.stringMatching(/^\d+ms$/),
        endpoints_tested: {
          catalog: { status: 'ok', response_time: expect.stringMatching(/^\d+ms$/) },
          orders: { status: 'ok', response_time: expect.stringMatching(/^\d+ms$/) },
          masterdata: { status: 'ok', response_time: expect.stringMatching(/^\d+ms$/) },
        },
      },
    })
  })

  it('queues a sync: 202 with sync_id, status queued, estimated_time, webhook_url', async () => {
    const id = await commerceId()
    const r = await call('POST', `${BASE}/${id}/sync`, { sync_type: 'full', entities: ['orders', 'customers'], date_from: '2025-01-01', date_to: '2025-03-31' })
    expect(r.status).toBe(202)
    expect(r.body).toEqual({ success: true, message: expect.any(String), data: { sync_id: expect.any(String), status: 'queued', estimated_time: expect.stringMatching(/s$/), webhook_url: 'https://hooks.example.com/cdp', queue_position: expect.any(Number) } })
    // Without a webhook of its own, webhook_url is still a string: where the outcome can be read.
    expect((await call('PUT', `${BASE}/${id}`, { configuration: { webhook_url: null } })).status).toBe(200)
    const bare = await call('POST', `${BASE}/${id}/sync`, { entities: ['orders'] })
    expect(bare.status).toBe(202)
    expect(bare.body.data.webhook_url).toBe(`/api/v2/tenant-integrations/integration/${id}`)
    expect((await call('GET', bare.body.data.webhook_url)).status).toBe(200)
    expect((await call('PUT', `${BASE}/${id}`, { configuration: { webhook_url: 'https://hooks.example.com/cdp' } })).status).toBe(200)
    const job = await new SyncQueue(store).get(id, r.body.data.sync_id)
    expect(job).toMatchObject({ status: 'queued', sync_type: 'full', entities: ['customers', 'orders'], date_from: Date.UTC(2025, 0, 1), date_to: Date.UTC(2025, 3, 1) })
    expectCommonError(await call('POST', `${BASE}/${id}/sync`, { date_from: '2025-02-01', date_to: '2025-01-01' }), 400)
    expectCommonError(await call('POST', `${BASE}/${id}/sync`, { date_from: '01/02/2025' }), 400)
    // Impossible dates are refused, not rolled over into the next month.
    for (const bad of [{ date_from: '2024-02-30' }, { date_to: '2023-02-29' }, { date_from: '2025-04-31' }, { date_to: '2025-13-01' }]) {
      const e = await call('POST', `${BASE}/${id}/sync`, bad)
      expectCommonError(e, 400)
      expect(JSON.stringify(e.body)).toContain('not a calendar date')
    }
    expect(SyncBody.safeParse({ date_from: '2024-02-29', date_to: '2024-12-31' }).success).toBe(true)
    expectCommonError(await call('POST', `${BASE}/${id}/sync`, { entities: ['invoices'] }), 400)
    const ads = (await call('GET', `${BASE}/1`)).body.data.find((i: Json) => i.integration_type === 'search_ads').id
    expect((await call('POST', `${BASE}/${ads}/sync`, { entities: ['orders'] })).body.details.errors[0].code).toBe('not_supported')
    expect((await call('POST', `${BASE}/${ads}/sync`, {})).status).toBe(202)
    await call('PUT', `${BASE}/${id}`, { is_active: false })
    expectCommonError(await call('POST', `${BASE}/${id}/sync`, {}), 409)
    await call('PUT', `${BASE}/${id}`, { is_active: true })
    expectCommonError(await call('POST', `${BASE}/31337/sync`, {}), 404)
  })
})

describe('health (endpoint 9)', () => {
  it('totals, by_type with last_24h_syncs and success_rate, alerts with since', async () => {
    const id = await commerceId()
    const q = new SyncQueue(store)
    const t = Date.now()
    const failure = { error: 'RATE_LIMIT_EXCEEDED', message: 'Too many calls', solution: 'wait', retry_after: 60 }
    await q.writeRun({ integration_id: id, sync_id: 's-ok', attempt: 1, tenant_id: 1, integration_type: 'commerce_platform', status: 'success', started_at: t - 50_000, finished_at: t - 40_000, duration_ms: 10_000, error: null, stats: null })
    await q.writeRun({ integration_id: id, sync_id: 's-f1', attempt: 1, tenant_id: 1, integration_type: 'commerce_platform', status: 'failed', started_at: t - 30_000, finished_at: t - 29_000, duration_ms: 1000, error: failure, stats: null })
    await q.writeRun({ integration_id: id, sync_id: 's-f2', attempt: 1, tenant_id: 1, integration_type: 'commerce_platform', status: 'failed', started_at: t - 20_000, finished_at: t - 19_000, duration_ms: 1000, error: failure, stats: null })
    const r = await call('GET', `${BASE}/health`)
    expect(r.status).toBe(200)
    expect(r.body.success).toBe(true)
    expect(r.body.data).toMatchObject({ total_integrations: 4, active_integrations: 4 })
    expect(r.body.data.by_type).toEqual({
      commerce_platform: { total: 1, active: 1, last_24h_syncs: 3, success_rate: 0.3333 },
      marketplace: { total: 1, active: 1, last_24h_syncs: 0, success_rate: null },
      search_ads: { total: 1, active: 1, last_24h_syncs: 0, success_rate: null },
      social_ads: { total: 1, active: 1, last_24h_syncs: 0, success_rate: null },
    } satisfies Json)
    expect(r.body.data.alerts).toEqual([
      { integration_id: id, tenant_id: 1, type: 'sync_failure', message: 'RATE_LIMIT_EXCEEDED: Too many calls', since: new Date(t - 29_000).toISOString(), error: 'RATE_LIMIT_EXCEEDED', solution: 'wait' },
    ])
    const d = (await call('GET', `${BASE}/integration/${id}`)).body.data
    expect(d.sync_status).toBe('failed')
    expect(d.statistics).toEqual({ total_syncs: 3, successful_syncs: 1, failed_syncs: 2, last_error: { ...failure, occurred_at: new Date(t - 19_000).toISOString(), sync_id: 's-f2' }, avg_sync_time: '10s' })
    // A tenant key sees its own tenant only.
    const own = await call('GET', `${BASE}/health`, undefined, tenant2.key)
    expect(own.body.data).toMatchObject({ total_integrations: 1, alerts: [] })
  })
})

describe('sync history (ours)', () => {
  it('lists every run newest first, a page at a time, with its failure and what it published; 400 on a bad page, 403 for another tenant', async () => {
    const id = await commerceId()
    const q = new SyncQueue(store)
    const before = (await call('GET', `${BASE}/integration/${id}/syncs`)).body.pagination.total as number // the runs of the tests above
    const t = Date.now() + 60_000 // after theirs
    const stats = { ...emptyStats(), events_published: { customers: 12, orders: 30 }, entities: { orders: { pages: 2, received: 30, expected: 30, published: 30 } } }
    const failure = { error: 'SYNC_TIMEOUT', message: 'took too long', solution: 'sync a shorter window', duration: '600s' }
    await q.writeRun({ integration_id: id, sync_id: 'h-1', attempt: 1, tenant_id: 1, integration_type: 'commerce_platform', status: 'failed', started_at: t - 9_000, finished_at: t - 8_000, duration_ms: 1000, error: failure, stats: null })
    await q.writeRun({ integration_id: id, sync_id: 'h-1', attempt: 2, tenant_id: 1, integration_type: 'commerce_platform', status: 'success', started_at: t - 7_000, finished_at: t - 5_000, duration_ms: 2000, error: null, stats })
    await q.writeRun({ integration_id: id, sync_id: 'h-2', attempt: 1, tenant_id: 1, integration_type: 'commerce_platform', status: 'running', started_at: t - 1_000, finished_at: null, duration_ms: 0, error: null, stats: null })
    const all = await call('GET', `${BASE}/integration/${id}/syncs`)
    expect(all.status).toBe(200)
    expect(all.body.pagination).toEqual({ total: before + 3, limit: 20, offset: 0, has_next: false })
    expect(all.body.data.slice(0, 3).map((r: Json) => `${r.sync_id}#${r.attempt}:${r.status}`)).toEqual(['h-2#1:running', 'h-1#2:success', 'h-1#1:failed'])
    expect(all.body.data[1]).toEqual({ sync_id: 'h-1', attempt: 2, status: 'success', started_at: new Date(t - 7_000).toISOString(), finished_at: new Date(t - 5_000).toISOString(), duration_ms: 2000, error: null, records: { customers: 12, orders: 30 }, entities: { orders: { pages: 2, received: 30, expected: 30, published: 30 } } })
    expect(all.body.data[2].error).toEqual(failure)
    expect(all.body.data[0]).toMatchObject({ finished_at: null, records: { customers: 0, orders: 0 }, entities: {} })
    const page = await call('GET', `${BASE}/integration/${id}/syncs?limit=1&offset=1`)
    expect(page.body.pagination).toEqual({ total: before + 3, limit: 1, offset: 1, has_next: true })
    expect(page.body.data.map((r: Json) => r.attempt)).toEqual([2])
    for (const bad of ['limit=0', 'limit=101', 'offset=-1', 'limit=x']) expectCommonError(await call('GET', `${BASE}/integration/${id}/syncs?${bad}`), 400)
    expectCommonError(await call('GET', `${BASE}/integration/${id}/syncs`, undefined, tenant2.key), 403)
    expectCommonError(await call('GET', `${BASE}/integration/999999/syncs`), 404)
    expectCommonError(await call('GET', `${BASE}/integration/abc/syncs`), 400)
  })
})

describe('authentication and tenant isolation', () => {
  it('401 without a token, 403 for another tenant’s integration on every endpoint, 200 for its own', async () => {
    const id = await commerceId()
    expectCommonError(await call('GET', `${BASE}/1`, undefined, null), 401)
    expectCommonError(await call('GET', `${BASE}/1`, undefined, 'cdp_1_wrongwrongwrongwrongwrongwrongwrongwrongwro'), 401)
    expectCommonError(await call('GET', `${BASE}/1`, undefined, tenant2.key), 403)
    expectCommonError(await call('GET', `${BASE}/integration/${id}`, undefined, tenant2.key), 403)
    expectCommonError(await call('PUT', `${BASE}/${id}`, { is_active: false }, tenant2.key), 403)
    expectCommonError(await call('DELETE', `${BASE}/${id}`, undefined, tenant2.key), 403)
    expectCommonError(await call('POST', `${BASE}/${id}/test`, undefined, tenant2.key), 403)
    expectCommonError(await call('POST', `${BASE}/${id}/sync`, {}, tenant2.key), 403)
    expectCommonError(await call('POST', BASE, { tenant_id: 1, integration_type: 'commerce_platform', ...CP }, tenant2.key), 403)
    expectCommonError(await call('POST', BASE, { tenant_id: '1', integration_type: 'erp' }, tenant2.key), 403)
    expect((await call('GET', `${BASE}/1`, undefined, tenant1.key)).status).toBe(200)
    expect((await call('GET', `${BASE}/integration/${id}`, undefined, tenant1.key)).status).toBe(200)
    expect((await call('GET', `${BASE}/integration/${id}`, undefined, tenant1.key)).body.data.id).toBe(id)
  })
})

describe('cdp keys rotate', () => {
  it('re-encrypts every integration under the new key; each keeps working under a keyring without the old key', async () => {
    const rotated = parseKeyring(`${K2},${K1}`)
    const n = await rotateIntegrationCredentials(store, rotated)
    expect(n).toBe(await countIntegrations())
    expect(await rotateIntegrationCredentials(store, rotated)).toBe(0)
    const rs = await store.query({ query: 'SELECT credentials, webhook_secret FROM integrations FINAL', format: 'JSONEachRow' })
    for (const r of await rs.json<{ credentials: string; webhook_secret: string }>()) {
      expect((JSON.parse(r.credentials) as EncryptedSecret).key_id).toBe('k2')
      if (r.webhook_secret) expect((JSON.parse(r.webhook_secret) as EncryptedSecret).key_id).toBe('k2')
    }
    const onlyNew = await serve(parseKeyring(K2))
    for (const i of (await call('GET', `${BASE}/1`, undefined, ADMIN, onlyNew)).body.data as Json[]) {
      const t = await call('POST', `${BASE}/${i.id}/test`, undefined, ADMIN, onlyNew)
      expect(t.status).toBe(200)
      expect(t.body.data.status).toBe('connected')
      const d = await call('GET', `${BASE}/integration/${i.id}`, undefined, ADMIN, onlyNew)
      expect(d.body.data.credentials).not.toBeNull()
    }
    expect(await new IntegrationStore(store, parseKeyring(K2)).webhookSecret(await commerceId())).toBe(WEBHOOK_SECRET)
  })
})

describe('delete (endpoint 5)', () => {
  it('soft-deletes: deleted_at set, gone from the list and the detail, the row kept', async () => {
    const id = (await call('GET', `${BASE}/2`)).body.data[0].id
    const r = await call('DELETE', `${BASE}/${id}`, undefined, tenant2.key)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ success: true, message: expect.any(String), data: { id, deleted_at: expect.any(String) } })
    expectCommonError(await call('GET', `${BASE}/integration/${id}`), 404)
    expectCommonError(await call('DELETE', `${BASE}/${id}`), 404)
    expect((await call('GET', `${BASE}/2`)).body.count).toBe(0)
    const rec = await new IntegrationStore(store, parseKeyring(`${K2},${K1}`)).get(id)
    expect(rec?.deleted_at).toBe(Date.parse(r.body.data.deleted_at))
  })
})

describe('secrets', () => {
  it('no secret appears in any response body or log line of this file', () => {
    expect(bodies.length).toBeGreaterThan(50)
    expect(logLines.length).toBeGreaterThan(20)
    for (const s of SECRETS) {
      for (const b of bodies) expect(b).not.toContain(s)
      for (const l of logLines) expect(l).not.toContain(s)
    }
  })
})
