import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import http from 'node:http'
import { Writable } from 'node:stream'
import type { AddressInfo } from 'node:net'
import fs from 'node:fs'
import path from 'node:path'
import type { Store } from '../../common/store/clickhouse.ts'
import { openEventLog } from '../../common/runtime/context.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { createLogger } from '../../common/logger.ts'
import { createApp } from '../../services/api/app.ts'
import { ApiKeyStore, type CreatedKey } from '../../common/store/api-keys.ts'
import { consoleRouter } from '../../services/console/server.ts'
import { tenantSettingsRouter } from '../../services/api/tenant-settings-routes.ts'
import { SessionRevocations } from '../../common/store/session-revocations.ts'
import type { Express } from 'express'
import { migratedStore, silentLogger, testConfig, tmpDir } from '../helpers.ts'
import { expectDocumented } from './documented.ts'

/**
 * Console sessions (services/api/session.ts, session-routes.ts): a key exchanged for an HttpOnly,
 * SameSite=Strict cookie that then stands for it, CSRF on writes, expiry, tampering, revocation,
 * sign-out, the sign-in rate limit; and the console's page served at /console.
 */
const ADMIN = 'test-admin-token-0123456789abcdef'
const SESSION = '/api/v2/cdp/session'

let store: Store
let log: EventLog
let codec: EventCodec
let keys: ApiKeyStore
let keyA: CreatedKey
let base = ''
/** A second API process on the same store, as another replica behind a load balancer. */
let replica = ''
let t = Date.now() // the real clock: a revocation past its TTL (expiry + 1 day) is dropped at insert
const lines: string[] = []
const servers: http.Server[] = []
const dist = tmpDir()

beforeAll(async () => {
  store = await migratedStore()
  ;({ log, codec } = await openEventLog(testConfig('embedded'), silentLogger))
  keys = new ApiKeyStore(store)
  keyA = await keys.create(1, 'console')
  fs.mkdirSync(path.join(dist, 'assets'))
  fs.writeFileSync(path.join(dist, 'index.html'), '<!doctype html><title>console</title><div id="app"></div>')
  fs.writeFileSync(path.join(dist, 'assets', 'index-abc.js'), 'console.log(1)')
  const logger = createLogger({ level: 'info', destination: new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }) as never })
  const app = () =>
    createApp({
      logger,
      log,
      codec,
      readiness: [],
      analytics: { store, logger: silentLogger },
      auth: { adminToken: ADMIN, keys, now: () => t, sessionTtlMs: 3_600_000, rateLimits: { operationsPerMinute: 10_000 }, sessionRevocations: new SessionRevocations(store) },
      console: consoleRouter({ dist }),
      tenantSettings: tenantSettingsRouter({ store, logger: silentLogger }),
    })
  const listen = async (a: Express) => {
    const server = http.createServer(a)
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    servers.push(server)
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }
  base = await listen(app())
  replica = await listen(app())
})
afterAll(async () => {
  for (const s of servers) await new Promise<void>((r) => s.close(() => r()))
  await log?.close()
  await store?.close()
})

const json = { 'content-type': 'application/json' }
const signIn = (apiKey: unknown, headers: Record<string, string> = {}) => fetch(base + SESSION, { method: 'POST', headers: { ...json, ...headers }, body: JSON.stringify({ api_key: apiKey }) })
/** The cookie pair (name=value) a response sets. */
const cookieOf = (r: Response) => r.headers.getSetCookie().find((c) => c.startsWith('cdp_session='))!.split(';')[0]!

async function session(apiKey = keyA.key): Promise<{ cookie: string; csrf: string; setCookie: string; body: Record<string, unknown> }> {
  const r = await signIn(apiKey)
  expect(r.status).toBe(200)
  const body = (await r.json()) as { data: { csrf_token: string } }
  return { cookie: cookieOf(r), csrf: body.data.csrf_token, setCookie: r.headers.getSetCookie().find((c) => c.startsWith('cdp_session='))!, body }
}

