/**
 * The tenant-integrations use cases (docs/integrations.md): create, read, update and delete an
 * integration, check credentials against the external system, test a connection, queue a sync,
 * and the health of a tenant's integrations. It takes validated input (schemas.ts) and the
 * caller's tenant scope, answers records, and refuses with the domain errors of
 * common/domain-errors.ts. The API (services/api/integrations/) and the demo call it.
 */
import type { Logger } from '../../common/logger.ts'
import { ConflictError, InvalidCredentialsError, InvalidInputError, NotFoundError, UnreadableSecretError, UpstreamUnavailableError, type FieldProblem } from '../../common/domain-errors.ts'
import { SecretDecryptError, type SecretBox } from '../../common/secrets.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import { displayName, TenantSettingsStore } from '../../common/store/tenant-settings.ts'
import { assertTenantAccess, scopedTenant, type TenantScope } from '../../common/tenant-scope.ts'
import { diff, maskCredentials, type Change } from './masking.ts'
import { SyncQueue, type IntegrationStats, type SyncJob, type SyncRun } from './queue.ts'
import { nextScheduledSync } from './schedule.ts'
import {
  applyConfiguration,
  configuredEntities,
  credentialsOf,
  defaultConfiguration,
  marketplaceKeyErrors,
  UPDATABLE_CREDENTIALS,
  type CreateIntegrationInput,
  type IntegrationConfiguration,
  type SyncInput,
  type UpdateIntegrationInput,
} from './schemas.ts'
import { testConnection, type ConnectionTest } from './sources/connection-test.ts'
import { customerIdDigits } from './sources/search-ads/client.ts'
import { appKeyMatches, CREDENTIAL_FIELDS, SYNCABLE_ENTITIES, type ConnectorEndpoints, type Credentials, type Entity, type IntegrationType } from './sources/types.ts'
import { validateCredentials, type ConnectorDeps } from './sources/validate.ts'
import { IntegrationStore, type IntegrationRecord } from './store.ts'
import { literalDestinationProblem } from './webhook-guard.ts'

export interface IntegrationServiceDeps {
  store: Store
  secrets: SecretBox
  /** Base URLs of the external systems (the same the connectors role uses). */
  endpoints: ConnectorEndpoints
  logger: Logger
  now?: () => number
  /** The name shown as `tenant_name`; default: the tenant settings' name, else `Tenant {id}`. */
  tenantName?: (tenantId: number) => string | Promise<string>
  /** Transport to the external systems (tests inject one). */
  fetch?: typeof fetch
  /** Per external call of a validation or a connection test; default 15 s. */
  timeoutMs?: number
  /** Told when a sync is queued (e.g. to wake an in-process connectors runner). */
  onSyncQueued?: (job: SyncJob) => void
  /**
   * Accept a `webhook_url` on a loopback, private or reserved address (a local receiver in
   * development). Default false: such a URL is refused when configured, as the connectors role
   * would refuse to post to it (CDP_CONNECTORS_ALLOW_PRIVATE_WEBHOOKS).
   */
  allowPrivateWebhooks?: boolean
}

export interface IntegrationDetails {
  integration: IntegrationRecord
  stats: IntegrationStats | undefined
  tenantName: string
  /** Masked; null when the stored credentials do not decrypt with the configured keyring. */
  credentials: Record<string, string> | null
  nextScheduledSync: number | null
  /** Its queued and running syncs. */
  live: SyncJob[]
}

export interface QueuedSync {
  job: SyncJob
  /** 1 when nothing else waits for this integration. */
  queuePosition: number
  estimatedMs: number
  webhookUrl: string | null
}

export type ConnectionTestResult = Omit<ConnectionTest, 'status'> & { integration: IntegrationRecord; status: 'connected' | 'degraded' }

const DAY = 86_400_000

export const INVALID_APP_KEY_SOLUTION = 'Use the app key issued by the commerce platform for this account: appkey-{account_name}-{hash}, e.g. appkey-mystore-ABC123.'
const INVALID_APP_KEY_REASON = 'App key does not match the expected form appkey-{account_name}-{hash}'

