import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createHash, createHmac } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { start, type RunningAdsPlatformSimulator } from '../../services/simulators/ads-platform/index.ts'
import { verifyHubSignature, deliveryStatusEventSchema } from '../../pipelines/audience-sync/ads-platform/webhook.ts'

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex')
const E1 = sha('a@example.com')
const E2 = sha('b@example.com')
const P1 = sha('5491141234567')
const TOKEN = 'tok-full'

type Json = Record<string, any>

async function call(sim: RunningAdsPlatformSimulator, method: string, path: string, opts: { token?: string | null; body?: unknown; rawBody?: string } = {}): Promise<{ status: number; body: Json }> {
  const headers: Record<string, string> = {}
  const token = opts.token === undefined ? TOKEN : opts.token
  if (token) headers.authorization = `Bearer ${token}`
  let body: string | undefined
  if (opts.rawBody !== undefined || opts.body !== undefined) {
    headers['content-type'] = 'application/json'
    body = opts.rawBody ?? JSON.stringify(opts.body)
  }
  const res = await fetch(`${sim.apiUrl}${path}`, { method, headers, body })
  return { status: res.status, body: (await res.json()) as Json }
}

function expectErrorBody(body: Json, code: number): void {
  expect(Object.keys(body)).toEqual(['error'])
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'trace_id', 'type'])
  expect(body.error.code).toBe(code)
  expect(typeof body.error.message).toBe('string')
  expect(typeof body.error.type).toBe('string')
  expect(body.error.trace_id).toMatch(/^\S+$/)
}

/** Creates an audience; resets the call counters first (the suite's creation limit is 2 per hour). */
async function audience(sim: RunningAdsPlatformSimulator, token = TOKEN): Promise<string> {
  sim.state.resetLimits()
  const res = await call(sim, 'POST', '/act_1000000001/customaudiences', { token, body: { name: 'seg', subtype: 'CUSTOM', description: 'd', customer_file_source: 'USER_PROVIDED_ONLY' } })
  expect(res.status).toBe(200)
  return res.body.id as string
}

