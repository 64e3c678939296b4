import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Store } from '../../common/store/clickhouse.ts'
import { parseKeyring } from '../../common/secrets.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { AudienceSyncStore, type AudienceSyncConfig } from '../../pipelines/audience-sync/store.ts'
import { AudienceSyncer } from '../../pipelines/audience-sync/syncer.ts'
import { hashValue, signHubSignature, HourlyBudget } from '../../pipelines/audience-sync/ads-platform/index.ts'
import { start as startSimulator, type RunningAdsPlatformSimulator } from '../../services/simulators/ads-platform/index.ts'
import { createApp } from '../../services/api/app.ts'
import { audienceSyncRouter } from '../../services/api/audience-sync-routes.ts'
import { webhooksRouter } from '../../services/api/webhooks.ts'
import { ApiKeyStore } from '../../common/store/api-keys.ts'
import { silentLogger, migratedStore } from '../helpers.ts'

/**
 * The audience sync against the ads-platform simulator over HTTP, with ClickHouse (chdb) state:
 * exact membership, removals, coalescing, batching, faults, the error codes, the hourly limits,
 * the webhook and the management endpoints.
 */
const TOKEN = 'EAAB-tenant-token-0001'
const ACCOUNT = 'act_1000000001'
const APP_SECRET = 'app-secret-for-tests'
const VERIFY = 'verify-token-for-tests'
let tenant = 900

let store: Store
let sim: RunningAdsPlatformSimulator
let syncStore: AudienceSyncStore
let sleeps: number[]
let clock = Date.UTC(2025, 6, 1)

const box = parseKeyring(`t1:${'1'.repeat(64)}`)

function syncer(over: Partial<ConstructorParameters<typeof AudienceSyncer>[0]> = {}) {
  return new AudienceSyncer({
    store: syncStore,
    logger: silentLogger,
    ads: { baseUrl: sim.url, appAccessToken: sim.appAccessToken },
    settleMs: 0,
    pacingMs: 2000,
    sleep: async (ms) => void sleeps.push(ms),
    now: () => clock,
    // One process, restarted: a new syncer keeps the configurations' leases (other owners: the lease test).
    owner: 'this-process',
    ...over,
  })
}

const email = (t: number, id: number) => `Cust${id}@Shop${t}.test `
async function customers(t: number, ids: number[], over: (id: number) => Record<string, unknown> = () => ({})) {
  await store.insert({
    table: 'customers',
    format: 'JSONEachRow',
    values: ids.map((id) => ({ tenant_id: t, customer_id: id, last_event_id: `c${id}`, email: email(t, id), phone: `+54 9 11 ${String(id).padStart(4, '0')}-0000`, first_name: 'José', last_name: 'Pérez', source: 'test', updated_at: '2025-07-01 00:00:00.000', version: 1, ...over(id) })),
  })
}
let version = 1
async function segments(t: number, moves: [number, string | null][]) {
  version++
  await syncStore.recordSegments(moves.map(([customer_id, segment]) => ({ tenant_id: t, customer_id, segment, version })))
}
async function config(t: number, segment = 'At Risk'): Promise<AudienceSyncConfig> {
  return syncStore.createConfig({ tenant_id: t, name: `sync ${t}`, segment, ad_account_id: ACCOUNT, token: TOKEN })
}
/** The EMAIL digests the simulated audience holds. */
async function held(t: number, configId: string): Promise<string[]> {
  const c = await syncStore.getConfig(t, configId)
  return sim.state.members(c!.audience_id!).map((m) => m.EMAIL!).sort()
}
const expected = (t: number, ids: number[]) => ids.map((id) => hashValue('EMAIL', email(t, id))).sort()
const uploads = () => sim.requestLog.filter((r) => r.path.endsWith('/users'))

beforeAll(async () => {
  store = await migratedStore()
  syncStore = new AudienceSyncStore(store, box, () => clock)
  sim = await startSimulator({ tokens: [TOKEN], adAccounts: [ACCOUNT], appSecret: APP_SECRET })
}, 60_000)