describe('console sessions', () => {
  it('exchanges a tenant key for an HttpOnly, SameSite=Strict cookie that does not hold the key in the clear', async () => {
    const s = await session()
    expect(s.body).toEqual({ success: true, data: { role: 'tenant', tenant_id: 1, csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expires_at: new Date(t + 3_600_000).toISOString() } })
    expectDocumented('POST', base + SESSION, 200, s.body)
    expect(s.setCookie).toMatch(/HttpOnly/i)
    expect(s.setCookie).toMatch(/SameSite=Strict/i)
    expect(s.setCookie).toMatch(/Path=\//)
    expect(s.setCookie).toMatch(/Max-Age=3600/)
    expect(s.setCookie).not.toMatch(/Secure/) // plain HTTP here; Secure behind HTTPS (req.secure)
    expect(s.cookie).not.toContain(keyA.key)
    expect(Buffer.from(s.cookie.split('=')[1]!, 'base64url').toString('latin1')).not.toContain(keyA.key)
    expect(lines.join('')).not.toContain(keyA.key)
  })

  it('stands for the key: its tenant answers, another tenant is refused as for the key itself', async () => {
    const s = await session()
    // The tenant listing answers the key's own tenant only (none here: tenant 1 has no data).
    const listing = await fetch(`${base}/api/v2/cdp/tenants`, { headers: { cookie: s.cookie } })
    expect(listing.status).toBe(200)
    expect(await listing.json()).toEqual({ success: true, data: [], count: 0 })
    // Tenant 1 has no data here: its own request passes authentication and isolation and reaches the handler's 404.
    const own = await fetch(`${base}/api/cdp/v2/customers?tenant_id=1`, { headers: { cookie: s.cookie } })
    expect(own.status).toBe(404)
    expect(await own.json()).toMatchObject({ error: expect.stringMatching(/tenant/i) })
    const other = await fetch(`${base}/api/cdp/v2/customers?tenant_id=2`, { headers: { cookie: s.cookie } })
    expect(other.status).toBe(403)
    const none = await fetch(`${base}/api/cdp/v2/customers?tenant_id=1`)
    expect(none.status).toBe(401)
    // GET of the session: the same CSRF token, no key.
    const cur = await fetch(base + SESSION, { headers: { cookie: s.cookie } })
    expect(cur.status).toBe(200)
    const body = (await cur.json()) as { data: { csrf_token: string } }
    expect(body.data.csrf_token).toBe(s.csrf)
    expect(JSON.stringify(body)).not.toContain(keyA.key)
  })

  it("refuses a write made with the cookie unless it carries the session's X-CSRF-Token", async () => {
    const s = await session(ADMIN)
    expect(s.body).toMatchObject({ data: { role: 'admin', tenant_id: null } })
    const create = (headers: Record<string, string>) => fetch(`${base}/api/v2/admin/api-keys`, { method: 'POST', headers: { ...json, cookie: s.cookie, ...headers }, body: JSON.stringify({ tenant_id: 3 }) })
    const without = await create({})
    expect(without.status).toBe(403)
    expect(await without.json()).toMatchObject({ success: false, error: 'Forbidden', details: { code: 'CSRF_TOKEN_INVALID' } })
    const wrong = await create({ 'x-csrf-token': s.csrf.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) })
    expect(wrong.status).toBe(403)
    const other = await session(ADMIN) // another session's token does not fit this cookie
    expect((await create({ 'x-csrf-token': other.csrf })).status).toBe(403)
    const ok = await create({ 'x-csrf-token': s.csrf })
    expect(ok.status).toBe(201)
    // A bearer request needs no CSRF token (no cookie is involved).
    const bearer = await fetch(`${base}/api/v2/admin/api-keys`, { method: 'POST', headers: { ...json, authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ tenant_id: 3 }) })
    expect(bearer.status).toBe(201)
  })

  it('refuses a wrong key, a bad body, a tampered cookie and an expired session', async () => {
    const wrong = await signIn('not-a-key-at-all')
    expect(wrong.status).toBe(401)
    const body = await wrong.json()
    expect(body).toEqual({ success: false, error: 'Unauthorized', details: 'the API key is unknown or revoked' })
    expectDocumented('POST', base + SESSION, 401, body)
    expect(wrong.headers.getSetCookie().join()).not.toMatch(/cdp_session=[^;]/)
    for (const bad of [undefined, '', 42]) expect((await signIn(bad)).status).toBe(400)

    const s = await session()
    const [name, value] = s.cookie.split('=') as [string, string]
    const raw = Buffer.from(value, 'base64url')
    raw[raw.length - 1]! ^= 1
    const tampered = await fetch(`${base}/api/cdp/v2/customers?tenant_id=1`, { headers: { cookie: `${name}=${raw.toString('base64url')}` } })
    expect(tampered.status).toBe(401)
    expect(await tampered.json()).toMatchObject({ details: expect.stringContaining('sign in again') })

    t += 3_600_001
    try {
      const expired = await fetch(`${base}/api/cdp/v2/customers?tenant_id=1`, { headers: { cookie: s.cookie } })
      expect(expired.status).toBe(401)
      const cur = await fetch(base + SESSION, { headers: { cookie: s.cookie } })
      expect(cur.status).toBe(401)
      expect(cur.headers.getSetCookie().join()).toMatch(/cdp_session=;.*Max-Age=0/i)
    } finally {
      t -= 3_600_001
    }
  })

  it('ends with the key: a revoked key stops its sessions', async () => {
    const k = await keys.create(1, 'to revoke')
    const s = await session(k.key)
    expect((await fetch(`${base}/api/cdp/v2/customers?tenant_id=1`, { headers: { cookie: s.cookie } })).status).toBe(404) // reached the handler
    const revoked = await fetch(`${base}/api/v2/admin/api-keys/${k.key_id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` } })
    expect(revoked.status).toBe(200)
    expect((await fetch(`${base}/api/cdp/v2/customers?tenant_id=1`, { headers: { cookie: s.cookie } })).status).toBe(401)
  })

  it('signs out: clears the cookie, with the CSRF token when a session is there, and a copy of the cookie stops working', async () => {
    const s = await session()
    const other = await session() // another sign-in with the same key lives on
    const refused = await fetch(base + SESSION, { method: 'DELETE', headers: { cookie: s.cookie } })
    expect(refused.status).toBe(403)
    const out = await fetch(base + SESSION, { method: 'DELETE', headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } })
    expect(out.status).toBe(200)
    expect(await out.json()).toEqual({ success: true, message: 'signed out' })
    expect(out.headers.getSetCookie().join()).toMatch(/cdp_session=;.*Max-Age=0/i)
    // A copy of the signed-out cookie is refused here, and by a replica that never saw the sign-out (it reads the store).
    expect((await fetch(`${base}/api/v2/cdp/tenants`, { headers: { cookie: s.cookie } })).status).toBe(401)
    expect((await fetch(base + SESSION, { headers: { cookie: s.cookie } })).status).toBe(401)
    expect((await fetch(`${replica}/api/v2/cdp/tenants`, { headers: { cookie: s.cookie } })).status).toBe(401)
    expect((await fetch(`${replica}/api/v2/cdp/tenants`, { headers: { cookie: other.cookie } })).status).toBe(200)
    expect((await fetch(base + SESSION, { method: 'DELETE' })).status).toBe(200) // nothing to sign out of
    expect((await fetch(base + SESSION)).status).toBe(401)
  })

  it('limits sign-in attempts per IP: the 21st in a minute is 429 with Retry-After', async () => {
    t += 60_000 // a new window: the attempts above are behind it
    const statuses: number[] = []
    for (let i = 0; i < 21; i++) statuses.push((await signIn('guess-' + i)).status)
    expect(statuses.slice(0, 20).every((s) => s === 401)).toBe(true)
    expect(statuses[20]).toBe(429)
    const r = await signIn(keyA.key)
    expect(r.status).toBe(429) // a right key too, until the window ends
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0)
    t += 60_000
    expect((await signIn(keyA.key)).status).toBe(200)
  })
})

describe('the console page', () => {
  it('serves the page at /console and every path under it, hashed assets cached, without a key', async () => {
    for (const p of ['/console', '/console/', '/console/segments/At%20Risk', '/console/customers/5']) {
      const r = await fetch(base + p)
      expect(r.status, p).toBe(200)
      expect(r.headers.get('content-type')).toMatch(/text\/html/)
      expect(r.headers.get('content-security-policy')).toContain("default-src 'self'")
      expect(r.headers.get('cache-control')).toBe('no-cache')
      expect(await r.text()).toContain('<div id="app">')
    }
    const asset = await fetch(`${base}/console/assets/index-abc.js`)
    expect(asset.status).toBe(200)
    expect(asset.headers.get('cache-control')).toMatch(/max-age=31536000.*immutable/)
    const missing = await fetch(`${base}/console/assets/nope.js`)
    expect(missing.status).toBe(404)
  })
})
