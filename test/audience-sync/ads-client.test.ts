import fs from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  AdAccountNotFoundError,
  AdsClient,
  AdsNetworkError,
  FileLimitStore,
  HourlyBudget,
  InvalidParameterError,
  InvalidTokenError,
  MemoryLimitStore,
  PermissionDeniedError,
  RateLimitError,
  TransientApiError,
  backoffMs,
  decide,
  errorFromResponse,
  hashValue,
  prepareUpload,
  pruneWindow,
  rejectedItems,
  sendPaced,
  type AdsClientOptions,
  type CustomerIdentifiers,
} from '../../pipelines/audience-sync/ads-platform/index.ts'
import { start, type RunningAdsPlatformSimulator } from '../../services/simulators/ads-platform/index.ts'
import { tmpDir } from '../helpers.ts'

const TOKEN = 'EAAtest-token'
const ACCOUNT = 'act_1000000001'
const GRAPH_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000$/

let sim: RunningAdsPlatformSimulator
let sleeps: number[]

function client(over: Partial<AdsClientOptions> = {}): AdsClient {
  return new AdsClient({
    baseUrl: sim.url,
    accessToken: TOKEN,
    appAccessToken: sim.appAccessToken,
    retry: { sleep: async (ms) => void sleeps.push(ms) },
    ...over,
  })
}

function customers(n: number, from = 0): CustomerIdentifiers[] {
  return Array.from({ length: n }, (_, i) => ({ EMAIL: `customer${from + i}@example.com`, FN: 'José', LN: 'Müller' }))
}

async function newAudience(c = client()): Promise<string> {
  return (await c.createCustomAudience(ACCOUNT, { name: `aud-${Math.random()}` })).id
}

beforeAll(async () => {
  sim = await start({
    tokens: [TOKEN, { token: 'no-manage', scopes: ['ads_read', 'business_management'] }, 'to-expire'],
    adAccounts: [ACCOUNT, 'act_2000000002'],
  })
})
afterAll(async () => sim?.close())
beforeEach(() => {
  sleeps = []
  sim.state.resetLimits()
})