const invalidAppKey = (accountName: string | null) =>
  new InvalidCredentialsError(INVALID_APP_KEY_REASON, { account_name: accountName }, { code: 'INVALID_APP_KEY', field: 'app_key', solution: INVALID_APP_KEY_SOLUTION })

/** The external account an integration connects: one integration per account and tenant. */
function accountKey(type: IntegrationType, c: Credentials): string {
  switch (type) {
    case 'commerce_platform':
      return `${c.account_name}:${c.environment}`
    case 'marketplace':
      return c.client_id!
    case 'search_ads':
      return customerIdDigits(c.customer_id!)
    case 'social_ads':
      return c.app_id!
  }
}

const connectorConfig = (c: IntegrationConfiguration) => ({ api_version: c.api_version, site_id: c.site_id ?? undefined })

export class IntegrationService {
  private readonly now: () => number
  private readonly integrations: IntegrationStore
  private readonly queue: SyncQueue
  private readonly connector: ConnectorDeps
  private readonly settings: TenantSettingsStore
  private readonly log: Logger

  constructor(private readonly deps: IntegrationServiceDeps) {
    this.now = deps.now ?? Date.now
    this.integrations = new IntegrationStore(deps.store, deps.secrets, this.now)
    this.queue = new SyncQueue(deps.store, this.now)
    this.connector = { endpoints: deps.endpoints, http: { fetch: deps.fetch, timeoutMs: deps.timeoutMs ?? 15_000, maxAttempts: 2 }, now: this.now }
    this.settings = new TenantSettingsStore(deps.store)
    this.log = deps.logger.child({ component: 'integrations' })
  }

  /** A live (not deleted) integration the scope reaches. */
  async get(scope: TenantScope, id: number): Promise<IntegrationRecord> {
    const r = await this.integrations.get(id)
    if (!r || r.deleted_at !== null) throw new NotFoundError('Integration not found', { integration_id: id })
    assertTenantAccess(scope, r.tenant_id)
    return r
  }

  /** A tenant's integrations with their sync statistics of the last day. */
  async list(scope: TenantScope, tenantId: number): Promise<{ integrations: IntegrationRecord[]; stats: Map<number, IntegrationStats> }> {
    assertTenantAccess(scope, tenantId)
    const integrations = await this.integrations.list(tenantId)
    return { integrations, stats: await this.queue.stats(integrations.map((i) => i.id), this.now() - DAY) }
  }

  /** The integration's sync runs, newest first (a retried sync: one run per attempt), a page of them and their number. */
  async history(scope: TenantScope, id: number, page: { limit: number; offset: number }): Promise<{ runs: SyncRun[]; total: number }> {
    const r = await this.get(scope, id)
    return this.queue.runsPage(r.id, page)
  }

  async describe(scope: TenantScope, id: number): Promise<IntegrationDetails> {
    const r = await this.get(scope, id)
    const [stats, live, last] = await Promise.all([this.queue.stats([r.id], this.now() - DAY), this.queue.live(r.id), this.queue.lastScheduled([r.id])])
    let credentials: Record<string, string> | null = null
    try {
      credentials = maskCredentials(r.integration_type, await this.integrations.credentials(r.id))
    } catch (err) {
      this.log.warn({ integration_id: r.id, err: (err as Error).name }, 'stored credentials do not decrypt')
    }
    const tenantName = this.deps.tenantName ? await this.deps.tenantName(r.tenant_id) : displayName(await this.settings.get(r.tenant_id))
    return { integration: r, stats: stats.get(r.id), tenantName, credentials, nextScheduledSync: nextScheduledSync(r, last.get(r.id) ?? null), live }
  }

