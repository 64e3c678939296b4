import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../common/store/clickhouse.ts'
import { parseKeyring } from '../../common/secrets.ts'
import { ConflictError, ForbiddenError, InvalidCredentialsError, InvalidInputError, NotFoundError, UnreadableSecretError, UpstreamUnavailableError } from '../../common/domain-errors.ts'
import { ALL_TENANTS, tenantOnly } from '../../common/tenant-scope.ts'
import { IntegrationService, type IntegrationServiceDeps } from '../../pipelines/connectors/service.ts'
import type { CreateIntegrationInput } from '../../pipelines/connectors/schemas.ts'
import type { SyncJob } from '../../pipelines/connectors/queue.ts'
import type { ConnectorEndpoints } from '../../pipelines/connectors/sources/types.ts'
import * as commerceSim from '../../services/simulators/commerce-platform/index.ts'
import * as searchAdsSim from '../../services/simulators/search-ads/index.ts'
import { silentLogger, refusal, migratedStore } from '../helpers.ts'

/**
 * IntegrationService without HTTP: its main paths and each refusal as a typed domain error,
 * against chdb and the platform simulators. (The endpoints' answers: integrations-api.test.ts.)
 */
const box = parseKeyring(`k1:${'1a'.repeat(32)}`)
const CP = { account_name: 'demoshop', environment: 'commerce_stable', app_key: commerceSim.DEFAULTS.appKey, app_token: commerceSim.DEFAULTS.appToken }
const SA = { customer_id: '123-456-7890', developer_token: searchAdsSim.DEFAULTS.developerToken, refresh_token: searchAdsSim.DEFAULTS.refreshToken }

let store: Store
let cp: commerceSim.RunningCommercePlatformSimulator
let sa: searchAdsSim.RunningSearchAdsSimulator
let endpoints: ConnectorEndpoints
let svc: IntegrationService
const queued: SyncJob[] = []

const service = (over: Partial<IntegrationServiceDeps> = {}) => new IntegrationService({ store, secrets: box, endpoints, logger: silentLogger, onSyncQueued: (j) => void queued.push(j), ...over })
const commerce = (tenant: number, over: Record<string, unknown> = {}) => ({ tenant_id: tenant, integration_type: 'commerce_platform', ...CP, ...over }) as CreateIntegrationInput


beforeAll(async () => {
  store = await migratedStore()
  const end = new Date(Date.UTC(2025, 5, 1))
  cp = await commerceSim.start({ customers: 10, end })
  sa = await searchAdsSim.start({ customers: 10, end })
  endpoints = { commercePlatform: cp.url, marketplace: 'http://127.0.0.1:9', searchAds: sa.url, socialAds: 'http://127.0.0.1:9' }
  svc = service()
}, 60_000)

afterAll(async () => {
  await Promise.all([cp?.close(), sa?.close()])
  await store?.close()
})

describe('create', () => {
  it('verifies, stores and queues the initial full sync (the runner is told)', async () => {
    const { integration, initialSync } = await svc.create(ALL_TENANTS, commerce(1, { configuration: { sync_interval: 'hourly' } }))
    expect(integration).toMatchObject({ tenant_id: 1, integration_type: 'commerce_platform', account_name: 'demoshop', environment: 'commerce_stable', is_active: true, validation_status: 'valid', deleted_at: null })
    expect(initialSync).toMatchObject({ integration_id: integration.id, kind: 'initial', sync_type: 'full', status: 'queued', entities: ['products', 'customers', 'orders'] })
    expect(queued.at(-1)?.sync_id).toBe(initialSync!.sync_id)
    const raw = await (await store.query({ query: 'SELECT * FROM integrations', format: 'JSONEachRow' })).text()
    expect(raw).not.toContain(CP.app_token)
  })

  it('the same account again for the tenant: ConflictError naming the existing integration', async () => {
    const existing = (await svc.list(ALL_TENANTS, 1)).integrations[0]!
    const err = await refusal(svc.create(ALL_TENANTS, commerce(1)), ConflictError)
    expect(err.details).toEqual({ integration_id: existing.id, tenant_id: 1, integration_type: 'commerce_platform' })
  })

  it('refused credentials, an app key of the wrong form, an unreachable platform: nothing stored', async () => {
    const before = (await svc.list(ALL_TENANTS, 2)).integrations.length
    const bad = await refusal(svc.create(ALL_TENANTS, commerce(2, { app_token: 'wrong-token-0123456789' })), InvalidCredentialsError)
    expect(bad).toMatchObject({ kind: 'invalid_credentials', code: 'INVALID_CREDENTIALS', details: { validation_error: expect.any(String), account_name: 'demoshop', integration_type: 'commerce_platform' } })
    const key = await refusal(svc.create(ALL_TENANTS, commerce(2, { app_key: 'appkey-othershop-X1' })), InvalidCredentialsError)
    expect(key).toMatchObject({ code: 'INVALID_APP_KEY', field: 'app_key', solution: expect.stringContaining('appkey-{account_name}-{hash}') })
    const down = service({ endpoints: { ...endpoints, commercePlatform: 'http://127.0.0.1:9' }, timeoutMs: 2000 })
    const unavailable = await refusal(down.create(ALL_TENANTS, commerce(2)), UpstreamUnavailableError)
    expect(unavailable.details).toMatchObject({ retry: true, integration_type: 'commerce_platform' })
    expect((await svc.list(ALL_TENANTS, 2)).integrations.length).toBe(before)
  })

  it('another tenant than the scope: ForbiddenError; a private webhook_url: InvalidInputError unless allowed', async () => {
    await refusal(svc.create(tenantOnly(2), commerce(3)), ForbiddenError)
    const hook = await refusal(svc.create(ALL_TENANTS, commerce(3, { configuration: { webhook_url: 'http://10.0.0.1/hook' } })), InvalidInputError)
    expect(hook.errors).toEqual([{ path: 'configuration.webhook_url', code: 'private_destination', message: expect.stringContaining('CDP_CONNECTORS_ALLOW_PRIVATE_WEBHOOKS') }])
    const dev = service({ allowPrivateWebhooks: true })
    const { integration } = await dev.create(tenantOnly(3), commerce(3, { configuration: { webhook_url: 'http://10.0.0.1/hook', initial_sync: false } }))
    expect(integration.configuration.webhook_url).toBe('http://10.0.0.1/hook')
  })
})

