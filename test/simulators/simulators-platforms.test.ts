import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as commerceSim from '../../services/simulators/commerce-platform/index.ts'
import * as marketplaceSim from '../../services/simulators/marketplace/index.ts'
import * as searchAdsSim from '../../services/simulators/search-ads/index.ts'
import { start as startAdsPlatform } from '../../services/simulators/ads-platform/index.ts'
import { CommercePlatformClient, commerceBaseUrl } from '../../pipelines/connectors/sources/commerce-platform/client.ts'
import * as commerceMapping from '../../pipelines/connectors/sources/commerce-platform/mapping.ts'
import { MarketplaceClient } from '../../pipelines/connectors/sources/marketplace/client.ts'
import * as marketplaceMapping from '../../pipelines/connectors/sources/marketplace/mapping.ts'
import { SearchAdsClient } from '../../pipelines/connectors/sources/search-ads/client.ts'
import { ConnectorError } from '../../pipelines/connectors/sources/http.ts'
import { validateCredentials } from '../../pipelines/connectors/sources/validate.ts'
import { testConnection } from '../../pipelines/connectors/sources/connection-test.ts'
import { createSyncSource } from '../../pipelines/connectors/sources/source.ts'
import { deriveCustomerId, itemsCents } from '../../pipelines/connectors/sources/mapping.ts'
import { appKeyMatches } from '../../pipelines/connectors/sources/types.ts'
import { customerSemanticErrors, orderSemanticErrors } from '../../pipelines/ingest/validation.ts'
import { toCents } from '../../common/decimal.ts'

const NOW = Date.UTC(2025, 5, 1)
const clock = { t: NOW }
const now = () => clock.t
const END = new Date(NOW)
const noSleep = async () => {}

let cp: commerceSim.RunningCommercePlatformSimulator
let mp: marketplaceSim.RunningMarketplaceSimulator
let sa: searchAdsSim.RunningSearchAdsSimulator

const cpCreds = { account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken }
const mpCreds = { client_id: marketplaceSim.DEFAULTS.clientId, client_secret: marketplaceSim.DEFAULTS.clientSecret, redirect_uri: marketplaceSim.DEFAULTS.redirectUri }
const saCreds = { customer_id: '123-456-7890', developer_token: searchAdsSim.DEFAULTS.developerToken, refresh_token: searchAdsSim.DEFAULTS.refreshToken }

beforeAll(async () => {
  cp = await commerceSim.start({ customers: 120, end: END, now })
  mp = await marketplaceSim.start({ customers: 80, end: END, now })
  sa = await searchAdsSim.start({ customers: 80, end: END, now })
})
afterAll(async () => {
  await Promise.all([cp?.close(), mp?.close(), sa?.close()])
})

const cpHeaders = { 'x-app-key': cpCreds.app_key, 'x-app-token': cpCreds.app_token }

