import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Store } from '../../common/store/clickhouse.ts'
import { signHubSignature } from '../../pipelines/audience-sync/ads-platform/index.ts'
import * as commerceSim from '../../services/simulators/commerce-platform/index.ts'
import { start as startAdsPlatform, type RunningAdsPlatformSimulator } from '../../services/simulators/ads-platform/index.ts'
import { ADMIN, APP_SECRET, fullApp, UNKNOWN_TENANT, VERIFY_TOKEN } from './full-app.ts'
import { readDocumented } from './documented.ts'
import { migratedStore } from '../helpers.ts'

/**
 * Real answers of the operations whose own tests live with their lanes (processing, tenant
 * settings, integrations, audience syncs, webhooks, health, the document), each success and at
 * least one refusal checked against the schema its operation documents (documented.ts).
 */

const T = 31
const TOKEN = 'EAAB-documented-audience-token'
const ACCOUNT = 'act_1000000077'
const CP = { account_name: commerceSim.DEFAULTS.accountName, environment: commerceSim.DEFAULTS.environment, app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken }

let store: Store
let server: http.Server
let base = ''
let cp: commerceSim.RunningCommercePlatformSimulator
let ads: RunningAdsPlatformSimulator

beforeAll(async () => {
  store = await migratedStore()
  cp = await commerceSim.start({ customers: 5, end: new Date(Date.UTC(2025, 5, 1)) })
  ads = await startAdsPlatform({ tokens: [TOKEN], adAccounts: [ACCOUNT] })
  const none = 'http://127.0.0.1:9'
  const app = fullApp({ store, endpoints: { commercePlatform: cp.url, marketplace: none, searchAds: none, socialAds: ads.url }, ads: { baseUrl: ads.url, appAccessToken: ads.appAccessToken } })
  server = http.createServer(app)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}, 60_000)

afterAll(async () => {
  if (server) await new Promise<void>((r) => server.close(() => r()))
  await ads?.close()
  await cp?.close()
  await store?.close()
})

/** A request with the admin token (or `token`), its answer checked against the document. */
async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: `Bearer ${ADMIN}` }) {
  const init: RequestInit = { method, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) } }
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body)
  return readDocumented(method, await fetch(`${base}${path}`, init))
}

describe('processing', () => {
  const P = '/api/v2/cdp/process'
  it('process, status, schedule, unschedule and cancel answer as documented', async () => {
    expect((await call('POST', `${P}/${T}`, { analyses: ['rfm', 'clv', 'churn'] })).status).toBe(200)
    expect((await call('POST', `${P}/${T}`, {})).body.message).toMatch(/from cache/)
    const status = await call('GET', `${P}/status/${T}`)
    expect(status.status).toBe(200)
    expect(status.body.data.status).toBe('processed')
    expect((await call('POST', `${P}/${T}/schedule`, { recurring: true, frequency: 'daily' })).status).toBe(201)
    expect((await call('DELETE', `${P}/${T}/schedule`)).status).toBe(200)
  })

  it('refusals answer as documented', async () => {
    expect((await call('POST', `${P}/${UNKNOWN_TENANT}`, {})).status).toBe(404)
    expect((await call('POST', `${P}/x`, { analyses: ['nope'] })).body.details.errors.length).toBe(2)
    expect((await call('GET', `${P}/status/0`)).status).toBe(400)
    expect((await call('POST', `${P}/${T}/schedule`, { recurring: true })).status).toBe(400)
    expect((await call('DELETE', `${P}/${T}/schedule`)).status).toBe(404)
    expect((await call('DELETE', `${P}/${T}/cancel`)).status).toBe(404)
    expect((await call('GET', `${P}/status/${T}`, undefined, {})).status).toBe(401)
    expect((await call('POST', `${P}/${T}`, `{"force": "${'x'.repeat(21 * 1024 * 1024)}"}`)).status).toBe(413) // over the JSON parser's limit
  })
})

describe('tenant settings', () => {
  const S = `/api/v2/cdp/tenants/${T}/settings`
  it('put and get answer as documented', async () => {
    const put = await call('PUT', S, { tenant_name: 'Documented shop', currency: 'ars', reference_date: 'data_end' })
    expect(put.status).toBe(200)
    expect(put.body.data).toMatchObject({ tenant_id: T, tenant_name: 'Documented shop', currency: 'ARS', reference_date: 'data_end' })
    expect((await call('GET', S)).status).toBe(200)
  })

  it('refusals answer as documented', async () => {
    expect((await call('PUT', S, { currency: 'pesos', nope: 1 })).status).toBe(400)
    expect((await call('GET', '/api/v2/cdp/tenants/0/settings')).status).toBe(400)
    expect((await call('GET', `/api/v2/cdp/tenants/${UNKNOWN_TENANT}/settings`)).status).toBe(404)
  })
})