describe('read', () => {
  it('get, list and describe within the scope; masked credentials, the default tenant name', async () => {
    const { integrations, stats } = await svc.list(tenantOnly(1), 1)
    expect(integrations.map((i) => i.tenant_id)).toEqual([1])
    expect(stats.size).toBe(0)
    const id = integrations[0]!.id
    const d = await svc.describe(tenantOnly(1), id)
    expect(d).toMatchObject({ tenantName: 'Tenant 1', credentials: { account_name: 'demoshop', app_key: CP.app_key, app_token: `****${CP.app_token.slice(-4)}` }, live: [expect.objectContaining({ kind: 'initial' })] })
    expect(d.nextScheduledSync! - d.integration.created_at).toBe(3_600_000)
    await refusal(svc.list(tenantOnly(2), 1), ForbiddenError)
    await refusal(svc.get(tenantOnly(2), id), ForbiddenError)
    const missing = await refusal(svc.get(ALL_TENANTS, 987_654), NotFoundError)
    expect(missing).toMatchObject({ kind: 'not_found', message: 'Integration not found', details: { integration_id: 987_654 } })
  })

  it('validate: the account, or the refusal', async () => {
    expect(await svc.validate('commerce_platform', CP)).toMatchObject({ account_name: 'demoshop', is_active: true })
    expect(await svc.validate('search_ads', SA)).toBeTruthy()
    expect(await refusal(svc.validate('commerce_platform', { ...CP, app_token: 'wrong-token-0123456789' }), InvalidCredentialsError)).toMatchObject({ code: 'INVALID_CREDENTIALS' })
    expect(await refusal(svc.validate('commerce_platform', { ...CP, app_key: 'appkey-demoshop' }), InvalidCredentialsError)).toMatchObject({ code: 'INVALID_APP_KEY' })
    await refusal(svc.validate('marketplace', { client_id: 'x', client_secret: 'y', redirect_uri: 'https://a.example/cb' }), UpstreamUnavailableError)
  })
})