describe('commerce platform simulator', () => {
  const api = () => `${cp.url}/demoshop/commerce_stable/api`

  it('answers the account, and 401 (with the platform error body) on a bad token, 404 on another account', async () => {
    const ok = await fetch(`${api()}/account`, { headers: cpHeaders })
    expect(ok.status).toBe(200)
    expect(await ok.json()).toMatchObject({ accountName: 'demoshop', isActive: true, resources: { catalog: true, orders: true, masterdata: true, payments: true } })
    const bad = await fetch(`${api()}/account`, { headers: { ...cpHeaders, 'x-app-token': 'nope' } })
    expect(bad.status).toBe(401)
    expect(await bad.json()).toEqual({ error: { code: 'UNAUTHORIZED', message: expect.any(String) } })
    expect((await fetch(`${api()}/account`)).status).toBe(401)
    expect((await fetch(`${cp.url}/other/commerce_stable/api/account`, { headers: cpHeaders })).status).toBe(404)
    expect((await fetch(`${cp.url}/demoshop/commerce_beta/api/account`, { headers: cpHeaders })).status).toBe(404)
  })

  it('pages orders by last change with date filters, every order exactly once', async () => {
    const all: { orderId: string; lastChange: string }[] = []
    for (let page = 1; ; page++) {
      const r = (await (await fetch(`${api()}/oms/orders?page=${page}&per_page=40`, { headers: cpHeaders })).json()) as { list: { orderId: string; lastChange: string }[]; paging: { total: number; pages: number } }
      all.push(...r.list)
      if (page >= r.paging.pages) {
        expect(r.paging.total).toBe(all.length)
        break
      }
    }
    expect(new Set(all.map((o) => o.orderId)).size).toBe(all.length)
    expect(all.map((o) => o.lastChange)).toEqual([...all.map((o) => o.lastChange)].sort())
    const mid = all[Math.floor(all.length / 2)]!.lastChange
    const after = (await (await fetch(`${api()}/oms/orders?per_page=100&updated_from=${mid}`, { headers: cpHeaders })).json()) as { paging: { total: number } }
    expect(after.paging.total).toBe(all.filter((o) => o.lastChange >= mid).length)
    expect((await fetch(`${api()}/oms/orders?updated_from=yesterday`, { headers: cpHeaders })).status).toBe(400)
    expect((await fetch(`${api()}/oms/orders?per_page=500`, { headers: cpHeaders })).status).toBe(400)
  })

  it('lists customers and products, and hides data from the future of its clock', async () => {
    const c = (await (await fetch(`${api()}/masterdata/customers?per_page=5`, { headers: cpHeaders })).json()) as { data: Record<string, unknown>[]; paging: { total: number } }
    expect(c.paging.total).toBe(120)
    expect(c.data[0]).toMatchObject({ id: expect.any(String), createdIn: expect.any(String), updatedIn: expect.any(String) })
    const p = (await (await fetch(`${api()}/catalog/products`, { headers: cpHeaders })).json()) as { data: unknown[] }
    expect(p.data.length).toBeGreaterThan(10)
    const saved = clock.t
    clock.t = END.getTime() - 200 * 86_400_000
    try {
      const early = (await (await fetch(`${api()}/oms/orders?per_page=1`, { headers: cpHeaders })).json()) as { paging: { total: number } }
      expect(early.paging.total).toBeLessThan(cp.state.data.orders.length)
    } finally {
      clock.t = saved
    }
  })

  it('answers 429 with Retry-After past its rate limit, injects faults and latency, and logs every request', async () => {
    const sim = await commerceSim.start({ customers: 5, end: END, now, rateLimit: { requests: 2, windowMs: 60_000 } })
    try {
      const url = `${sim.url}/demoshop/commerce_stable/api/account`
      expect((await fetch(url, { headers: cpHeaders })).status).toBe(200)
      expect((await fetch(url, { headers: cpHeaders })).status).toBe(200)
      const limited = await fetch(url, { headers: cpHeaders })
      expect(limited.status).toBe(429)
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
      sim.state.window.limit = 1000
      sim.state.setFaults({ rate500: 1 })
      expect((await fetch(url, { headers: cpHeaders })).status).toBe(500)
      sim.state.setFaults({ rate500: 0, latencyMs: 120 })
      const t0 = performance.now()
      expect((await fetch(url, { headers: cpHeaders })).status).toBe(200)
      expect(performance.now() - t0).toBeGreaterThanOrEqual(100)
      expect(sim.requestLog.map((e) => e.status)).toEqual([200, 200, 429, 500, 200])
      expect(sim.requestLog[0]).toMatchObject({ method: 'GET', path: '/demoshop/commerce_stable/api/account', caller: cpCreds.app_key })
      expect(JSON.stringify(sim.requestLog)).not.toContain(cpCreds.app_token)
    } finally {
      await sim.close()
    }
  })
})

