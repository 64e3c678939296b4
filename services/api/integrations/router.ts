/**
 * Tenant integrations (spec "Endpoints › Tenant integrations" 1–9) under
 * /api/v2/tenant-integrations. Authentication comes from the app; tenant isolation is checked
 * here once the resource's tenant is known (auth.ts HANDLER_CHECKED_PREFIXES): a tenant key sees
 * and changes its own tenant's integrations only, the admin token all of them.
 * Shapes, statuses and error bodies: docs/integrations.md.
 */
import express, { type Request, type Response, type Router } from 'express'
import type { Logger } from '../../../common/logger.ts'
import { SecretDecryptError, type SecretBox } from '../../../common/secrets.ts'
import type { Store } from '../../../common/store/clickhouse.ts'
import { SyncQueue, type SyncJob } from '../../../pipelines/connectors/queue.ts'
import { nextScheduledSync } from '../../../pipelines/connectors/schedule.ts'
import { seconds } from '../../../pipelines/connectors/errors.ts'
import { testConnection } from '../../../pipelines/connectors/sources/connection-test.ts'
import { customerIdDigits } from '../../../pipelines/connectors/sources/search-ads/client.ts'
import { validateCredentials, type ConnectorDeps, type ValidationResult } from '../../../pipelines/connectors/sources/validate.ts'
import { appKeyMatches, CREDENTIAL_FIELDS, INTEGRATION_TYPES, SYNCABLE_ENTITIES, type Credentials, type Entity, type IntegrationType } from '../../../pipelines/connectors/sources/types.ts'
import { callerTenant, tenantAccessDenied } from '../auth.ts'
import { sendError } from '../errors.ts'
import {
  applyConfiguration,
  configuredEntities,
  CreateIntegrationBody,
  credentialsOf,
  defaultConfiguration,
  fieldErrors,
  marketplaceKeyErrors,
  preCheckCreate,
  SyncBody,
  UPDATABLE_CREDENTIALS,
  UpdateIntegrationBody,
  ValidateCommerceBody,
  type CreateIntegrationInput,
  type FieldError,
} from '../../../pipelines/connectors/schemas.ts'
import { IntegrationStore, type IntegrationRecord } from '../../../pipelines/connectors/store.ts'
import { literalDestinationProblem } from '../../../pipelines/connectors/webhook-guard.ts'
import { detail, diff, listItem, maskCredentials } from './views.ts'
import { healthView } from './health.ts'

import { displayName, TenantSettingsStore } from '../../../common/store/tenant-settings.ts'

export const BASE = '/api/v2/tenant-integrations'

export interface IntegrationsDeps {
  store: Store
  secrets: SecretBox
  /** Base URLs of the external systems (the same the connectors role uses). */
  endpoints: ConnectorDeps['endpoints']
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
   * development). Default false: such a URL is a 400 when configured, as the connectors role
   * would refuse to post to it (CDP_CONNECTORS_ALLOW_PRIVATE_WEBHOOKS).
   */
  allowPrivateWebhooks?: boolean
}

const DAY = 86_400_000

const INVALID_APP_KEY_SOLUTION = 'Use the app key issued by the commerce platform for this account: appkey-{account_name}-{hash}, e.g. appkey-mystore-ABC123.'

function positiveInt(v: unknown): number | null {
  return typeof v === 'string' && /^\d{1,16}$/.test(v) && Number(v) > 0 && Number.isSafeInteger(Number(v)) ? Number(v) : null
}

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