afterAll(async () => {
  await sim?.close()
  await store?.close()
})

beforeEach(() => {
  tenant++
  sleeps = []
  sim.state.setFaults({ rate429: 0, rate500: 0, latencyMs: 0 })
  sim.state.resetLimits()
})

describe('audience sync', () => {
  it('creates the audience once and keeps it equal to the segment: adds, removals (DELETE with the payload in the body), coalescing', async () => {
    const t = tenant
    await customers(t, [1, 2, 3, 4, 5])
    await segments(t, [[1, 'At Risk'], [2, 'At Risk'], [3, 'Champions'], [4, 'At Risk'], [5, null]])
    const c = await config(t)
    const s = syncer()
    expect(await s.cycle()).toBe(3)
    expect(await held(t, c.config_id)).toEqual(expected(t, [1, 2, 4]))
    const created = sim.requestLog.filter((r) => r.method === 'POST' && r.path.endsWith('/customaudiences'))
    expect(created).toHaveLength(1)
    const audience = sim.state.audience((await syncStore.getConfig(t, c.config_id))!.audience_id!)!
    expect(audience).toMatchObject({ name: `sync ${t}`, subtype: 'CUSTOM', customer_file_source: 'USER_PROVIDED_ONLY' })

    // 2 leaves, 3 joins; 1 moves away and back before the next cycle (coalesced: nothing for 1).
    await segments(t, [[2, 'Lost'], [3, 'At Risk'], [1, 'Hibernating']])
    await segments(t, [[1, 'At Risk']])
    const before = uploads().length
    expect(await s.cycle()).toBe(2)
    expect(await held(t, c.config_id)).toEqual(expected(t, [1, 3, 4]))
    const calls = uploads().slice(before)
    // Removals before adds: the platform matches people by any identifier.
    expect(calls.map((r) => [r.method, r.rows])).toEqual([['DELETE', 1], ['POST', 1]])
    // Nothing moved: nothing is sent, and the audience is created only once.
    expect(await s.cycle()).toBe(0)
    expect(uploads().length).toBe(before + 2)
    expect(sim.requestLog.filter((r) => r.path.endsWith('/customaudiences'))).toHaveLength(1)
  })

  it('a change waits for the coalescing window', async () => {
    const t = tenant
    await customers(t, [1])
    const c = await config(t)
    await segments(t, [[1, 'At Risk']])
    const s = syncer({ settleMs: 10_000 })
    expect(await s.cycle()).toBe(0)
    clock += 10_001
    expect(await s.cycle()).toBe(1)
    expect(await held(t, c.config_id)).toEqual(expected(t, [1]))
  })

  it('10,001 rows are two requests (10,000 + 1) with the pacing wait between them; columns limited to those with data', async () => {
    const t = tenant
    const ids = Array.from({ length: 10_001 }, (_, i) => i + 1)
    await customers(t, ids, () => ({ phone: null, first_name: null, last_name: null }))
    await segments(t, ids.map((id) => [id, 'At Risk']))
    const c = await config(t)
    const before = uploads().length
    expect(await syncer().cycle()).toBe(10_001)
    const calls = uploads().slice(before)
    expect(calls.map((r) => r.rows)).toEqual([10_000, 1])
    expect(sleeps.filter((ms) => ms === 2000)).toHaveLength(1)
    const members = sim.state.members((await syncStore.getConfig(t, c.config_id))!.audience_id!)
    expect(members).toHaveLength(10_001)
    expect(Object.keys(members[0]!)).toEqual(['EMAIL']) // only the column the tenant has data for
  }, 60_000)

  it('converges while the platform answers 429 and 500 at random', async () => {
    const t = tenant
    const ids = Array.from({ length: 100 }, (_, i) => i + 1)
    await customers(t, ids)
    await segments(t, ids.map((id) => [id, id % 2 ? 'At Risk' : 'Lost']))
    const c = await config(t)
    sim.state.setFaults({ rate429: 0.3, rate500: 0.3 })
    const s = syncer({ maxRows: 5 })
    const converge = async () => {
      for (let i = 0; i < 50 && (await syncStore.delta((await syncStore.getConfig(t, c.config_id))!, 0, 1)).length; i++) await s.cycle()
    }
    await converge()
    // Then a third of the members leave and others join, still under faults.
    await segments(t, ids.map((id) => [id, id % 3 === 0 ? 'At Risk' : 'Lost']))
    await converge()
    sim.state.setFaults({ rate429: 0, rate500: 0 })
    expect(await held(t, c.config_id)).toEqual(expected(t, ids.filter((id) => id % 3 === 0)))
    expect(sim.requestLog.some((r) => r.fault === 429) && sim.requestLog.some((r) => r.fault === 500)).toBe(true)
    // Every applied upload body is distinct: no batch was applied twice.
    const applied = uploads().filter((r) => r.applied).map((r) => r.bodyDigest)
    expect(new Set(applied).size).toBe(applied.length)
  })

  it('190 (expired token) pauses the tenant with an alert and makes no further calls', async () => {
    const t = tenant
    const token = `EAAB-expiring-${t}`
    sim.state.addToken({ token })
    await customers(t, [1, 2])
    await segments(t, [[1, 'At Risk']])
    const c = await syncStore.createConfig({ tenant_id: t, name: 'x', segment: 'At Risk', ad_account_id: ACCOUNT, token })
    const other = await syncStore.createConfig({ tenant_id: t, name: 'y', segment: 'Lost', ad_account_id: ACCOUNT, token })
    const s = syncer()
    await s.cycle()
    sim.state.expireToken(token)
    await segments(t, [[2, 'At Risk']])
    await s.cycle()
    const paused = await syncStore.getConfig(t, c.config_id)
    expect(paused).toMatchObject({ status: 'paused', paused_reason: 'token_invalid' })
    expect(await syncStore.getConfig(t, other.config_id)).toMatchObject({ status: 'paused' }) // the whole tenant
    expect((await syncStore.alertsOf(t, [c.config_id])).map((a) => a.code)).toContain('token_invalid')
    const n = sim.requestLog.length
    await segments(t, [[1, 'Lost']])
    await s.cycle()
    await s.cycle()
    expect(sim.requestLog.length).toBe(n)
  })

  it('a missing permission pauses with an alert naming it; the token is checked before any upload', async () => {
    const t = tenant
    const token = `EAAB-noperm-${t}`
    sim.state.addToken({ token, scopes: ['ads_read', 'business_management'] })
    await customers(t, [1])
    await segments(t, [[1, 'At Risk']])
    const c = await syncStore.createConfig({ tenant_id: t, name: 'x', segment: 'At Risk', ad_account_id: ACCOUNT, token })
    const before = uploads().length
    await syncer().cycle()
    expect(await syncStore.getConfig(t, c.config_id)).toMatchObject({ status: 'paused', paused_reason: 'missing_permission:ads_management' })
    expect((await syncStore.alertsOf(t, [c.config_id]))[0]!.message).toContain('ads_management')
    expect(uploads().length).toBe(before)
  })

  it('2650 (unknown ad account) pauses that configuration', async () => {
    const t = tenant
    await customers(t, [1])
    await segments(t, [[1, 'At Risk']])
    const c = await syncStore.createConfig({ tenant_id: t, name: 'x', segment: 'At Risk', ad_account_id: 'act_999', token: TOKEN })
    await syncer().cycle()
    expect(await syncStore.getConfig(t, c.config_id)).toMatchObject({ status: 'paused', paused_reason: 'ad_account_not_found' })
  })

  it('two processes on one configuration: one syncs under a lease; the other takes over when it stops, or once its heartbeat is older than the lease', async () => {
    const t = tenant
    await customers(t, [1, 2, 3, 4])
    await segments(t, [[1, 'At Risk'], [2, 'At Risk']])
    const c = await config(t)
    const created = () => sim.state.listAudiences().filter((x) => x.name === `sync ${t}`)
    const a = syncer({ owner: 'process-a', leaseMs: 20_000 })
    const b = syncer({ owner: 'process-b', leaseMs: 20_000 })
    const before = uploads().length
    // Both at once: one audience, each member uploaded once.
    const rows = await Promise.all([a.cycle(), b.cycle()])
    expect(rows.sort()).toEqual([0, 2])
    expect(uploads().length - before).toBe(1)
    expect(await held(t, c.config_id)).toEqual(expected(t, [1, 2]))
    const owner = (await syncStore.lease(c.config_id))!.owner
    const [holder, other] = owner === 'process-a' ? [a, b] : [b, a]
    // The holder keeps it while it beats; the other stays out.
    await segments(t, [[3, 'At Risk']])
    clock += 10_000
    expect(await other.cycle()).toBe(0)
    expect(await holder.cycle()).toBe(1)
    // The holder stops (releases): the other takes over at once.
    await holder.release()
    await segments(t, [[4, 'At Risk']])
    expect(await other.cycle()).toBe(1)
    expect(await held(t, c.config_id)).toEqual(expected(t, [1, 2, 3, 4]))
    // The new holder dies without a word: the first waits out the lease, then takes over.
    await segments(t, [[1, null]])
    clock += 5_000
    expect(await holder.cycle()).toBe(0)
    clock += 20_001
    expect(await holder.cycle()).toBe(1)
    expect(await held(t, c.config_id)).toEqual(expected(t, [2, 3, 4]))
    expect(created()).toHaveLength(1)
  })

  it('the hourly upload limit holds across restarts: past it, the sync waits for the window without calling', async () => {
    const t = tenant
    const token = `EAAB-limits-${t}`
    sim.state.addToken({ token })
    await customers(t, [1, 2, 3])
    await segments(t, [[1, 'At Risk']])
    const c = await syncStore.createConfig({ tenant_id: t, name: 'x', segment: 'At Risk', ad_account_id: ACCOUNT, token })
    await syncer().cycle()
    // 199 more uploads this hour, recorded as another process would have.
    const key = HourlyBudget.keyFor(token, 'upload_users')
    await syncStore.save(key, [...(await syncStore.load(key)), ...Array.from({ length: 199 }, (_, i) => clock - i)])
    await segments(t, [[2, 'At Risk']])
    const before = uploads().length
    await syncer().cycle() // a new syncer: a restarted process (it checks the token, which is not limited)
    expect(uploads().length).toBe(before)
    const blocked = await syncStore.getConfig(t, c.config_id)
    expect(blocked!.status).toBe('active') // waiting is not a failure
    expect(blocked!.blocked_until).toBeGreaterThan(clock)
    clock = blocked!.blocked_until! + 1
    await syncer().cycle()
    expect(await held(t, c.config_id)).toEqual(expected(t, [1, 2]))
  })

  it('a customer without identifiers is not sent and not recorded: it goes once its profile has an email', async () => {
    const t = tenant
    await customers(t, [1, 2], (id) => (id === 2 ? { email: null, phone: null, first_name: null, last_name: null } : {}))
    await segments(t, [[1, 'At Risk'], [2, 'At Risk']])
    const c = await config(t)
    const s = syncer()
    await s.cycle()
    expect(await held(t, c.config_id)).toEqual(expected(t, [1]))
    expect((await syncStore.batchSummary(t, [c.config_id])).get(c.config_id)!.batches_done).toBe(1)
    expect((await syncStore.delta((await syncStore.getConfig(t, c.config_id))!, 0, 10)).map((d) => d.customer_id)).toEqual([2])
    await customers(t, [2], () => ({ version: 2 }))
    await s.cycle()
    expect(await held(t, c.config_id)).toEqual(expected(t, [1, 2]))
  })

  it('a removal sends the row that was added, even after the email changed', async () => {
    const t = tenant
    await customers(t, [1, 2])
    await segments(t, [[1, 'At Risk'], [2, 'At Risk']])
    const c = await config(t)
    const s = syncer()
    await s.cycle()
    await customers(t, [1], () => ({ email: 'new-address@else.test', version: 2 }))
    await segments(t, [[1, 'Lost']])
    await s.cycle()
    expect(await held(t, c.config_id)).toEqual(expected(t, [2]))
  })

  it('an audience deleted outside the CDP is re-created and filled again, with an alert', async () => {
    const t = tenant
    await customers(t, [1, 2])
    await segments(t, [[1, 'At Risk']])
    const c = await config(t)
    const s = syncer()
    await s.cycle()
    const first = (await syncStore.getConfig(t, c.config_id))!.audience_id!
    await s.client(TOKEN).deleteCustomAudience(first)
    await segments(t, [[2, 'At Risk']])
    await s.cycle() // the upload finds the audience gone: reset
    expect((await syncStore.alertsOf(t, [c.config_id])).map((a) => a.code)).toContain('audience_missing')
    await s.cycle() // a new audience, filled with the whole segment
    const second = (await syncStore.getConfig(t, c.config_id))!.audience_id!
    expect(second).not.toBe(first)
    expect(await held(t, c.config_id)).toEqual(expected(t, [1, 2]))
  })

  it('a token that never expires (expires_at 0) is valid', async () => {
    const t = tenant
    const token = `EAAB-forever-${t}`
    sim.state.addToken({ token, expiresAt: null })
    await customers(t, [1])
    await segments(t, [[1, 'At Risk']])
    const c = await syncStore.createConfig({ tenant_id: t, name: 'x', segment: 'At Risk', ad_account_id: ACCOUNT, token })
    await syncer().cycle()
    expect(await syncStore.getConfig(t, c.config_id)).toMatchObject({ status: 'active' })
    expect(await held(t, c.config_id)).toEqual(expected(t, [1]))
  })

  it('a wrong application token (ours) pauses no tenant', async () => {
    const t = tenant
    await customers(t, [1])
    await segments(t, [[1, 'At Risk']])
    const c = await config(t)
    await syncer({ ads: { baseUrl: sim.url, appAccessToken: 'not-our-app|wrong' } }).cycle()
    expect(await syncStore.getConfig(t, c.config_id)).toMatchObject({ status: 'active', paused_reason: null })
    expect(await syncStore.alertsOf(t, [c.config_id])).toEqual([])
  })

  it('status polling after a revoked token pauses the tenant once and reads nothing more', async () => {
    const t = tenant
    const token = `EAAB-poll-${t}`
    sim.state.addToken({ token })
    await customers(t, [1, 2])
    await segments(t, [[1, 'At Risk'], [2, 'Lost']])
    await syncStore.createConfig({ tenant_id: t, name: 'a', segment: 'At Risk', ad_account_id: ACCOUNT, token })
    await syncStore.createConfig({ tenant_id: t, name: 'b', segment: 'Lost', ad_account_id: ACCOUNT, token })
    const s = syncer()
    await s.cycle()
    sim.state.expireToken(token)
    const audiences = (await syncStore.listConfigs(t)).map((c) => `/${c.audience_id}`)
    expect(audiences).toHaveLength(2)
    const before = sim.requestLog.length
    await s.pollStatus()
    expect(sim.requestLog.slice(before).filter((r) => audiences.includes(r.path))).toHaveLength(1)
    const configs = await syncStore.listConfigs(t)
    expect(configs.map((c) => c.status)).toEqual(['paused', 'paused'])
  })

  it("a token copied into another configuration's row does not decrypt there: only that configuration pauses", async () => {
    const t = tenant
    const a = await syncStore.createConfig({ tenant_id: t, name: 'a', segment: 'At Risk', ad_account_id: ACCOUNT, token: TOKEN })
    const b = await syncStore.createConfig({ tenant_id: t, name: 'b', segment: 'Lost', ad_account_id: ACCOUNT, token: 'EAAB-another-token-of-b' })
    await store.command({
      query: `INSERT INTO audience_sync_configs SELECT * REPLACE (
                (SELECT token FROM audience_sync_configs FINAL WHERE config_id = {a:String}) AS token, version + 1 AS version)
              FROM audience_sync_configs FINAL WHERE config_id = {b:String}`,
      query_params: { a: a.config_id, b: b.config_id },
    })
    const active = (await syncStore.activeConfigsWithTokens()).filter((c) => c.tenant_id === t)
    expect(active.map((c) => c.config_id)).toEqual([a.config_id])
    expect(await syncStore.getConfig(t, b.config_id)).toMatchObject({ status: 'paused', paused_reason: 'token_undecryptable' })
    expect((await syncStore.alertsOf(t, [b.config_id])).map((x) => x.code)).toEqual(['token_undecryptable'])
  })

  it('reads the audience size right after an upload, without waiting for the status poll; a spent read budget leaves it to the poll', async () => {
    const t = tenant
    await customers(t, [1, 2, 3])
    await segments(t, [[1, 'At Risk'], [2, 'At Risk'], [3, 'At Risk']])
    const c = await config(t)
    const s = syncer()
    expect(await s.cycle()).toBe(3)
    expect((await syncStore.statusOf(t, [c.config_id]))[0]).toMatchObject({ approximate_count: 3, source: 'poll' })
    // Another upload with the read budget spent: the count stays as it was until a poll can read.
    await segments(t, [[3, null]])
    const token = (await syncStore.activeConfigsWithTokens()).find((x) => x.config_id === c.config_id)!.token
    const budget = new HourlyBudget({ store: syncStore, now: () => clock })
    while ((await budget.take(token, 'read_audience')).allowed);
    expect(await s.cycle()).toBe(1)
    expect((await syncStore.statusOf(t, [c.config_id]))[0]).toMatchObject({ approximate_count: 3 })
    expect(sim.state.audience((await syncStore.getConfig(t, c.config_id))!.audience_id!)!.approximate_count).toBe(2)
    // An hour on, the budget is back (for the other tests too) and the poll reads the new size.
    clock += 60 * 60_000 + 1
    expect(await s.pollStatus()).toBeGreaterThanOrEqual(1)
    expect((await syncStore.statusOf(t, [c.config_id]))[0]).toMatchObject({ approximate_count: 2 })
  })

  it('one row per profile with the identifiers of all its members: a merge replaces the row and removes the absorbed customer, a split undoes it', async () => {
    const t = tenant
    // One person: the commerce account has the e-mail, the marketplace account (2) only a phone.
    await customers(t, [1], () => ({ phone: null, first_name: null, last_name: null }))
    await customers(t, [2], () => ({ email: null, phone: '+54 9 11 4123-4567', first_name: null, last_name: null }))
    await segments(t, [[1, 'At Risk'], [2, 'At Risk']])
    const c = await config(t)
    const s = syncer()
    const rows = async () => sim.state.members((await syncStore.getConfig(t, c.config_id))!.audience_id!).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
    const person = { EMAIL: hashValue('EMAIL', email(t, 1)), PHONE: hashValue('PHONE', '+54 9 11 4123-4567') }
    expect(await s.cycle()).toBe(2)
    expect(await rows()).toEqual([{ PHONE: person.PHONE }, { EMAIL: person.EMAIL }].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))))

    // The identity lane merges 2 into 1: the features give 2 no segment, and the profile changed.
    const profiles = (pairs: [number, number][]) =>
      store.insert({ table: 'customer_profiles', format: 'JSONEachRow', values: pairs.map(([customer_id, profile_id]) => ({ tenant_id: t, customer_id, profile_id, updated_at: '2025-07-01 00:00:00.000', version: ++version })) })
    await profiles([[1, 1], [2, 1]])
    await segments(t, [[2, null]])
    clock += 1000
    await syncStore.recordProfileChanges([{ tenant_id: t, profile_id: 1 }])
    const before = uploads().length
    expect(await s.cycle()).toBe(3)
    // The old row of 1 and the row of 2 are removed, then one row with both identifiers added.
    expect(uploads().slice(before).map((r) => [r.method, r.rows])).toEqual([['DELETE', 1], ['DELETE', 1], ['POST', 1]])
    expect(await rows()).toEqual([person])
    expect(await s.cycle()).toBe(0)

    // An admin splits them again: 2 is its own profile (and back in the segment); 1 loses the phone.
    await profiles([[2, 2]])
    await segments(t, [[2, 'At Risk']])
    clock += 1000
    await syncStore.recordProfileChanges([{ tenant_id: t, profile_id: 1 }, { tenant_id: t, profile_id: 2 }])
    expect(await s.cycle()).toBe(3)
    expect(await rows()).toEqual([{ PHONE: person.PHONE }, { EMAIL: person.EMAIL }].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))))
    // A profile change that leaves the row as it was sends nothing.
    clock += 1000
    await syncStore.recordProfileChanges([{ tenant_id: t, profile_id: 1 }])
    const quiet = uploads().length
    expect(await s.cycle()).toBe(0)
    expect(uploads().length).toBe(quiet)
    expect(await s.cycle()).toBe(0)
  })

  it('reads audience size and delivery status into ClickHouse', async () => {
    const t = tenant
    await customers(t, [1, 2])
    await segments(t, [[1, 'At Risk'], [2, 'At Risk']])
    const c = await config(t)
    const s = syncer()
    await s.cycle()
    expect(await s.pollStatus()).toBeGreaterThanOrEqual(1)
    const [st] = await syncStore.statusOf(t, [c.config_id])
    expect(st).toMatchObject({ approximate_count: 2, delivery_code: 200, source: 'poll' })
  })
})