describe('commerce platform connector', () => {
  it('builds the base URL from a template or by appending account and environment', () => {
    expect(commerceBaseUrl('http://h:1/', 'shop', 'commerce_stable')).toBe('http://h:1/shop/commerce_stable')
    expect(commerceBaseUrl('https://{account_name}.{environment}.example.com', 'shop', 'commerce_stable')).toBe('https://shop.commerce_stable.example.com')
  })

  it('checks the app key form appkey-{account_name}-{hash}', () => {
    expect(appKeyMatches('appkey-demoshop-SIM0001', 'demoshop')).toBe(true)
    expect(appKeyMatches('appkey-other-SIM0001', 'demoshop')).toBe(false)
    expect(appKeyMatches('demoshop-SIM0001', 'demoshop')).toBe(false)
    expect(appKeyMatches('appkey-demoshop-', 'demoshop')).toBe(false)
    expect(appKeyMatches('appkey-demoshop-ab!c', 'demoshop')).toBe(false)
  })

  it('validates credentials into the account info of endpoint 6, and says rejected or unavailable', async () => {
    const endpoints = { commercePlatform: cp.url, marketplace: mp.url, searchAds: sa.url, socialAds: 'http://127.0.0.1:9' }
    const ok = await validateCredentials('commerce_platform', cpCreds, {}, { endpoints })
    expect(ok).toEqual({ ok: true, accountName: 'demoshop', account: { account_name: 'demoshop', account_id: expect.any(String), is_active: true, hosts: expect.any(Array), apis_available: { catalog: true, orders: true, masterdata: true, payments: true } } })
    const bad = await validateCredentials('commerce_platform', { ...cpCreds, app_token: 'wrong' }, {}, { endpoints })
    expect(bad).toMatchObject({ ok: false, kind: 'rejected', code: 'INVALID_CREDENTIALS' })
    expect(await validateCredentials('commerce_platform', { ...cpCreds, app_key: 'key' }, {}, { endpoints })).toMatchObject({ ok: false, kind: 'rejected', code: 'INVALID_APP_KEY' })
    const down = await validateCredentials('commerce_platform', cpCreds, {}, { endpoints: { ...endpoints, commercePlatform: 'http://127.0.0.1:9' }, http: { sleep: noSleep, timeoutMs: 2000 } })
    expect(down).toMatchObject({ ok: false, kind: 'unavailable', code: 'UNAVAILABLE' })
  })

  it('maps every order to events that pass the consumers’ checks, items adding up (shipping as an item)', async () => {
    const client = new CommercePlatformClient(cp.url, cpCreds)
    const page = await client.orders({ page: 1, perPage: 100 })
    const ctx = { tenantId: 7, account: 'demoshop' }
    let withShipping = 0
    for (const raw of page.items) {
      const m = commerceMapping.mapOrder(raw, ctx)
      expect(m.ok).toBe(true)
      if (!m.ok) continue
      expect(m.value.totalMismatch).toBe(false)
      const placed = m.value.events.find((e) => e.event_type === 'placed')!
      expect(itemsCents(placed.items)).toBe(toCents(placed.total))
      if (placed.items.some((i) => i.sku === 'SHIPPING')) withShipping++
      for (const e of m.value.events) expect(orderSemanticErrors(e, NOW)).toEqual([])
      expect(m.value.customerId).toBe(deriveCustomerId('commerce_platform', 'demoshop', (raw as { clientProfileData: { userProfileId: string } }).clientProfileData.userProfileId))
      // Deterministic: mapping the same record again gives the same event ids.
      const again = commerceMapping.mapOrder(raw, ctx)
      expect(again.ok && again.value.events.map((e) => e.event_id)).toEqual(m.value.events.map((e) => e.event_id))
    }
    expect(withShipping).toBeGreaterThan(0)
    const customers = await client.customers({ page: 1, perPage: 100 })
    for (const raw of customers.items) {
      const c = commerceMapping.mapCustomer(raw, ctx)
      expect(c.ok).toBe(true)
      if (c.ok) expect(customerSemanticErrors(c.value.event)).toEqual([])
    }
  })

  it('flags an order whose value its lines do not explain, and reports records it cannot map', () => {
    const base = { orderId: '1-01', creationDate: '2025-01-01T10:00:00Z', status: 'payment-approved', currencyCode: 'ARS', clientProfileData: { userProfileId: 'u1', email: 'a@b.com' } }
    const m = commerceMapping.mapOrder({ ...base, value: 1100, totals: [{ id: 'Items', value: 1000 }], items: [{ id: 'S', quantity: 1, price: 1000 }] }, { tenantId: 1, account: 'x' })
    expect(m.ok && m.value.totalMismatch).toBe(true)
    expect(m.ok && m.value.events[0]!.items).toEqual([])
    const bad = commerceMapping.mapOrder({ orderId: '2-01' }, { tenantId: 1, account: 'x' })
    expect(bad).toMatchObject({ ok: false, externalId: '2-01' })
  })

  it('turns a long 429 into RATE_LIMIT_EXCEEDED with retry_after, and waits out a short one', async () => {
    const sim = await commerceSim.start({ customers: 5, end: END, now })
    try {
      sim.state.setFaults({ rate429: 1, retryAfterSec: 60 })
      const client = new CommercePlatformClient(sim.url, cpCreds, { sleep: noSleep })
      const err = await client.account().catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ConnectorError)
      expect(err).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retryAfterSec: 60 })
      sim.state.setFaults({ rate429: 0.5, retryAfterSec: 1 })
      const slept: number[] = []
      const patient = new CommercePlatformClient(sim.url, cpCreds, { sleep: async (ms) => void slept.push(ms), maxAttempts: 20 })
      for (let i = 0; i < 5; i++) await patient.account()
      expect(slept.every((ms) => ms === 1000)).toBe(true)
    } finally {
      await sim.close()
    }
  })
})