describe('ads platform simulator', () => {
  let sim: RunningAdsPlatformSimulator
  let now = Date.UTC(2025, 5, 1, 12)

  beforeAll(async () => {
    sim = await start({
      now: () => now,
      tokens: [
        TOKEN,
        { token: 'tok-no-read', scopes: ['ads_management', 'business_management'] },
        { token: 'tok-no-business', scopes: ['ads_management', 'ads_read'] },
        { token: 'tok-short', expiresAt: Math.floor(now / 1000) + 60 },
        { token: 'tok-limited' },
      ],
      adAccounts: [{ id: 'act_1000000001', name: 'Shop', currency: 'ARS' }],
      limits: { create_audience: 2 },
    })
  })
  afterAll(async () => sim?.close())

  it('answers /debug_token with the spec’s fields for the application access token only', async () => {
    const ok = await call(sim, 'GET', `/debug_token?input_token=${TOKEN}&access_token=${encodeURIComponent(sim.appAccessToken)}`)
    expect(ok.status).toBe(200)
    expect(ok.body.data).toEqual({
      app_id: sim.state.opts.appId,
      type: 'USER',
      application: sim.state.opts.appName,
      expires_at: Math.floor(now / 1000) + 60 * 86_400,
      is_valid: true,
      scopes: ['ads_management', 'ads_read', 'business_management'],
    })
    const bad = await call(sim, 'GET', `/debug_token?input_token=${TOKEN}&access_token=nope`)
    expect(bad.status).toBe(400)
    expectErrorBody(bad.body, 190)
  })

  it('serves ad accounts of the form act_<number> with the requested fields; anything else is 2650', async () => {
    const a = await call(sim, 'GET', '/act_1000000001?fields=id,name,account_status,currency,timezone_name,business')
    expect(a.body).toMatchObject({ id: 'act_1000000001', name: 'Shop', currency: 'ARS', account_status: 1 })
    expect((await call(sim, 'GET', '/act_1000000001')).body).toEqual({ id: 'act_1000000001' })
    const unknownField = await call(sim, 'GET', '/act_1000000001?fields=id,secret')
    expectErrorBody(unknownField.body, 100)
    for (const bad of ['/act_42', '/act_12x']) expectErrorBody((await call(sim, 'GET', bad)).body, 2650)
    expectErrorBody((await call(sim, 'POST', '/1000000001/customaudiences', { body: { name: 'x' } })).body, 2650)
    expect((await call(sim, 'GET', '/me/adaccounts?fields=id,name')).body).toEqual({ data: [{ id: 'act_1000000001', name: 'Shop' }] })
    expect(() => sim.state.addAdAccount({ id: 'acct_1' })).toThrow(/act_<number>/)
  })

  it('creates audiences with numeric ids and spec-format timestamps', async () => {
    const id = await audience(sim)
    expect(id).toMatch(/^\d+$/)
    const got = await call(sim, 'GET', `/${id}?fields=id,name,subtype,customer_file_source,approximate_count,delivery_status,time_created,time_updated`)
    expect(got.body).toEqual({
      id,
      name: 'seg',
      subtype: 'CUSTOM',
      customer_file_source: 'USER_PROVIDED_ONLY',
      approximate_count: 0,
      delivery_status: { code: 300, description: expect.any(String) },
      time_created: '2025-06-01T12:00:00+0000',
      time_updated: '2025-06-01T12:00:00+0000',
    })
    sim.state.resetLimits() // refused calls count towards the hourly limit too
    expectErrorBody((await call(sim, 'POST', '/act_1000000001/customaudiences', { body: { subtype: 'CUSTOM' } })).body, 100)
    expectErrorBody((await call(sim, 'POST', '/act_1000000001/customaudiences', { body: { name: 'x', subtype: 'LOOKALIKE' } })).body, 100)
  })

  it('counts distinct hashed rows: duplicates once, blank columns ignored, removals subtract; 200 once populated', async () => {
    const id = await audience(sim)
    const add = (schema: string[], data: string[][]) => call(sim, 'POST', `/${id}/users`, { body: { payload: { schema, data } } })
    const remove = (schema: string[], data: string[][]) => call(sim, 'DELETE', `/${id}/users`, { body: { payload: { schema, data } } })
    const count = async () => (await call(sim, 'GET', `/${id}?fields=approximate_count,delivery_status`)).body

    expect((await add(['EMAIL'], [[E1], [E1], [E2]])).body).toMatchObject({ audience_id: id, num_received: 3, num_invalid_entries: 0, invalid_entry_samples: {} })
    expect(await count()).toEqual({ id, approximate_count: 2, delivery_status: { code: 200, description: 'This audience is ready for use.' } })
    // Same person with a blank PHONE column: the same member.
    await add(['EMAIL', 'PHONE'], [[E1, '']])
    expect((await count()).approximate_count).toBe(2)
    // With a phone it is another row.
    await add(['PHONE', 'EMAIL'], [[P1, E1]])
    expect((await count()).approximate_count).toBe(3)
    expect(sim.state.members(id)).toEqual(expect.arrayContaining([{ EMAIL: E1 }, { EMAIL: E2 }, { EMAIL: E1, PHONE: P1 }]))

    await remove(['EMAIL'], [[E1], [E2]])
    expect((await count()).approximate_count).toBe(1)
    await remove(['EMAIL', 'PHONE'], [[E1, P1]])
    expect(await count()).toMatchObject({ approximate_count: 0, delivery_status: { code: 300 } })

    const members = await fetch(`${sim.url}/_sim/audiences/${id}/members`).then((r) => r.json())
    expect(members).toEqual({ audience_id: id, count: 0, members: [] })
  })

  it('reports invalid rows in num_invalid_entries and invalid_entry_samples and applies the valid ones', async () => {
    const id = await audience(sim)
    const res = await call(sim, 'POST', `/${id}/users`, {
      body: {
        payload: {
          schema: ['EMAIL', 'PHONE'],
          data: [
            [E1, P1], // valid
            [E1.toUpperCase(), ''], // upper-case hex
            [E2.slice(1), ''], // 63 characters
            ['b@example.com', ''], // not hashed at all
            [E2], // wrong column count
            ['', ''], // no identifier
            [E2, ''], // valid
          ],
        },
      },
    })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ num_received: 7, num_invalid_entries: 5 })
    expect(res.body.invalid_entry_samples).toEqual({ EMAIL: [E1.toUpperCase(), E2.slice(1), 'b@example.com', JSON.stringify([E2])] })
    expect(sim.state.audience(id)!.approximate_count).toBe(2)
  })

  it('refuses whole requests with error 100: no payload, bad schema, more than 10,000 rows, bad JSON', async () => {
    const id = await audience(sim)
    const post = (body: unknown) => call(sim, 'POST', `/${id}/users`, { body })
    for (const body of [{}, { payload: { schema: ['ZIP'], data: [[E1]] } }, { payload: { schema: ['EMAIL'], data: [] } }, { payload: { schema: ['EMAIL'], data: Array.from({ length: 10_001 }, () => [E1]) } }]) {
      const res = await post(body)
      expect(res.status).toBe(400)
      expectErrorBody(res.body, 100)
    }
    const bad = await call(sim, 'POST', `/${id}/users`, { rawBody: '{"payload":' })
    expectErrorBody(bad.body, 100)
    expectErrorBody((await call(sim, 'GET', '/nope/deeper/path')).body, 100)
    const noVersion = await fetch(`${sim.url}/v17.0/me/adaccounts`)
    expect(noVersion.status).toBe(404)
    expectErrorBody((await noVersion.json()) as Json, 100)
  })

  it('rate-limits per token and operation per hour with error 80004', async () => {
    sim.state.resetLimits()
    const create = () => call(sim, 'POST', '/act_1000000001/customaudiences', { token: 'tok-limited', body: { name: 'x' } })
    const first = (await create()).body.id as string
    expect((await create()).status).toBe(200)
    const third = await call(sim, 'POST', '/act_1000000001/customaudiences', { token: 'tok-limited', body: { name: 'x' } })
    expect(third.status).toBe(400)
    expectErrorBody(third.body, 80004)
    // Another operation, another token: unaffected.
    expect((await call(sim, 'GET', `/${first}`, { token: 'tok-limited' })).status).toBe(200)
    expect((await call(sim, 'POST', '/act_1000000001/customaudiences', { token: TOKEN, body: { name: 'x' } })).status).toBe(200)
    // An hour later the window has moved on.
    now += 3_600_001
    expect((await call(sim, 'POST', '/act_1000000001/customaudiences', { token: 'tok-limited', body: { name: 'x' } })).status).toBe(200)
  })

  it('answers 190 for a missing, unknown or expired token (by the clock or by the knob)', async () => {
    expectErrorBody((await call(sim, 'GET', '/me/adaccounts', { token: null })).body, 190)
    expectErrorBody((await call(sim, 'GET', '/me/adaccounts', { token: 'who' })).body, 190)
    const tokenFor = (t: string) => `/debug_token?input_token=${t}&access_token=${encodeURIComponent(sim.appAccessToken)}`

    sim.state.addToken({ token: 'tok-clock', expiresAt: Math.floor(now / 1000) + 60 })
    expect((await call(sim, 'GET', '/me/adaccounts', { token: 'tok-clock' })).status).toBe(200)
    now += 61_000
    const expired = await call(sim, 'GET', '/me/adaccounts', { token: 'tok-clock' })
    expect(expired.status).toBe(400)
    expectErrorBody(expired.body, 190)
    expect(expired.body.error.message).toMatch(/expired/)
    expect((await call(sim, 'GET', tokenFor('tok-clock'))).body.data.is_valid).toBe(false)

    const knob = await fetch(`${sim.url}/_sim/tokens/tok-limited/expire`, { method: 'POST' })
    expect(knob.status).toBe(200)
    expectErrorBody((await call(sim, 'GET', '/me/adaccounts', { token: 'tok-limited' })).body, 190)
  })

  it('answers 200 naming the missing permission', async () => {
    const id = await audience(sim)
    const noRead = await call(sim, 'GET', `/${id}`, { token: 'tok-no-read' })
    expect(noRead.status).toBe(403)
    expectErrorBody(noRead.body, 200)
    expect(noRead.body.error.message).toContain('ads_read')
    const noBusiness = await call(sim, 'GET', '/act_1000000001', { token: 'tok-no-business' })
    expectErrorBody(noBusiness.body, 200)
    expect(noBusiness.body.error.message).toContain('business_management')
    await fetch(`${sim.url}/_sim/tokens/tok-no-read/scopes`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ scopes: ['ads_read'] }) })
    const noManage = await call(sim, 'DELETE', `/${id}`, { token: 'tok-no-read' })
    expectErrorBody(noManage.body, 200)
    expect(noManage.body.error.message).toContain('ads_management')
  })

  it('logs every API request with method, path, body digest, rows, status and time', async () => {
    sim.state.clearRequestLog()
    const id = await audience(sim)
    const body = JSON.stringify({ payload: { schema: ['EMAIL'], data: [[E1], [E2]] } })
    await call(sim, 'POST', `/${id}/users`, { rawBody: body })
    await fetch(`${sim.url}/_sim/state`) // admin calls are not logged
    const log = (await fetch(`${sim.url}/_sim/requests`).then((r) => r.json())) as { data: Json[] }
    expect(log.data).toHaveLength(2)
    expect(log.data[1]).toMatchObject({ seq: 2, method: 'POST', path: `/${id}/users`, status: 200, rows: 2, applied: true, bodyDigest: sha(body), time: now, fault: null, errorCode: null })
  })

  it('injects 429 and 500 faults (share and latency knobs) with the spec’s error body', async () => {
    const set = (faults: Json) => fetch(`${sim.url}/_sim/faults`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(faults) })
    await set({ rate429: 1 })
    const r429 = await call(sim, 'GET', '/me/adaccounts')
    expect(r429.status).toBe(429)
    expectErrorBody(r429.body, 2)
    await set({ rate429: 0, rate500: 1, latencyMs: 30 })
    const t0 = performance.now()
    const r500 = await call(sim, 'GET', '/me/adaccounts')
    expect(performance.now() - t0).toBeGreaterThanOrEqual(25)
    expect(r500.status).toBe(500)
    expectErrorBody(r500.body, 1)
    await set({ rate500: 0, latencyMs: 0 })
    expect((await set({ rate429: 2 })).status).toBe(400)
    expect((await call(sim, 'GET', '/me/adaccounts')).status).toBe(200)
    expect(sim.requestLog.slice(-3).map((e) => e.fault)).toEqual([429, 500, null])
  })
})

