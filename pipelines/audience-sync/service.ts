/**
 * The audience-sync configurations (docs/audience-sync.md "Managing syncs"): which RFM segment of
 * a tenant is kept in a custom audience of which ad account. Create, list, read, update (pause,
 * resume, a new token) and delete; a token is checked with the ads platform's /debug_token
 * before it is stored (encrypted, never answered). Takes validated input and the caller's tenant
 * scope; answers the configurations with their audience's status, alerts and batches; refuses
 * with the domain errors of common/domain-errors.ts. The API (services/api/audience-sync-routes.ts)
 * and the demo call it.
 */
import { InvalidCredentialsError, NotFoundError, UpstreamUnavailableError } from '../../common/domain-errors.ts'
import type { Logger } from '../../common/logger.ts'
import { assertTenantAccess, type TenantScope } from '../../common/tenant-scope.ts'
import { AdsApiError, AdsClient } from './ads-platform/index.ts'
import type { AudienceSyncConfig, AudienceSyncStore } from './store.ts'
import { REQUIRED_SCOPES, tokenExpired } from './syncer.ts'

export interface AudienceSyncServiceDeps {
  store: AudienceSyncStore
  logger: Logger
  /** When given, a token is checked with /debug_token before a configuration is saved. */
  ads?: { baseUrl: string; version?: string; appAccessToken: string }
  /** Called after a configuration changed (the syncer runs a cycle soon). */
  onChange?: () => void
  now?: () => number
}

export interface NewAudienceSync {
  tenant_id: number
  /** Default `CDP {segment} (tenant {tenant_id})`. */
  name?: string
  segment: string
  ad_account_id: string
  access_token: string
}

export interface AudienceSyncChange {
  name?: string
  segment?: string
  /** A new token also resumes a paused sync and clears a rate-limit wait. */
  access_token?: string
  status?: 'active' | 'paused'
}

type Store = AudienceSyncStore
/** A configuration with what the sync knows of its audience: the platform's status, the latest alerts, the batches sent. */
export interface AudienceSyncState {
  config: AudienceSyncConfig
  status: Awaited<ReturnType<Store['statusOf']>>[number] | null
  alerts: Awaited<ReturnType<Store['alertsOf']>>
  batches: ReturnType<Awaited<ReturnType<Store['batchSummary']>>['get']> | null
}

const notFound = (tenantId: number, configId: string) => new NotFoundError('Audience sync not found', { id: configId, tenant_id: tenantId })

export class AudienceSyncService {
  private readonly store: AudienceSyncStore
  private readonly now: () => number

  constructor(private readonly deps: AudienceSyncServiceDeps) {
    this.store = deps.store
    this.now = deps.now ?? Date.now
  }

  async list(scope: TenantScope, tenantId: number): Promise<AudienceSyncState[]> {
    assertTenantAccess(scope, tenantId)
    return this.states(tenantId, await this.store.listConfigs(tenantId))
  }

  async get(scope: TenantScope, tenantId: number, configId: string): Promise<AudienceSyncState> {
    assertTenantAccess(scope, tenantId)
    const c = await this.store.getConfig(tenantId, configId)
    if (!c) throw notFound(tenantId, configId)
    return (await this.states(tenantId, [c]))[0]!
  }

  async create(scope: TenantScope, input: NewAudienceSync): Promise<AudienceSyncState> {
    assertTenantAccess(scope, input.tenant_id)
    await this.checkToken(input.access_token)
    const { access_token, ...rest } = input
    const c = await this.store.createConfig({ ...rest, token: access_token, name: rest.name ?? `CDP ${rest.segment} (tenant ${rest.tenant_id})` })
    this.deps.logger.info({ tenantId: c.tenant_id, configId: c.config_id, segment: c.segment }, 'audience sync configured')
    this.deps.onChange?.()
    return (await this.states(c.tenant_id, [c]))[0]!
  }

  /** Renames, moves to another segment, pauses or resumes; a new token is checked first. */
  async update(scope: TenantScope, tenantId: number, configId: string, u: AudienceSyncChange): Promise<AudienceSyncState> {
    assertTenantAccess(scope, tenantId)
    const cur = await this.store.getConfig(tenantId, configId)
    if (!cur) throw notFound(tenantId, configId)
    if (u.access_token) await this.checkToken(u.access_token)
    const next = await this.store.updateConfig(
      tenantId,
      cur.config_id,
      (c) => ({
        ...c,
        name: u.name ?? c.name,
        segment: u.segment ?? c.segment,
        // Resuming (or a new token) clears the pause and the rate-limit wait.
        ...(u.status ? { status: u.status, paused_reason: u.status === 'active' ? null : 'paused_by_user' } : {}),
        ...(u.access_token && !u.status ? { status: 'active' as const, paused_reason: null, blocked_until: null } : {}),
      }),
      u.access_token,
    )
    if (!next) throw notFound(tenantId, configId)
    this.deps.onChange?.()
    return (await this.states(tenantId, [next]))[0]!
  }

  /** Stops syncing; the custom audience stays on the platform. */
  async remove(scope: TenantScope, tenantId: number, configId: string): Promise<{ id: string; deleted_at: number }> {
    assertTenantAccess(scope, tenantId)
    if (!(await this.store.deleteConfig(tenantId, configId))) throw notFound(tenantId, configId)
    return { id: configId, deleted_at: this.now() }
  }

  // ---- internals ---------------------------------------------------------------------------------

  private async states(tenantId: number, configs: AudienceSyncConfig[]): Promise<AudienceSyncState[]> {
    const ids = configs.map((c) => c.config_id)
    if (!ids.length) return []
    const [statuses, alerts, batches] = await Promise.all([this.store.statusOf(tenantId, ids), this.store.alertsOf(tenantId, ids, 10), this.store.batchSummary(tenantId, ids)])
    return configs.map((c) => ({
      config: c,
      status: statuses.find((s) => s.config_id === c.config_id) ?? null,
      alerts: alerts.filter((a) => a.config_id === c.config_id),
      batches: batches.get(c.config_id) ?? null,
    }))
  }

  /**
   * /debug_token: valid, not expired, with the three permissions, else InvalidCredentialsError;
   * UpstreamUnavailableError when the platform could not be asked (down, or our application
   * token rejected).
   */
  private async checkToken(accessToken: string): Promise<void> {
    if (!this.deps.ads) return
    const refused = (reason: string) => new InvalidCredentialsError(reason, {})
    let info: Awaited<ReturnType<AdsClient['debugToken']>>
    try {
      info = await new AdsClient({ ...this.deps.ads, accessToken, retry: { policy: { maxAttempts: 1, multiplier: 1, minWaitMs: 0, maxWaitMs: 0 } } }).debugToken()
    } catch (err) {
      if (err instanceof AdsApiError && (err.code === 190 || err.code === 200)) throw refused('the access token is invalid or lacks permissions')
      if (!(err instanceof AdsApiError)) throw err
      this.deps.logger.error({ err: { name: err.name, code: err.code, status: err.httpStatus } }, '/debug_token failed: check CDP_ADS_APP_ACCESS_TOKEN and the ads platform')
      throw new UpstreamUnavailableError('Ads platform unavailable', 'the token could not be checked with the ads platform; try again later')
    }
    if (!info.is_valid || tokenExpired(info.expires_at, this.now())) throw refused('the access token is invalid or expired')
    const missing = REQUIRED_SCOPES.filter((s) => !info.scopes.includes(s))
    if (missing.length) throw refused(`the access token lacks ${missing.join(', ')}`)
  }
}