describe('update', () => {
  it('answers the changes with secrets masked, writes only when there are some', async () => {
    const id = (await svc.list(ALL_TENANTS, 1)).integrations[0]!.id
    const { changes } = await svc.update(ALL_TENANTS, id, { is_active: false, configuration: { batch_size: 50 } })
    expect(changes).toEqual({ is_active: { old: true, new: false }, 'configuration.batch_size': { old: 100, new: 50 } })
    expect((await svc.get(ALL_TENANTS, id)).is_active).toBe(false)
    expect((await svc.update(ALL_TENANTS, id, { is_active: false })).changes).toEqual({})
    cp.state.addAppKey({ appKey: 'appkey-demoshop-ROT0002', appToken: 'rotated-app-token-0123456789-zz' })
    const rotated = await svc.update(ALL_TENANTS, id, { is_active: true, app_key: 'appkey-demoshop-ROT0002', app_token: 'rotated-app-token-0123456789-zz' })
    expect(rotated.changes).toMatchObject({ app_key: { old: CP.app_key, new: 'appkey-demoshop-ROT0002' }, app_token: { old: `****${CP.app_token.slice(-4)}`, new: '****9-zz' } })
  })

  it('refuses fields the type has not, an empty change, credentials the platform refuses, and keys it cannot read', async () => {
    const id = (await svc.list(ALL_TENANTS, 1)).integrations[0]!.id
    expect((await refusal(svc.update(ALL_TENANTS, id, { client_secret: 'x' }), InvalidInputError)).errors).toEqual([expect.objectContaining({ path: 'client_secret', code: 'not_applicable' })])
    expect((await refusal(svc.update(ALL_TENANTS, id, {}), InvalidInputError)).errors).toEqual([expect.objectContaining({ code: 'empty' })])
    await refusal(svc.update(ALL_TENANTS, id, { app_token: 'wrong-token-0123456789' }), InvalidCredentialsError)
    expect(await refusal(svc.update(ALL_TENANTS, id, { app_key: 'key-0002' }), InvalidCredentialsError)).toMatchObject({ code: 'INVALID_APP_KEY', details: { account_name: 'demoshop', field: 'app_key' } })
    const otherKeys = service({ secrets: parseKeyring(`k2:${'2b'.repeat(32)}`) })
    const unreadable = await refusal(otherKeys.update(ALL_TENANTS, id, { app_token: 'another-token-0123456789' }), UnreadableSecretError)
    expect(unreadable).toMatchObject({ kind: 'unreadable_secret', details: { integration_id: id } })
    expect((await otherKeys.describe(ALL_TENANTS, id)).credentials).toBeNull()
    await refusal(svc.update(tenantOnly(2), id, { is_active: true }), ForbiddenError)
  })
})

describe('connection test, syncs, health, delete', () => {
  it('tests the connection: connected with the endpoints timed; no answer at all is UpstreamUnavailableError', async () => {
    const id = (await svc.list(ALL_TENANTS, 1)).integrations[0]!.id
    const t = await svc.testConnection(ALL_TENANTS, id)
    expect(t).toMatchObject({ status: 'connected', response_time: expect.stringMatching(/ms$/), endpoints_tested: { catalog: { status: 'ok' }, orders: { status: 'ok' }, masterdata: { status: 'ok' } } })
    const down = service({ endpoints: { ...endpoints, commercePlatform: 'http://127.0.0.1:9' }, timeoutMs: 2000 })
    expect(await refusal(down.testConnection(ALL_TENANTS, id), UpstreamUnavailableError)).toMatchObject({ message: 'Connection failed', details: { integration_id: id, status: 'failed' } })
  })

  it('queues a manual sync behind the live ones; refuses entities the type does not sync and inactive integrations', async () => {
    const id = (await svc.list(ALL_TENANTS, 1)).integrations[0]!.id
    const q = await svc.queueSync(ALL_TENANTS, id, { sync_type: 'incremental', entities: ['orders'], date_from: '2025-01-01', date_to: '2025-01-31' })
    expect(q.job).toMatchObject({ kind: 'manual', sync_type: 'incremental', entities: ['orders'], date_from: Date.UTC(2025, 0, 1), date_to: Date.UTC(2025, 1, 1) })
    expect(q.queuePosition).toBe(2) // the initial sync is still queued
    expect(q.estimatedMs).toBe(2 * 30_000)
    expect(queued.at(-1)?.sync_id).toBe(q.job.sync_id)
    const ads = (await svc.create(ALL_TENANTS, { tenant_id: 1, integration_type: 'search_ads', ...SA })).integration.id
    expect((await refusal(svc.queueSync(ALL_TENANTS, ads, { sync_type: 'full', entities: ['orders'] }), InvalidInputError)).errors[0]).toMatchObject({ path: 'entities', code: 'not_supported' })
    await svc.update(ALL_TENANTS, id, { is_active: false })
    expect(await refusal(svc.queueSync(ALL_TENANTS, id, { sync_type: 'full' }), ConflictError)).toMatchObject({ message: 'Integration is inactive' })
    await svc.update(ALL_TENANTS, id, { is_active: true })
  })

  it('health sees what the scope reaches', async () => {
    const all = await svc.health(ALL_TENANTS)
    expect(new Set(all.integrations.map((i) => i.tenant_id))).toEqual(new Set([1, 3]))
    const own = await svc.health(tenantOnly(3))
    expect(own.integrations.map((i) => i.tenant_id)).toEqual([3])
  })

  it('deletes softly: gone for get, the row kept', async () => {
    const id = (await svc.list(ALL_TENANTS, 3)).integrations[0]!.id
    await refusal(svc.remove(tenantOnly(1), id), ForbiddenError)
    const out = await svc.remove(tenantOnly(3), id)
    expect(out).toEqual({ id, deleted_at: expect.any(Number) })
    await refusal(svc.get(ALL_TENANTS, id), NotFoundError)
    await refusal(svc.remove(ALL_TENANTS, id), NotFoundError)
    expect((await svc.list(ALL_TENANTS, 3)).integrations).toEqual([])
  })
})