describe('webhook and management endpoints', () => {
  let server: http.Server
  let base = ''
  const ADMIN = 'admin-token-audience-sync-tests'
  let keyA = ''
  const T2 = 5000

  beforeAll(async () => {
    const keys = new ApiKeyStore(store)
    keyA = (await keys.create(T2, 'a')).key
    const app = createApp({
      logger: silentLogger, log: {} as EventLog, codec: {} as EventCodec, readiness: [],
      auth: { adminToken: ADMIN, keys },
      audienceSyncs: audienceSyncRouter({ store: syncStore, logger: silentLogger, ads: { baseUrl: sim.url, appAccessToken: sim.appAccessToken } }),
      webhooks: webhooksRouter({ store: syncStore, logger: silentLogger, appSecret: APP_SECRET, verifyToken: VERIFY }),
    })
    server = app.listen(0)
    await new Promise((r) => server.once('listening', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((r) => server?.close(r))
  })

  const call = async (method: string, path: string, body?: unknown, token = ADMIN) => {
    const res = await fetch(base + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null, text }
  }

  it('create, list, detail, update and delete a configuration; the token never comes back', async () => {
    const t = T2
    const bad = await call('POST', '/api/v2/cdp/audience-syncs', { tenant_id: t, segment: 'At Risk', ad_account_id: ACCOUNT, access_token: 'EAAB-not-a-known-token' })
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({ success: false, error: 'Invalid credentials' })
    expect((await call('POST', '/api/v2/cdp/audience-syncs', { tenant_id: t, segment: 'Nope', ad_account_id: 'acct', access_token: TOKEN })).status).toBe(400)

    const created = await call('POST', '/api/v2/cdp/audience-syncs', { tenant_id: t, segment: 'At Risk', ad_account_id: ACCOUNT, access_token: TOKEN }, keyA)
    expect(created.status).toBe(201)
    expect(created.text).not.toContain(TOKEN)
    const id = created.body.data.id
    expect(created.body.data).toMatchObject({ tenant_id: t, segment: 'At Risk', ad_account_id: ACCOUNT, access_token: '********', status: 'active', audience: { id: null }, alerts: [] })
    const raw = await (await store.query({ query: 'SELECT * FROM audience_sync_configs WHERE config_id = {c:String}', query_params: { c: id }, format: 'JSONEachRow' })).text()
    expect(raw).not.toContain(TOKEN)

    const list = await call('GET', `/api/v2/cdp/audience-syncs?tenant_id=${t}`, undefined, keyA)
    expect(list.body).toMatchObject({ success: true, count: 1, data: [{ id }] })
    expect((await call('GET', `/api/v2/cdp/audience-syncs/${id}?tenant_id=${t + 1}`, undefined, keyA)).status).toBe(403)
    expect((await call('GET', `/api/v2/cdp/audience-syncs/nope?tenant_id=${t}`)).status).toBe(404)

    const upd = await call('PUT', `/api/v2/cdp/audience-syncs/${id}?tenant_id=${t}`, { status: 'paused', name: 'Paused by me' }, keyA)
    expect(upd.body.data).toMatchObject({ status: 'paused', paused_reason: 'paused_by_user', name: 'Paused by me' })
    const del = await call('DELETE', `/api/v2/cdp/audience-syncs/${id}?tenant_id=${t}`, undefined, keyA)
    expect(del.body).toMatchObject({ success: true, data: { id, deleted_at: expect.any(String) } })
    expect((await call('GET', `/api/v2/cdp/audience-syncs?tenant_id=${t}`)).body.count).toBe(0)
  })

  it('webhook: the handshake echoes the challenge; a signed delivery-status event updates the status; a bad signature is 401, a malformed body 400', async () => {
    const t = tenant
    await customers(t, [1])
    await segments(t, [[1, 'At Risk']])
    const c = await config(t)
    await syncer().cycle()
    const audienceId = (await syncStore.getConfig(t, c.config_id))!.audience_id!

    const hs = await fetch(`${base}/webhooks/social-ads?hub.mode=subscribe&hub.verify_token=${VERIFY}&hub.challenge=12345`)
    expect([hs.status, await hs.text()]).toEqual([200, '12345'])
    expect((await fetch(`${base}/webhooks/social-ads?hub.mode=subscribe&hub.verify_token=wrong-token&hub.challenge=1`)).status).toBe(403)

    // Events after the upload (whose size read stored a status as of the clock).
    const eventTime = Math.floor(clock / 1000) + 60
    const body = JSON.stringify({ entry: [{ id: audienceId, time: eventTime, changes: [{ field: 'delivery_status', value: { code: 300, description: 'Audience too small' } }] }] })
    const post = (b: string, sig: string) => fetch(`${base}/webhooks/social-ads`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hub-signature-256': sig }, body: b })
    const bad = await post(body, signHubSignature(body, 'another-secret'))
    expect(bad.status).toBe(401)
    expect(await bad.json()).toMatchObject({ success: false, error: 'Invalid signature' })
    const ok = await post(body, signHubSignature(body, APP_SECRET))
    expect(ok.status).toBe(200)
    expect(await ok.json()).toEqual({ success: true, data: { updated: 1, unknown_audiences: 0, stale: 0 } })
    expect((await syncStore.statusOf(t, [c.config_id]))[0]).toMatchObject({ delivery_code: 300, delivery_description: 'Audience too small', source: 'webhook' })
    // An older event arriving late (or replayed) does not overwrite the newer status.
    const older = JSON.stringify({ entry: [{ id: audienceId, time: eventTime - 1000, changes: [{ field: 'delivery_status', value: { code: 200, description: 'Ready' } }] }] })
    expect(await (await post(older, signHubSignature(older, APP_SECRET))).json()).toEqual({ success: true, data: { updated: 0, unknown_audiences: 0, stale: 1 } })
    expect((await syncStore.statusOf(t, [c.config_id]))[0]).toMatchObject({ delivery_code: 300 })
    const malformed = '{"entry":[{"id":1}]}'
    expect((await post(malformed, signHubSignature(malformed, APP_SECRET))).status).toBe(400)

    // The simulator's own signed event reaches the same endpoint.
    await sim.state.sendDeliveryStatus(audienceId, { code: 200, description: 'Ready' }, { url: `${base}/webhooks/social-ads`, appSecret: APP_SECRET })
    expect((await syncStore.statusOf(t, [c.config_id]))[0]).toMatchObject({ delivery_code: 200, source: 'webhook' })
  })
})