describe('marketplace simulator and connector', () => {
  it('issues tokens for the registered application only (redirect URI included), and refreshes with single-use refresh tokens', async () => {
    const form = (b: Record<string, string>) => fetch(`${mp.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(b) })
    const ok = await form({ grant_type: 'client_credentials', client_id: mpCreds.client_id, client_secret: mpCreds.client_secret, redirect_uri: mpCreds.redirect_uri })
    expect(ok.status).toBe(200)
    const t = (await ok.json()) as { access_token: string; refresh_token: string; expires_in: number; user_id: number }
    expect(t).toMatchObject({ token_type: 'bearer', expires_in: 21600, user_id: 123456789 })
    expect((await form({ grant_type: 'client_credentials', client_id: mpCreds.client_id, client_secret: 'x' })).status).toBe(400)
    expect((await form({ grant_type: 'client_credentials', client_id: mpCreds.client_id, client_secret: mpCreds.client_secret, redirect_uri: 'https://evil.example.com' })).status).toBe(400)
    const r1 = await form({ grant_type: 'refresh_token', client_id: mpCreds.client_id, client_secret: mpCreds.client_secret, refresh_token: t.refresh_token })
    expect(r1.status).toBe(200)
    const again = await form({ grant_type: 'refresh_token', client_id: mpCreds.client_id, client_secret: mpCreds.client_secret, refresh_token: t.refresh_token })
    expect(again.status).toBe(400)
    expect(((await again.json()) as { error: string }).error).toBe('invalid_grant')
    expect((await fetch(`${mp.url}/users/me`, { headers: { authorization: `Bearer ${t.access_token}` } })).status).toBe(200)
    expect((await fetch(`${mp.url}/users/me`, { headers: { authorization: 'Bearer nope' } })).status).toBe(401)
  })

  it('refreshes an expired access token by itself and pages every order once', async () => {
    const client = new MarketplaceClient(mp.url, mpCreds, {}, now)
    await client.authenticate()
    const me = await client.me()
    mp.state.expireAccessTokens()
    const seen = new Set<string>()
    let total = 0
    for (let offset = 0; ; ) {
      const p = await client.orders(me.id, { offset, limit: 50 })
      total = p.total
      for (const o of p.items) seen.add(String((o as { id: number }).id))
      offset += p.items.length
      if (!p.items.length || offset >= p.total) break
    }
    expect(seen.size).toBe(total)
    expect(mp.requestLog.some((e) => e.status === 401 && e.error === 'expired_token')).toBe(true)
  })

  it('maps orders (money as numbers, times with an offset) and buyers to valid events', async () => {
    const client = new MarketplaceClient(mp.url, mpCreds, {}, now)
    const { items } = await client.orders(123456789, { offset: 0, limit: 50 })
    const ctx = { tenantId: 3, account: '123456789', country: 'AR' }
    for (const raw of items) {
      const m = marketplaceMapping.mapOrder(raw, ctx)
      expect(m.ok).toBe(true)
      if (!m.ok) continue
      expect(m.value.totalMismatch).toBe(false)
      for (const e of m.value.events) expect(orderSemanticErrors(e, NOW)).toEqual([])
      expect(m.value.events[0]!.placed_at).toBe(Date.parse((raw as { date_created: string }).date_created))
    }
    const buyers = await client.customers(123456789, { offset: 0, limit: 10 })
    for (const raw of buyers.items) {
      const c = marketplaceMapping.mapCustomer(raw, ctx)
      expect(c.ok && customerSemanticErrors(c.value.event)).toEqual([])
    }
  })

  it('validates the credentials and the site, and tests the connection', async () => {
    const endpoints = { commercePlatform: cp.url, marketplace: mp.url, searchAds: sa.url, socialAds: 'http://127.0.0.1:9' }
    expect(await validateCredentials('marketplace', mpCreds, {}, { endpoints })).toMatchObject({ ok: true, accountName: 'DEMOSHOP', account: { user_id: 123456789, site_id: 'MLA' } })
    expect(await validateCredentials('marketplace', mpCreds, { site_id: 'MLB' }, { endpoints })).toMatchObject({ ok: false, kind: 'rejected' })
    expect(await validateCredentials('marketplace', { ...mpCreds, client_secret: 'x' }, {}, { endpoints })).toMatchObject({ ok: false, kind: 'rejected', code: 'INVALID_CREDENTIALS' })
    const t = await testConnection('marketplace', mpCreds, {}, { endpoints })
    expect(t).toMatchObject({ status: 'connected', endpoints_tested: { orders: { status: 'ok' }, customers: { status: 'ok' } } })
  })

  it('pages through a sync source to the end', async () => {
    const source = createSyncSource('marketplace', mpCreds, {}, { tenantId: 3, endpoints: { commercePlatform: '', marketplace: mp.url, searchAds: '', socialAds: '' }, now })
    await source.verify()
    let cursor: string | null = null
    let orders = 0
    let pages = 0
    do {
      const p = await source.page('orders', { from: null, to: NOW + 1 }, cursor, 50, new Map())
      orders += p.orders.length
      pages++
      cursor = p.next
      expect(p.invalid).toEqual([])
    } while (cursor)
    expect(orders).toBe(mp.state.ordersIn({ updated: {}, created: {} }).length)
    expect(pages).toBe(Math.ceil(orders / 50))
  })
})

describe('search ads simulator and connector', () => {
  it('wants a developer token and an access token from the refresh token; 401 otherwise', async () => {
    const tok = await fetch(`${sa.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: saCreds.refresh_token }) })
    const { access_token } = (await tok.json()) as { access_token: string }
    const ok = await fetch(`${sa.url}/v17/customers/1234567890`, { headers: { authorization: `Bearer ${access_token}`, 'developer-token': saCreds.developer_token } })
    expect(ok.status).toBe(200)
    const noDev = await fetch(`${sa.url}/v17/customers/1234567890`, { headers: { authorization: `Bearer ${access_token}` } })
    expect(noDev.status).toBe(401)
    expect(((await noDev.json()) as { error: { status: string } }).error.status).toBe('UNAUTHENTICATED')
    const badRefresh = await fetch(`${sa.url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'x' }) })
    expect(badRefresh.status).toBe(400)
    expect((await fetch(`${sa.url}/v17/customers/9999999999`, { headers: { authorization: `Bearer ${access_token}`, 'developer-token': saCreds.developer_token } })).status).toBe(400)
  })

  it('pages conversions with page tokens and date filters', async () => {
    const client = new SearchAdsClient(sa.url, saCreds, {}, 'v17', now)
    expect(await client.accessibleCustomers()).toEqual(['1234567890'])
    let token: string | null = null
    let n = 0
    let total = 0
    do {
      const p = await client.conversions({ pageSize: 7, pageToken: token })
      n += p.items.length
      total = p.total ?? 0
      token = p.next
    } while (token)
    expect(n).toBe(total)
    expect(total).toBeGreaterThan(0)
    const recent = await client.conversions({ pageSize: 1000, dateFrom: '2025-05-01' })
    expect(recent.items.length).toBeLessThan(total)
  })

  it('validates and tests credentials; a wrong developer token is rejected', async () => {
    const endpoints = { commercePlatform: cp.url, marketplace: mp.url, searchAds: sa.url, socialAds: 'http://127.0.0.1:9' }
    expect(await validateCredentials('search_ads', saCreds, {}, { endpoints })).toMatchObject({ ok: true, account: { customer_id: '1234567890', currency_code: 'ARS' } })
    expect(await validateCredentials('search_ads', { ...saCreds, developer_token: 'x' }, {}, { endpoints })).toMatchObject({ ok: false, kind: 'rejected' })
    expect(await validateCredentials('search_ads', { ...saCreds, refresh_token: 'x' }, {}, { endpoints })).toMatchObject({ ok: false, kind: 'rejected' })
    expect(await testConnection('search_ads', saCreds, {}, { endpoints })).toMatchObject({ status: 'connected', endpoints_tested: { conversions: { status: 'ok' }, customer_match: { status: 'ok' } } })
  })
})

describe('social ads validation through /debug_token', () => {
  it('needs a valid token of the app with ads_management, ads_read and business_management', async () => {
    const ads = await startAdsPlatform({
      appId: '555000111',
      appSecret: 'social-app-secret-abcdef',
      tokens: ['EAAfull-token-0000000000', { token: 'EAAread-only-token-000000', scopes: ['ads_read'] }],
    })
    try {
      const endpoints = { commercePlatform: '', marketplace: '', searchAds: '', socialAds: ads.url }
      const creds = { app_id: '555000111', app_secret: 'social-app-secret-abcdef', access_token: 'EAAfull-token-0000000000' }
      expect(await validateCredentials('social_ads', creds, {}, { endpoints })).toMatchObject({ ok: true, account: { app_id: '555000111', scopes: expect.arrayContaining(['ads_management', 'ads_read', 'business_management']) } })
      const missing = await validateCredentials('social_ads', { ...creds, access_token: 'EAAread-only-token-000000' }, {}, { endpoints })
      expect(missing).toMatchObject({ ok: false, kind: 'rejected' })
      expect((missing as { message: string }).message).toContain('ads_management')
      expect(await validateCredentials('social_ads', { ...creds, access_token: 'EAAunknown' }, {}, { endpoints })).toMatchObject({ ok: false, kind: 'rejected' })
      expect(await validateCredentials('social_ads', { ...creds, app_secret: 'wrong' }, {}, { endpoints })).toMatchObject({ ok: false, kind: 'rejected' })
      expect(await testConnection('social_ads', creds, {}, { endpoints })).toMatchObject({ status: 'connected', endpoints_tested: { ad_accounts: { status: 'ok' } } })
      // Tokens travel in the query of /debug_token; nothing the client reports carries them.
      expect(JSON.stringify(missing)).not.toContain('social-app-secret-abcdef')
    } finally {
      await ads.close()
    }
  })
})