describe('ads platform client: endpoints', () => {
  it('1. debug_token reports validity and scopes, with the application access token', async () => {
    const info = await client().debugToken()
    expect(info).toMatchObject({ app_id: sim.state.opts.appId, type: 'USER', is_valid: true })
    expect(info.scopes.sort()).toEqual(['ads_management', 'ads_read', 'business_management'])
    expect(info.expires_at).toBeGreaterThan(Date.now() / 1000 + 59 * 86_400) // a long-lived token: 60 days
    expect((await client().debugToken('no-such-token')).is_valid).toBe(false)
    await expect(client({ appAccessToken: 'wrong|secret' }).debugToken()).rejects.toBeInstanceOf(InvalidTokenError)
  })

  it('2, 3. reads an ad account and lists the token’s ad accounts with the requested fields', async () => {
    const account = await client().getAdAccount(ACCOUNT)
    expect(Object.keys(account).sort()).toEqual(['account_status', 'business', 'currency', 'id', 'name', 'timezone_name'])
    expect(account.id).toBe(ACCOUNT)
    expect(await client().getAdAccount(ACCOUNT, ['id', 'currency'])).toEqual({ id: ACCOUNT, currency: 'USD' })
    const list = await client().listAdAccounts(['id', 'name'])
    expect(list.map((a) => a.id).sort()).toEqual([ACCOUNT, 'act_2000000002'])
  })

  it('4, 5, 6, 7. creates an audience, uploads, reads its size and status, removes, deletes', async () => {
    const c = client()
    const created = await c.createCustomAudience(ACCOUNT, { name: 'Champions', description: 'RFM segment Champions' })
    expect(created.success).toBe(true)
    expect(created.id).toMatch(/^\d+$/)
    expect(sim.state.audience(created.id)).toMatchObject({ subtype: 'CUSTOM', customer_file_source: 'USER_PROVIDED_ONLY', description: 'RFM segment Champions' })

    const empty = await c.getCustomAudience(created.id)
    expect(empty).toMatchObject({ id: created.id, name: 'Champions', approximate_count: 0 })
    expect(empty.time_created).toMatch(GRAPH_TIME)
    expect(empty.time_updated).toMatch(GRAPH_TIME)
    expect(empty.delivery_status?.code).not.toBe(200)

    const { batches } = prepareUpload(customers(3), (x) => x)
    const up = await c.addUsers(created.id, batches[0]!.payload)
    expect(up).toEqual({ audience_id: created.id, session_id: expect.any(String), num_received: 3, num_invalid_entries: 0, invalid_entry_samples: {} })
    const full = await c.getCustomAudience(created.id)
    expect(full.approximate_count).toBe(3)
    expect(full.delivery_status?.code).toBe(200)

    const gone = prepareUpload(customers(1), (x) => x).batches[0]!.payload
    expect((await c.removeUsers(created.id, gone)).num_received).toBe(1)
    expect((await c.getCustomAudience(created.id, ['approximate_count'])).approximate_count).toBe(2)

    expect(await c.deleteCustomAudience(created.id)).toEqual({ success: true })
    await expect(c.getCustomAudience(created.id)).rejects.toBeInstanceOf(InvalidParameterError)
  })

  it('sends Authorization: Bearer and JSON bodies; the removal DELETE carries the payload in its body, never the URL', async () => {
    const seen: { url: string; method: string; auth: string | null; type: string | null; body: string | null }[] = []
    const recording: typeof fetch = async (input, init) => {
      const h = new Headers(init?.headers)
      seen.push({ url: String(input), method: init?.method ?? 'GET', auth: h.get('authorization'), type: h.get('content-type'), body: (init?.body as string) ?? null })
      return fetch(input, init)
    }
    const c = client({ fetch: recording })
    const id = await newAudience(c)
    const payload = prepareUpload(customers(2), (x) => x).batches[0]!.payload
    await c.addUsers(id, payload)
    await c.removeUsers(id, payload)

    const del = seen.find((s) => s.method === 'DELETE')!
    expect(new URL(del.url).pathname).toBe(`/v18.0/${id}/users`)
    expect(new URL(del.url).search).toBe('')
    expect(JSON.parse(del.body!)).toEqual({ payload })
    expect(del.type).toBe('application/json')
    for (const s of seen) {
      expect(s.auth).toBe(`Bearer ${TOKEN}`)
      expect(s.url).not.toContain(TOKEN)
    }
    // The simulator applied the removal from the body: the audience is empty again.
    expect(sim.state.audience(id)!.approximate_count).toBe(0)
    const logged = sim.requestLog.filter((e) => e.path === `/${id}/users`)
    expect(logged.map((e) => [e.method, e.rows, e.applied])).toEqual([
      ['POST', 2, true],
      ['DELETE', 2, true],
    ])
    expect(logged[1]!.bodyDigest).toBe(createHash('sha256').update(del.body!).digest('hex'))
  })

  it('refuses a payload the platform would refuse whole, before spending a call', async () => {
    const c = client()
    const rows = Array.from({ length: 10_001 }, () => [hashValue('EMAIL', 'a@b.c')])
    await expect(c.addUsers('1', { schema: ['EMAIL'], data: rows })).rejects.toThrow(/at most 10000/)
    await expect(c.addUsers('1', { schema: ['EMAIL', 'PHONE'], data: [['x']] })).rejects.toThrow(/2 schema columns/)
  })
})