  /**
   * Verifies the credentials with the external system, then stores the integration (credentials
   * encrypted) and queues its initial full sync unless the configuration turns that off.
   */
  async create(scope: TenantScope, input: CreateIntegrationInput): Promise<{ integration: IntegrationRecord; initialSync: SyncJob | null }> {
    assertTenantAccess(scope, input.tenant_id)
    const hookErrors = this.webhookErrors(input.configuration?.webhook_url)
    if (hookErrors.length) throw new InvalidInputError(hookErrors)
    const type = input.integration_type
    const creds = credentialsOf(input)
    const commerceAccount = input.integration_type === 'commerce_platform' ? input.account_name : null
    if (input.integration_type === 'commerce_platform' && !appKeyMatches(input.app_key, input.account_name)) throw invalidAppKey(input.account_name)
    const key = accountKey(type, creds)
    const existing = await this.integrations.findByAccount(input.tenant_id, type, key)
    if (existing) throw new ConflictError('Integration already exists', { integration_id: existing.id, tenant_id: input.tenant_id, integration_type: type })
    const configuration = applyConfiguration(defaultConfiguration(type), input.configuration)
    // Verified against the external system before anything is stored.
    const accountName = await this.verify(type, creds, configuration, commerceAccount, () => this.log.info({ tenant_id: input.tenant_id, integration_type: type }, 'integration refused: credentials not valid'))
    const rec = await this.integrations.create({
      tenant_id: input.tenant_id,
      integration_type: type,
      account_name: commerceAccount ?? accountName,
      environment: input.integration_type === 'commerce_platform' ? input.environment : null,
      account_key: key,
      configuration,
      credentials: creds,
      webhook_secret: input.configuration?.webhook_secret ?? null,
    })
    const entities = configuredEntities(type, configuration)
    let initialSync: SyncJob | null = null
    if (configuration.initial_sync && entities.length) {
      initialSync = await this.queue.enqueue({ sync_id: `sync_init_${rec.id}`, integration_id: rec.id, tenant_id: rec.tenant_id, kind: 'initial', sync_type: 'full', entities, date_from: null, date_to: null, scheduled_for: rec.created_at, max_attempts: 1 + configuration.retry_attempts })
      this.deps.onSyncQueued?.(initialSync)
    }
    this.log.info({ integration_id: rec.id, tenant_id: rec.tenant_id, integration_type: type }, 'integration created')
    return { integration: rec, initialSync }
  }

  /** Checks credentials with the external system without storing anything; answers the platform's description of the account. */
  async validate(type: IntegrationType, creds: Credentials): Promise<Record<string, unknown>> {
    if (type === 'commerce_platform' && !appKeyMatches(creds.app_key!, creds.account_name!)) throw invalidAppKey(creds.account_name ?? null)
    const v = await validateCredentials(type, creds, {}, this.connector)
    if (v.ok) return v.account
    if (v.kind === 'unavailable') throw new UpstreamUnavailableError('Credential validation failed', { validation_error: v.message, integration_type: type, retry: true })
    throw new InvalidCredentialsError(v.message, { account_name: creds.account_name ?? null, integration_type: type })
  }