describe('ads platform simulator: delivery-status webhook', () => {
  const SECRET = 'test-app-secret'
  let receiver: http.Server
  let receiverUrl: string
  const received: { headers: http.IncomingHttpHeaders; raw: string }[] = []

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      const url = new URL(req.url!, 'http://x')
      if (req.method === 'GET') {
        const ok = url.searchParams.get('hub.mode') === 'subscribe' && url.searchParams.get('hub.verify_token') === 'my-verify'
        res.writeHead(ok ? 200 : 403).end(ok ? url.searchParams.get('hub.challenge') : '')
        return
      }
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        received.push({ headers: req.headers, raw })
        res.writeHead(verifyHubSignature(raw, req.headers['x-hub-signature-256'] as string, SECRET) ? 200 : 401).end()
      })
    })
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks/ads`
  })
  afterAll(async () => new Promise<void>((r) => receiver.close(() => r())))

  it('POSTs a signed entry[].changes[] event when an audience becomes ready, and on demand', async () => {
    const sim = await start({ tokens: [TOKEN], appSecret: SECRET, webhookUrl: receiverUrl, webhookVerifyToken: 'my-verify' })
    try {
      const id = await audience(sim)
      await call(sim, 'POST', `/${id}/users`, { body: { payload: { schema: ['EMAIL'], data: [[E1]] } } })
      await sim.state.flushWebhooks()
      expect(received).toHaveLength(1)
      const { headers, raw } = received[0]!
      expect(headers['content-type']).toBe('application/json')
      expect(headers['x-hub-signature-256']).toBe(`sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`)
      const event = JSON.parse(raw)
      expect(deliveryStatusEventSchema.parse(event)).toEqual(event)
      expect(event).toEqual({ entry: [{ id, time: expect.any(Number), changes: [{ field: 'delivery_status', value: { code: 200, description: 'This audience is ready for use.' } }] }] })
      expect(sim.state.webhookLog[0]).toMatchObject({ audienceId: id, status: 200 })

      // An explicit status through the admin endpoint, then one signed with the wrong secret.
      const admin = await fetch(`${sim.url}/_sim/audiences/${id}/delivery-status`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: 400, description: 'Audience is not available' }) })
      expect(((await admin.json()) as Json).delivery.status).toBe(200)
      expect(JSON.parse(received[1]!.raw).entry[0].changes[0].value).toEqual({ code: 400, description: 'Audience is not available' })
      const forged = await sim.state.sendDeliveryStatus(id, undefined, { appSecret: 'wrong' })
      expect(forged.status).toBe(401)

      expect(await sim.state.verifyWebhookSubscription()).toMatchObject({ ok: true, status: 200 })
    } finally {
      await sim.close()
    }
  })
})