describe('ads platform client: error mapping', () => {
  it('190 (expired token): InvalidTokenError, pause the tenant, one request and no retry storm', async () => {
    const id = await newAudience()
    sim.state.expireToken('to-expire')
    const before = sim.requestLog.length
    const err = await client({ accessToken: 'to-expire' }).getCustomAudience(id).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(InvalidTokenError)
    expect(err).toMatchObject({ code: 190, action: 'pause_tenant', retriable: false, httpStatus: 400 })
    expect(sim.requestLog.length - before).toBe(1)
    expect(sleeps).toEqual([])
    expect((await client().debugToken('to-expire')).is_valid).toBe(false)
  })

  it('200 (missing permission): PermissionDeniedError naming the permission', async () => {
    const err = await client({ accessToken: 'no-manage' }).createCustomAudience(ACCOUNT, { name: 'x' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PermissionDeniedError)
    expect(err).toMatchObject({ code: 200, permission: 'ads_management', action: 'pause_tenant', retriable: false })
  })

  it('100 (bad request): InvalidParameterError, dead-letter the batch, not retried', async () => {
    const before = sim.requestLog.length
    const err = await client().createCustomAudience(ACCOUNT, { name: '' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(InvalidParameterError)
    expect(err).toMatchObject({ code: 100, action: 'dead_letter_batch', retriable: false })
    expect(sim.requestLog.length - before).toBe(1)
  })

  it('2650 (ad account does not exist): AdAccountNotFoundError', async () => {
    for (const bad of ['act_999', '1000000001']) {
      const err = await client().createCustomAudience(bad, { name: 'x' }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(AdAccountNotFoundError)
      expect(err).toMatchObject({ code: 2650, action: 'pause_tenant' })
    }
    await expect(client().getAdAccount('act_999')).rejects.toBeInstanceOf(AdAccountNotFoundError)
  })

  it('80004 (rate limit): RateLimitError, wait for the window, not a failure, not retried', async () => {
    const limited = await start({ tokens: [TOKEN], limits: { read_audience: 2 } })
    try {
      const c = new AdsClient({ baseUrl: limited.url, accessToken: TOKEN, retry: { sleep: async (ms) => void sleeps.push(ms) } })
      const id = (await c.createCustomAudience(ACCOUNT, { name: 'x' })).id
      await c.getCustomAudience(id)
      await c.getCustomAudience(id)
      const t0 = Date.now()
      const err = await c.getCustomAudience(id).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(RateLimitError)
      expect(err).toMatchObject({ code: 80004, action: 'wait_for_window', countsAsFailure: false, retriable: false, source: 'platform' })
      expect((err as RateLimitError).retryAt).toBeGreaterThanOrEqual(t0 + 3_600_000)
      expect(limited.requestLog.filter((e) => e.errorCode === 80004)).toHaveLength(1)
      expect(sleeps).toEqual([])
    } finally {
      await limited.close()
    }
  })

  it('the body code wins over the HTTP status: an 80004 on HTTP 429 is not retried within seconds', () => {
    const ctx = { method: 'POST', path: '/1/users' }
    const e429 = errorFromResponse(429, { error: { message: 'x', type: 'OAuthException', code: 80004, trace_id: 't' } }, ctx, 1000)
    expect(e429).toBeInstanceOf(RateLimitError)
    expect(e429.retriable).toBe(false)
    expect((e429 as RateLimitError).retryAt).toBe(1000 + 3_600_000)
    expect(errorFromResponse(503, '<html>', ctx)).toBeInstanceOf(TransientApiError)
    expect(errorFromResponse(404, { error: { message: 'x', code: 1487366 } }, ctx)).toMatchObject({ retriable: false, action: 'dead_letter_batch', code: 1487366 })
    expect(errorFromResponse(403, { error: { message: '(#200) The user has not granted the permission(s) pages_manage_ads', code: 200 } }, ctx)).toMatchObject({ permission: 'pages_manage_ads' })
  })
})

describe('ads platform client: retries', () => {
  it('waits like tenacity wait_exponential(multiplier=1, min=4, max=10)', () => {
    const policy = { maxAttempts: 7, multiplier: 1, minWaitMs: 4000, maxWaitMs: 10_000 }
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, policy))).toEqual([4000, 4000, 4000, 8000, 10_000, 10_000])
  })

  it('retries 500 and 429 up to 3 attempts and succeeds; only the last attempt is applied', async () => {
    const id = await newAudience()
    sim.state.queueFaults([500, 429])
    const payload = prepareUpload(customers(5), (x) => x).batches[0]!.payload
    const res = await client().addUsers(id, payload)
    expect(res.num_received).toBe(5)
    expect(sleeps).toEqual([4000, 4000])
    const attempts = sim.requestLog.filter((e) => e.path === `/${id}/users`)
    expect(attempts.map((e) => [e.status, e.fault, e.applied])).toEqual([
      [500, 500, false],
      [429, 429, false],
      [200, null, true],
    ])
    expect(new Set(attempts.map((e) => e.bodyDigest)).size).toBe(1) // the same batch each time
  })

  it('gives up after 3 attempts with the last transient error', async () => {
    const id = await newAudience()
    sim.state.queueFaults([500, 500, 500])
    const before = sim.requestLog.length
    const err = await client().getCustomAudience(id).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TransientApiError)
    expect(err).toMatchObject({ httpStatus: 500, retriable: true, action: 'retry' })
    expect(sim.requestLog.length - before).toBe(3)
    expect(sleeps).toEqual([4000, 4000])
  })

  it('does not retry a network error (no HTTP answer)', async () => {
    const closed = await start()
    await closed.close()
    const err = await new AdsClient({ baseUrl: closed.url, accessToken: TOKEN, retry: { sleep: async (ms) => void sleeps.push(ms) } })
      .getAdAccount(ACCOUNT)
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(AdsNetworkError)
    expect(sleeps).toEqual([])
  })

  it('converges with random 429/500 faults', async () => {
    const id = await newAudience()
    sim.state.setFaults({ rate429: 0.2, rate500: 0.2 })
    try {
      // maxAttempts raised so the odds of three faults in a row do not make the test flaky.
      const c = client({ retry: { sleep: async () => {}, policy: { maxAttempts: 20, multiplier: 1, minWaitMs: 0, maxWaitMs: 0 } } })
      const { batches } = prepareUpload(customers(50), (x) => x, { maxRows: 10 })
      await sendPaced(batches, (b) => c.addUsers(id, b.payload), { pacingMs: 0 })
    } finally {
      sim.state.setFaults({ rate429: 0, rate500: 0 })
    }
    expect(sim.state.audience(id)!.approximate_count).toBe(50)
    const applied = sim.requestLog.filter((e) => e.path === `/${id}/users` && e.applied)
    expect(applied).toHaveLength(5)
    expect(new Set(applied.map((e) => e.bodyDigest)).size).toBe(5) // no batch applied twice
  })
})