  /**
   * Changes is_active, the configuration and the credentials the type lets change; new
   * credentials (or a new marketplace site) are verified first. Answers the changes, secrets
   * masked; nothing is written when there are none.
   */
  async update(scope: TenantScope, id: number, u: UpdateIntegrationInput): Promise<{ integration: IntegrationRecord; changes: Record<string, Change> }> {
    const r = await this.get(scope, id)
    const allowed = UPDATABLE_CREDENTIALS[r.integration_type]
    const credFields = (Object.keys(u) as (keyof typeof u)[]).filter((k) => k !== 'is_active' && k !== 'configuration')
    const errors: FieldProblem[] = [
      ...credFields.filter((k) => !allowed.includes(k)).map((k) => ({ path: k, code: 'not_applicable', message: `a ${r.integration_type} integration has no ${k}; it takes ${allowed.join(', ')}` })),
      ...marketplaceKeyErrors(r.integration_type, u.configuration),
      ...this.webhookErrors(u.configuration?.webhook_url),
    ]
    if (!Object.keys(u).length) errors.push({ path: '', code: 'empty', message: 'send at least one of is_active, configuration or a credential field' })
    if (errors.length) throw new InvalidInputError(errors)

    const oldCreds = await this.readCredentials(r)
    const newCreds: Credentials = { ...oldCreds }
    for (const k of credFields) newCreds[k] = u[k] as string
    const configuration = applyConfiguration(r.configuration, u.configuration)
    const credsChanged = CREDENTIAL_FIELDS[r.integration_type].some((f) => oldCreds[f] !== newCreds[f])
    if (credsChanged || configuration.site_id !== r.configuration.site_id) {
      if (r.integration_type === 'commerce_platform' && !appKeyMatches(newCreds.app_key!, newCreds.account_name!)) throw invalidAppKey(r.account_name)
      await this.verify(r.integration_type, newCreds, configuration, r.account_name)
    }
    const isActive = u.is_active ?? r.is_active
    const changes = diff(
      { is_active: r.is_active, configuration: r.configuration, credentials: oldCreds, hasWebhookSecret: r.has_webhook_secret },
      { is_active: isActive, configuration, credentials: newCreds },
      u.configuration?.webhook_secret,
    )
    if (!Object.keys(changes).length) return { integration: r, changes }
    const updated = await this.integrations.update(r.id, {
      is_active: isActive,
      configuration,
      ...(credsChanged ? { credentials: newCreds, validation_status: 'valid' } : {}),
      ...(u.configuration?.webhook_secret !== undefined ? { webhook_secret: u.configuration.webhook_secret } : {}),
    })
    this.log.info({ integration_id: r.id, tenant_id: r.tenant_id, fields: Object.keys(changes) }, 'integration updated')
    return { integration: updated, changes }
  }

  /** Soft delete: deactivated, `deleted_at` set, the row kept. */
  async remove(scope: TenantScope, id: number): Promise<{ id: number; deleted_at: number }> {
    const r = await this.get(scope, id)
    const at = this.now()
    const out = await this.integrations.update(r.id, { is_active: false, deleted_at: at })
    this.log.info({ integration_id: r.id, tenant_id: r.tenant_id }, 'integration deleted')
    return { id: r.id, deleted_at: out.deleted_at ?? at }
  }

  /** Calls each API the integration uses, timed: connected or degraded; refused credentials and no answer at all are errors. */
  async testConnection(scope: TenantScope, id: number): Promise<ConnectionTestResult> {
    const r = await this.get(scope, id)
    const creds = await this.readCredentials(r)
    const t = await testConnection(r.integration_type, creds, connectorConfig(r.configuration), this.connector)
    if (t.status === 'rejected') throw new InvalidCredentialsError(t.message ?? 'the credentials were refused', { integration_id: r.id, account_name: r.account_name })
    const data = { integration_id: r.id, type: r.integration_type, status: t.status, response_time: t.response_time, endpoints_tested: t.endpoints_tested }
    if (t.status === 'failed') throw new UpstreamUnavailableError('Connection failed', { ...data, validation_error: t.message })
    return { ...t, status: t.status, integration: r }
  }