export function integrationsRouter(deps: IntegrationsDeps): Router {
  const now = deps.now ?? Date.now
  const integrations = new IntegrationStore(deps.store, deps.secrets, now)
  const queue = new SyncQueue(deps.store, now)
  const connector: ConnectorDeps = { endpoints: deps.endpoints, http: { fetch: deps.fetch, timeoutMs: deps.timeoutMs ?? 15_000, maxAttempts: 2 }, now }
  // The tenant's name from its settings (PUT /api/v2/cdp/tenants/{id}/settings), else `Tenant {id}`.
  const settings = new TenantSettingsStore(deps.store)
  const tenantName = async (t: number) => (deps.tenantName ? await deps.tenantName(t) : displayName(await settings.get(t)))
  const log = deps.logger.child({ component: 'integrations' })
  const router = express.Router()

  const invalid = (res: Response, errors: FieldError[]) => sendError(res, 400, 'Invalid request', { errors })
  /** A webhook_url the connectors role would never post to is refused when it is configured. */
  const webhookErrors = (url: string | null | undefined): FieldError[] => {
    const problem = url && !deps.allowPrivateWebhooks ? literalDestinationProblem(url) : null
    return problem ? [{ path: 'configuration.webhook_url', code: 'private_destination', message: `${problem} (CDP_CONNECTORS_ALLOW_PRIVATE_WEBHOOKS)` }] : []
  }

  /** The integration named by the path, or an answer already sent (400, 404, 403). */
  async function load(req: Request, res: Response): Promise<IntegrationRecord | null> {
    const id = positiveInt(req.params.integrationId)
    if (id === null) {
      invalid(res, [{ path: 'integrationId', code: 'invalid_id', message: 'must be a positive integer' }])
      return null
    }
    const r = await integrations.get(id)
    if (!r || r.deleted_at !== null) {
      sendError(res, 404, 'Integration not found', { integration_id: id })
      return null
    }
    return tenantAccessDenied(req, res, r.tenant_id) ? null : r
  }

  /** Rejected credentials: 400 with the spec's details; an unreachable platform: 502. Nothing is stored either way. */
  function refuse(res: Response, v: Extract<ValidationResult, { ok: false }>, ctx: { type: IntegrationType; account_name: string | null }): void {
    if (v.kind === 'unavailable') {
      return sendError(res, 502, 'Credential validation failed', { validation_error: v.message, account_name: ctx.account_name, integration_type: ctx.type, retry: true })
    }
    if (v.code === 'INVALID_APP_KEY') return invalidAppKey(res, ctx.account_name)
    sendError(res, 400, 'Invalid credentials', { validation_error: v.message, account_name: ctx.account_name, integration_type: ctx.type })
  }

  /** The plain credentials, or a 500 already sent when the keyring cannot open them. */
  async function readCredentials(res: Response, r: IntegrationRecord): Promise<Credentials | null> {
    try {
      return await integrations.credentials(r.id)
    } catch (err) {
      if (!(err instanceof SecretDecryptError)) throw err
      log.error({ integration_id: r.id }, 'stored credentials do not decrypt with the configured keyring')
      sendError(res, 500, 'Stored credentials cannot be decrypted', { integration_id: r.id, solution: 'configure the key they were encrypted with (CDP_SECRETS_KEYS), or send new credentials' })
      return null
    }
  }

  function invalidAppKey(res: Response, accountName: string | null): void {
    res.status(400).json({ success: false, error: 'INVALID_APP_KEY', solution: INVALID_APP_KEY_SOLUTION, details: { validation_error: 'App key does not match the expected form appkey-{account_name}-{hash}', account_name: accountName, field: 'app_key' } })
  }

  // ---- 9. GET /health (before /:tenantId) --------------------------------------------------------
  router.get(`${BASE}/health`, async (req, res) => {
    const tenant = callerTenant(req)
    const list = await integrations.list(tenant)
    const ids = list.map((i) => i.id)
    const [stats, failing] = await Promise.all([queue.stats(ids, now() - DAY), queue.failingSince(ids)])
    res.json({ success: true, data: healthView(list, stats, failing) })
  })

  // ---- 1. GET /{tenantId} ------------------------------------------------------------------------
  router.get(`${BASE}/:tenantId`, async (req, res) => {
    const tenantId = positiveInt(req.params.tenantId)
    if (tenantId === null) return invalid(res, [{ path: 'tenantId', code: 'invalid_id', message: 'must be a positive integer' }])
    if (tenantAccessDenied(req, res, tenantId)) return
    const list = await integrations.list(tenantId)
    const stats = await queue.stats(list.map((i) => i.id), now() - DAY)
    res.json({ success: true, data: list.map((i) => listItem(i, stats.get(i.id))), count: list.length })
  })

  // ---- 2. GET /integration/{integrationId} ------------------------------------------------------
  router.get(`${BASE}/integration/:integrationId`, async (req, res) => {
    const r = await load(req, res)
    if (!r) return
    const [stats, live, last] = await Promise.all([queue.stats([r.id], now() - DAY), queue.live(r.id), queue.lastScheduled([r.id])])
    let credentials: Record<string, string> | null = null
    try {
      credentials = maskCredentials(r.integration_type, await integrations.credentials(r.id))
    } catch (err) {
      log.warn({ integration_id: r.id, err: (err as Error).name }, 'stored credentials do not decrypt')
    }
    res.json({
      success: true,
      data: detail(r, stats.get(r.id), { tenantName: await tenantName(r.tenant_id), credentials, nextScheduledSync: nextScheduledSync(r, last.get(r.id) ?? null), live }),
    })
  })

  // ---- 3. POST (create) ----------------------------------------------------------------------------
  router.post(BASE, async (req, res) => {
    const body = flattenCredentials(req.body)
    const pre = preCheckCreate(body)
    const tenant = positiveInt(String((body as Record<string, unknown> | null)?.tenant_id ?? ''))
    if (tenant !== null && tenantAccessDenied(req, res, tenant)) return
    if (pre.length) return invalid(res, pre)
    const parsed = CreateIntegrationBody.safeParse(body)
    if (!parsed.success) return invalid(res, fieldErrors(parsed.error.issues, body))
    const input: CreateIntegrationInput = parsed.data
    if (tenantAccessDenied(req, res, input.tenant_id)) return
    const hookErrors = webhookErrors(input.configuration?.webhook_url)
    if (hookErrors.length) return invalid(res, hookErrors)
    const type = input.integration_type
    const creds = credentialsOf(input)
    const commerceAccount = input.integration_type === 'commerce_platform' ? input.account_name : null
    if (input.integration_type === 'commerce_platform' && !appKeyMatches(input.app_key, input.account_name)) return invalidAppKey(res, input.account_name)
    const key = accountKey(type, creds)
    const existing = await integrations.findByAccount(input.tenant_id, type, key)
    if (existing) return sendError(res, 409, 'Integration already exists', { integration_id: existing.id, tenant_id: input.tenant_id, integration_type: type })
    const configuration = applyConfiguration(defaultConfiguration(type), input.configuration)
    // Verified against the external system before anything is stored.
    const v = await validateCredentials(type, creds, { api_version: configuration.api_version, site_id: configuration.site_id ?? undefined }, connector)
    if (!v.ok) {
      log.info({ tenant_id: input.tenant_id, integration_type: type, reason: v.code }, 'integration refused: credentials not valid')
      return refuse(res, v, { type, account_name: commerceAccount })
    }
    const rec = await integrations.create({
      tenant_id: input.tenant_id,
      integration_type: type,
      account_name: commerceAccount ?? v.accountName,
      environment: input.integration_type === 'commerce_platform' ? input.environment : null,
      account_key: key,
      configuration,
      credentials: creds,
      webhook_secret: input.configuration?.webhook_secret ?? null,
    })
    const entities = configuredEntities(type, configuration)
    let initial: SyncJob | null = null
    if (configuration.initial_sync && entities.length) {
      initial = await queue.enqueue({ sync_id: `sync_init_${rec.id}`, integration_id: rec.id, tenant_id: rec.tenant_id, kind: 'initial', sync_type: 'full', entities, date_from: null, date_to: null, scheduled_for: rec.created_at, max_attempts: 1 + configuration.retry_attempts })
      deps.onSyncQueued?.(initial)
    }
    log.info({ integration_id: rec.id, tenant_id: rec.tenant_id, integration_type: type }, 'integration created')
    res.status(201).json({
      success: true,
      message: 'Integration created successfully',
      data: { id: rec.id, tenant_id: rec.tenant_id, integration_type: type, validation_status: rec.validation_status, is_active: rec.is_active, initial_sync: initial ? { sync_id: initial.sync_id, status: initial.status } : null },
    })
  })

  // ---- 6. POST /validate/{type} (the spec's commerce_platform; the other types too) ----------------------
  router.post(`${BASE}/validate/:integrationType`, async (req, res) => {
    const type = req.params.integrationType as IntegrationType
    if (!INTEGRATION_TYPES.includes(type)) return invalid(res, [{ path: 'integrationType', code: 'invalid_value', message: `must be one of ${INTEGRATION_TYPES.join(', ')}` }])
    const body = flattenCredentials(req.body)
    let creds: Credentials
    if (type === 'commerce_platform') {
      const p = ValidateCommerceBody.safeParse(body)
      if (!p.success) return invalid(res, fieldErrors(p.error.issues, body))
      creds = p.data
      if (!appKeyMatches(p.data.app_key, p.data.account_name)) {
        return void res.status(400).json({
          success: false,
          message: 'Invalid app key',
          error: { code: 'INVALID_APP_KEY', details: 'App key does not match the expected form appkey-{account_name}-{hash}', account_name: p.data.account_name, environment: p.data.environment, solution: INVALID_APP_KEY_SOLUTION },
        })
      }
    } else {
      const p = CreateIntegrationBody.safeParse({ ...(body as object), tenant_id: 1, integration_type: type })
      if (!p.success) return invalid(res, fieldErrors(p.error.issues, body))
      creds = credentialsOf(p.data)
    }
    const v = await validateCredentials(type, creds, {}, connector)
    if (v.ok) return void res.json({ success: true, message: 'Credentials are valid', account_info: v.account })
    if (v.kind === 'unavailable') return sendError(res, 502, 'Credential validation failed', { validation_error: v.message, integration_type: type, retry: true })
    res.status(400).json({
      success: false,
      message: 'Invalid credentials',
      error: { code: 'INVALID_CREDENTIALS', details: v.message, account_name: creds.account_name ?? null, ...(type === 'commerce_platform' ? { environment: creds.environment } : { integration_type: type }) },
    })
  })

  // ---- 4. PUT /{integrationId} ------------------------------------------------------------------------
  router.put(`${BASE}/:integrationId`, async (req, res) => {
    const r = await load(req, res)
    if (!r) return
    const parsed = UpdateIntegrationBody.safeParse(req.body)
    if (!parsed.success) return invalid(res, fieldErrors(parsed.error.issues, req.body))
    const u = parsed.data
    const allowed = UPDATABLE_CREDENTIALS[r.integration_type]
    const credFields = (Object.keys(u) as (keyof typeof u)[]).filter((k) => k !== 'is_active' && k !== 'configuration')
    const errors: FieldError[] = [
      ...credFields.filter((k) => !allowed.includes(k)).map((k) => ({ path: k, code: 'not_applicable', message: `a ${r.integration_type} integration has no ${k}; it takes ${allowed.join(', ')}` })),
      ...marketplaceKeyErrors(r.integration_type, u.configuration),
      ...webhookErrors(u.configuration?.webhook_url),
    ]
    if (!Object.keys(u).length) errors.push({ path: '', code: 'empty', message: 'send at least one of is_active, configuration or a credential field' })
    if (errors.length) return invalid(res, errors)

    const oldCreds = await readCredentials(res, r)
    if (!oldCreds) return
    const newCreds: Credentials = { ...oldCreds }
    for (const k of credFields) newCreds[k] = u[k] as string
    const configuration = applyConfiguration(r.configuration, u.configuration)
    const credsChanged = CREDENTIAL_FIELDS[r.integration_type].some((f) => oldCreds[f] !== newCreds[f])
    if (credsChanged || configuration.site_id !== r.configuration.site_id) {
      if (r.integration_type === 'commerce_platform' && !appKeyMatches(newCreds.app_key!, newCreds.account_name!)) return invalidAppKey(res, r.account_name)
      const v = await validateCredentials(r.integration_type, newCreds, { api_version: configuration.api_version, site_id: configuration.site_id ?? undefined }, connector)
      if (!v.ok) return refuse(res, v, { type: r.integration_type, account_name: r.account_name })
    }
    const isActive = u.is_active ?? r.is_active
    const changes = diff(
      { is_active: r.is_active, configuration: r.configuration, credentials: oldCreds, hasWebhookSecret: r.has_webhook_secret },
      { is_active: isActive, configuration, credentials: newCreds },
      u.configuration?.webhook_secret,
    )
    if (Object.keys(changes).length) {
      await integrations.update(r.id, {
        is_active: isActive,
        configuration,
        ...(credsChanged ? { credentials: newCreds, validation_status: 'valid' } : {}),
        ...(u.configuration?.webhook_secret !== undefined ? { webhook_secret: u.configuration.webhook_secret } : {}),
      })
      log.info({ integration_id: r.id, tenant_id: r.tenant_id, fields: Object.keys(changes) }, 'integration updated')
    }
    res.json({ success: true, message: Object.keys(changes).length ? 'Integration updated successfully' : 'Nothing changed', data: { id: r.id, changes } })
  })

  // ---- 5. DELETE /{integrationId} (soft) ----------------------------------------------------------------
  router.delete(`${BASE}/:integrationId`, async (req, res) => {
    const r = await load(req, res)
    if (!r) return
    const at = now()
    const out = await integrations.update(r.id, { is_active: false, deleted_at: at })
    log.info({ integration_id: r.id, tenant_id: r.tenant_id }, 'integration deleted')
    res.json({ success: true, message: 'Integration deleted successfully', data: { id: r.id, deleted_at: new Date(out.deleted_at ?? at).toISOString() } })
  })

  // ---- 7. POST /{integrationId}/test ------------------------------------------------------------------
  router.post(`${BASE}/:integrationId/test`, async (req, res) => {
    const r = await load(req, res)
    if (!r) return
    const creds = await readCredentials(res, r)
    if (!creds) return
    const t = await testConnection(r.integration_type, creds, { api_version: r.configuration.api_version, site_id: r.configuration.site_id ?? undefined }, connector)
    const data = { integration_id: r.id, type: r.integration_type, status: t.status, response_time: t.response_time, endpoints_tested: t.endpoints_tested }
    if (t.status === 'rejected') return sendError(res, 400, 'Invalid credentials', { validation_error: t.message, integration_id: r.id, account_name: r.account_name })
    if (t.status === 'failed') return sendError(res, 502, 'Connection failed', { ...data, validation_error: t.message })
    res.json({ success: true, message: t.status === 'connected' ? 'Connection successful' : `Connection degraded: ${t.message}`, data })
  })

  // ---- 8. POST /{integrationId}/sync -------------------------------------------------------------------
  router.post(`${BASE}/:integrationId/sync`, async (req, res) => {
    const r = await load(req, res)
    if (!r) return
    const parsed = SyncBody.safeParse(req.body ?? {})
    if (!parsed.success) return invalid(res, fieldErrors(parsed.error.issues, req.body))
    const b = parsed.data
    const supported = SYNCABLE_ENTITIES[r.integration_type]
    const entities = (b.entities ? supported.filter((e) => b.entities!.includes(e)) : configuredEntities(r.integration_type, r.configuration)) as Entity[]
    const unsupported = (b.entities ?? []).filter((e) => !supported.includes(e))
    if (unsupported.length) {
      const what = supported.length ? `a ${r.integration_type} integration syncs ${supported.join(', ')}` : `a ${r.integration_type} integration is validated, not synced: send no entities`
      return invalid(res, [{ path: 'entities', code: 'not_supported', message: `${unsupported.join(', ')}: ${what}` }])
    }
    if (!r.is_active) return sendError(res, 409, 'Integration is inactive', { integration_id: r.id, solution: 'activate it with PUT {"is_active": true}' })
    const ahead = await queue.live(r.id)
    const job = await queue.enqueue({
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
    deps.onSyncQueued?.(job)
    const stats = (await queue.stats([r.id], now() - DAY)).get(r.id)
    const perSync = stats?.avg_sync_ms ?? 30_000 * Math.max(1, entities.length)
    log.info({ integration_id: r.id, tenant_id: r.tenant_id, sync_id: job.sync_id, entities }, 'sync queued')
    res.status(202).json({
      success: true,
      message: 'Sync queued',
      data: { sync_id: job.sync_id, status: 'queued', estimated_time: seconds(perSync * (1 + ahead.length)), webhook_url: r.configuration.webhook_url, queue_position: ahead.length + 1 },
    })
  })

  return router
}

/** Credentials may also come grouped under `credentials` (the spec puts them beside tenant_id); grouped ones are moved up. */
function flattenCredentials(body: unknown): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body
  const { credentials, ...rest } = body as Record<string, unknown>
  if (!credentials || typeof credentials !== 'object' || Array.isArray(credentials)) return body
  return { ...credentials, ...rest }
}
