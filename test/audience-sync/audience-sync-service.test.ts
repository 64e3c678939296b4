import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import { parseKeyring } from '../../common/secrets.ts'
import { ForbiddenError, InvalidCredentialsError, NotFoundError, UpstreamUnavailableError } from '../../common/domain-errors.ts'
import { ALL_TENANTS, tenantOnly } from '../../common/tenant-scope.ts'
import { AudienceSyncService, type AudienceSyncServiceDeps } from '../../pipelines/audience-sync/service.ts'
import { AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import { start as startSimulator, type RunningAdsPlatformSimulator } from '../../services/simulators/ads-platform/index.ts'
import { silentLogger, refusal, migratedStore } from '../helpers.ts'

/**
 * AudienceSyncService without HTTP: configurations created, listed, paused, resumed and deleted,
 * and the token checked with /debug_token of the ads-platform simulator, against chdb. (The
 * endpoints' answers: audience-sync.test.ts.)
 */
const TOKEN = 'EAAB-service-token-0001'
const NARROW = 'EAAB-service-token-read-only'
const ACCOUNT = 'act_1000000001'

let store: Store
let sim: RunningAdsPlatformSimulator
let syncStore: AudienceSyncStore
let changes = 0
let svc: AudienceSyncService

const service = (over: Partial<AudienceSyncServiceDeps> = {}) =>
  new AudienceSyncService({ store: syncStore, logger: silentLogger, ads: { baseUrl: sim.url, appAccessToken: sim.appAccessToken }, onChange: () => void changes++, ...over })


beforeAll(async () => {
  store = await migratedStore()
  syncStore = new AudienceSyncStore(store, parseKeyring(`t1:${'1'.repeat(64)}`))
  sim = await startSimulator({ tokens: [TOKEN], adAccounts: [ACCOUNT] })
  sim.state.addToken({ token: NARROW, scopes: ['ads_read'] })
  svc = service()
}, 60_000)

afterAll(async () => {
  await sim?.close()
  await store?.close()
})

describe('AudienceSyncService', () => {
  it('creates a sync once the token passes /debug_token; the token is stored encrypted only; the syncer is told', async () => {
    const before = changes
    const s = await svc.create(tenantOnly(10), { tenant_id: 10, segment: 'Champions', ad_account_id: ACCOUNT, access_token: TOKEN })
    expect(s.config).toMatchObject({ tenant_id: 10, name: 'CDP Champions (tenant 10)', segment: 'Champions', ad_account_id: ACCOUNT, status: 'active', audience_id: null })
    expect(s).toMatchObject({ status: null, alerts: [], batches: null })
    expect(changes).toBe(before + 1)
    expect(sim.requestLog.some((r) => r.path.endsWith('/debug_token'))).toBe(true)
    const raw = await (await store.query({ query: 'SELECT * FROM audience_sync_configs', format: 'JSONEachRow' })).text()
    expect(raw).not.toContain(TOKEN)
    expect(await syncStore.tokenOf(10, s.config.config_id)).toBe(TOKEN)
  })

  it('refuses a token the platform does not know or that lacks a permission, and says so when the platform cannot be asked', async () => {
    const unknown = await refusal(svc.create(ALL_TENANTS, { tenant_id: 11, segment: 'At Risk', ad_account_id: ACCOUNT, access_token: 'EAAB-not-a-known-token' }), InvalidCredentialsError)
    expect(unknown).toMatchObject({ kind: 'invalid_credentials', message: 'Invalid credentials', details: { validation_error: expect.stringMatching(/invalid/) } })
    const narrow = await refusal(svc.create(ALL_TENANTS, { tenant_id: 11, segment: 'At Risk', ad_account_id: ACCOUNT, access_token: NARROW }), InvalidCredentialsError)
    expect(narrow.reason).toBe('the access token lacks ads_management, business_management')
    const down = service({ ads: { baseUrl: 'http://127.0.0.1:9', appAccessToken: sim.appAccessToken } })
    expect(await refusal(down.create(ALL_TENANTS, { tenant_id: 11, segment: 'At Risk', ad_account_id: ACCOUNT, access_token: TOKEN }), UpstreamUnavailableError)).toMatchObject({ kind: 'upstream_unavailable', message: 'Ads platform unavailable' })
    expect(await svc.list(ALL_TENANTS, 11)).toEqual([])
    // Without an ads platform configured, tokens are taken as they are.
    expect((await service({ ads: undefined }).create(ALL_TENANTS, { tenant_id: 11, segment: 'At Risk', ad_account_id: ACCOUNT, access_token: 'EAAB-unchecked-token' })).config.status).toBe('active')
  })

  it('lists and reads within the scope; another tenant is ForbiddenError, an unknown id NotFoundError', async () => {
    const [s] = await svc.list(tenantOnly(10), 10)
    expect(s!.config.segment).toBe('Champions')
    expect((await svc.get(ALL_TENANTS, 10, s!.config.config_id)).config.config_id).toBe(s!.config.config_id)
    await refusal(svc.list(tenantOnly(11), 10), ForbiddenError)
    await refusal(svc.get(tenantOnly(11), 10, s!.config.config_id), ForbiddenError)
    expect(await refusal(svc.get(ALL_TENANTS, 10, 'nope'), NotFoundError)).toMatchObject({ message: 'Audience sync not found', details: { id: 'nope', tenant_id: 10 } })
  })

  it('pauses by the user, resumes with a new token (checked first), clears a rate-limit wait', async () => {
    const id = (await svc.list(ALL_TENANTS, 10))[0]!.config.config_id
    const paused = await svc.update(ALL_TENANTS, 10, id, { status: 'paused', name: 'Paused by me' })
    expect(paused.config).toMatchObject({ status: 'paused', paused_reason: 'paused_by_user', name: 'Paused by me' })
    await syncStore.updateConfig(10, id, (c) => ({ ...c, blocked_until: Date.now() + 3_600_000 }))
    await refusal(svc.update(ALL_TENANTS, 10, id, { access_token: NARROW }), InvalidCredentialsError)
    expect((await svc.get(ALL_TENANTS, 10, id)).config.status).toBe('paused')
    const resumed = await svc.update(ALL_TENANTS, 10, id, { access_token: TOKEN })
    expect(resumed.config).toMatchObject({ status: 'active', paused_reason: null, blocked_until: null })
    await refusal(svc.update(ALL_TENANTS, 10, 'nope', { status: 'active' }), NotFoundError)
  })

  it('deletes: gone from the list; a second delete is NotFoundError', async () => {
    const id = (await svc.list(ALL_TENANTS, 10))[0]!.config.config_id
    await refusal(svc.remove(tenantOnly(11), 10, id), ForbiddenError)
    expect(await svc.remove(tenantOnly(10), 10, id)).toEqual({ id, deleted_at: expect.any(Number) })
    expect(await svc.list(ALL_TENANTS, 10)).toEqual([])
    await refusal(svc.remove(ALL_TENANTS, 10, id), NotFoundError)
  })
})