  /** Queues a manual sync of the entities asked (default: those the configuration turns on). */
  async queueSync(scope: TenantScope, id: number, b: SyncInput): Promise<QueuedSync> {
    const r = await this.get(scope, id)
    const supported = SYNCABLE_ENTITIES[r.integration_type]
    const entities = (b.entities ? supported.filter((e) => b.entities!.includes(e)) : configuredEntities(r.integration_type, r.configuration)) as Entity[]
    const unsupported = (b.entities ?? []).filter((e) => !supported.includes(e))
    if (unsupported.length) {
      const what = supported.length ? `a ${r.integration_type} integration syncs ${supported.join(', ')}` : `a ${r.integration_type} integration is validated, not synced: send no entities`
      throw new InvalidInputError([{ path: 'entities', code: 'not_supported', message: `${unsupported.join(', ')}: ${what}` }])
    }
    if (!r.is_active) throw new ConflictError('Integration is inactive', { integration_id: r.id, solution: 'activate it with PUT {"is_active": true}' })
    const ahead = await this.queue.live(r.id)
    const job = await this.queue.enqueue({
      integration_id: r.id,
      tenant_id: r.tenant_id,
      kind: 'manual',
      sync_type: b.sync_type,
      entities,
      date_from: b.date_from ? Date.parse(`${b.date_from}T00:00:00Z`) : null,
      date_to: b.date_to ? Date.parse(`${b.date_to}T00:00:00Z`) + DAY : null,
      scheduled_for: null,
      max_attempts: 1 + r.configuration.retry_attempts,
    })
    this.deps.onSyncQueued?.(job)
    const stats = (await this.queue.stats([r.id], this.now() - DAY)).get(r.id)
    const perSync = stats?.avg_sync_ms ?? 30_000 * Math.max(1, entities.length)
    this.log.info({ integration_id: r.id, tenant_id: r.tenant_id, sync_id: job.sync_id, entities }, 'sync queued')
    return { job, queuePosition: ahead.length + 1, estimatedMs: perSync * (1 + ahead.length), webhookUrl: r.configuration.webhook_url ?? defaultNotificationUrl(r.id) }
  }

  /** The integrations the scope reaches, their statistics of the last day, and since when each failing one fails. */
  async health(scope: TenantScope): Promise<{ integrations: IntegrationRecord[]; stats: Map<number, IntegrationStats>; failingSince: Map<number, number> }> {
    const integrations = await this.integrations.list(scopedTenant(scope))
    const ids = integrations.map((i) => i.id)
    const [stats, failingSince] = await Promise.all([this.queue.stats(ids, this.now() - DAY), this.queue.failingSince(ids)])
    return { integrations, stats, failingSince }
  }

  // ---- internals ---------------------------------------------------------------------------------

  /** A webhook_url the connectors role would never post to is refused when it is configured. */
  private webhookErrors(url: string | null | undefined): FieldProblem[] {
    const problem = url && !this.deps.allowPrivateWebhooks ? literalDestinationProblem(url) : null
    return problem ? [{ path: 'configuration.webhook_url', code: 'private_destination', message: `${problem} (CDP_CONNECTORS_ALLOW_PRIVATE_WEBHOOKS)` }] : []
  }

  /** The platform's account name when it accepts the credentials; otherwise InvalidCredentialsError or UpstreamUnavailableError. */
  private async verify(type: IntegrationType, creds: Credentials, configuration: IntegrationConfiguration, accountName: string | null, onRejected?: () => void): Promise<string | null> {
    const v = await validateCredentials(type, creds, connectorConfig(configuration), this.connector)
    if (v.ok) return v.accountName
    onRejected?.()
    if (v.kind === 'unavailable') throw new UpstreamUnavailableError('Credential validation failed', { validation_error: v.message, account_name: accountName, integration_type: type, retry: true })
    if (v.code === 'INVALID_APP_KEY') throw invalidAppKey(accountName)
    throw new InvalidCredentialsError(v.message, { account_name: accountName, integration_type: type })
  }

  /** The plain credentials, or UnreadableSecretError when the keyring cannot open them. */
  private async readCredentials(r: IntegrationRecord): Promise<Credentials> {
    try {
      return await this.integrations.credentials(r.id)
    } catch (err) {
      if (!(err instanceof SecretDecryptError)) throw err
      this.log.error({ integration_id: r.id }, 'stored credentials do not decrypt with the configured keyring')
      throw new UnreadableSecretError('Stored credentials cannot be decrypted', { integration_id: r.id, solution: 'configure the key they were encrypted with (CDP_SECRETS_KEYS), or send new credentials' })
    }
  }
}

/**
 * Where a sync's outcome can be read when the integration has no webhook of its own: the
 * integration's detail (its `current_sync` while one runs, its `statistics` with the last outcome),
 * a path of this API. The sync response's `webhook_url` is always a string (the spec types it so).
 */
export const defaultNotificationUrl = (integrationId: number): string => `/api/v2/tenant-integrations/integration/${integrationId}`