describe('ads platform client: batching and pacing', () => {
  it('10,001 rows are two requests (10,000 + 1), paced 2 s apart', async () => {
    const c = client()
    const id = await newAudience(c)
    const upload = prepareUpload(customers(10_001), (x) => x)
    expect(upload.batches.map((b) => b.payload.data.length)).toEqual([10_000, 1])
    const pacing: number[] = []
    const results = await sendPaced(upload.batches, (b) => c.addUsers(id, b.payload), { sleep: async (ms) => void pacing.push(ms) })
    expect(results.map((r) => r.num_received)).toEqual([10_000, 1])
    expect(pacing).toEqual([2000])
    const posts = sim.requestLog.filter((e) => e.method === 'POST' && e.path === `/${id}/users`)
    expect(posts.map((e) => e.rows)).toEqual([10_000, 1])
    expect(sim.state.audience(id)!.approximate_count).toBe(10_001)
  })

  it('pacing is configurable and only between batches', async () => {
    const pacing: number[] = []
    const sent: number[] = []
    await sendPaced([0, 1, 2], async (b) => void sent.push(b), { pacingMs: 500, sleep: async (ms) => void pacing.push(ms) })
    expect(sent).toEqual([0, 1, 2])
    expect(pacing).toEqual([500, 500])
  })

  it('keeps only the columns the tenant has data for; skips customers with no identifier', () => {
    const upload = prepareUpload(
      [{ EMAIL: 'a@b.com', PHONE: '' }, { EMAIL: null, FN: 'Ana', PHONE: '+ -' }, { EMAIL: '  ', FN: '' }],
      (x: CustomerIdentifiers) => x,
    )
    expect(upload.schema).toEqual(['EMAIL', 'FN'])
    expect(upload.batches).toHaveLength(1)
    expect(upload.batches[0]!.payload.data).toEqual([
      [hashValue('EMAIL', 'a@b.com'), ''],
      ['', hashValue('FN', 'Ana')],
    ])
    expect(upload.skipped).toEqual([{ EMAIL: '  ', FN: '' }])
  })

  it('maps rejected rows of a batch back to its items', async () => {
    const c = client()
    const id = await newAudience(c)
    const batch = prepareUpload([{ id: 'a', EMAIL: 'a@b.com' }, { id: 'b', EMAIL: 'b@b.com' }], (x) => x).batches[0]!
    batch.payload.data[1] = ['NOT-A-DIGEST']
    const result = await c.addUsers(id, batch.payload)
    expect(result).toMatchObject({ num_received: 2, num_invalid_entries: 1, invalid_entry_samples: { EMAIL: ['NOT-A-DIGEST'] } })
    expect(rejectedItems(batch, result)).toEqual({ items: [{ id: 'b', EMAIL: 'b@b.com' }], unidentified: 0 })
  })
})