describe('tenant integrations', () => {
  const I = '/api/v2/tenant-integrations'
  it('the nine endpoints answer as documented, refusals too', async () => {
    const created = await call('POST', I, { tenant_id: T, integration_type: 'commerce_platform', ...CP })
    expect(created.status).toBe(201)
    const id = created.body.data.id as number
    expect((await call('POST', I, { tenant_id: T, integration_type: 'commerce_platform', ...CP })).status).toBe(409)
    expect((await call('POST', I, { tenant_id: T, integration_type: 'commerce_platform', ...CP, app_key: 'appkey-othershop-X' })).status).toBe(400) // INVALID_APP_KEY
    expect((await call('POST', I, { tenant_id: T, integration_type: 'pigeon' })).status).toBe(400)

    expect((await call('GET', `${I}/${T}`)).body.count).toBe(1)
    expect((await call('GET', `${I}/x`)).status).toBe(400)
    const detail = await call('GET', `${I}/integration/${id}`)
    expect(detail.body.data).toMatchObject({ id, configuration: { webhook_secret: null } })
    expect((await call('GET', `${I}/integration/999999`)).status).toBe(404)

    expect((await call('POST', `${I}/validate/commerce_platform`, CP)).status).toBe(200)
    const refused = await call('POST', `${I}/validate/commerce_platform`, { ...CP, app_token: 'a-wrong-token-0123456789' })
    expect(refused.status).toBe(400)
    expect(refused.body.error.code).toBe('INVALID_CREDENTIALS')
    expect((await call('POST', `${I}/validate/pigeon`, {})).status).toBe(400)

    expect((await call('POST', `${I}/${id}/test`)).body.data.status).toBe('connected')
    expect((await call('POST', `${I}/${id}/sync`, { sync_type: 'full', entities: ['orders'] })).status).toBe(202)
    expect((await call('POST', `${I}/${id}/sync`, { entities: ['pigeons'] })).status).toBe(400)
    expect((await call('PUT', `${I}/${id}`, { is_active: false, configuration: { sync_interval: 'weekly' } })).body.data.changes).toHaveProperty('is_active')
    expect((await call('POST', `${I}/${id}/sync`, {})).status).toBe(409)
    expect((await call('PUT', `${I}/${id}`, { client_secret: 'not-for-commerce' })).status).toBe(400)
    expect((await call('GET', `${I}/health`)).body.data.total_integrations).toBeGreaterThanOrEqual(1)
    expect((await call('DELETE', `${I}/${id}`)).status).toBe(200)
    expect((await call('DELETE', `${I}/${id}`)).status).toBe(404)
  })
})

describe('audience syncs and the ads webhook', () => {
  const A = '/api/v2/cdp/audience-syncs'
  it('create, list, get, update and delete answer as documented, refusals too', async () => {
    const created = await call('POST', A, { tenant_id: T, segment: 'At Risk', ad_account_id: ACCOUNT, access_token: TOKEN })
    expect(created.status).toBe(201)
    const id = created.body.data.id as string
    expect((await call('POST', A, { tenant_id: T, segment: 'At Risk', ad_account_id: ACCOUNT, access_token: 'EAAB-not-a-known-token' })).status).toBe(400)
    expect((await call('POST', `${A}?tenant_id=${T + 1}`, { tenant_id: T, segment: 'At Risk', ad_account_id: ACCOUNT, access_token: TOKEN })).body.details.errors[0].code).toBe('tenant_mismatch')
    expect((await call('GET', `${A}?tenant_id=${T}`)).body.count).toBe(1)
    expect((await call('GET', A)).status).toBe(400)
    expect((await call('GET', `${A}/${id}?tenant_id=${T}`)).body.data.access_token).toBe('********')
    expect((await call('GET', `${A}/nope?tenant_id=${T}`)).status).toBe(404)
    expect((await call('PUT', `${A}/${id}?tenant_id=${T}`, { status: 'paused', name: 'Paused sync' })).body.data.status).toBe('paused')
    expect((await call('PUT', `${A}/${id}?tenant_id=${T}`, { colour: 'red' })).status).toBe(400)
    expect((await call('DELETE', `${A}/${id}?tenant_id=${T}`)).status).toBe(200)
    expect((await call('DELETE', `${A}/${id}?tenant_id=${T}`)).status).toBe(404)
  })

  it('the webhook handshake and delivery-status events answer as documented, on the alias too', async () => {
    const hub = (token: string) => `hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1234`
    for (const path of ['/webhooks/social-ads', '/webhooks/social_ads']) {
      const ok = await call('GET', `${path}?${hub(VERIFY_TOKEN)}`, undefined, {})
      expect([ok.status, ok.body]).toEqual([200, '1234'])
      expect((await call('GET', `${path}?${hub('wrong')}`, undefined, {})).status).toBe(403)
      expect((await call('GET', `${path}?hub.mode=unsubscribe`, undefined, {})).status).toBe(400)
      const event = JSON.stringify({ entry: [{ id: 'aud_nobody', time: 1_750_000_000, changes: [{ field: 'delivery_status', value: { code: 200, description: 'ready' } }] }] })
      const delivered = await call('POST', path, event, { 'x-hub-signature-256': signHubSignature(event, APP_SECRET) })
      expect(delivered.body.data).toEqual({ updated: 0, unknown_audiences: 1, stale: 0 })
      expect((await call('POST', path, event, { 'x-hub-signature-256': signHubSignature(event, 'another-secret') })).status).toBe(401)
      expect((await call('POST', path, '{"entry": 1}', { 'x-hub-signature-256': signHubSignature('{"entry": 1}', APP_SECRET) })).status).toBe(400)
    }
  })
})

describe('health, readiness, metrics and the document', () => {
  it('answer as documented', async () => {
    expect((await call('GET', '/health', undefined, {})).body.status).toBe('ok')
    expect((await call('GET', '/ready', undefined, {})).body).toEqual({ ready: true, checks: { store: true } })
    expect((await call('GET', '/metrics', undefined, {})).body).toMatch(/^# HELP/m)
    expect((await call('GET', '/openapi.json', undefined, {})).body.openapi).toBe('3.1.0')
    expect((await call('GET', '/docs', undefined, {})).body).toContain('swagger-ui')
  })
})