describe('ads platform client: hourly limits', () => {
  it('decides on a sliding window and says when the next call fits', () => {
    const hour = 3_600_000
    expect(pruneWindow([1, 5, hour + 2, 3], hour + 3)).toEqual([5, hour + 2])
    expect(decide([10, 20, 30], 3)).toEqual({ allowed: false, used: 3, limit: 3, remaining: 0, retryAt: 10 + hour })
    expect(decide([10, 20], 3)).toMatchObject({ allowed: true, remaining: 1, retryAt: null })
  })

  it('refuses calls past the limit without calling the platform, and a new budget on the same store remembers', async () => {
    let now = Date.UTC(2025, 0, 1)
    const store = new MemoryLimitStore()
    const budget = () => new HourlyBudget({ store, limits: { upload_users: 2 }, now: () => now })
    const c = client({ budget: budget(), now: () => now })
    const id = await newAudience(c)
    const payload = prepareUpload(customers(1), (x) => x).batches[0]!.payload
    await c.addUsers(id, payload)
    now += 1000
    await c.removeUsers(id, payload) // removals count as uploads
    const before = sim.requestLog.length
    const err = await c.addUsers(id, payload).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RateLimitError)
    expect(err).toMatchObject({ source: 'client', action: 'wait_for_window', countsAsFailure: false, retryAt: Date.UTC(2025, 0, 1) + 3_600_000 })
    expect(sim.requestLog.length).toBe(before)

    // A restart: a new client and budget over the same store cannot burst past the limit.
    const restarted = client({ budget: budget(), now: () => now })
    await expect(restarted.addUsers(id, payload)).rejects.toBeInstanceOf(RateLimitError)
    // Other operations and other tokens have their own budgets.
    expect((await budget().peek(TOKEN, 'create_audience')).remaining).toBe(24)
    expect((await budget().peek('another-token', 'upload_users')).allowed).toBe(true)
    // One hour after the first call, one call fits again.
    now = Date.UTC(2025, 0, 1) + 3_600_001
    await expect(restarted.addUsers(id, payload)).resolves.toMatchObject({ num_received: 1 })
  })

  it('the file store persists the window across instances and never stores the token', async () => {
    const file = path.join(tmpDir(), 'limits', 'ads-limits.json')
    const now = () => Date.UTC(2025, 0, 1)
    const first = new HourlyBudget({ store: new FileLimitStore(file), limits: { create_audience: 3 }, now })
    const takes = await Promise.all([1, 2, 3, 4].map(() => first.take(TOKEN, 'create_audience')))
    expect(takes.map((d) => d.allowed)).toEqual([true, true, true, false])
    const second = new HourlyBudget({ store: new FileLimitStore(file), limits: { create_audience: 3 }, now })
    expect(await second.peek(TOKEN, 'create_audience')).toMatchObject({ allowed: false, used: 3 })
    const text = fs.readFileSync(file, 'utf8')
    expect(text).not.toContain(TOKEN)
    expect(Object.keys(JSON.parse(text))).toEqual([HourlyBudget.keyFor(TOKEN, 'create_audience')])
  })

  it('the default limits are the spec’s: 25 creations, 200 uploads, 200 reads per hour', async () => {
    const b = new HourlyBudget({ store: new MemoryLimitStore() })
    expect([b.limitOf('create_audience'), b.limitOf('upload_users'), b.limitOf('read_audience')]).toEqual([25, 200, 200])
  })
})
