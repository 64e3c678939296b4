/**
 * Tenant integrations (spec "Endpoints › Tenant integrations" 1–9) under
 * /api/v2/tenant-integrations: parses and validates each request, calls the connectors lane's
 * IntegrationService with the caller's tenant scope, and answers in the spec's shapes (views.ts,
 * health.ts). Authentication comes from the app; tenant isolation is the service's once the
 * resource's tenant is known (auth.ts HANDLER_CHECKED_PREFIXES): a tenant key sees and changes
 * its own tenant's integrations only, the admin token all of them. The service's refusals become
 * the common error body in errors.ts. Documented in operations.ts; shapes, statuses and error
 * bodies: docs/integrations.md.
 */
import express, { type ErrorRequestHandler, type Request, type Response, type Router } from 'express'
import { InvalidCredentialsError } from '../../../common/domain-errors.ts'
import { assertTenantAccess } from '../../../common/tenant-scope.ts'
import { seconds } from '../../../pipelines/connectors/errors.ts'
import { IntegrationService, type IntegrationServiceDeps } from '../../../pipelines/connectors/service.ts'
import { INTEGRATION_TYPES, type Credentials, type IntegrationType } from '../../../pipelines/connectors/sources/types.ts'
import { callerScope } from '../auth.ts'
import { sendError } from '../errors.ts'
import { CreateIntegrationBody, credentialsOf, fieldErrors, preCheckCreate, SyncBody, UpdateIntegrationBody, ValidateCommerceBody, type FieldError } from '../../../pipelines/connectors/schemas.ts'
import { detail, listItem, syncRunItem } from './views.ts'
import { fieldErrorsFromZod } from '../../../pipelines/ingest/validation.ts'
import { healthView } from './health.ts'
import { route } from '../routes.ts'
import { BASE, INTEGRATION_OPERATIONS as OPS, SyncHistoryQuery } from './operations.ts'

export { BASE }

/** What the router's own IntegrationService is built from (or pass one, shared with the demo). */
export type IntegrationsDeps = IntegrationServiceDeps

function positiveInt(v: unknown): number | null {
  return typeof v === 'string' && /^\d{1,16}$/.test(v) && Number(v) > 0 && Number.isSafeInteger(Number(v)) ? Number(v) : null
}

export function integrationsRouter(deps: IntegrationsDeps | IntegrationService): Router {
  const integrations = deps instanceof IntegrationService ? deps : new IntegrationService(deps)
  const router = express.Router()

  const invalid = (res: Response, errors: FieldError[]) => sendError(res, 400, 'Invalid request', { errors })
  /** The integration id of the path (`{integrationId}`, or `{id}` where the path is shared with a tenant id), or a 400 already sent. */
  const idOf = (req: Request, res: Response): number | null => {
    const id = positiveInt(req.params.integrationId ?? req.params.id)
    if (id === null) invalid(res, [{ path: 'integrationId', code: 'invalid_id', message: 'must be a positive integer' }])
    return id
  }

  // ---- 9. GET /health (before /:tenantId) --------------------------------------------------------
  route(router, OPS.health, async (req, res) => {
    const h = await integrations.health(callerScope(req))
    res.json({ success: true, data: healthView(h.integrations, h.stats, h.failingSince) })
  })

  // ---- 1. GET /{tenantId} ------------------------------------------------------------------------
  route(router, OPS.list, async (req, res) => {
    const tenantId = positiveInt(req.params.id)
    if (tenantId === null) return invalid(res, [{ path: 'tenantId', code: 'invalid_id', message: 'must be a positive integer' }])
    const { integrations: list, stats } = await integrations.list(callerScope(req), tenantId)
    res.json({ success: true, data: list.map((i) => listItem(i, stats.get(i.id))), count: list.length })
  })

  // ---- 2. GET /integration/{integrationId} ------------------------------------------------------
  route(router, OPS.describe, async (req, res) => {
    const id = idOf(req, res)
    if (id === null) return
    const d = await integrations.describe(callerScope(req), id)
    res.json({ success: true, data: detail(d.integration, d.stats, { tenantName: d.tenantName, credentials: d.credentials, nextScheduledSync: d.nextScheduledSync, live: d.live }) })
  })

  // ---- GET /integration/{integrationId}/syncs (ours: the sync history) ---------------------------
  route(router, OPS.history, async (req, res) => {
    const id = idOf(req, res)
    if (id === null) return
    const q = SyncHistoryQuery.safeParse(req.query)
    if (!q.success) return sendError(res, 400, 'Invalid query parameters', { errors: fieldErrorsFromZod(q.error.issues) })
    const { runs, total } = await integrations.history(callerScope(req), id, q.data)
    res.json({ success: true, data: runs.map(syncRunItem), pagination: { total, limit: q.data.limit, offset: q.data.offset, has_next: q.data.offset + runs.length < total } })
  })

  // ---- 3. POST (create) ----------------------------------------------------------------------------
  route(router, OPS.create, async (req, res) => {
    const body = flattenCredentials(req.body)
    // A tenant key naming another tenant is refused before its body is looked at.
    const tenant = positiveInt(String((body as Record<string, unknown> | null)?.tenant_id ?? ''))
    if (tenant !== null) assertTenantAccess(callerScope(req), tenant)
    const pre = preCheckCreate(body)
    if (pre.length) return invalid(res, pre)
    const parsed = CreateIntegrationBody.safeParse(body)
    if (!parsed.success) return invalid(res, fieldErrors(parsed.error.issues, body))
    const { integration: rec, initialSync: initial } = await integrations.create(callerScope(req), parsed.data)
    res.status(201).json({
      success: true,
      message: 'Integration created successfully',
      data: { id: rec.id, tenant_id: rec.tenant_id, integration_type: rec.integration_type, validation_status: rec.validation_status, is_active: rec.is_active, initial_sync: initial ? { sync_id: initial.sync_id, status: initial.status } : null },
    })
  })

  // ---- 6. POST /validate/{type} (the spec's commerce_platform; the other types too) ----------------------
  route(router, OPS.validate, async (req, res) => {
    const type = req.params.integrationType as IntegrationType
    if (!INTEGRATION_TYPES.includes(type)) return invalid(res, [{ path: 'integrationType', code: 'invalid_value', message: `must be one of ${INTEGRATION_TYPES.join(', ')}` }])
    const body = flattenCredentials(req.body)
    let creds: Credentials
    if (type === 'commerce_platform') {
      const p = ValidateCommerceBody.safeParse(body)
      if (!p.success) return invalid(res, fieldErrors(p.error.issues, body))
      creds = p.data
    } else {
      const p = CreateIntegrationBody.safeParse({ ...(body as object), tenant_id: 1, integration_type: type })
      if (!p.success) return invalid(res, fieldErrors(p.error.issues, body))
      creds = credentialsOf(p.data)
    }
    try {
      res.json({ success: true, message: 'Credentials are valid', account_info: await integrations.validate(type, creds) })
    } catch (err) {
      // This endpoint's refusals have the spec's own shape: {success, message, error: {code, details, ...}}.
      if (!(err instanceof InvalidCredentialsError)) throw err
      if (err.code === 'INVALID_APP_KEY') {
        return void res.status(400).json({ success: false, message: 'Invalid app key', error: { code: 'INVALID_APP_KEY', details: err.reason, account_name: creds.account_name, environment: creds.environment, solution: err.solution } })
      }
      const who = type === 'commerce_platform' ? { environment: creds.environment } : { integration_type: type }
      res.status(400).json({ success: false, message: 'Invalid credentials', error: { code: 'INVALID_CREDENTIALS', details: err.reason, account_name: creds.account_name ?? null, ...who } })
    }
  })

  // ---- 4. PUT /{integrationId} ------------------------------------------------------------------------
  route(router, OPS.update, async (req, res) => {
    const id = idOf(req, res)
    if (id === null) return
    await integrations.get(callerScope(req), id) // 404 and 403 before the body is looked at
    const parsed = UpdateIntegrationBody.safeParse(req.body)
    if (!parsed.success) return invalid(res, fieldErrors(parsed.error.issues, req.body))
    const { integration: r, changes } = await integrations.update(callerScope(req), id, parsed.data)
    res.json({ success: true, message: Object.keys(changes).length ? 'Integration updated successfully' : 'Nothing changed', data: { id: r.id, changes } })
  })

  // ---- 5. DELETE /{integrationId} (soft) ----------------------------------------------------------------
  route(router, OPS.remove, async (req, res) => {
    const id = idOf(req, res)
    if (id === null) return
    const out = await integrations.remove(callerScope(req), id)
    res.json({ success: true, message: 'Integration deleted successfully', data: { id: out.id, deleted_at: new Date(out.deleted_at).toISOString() } })
  })

  // ---- 7. POST /{integrationId}/test ------------------------------------------------------------------
  route(router, OPS.test, async (req, res) => {
    const id = idOf(req, res)
    if (id === null) return
    const t = await integrations.testConnection(callerScope(req), id)
    const data = { integration_id: t.integration.id, type: t.integration.integration_type, status: t.status, response_time: t.response_time, endpoints_tested: t.endpoints_tested }
    res.json({ success: true, message: t.status === 'connected' ? 'Connection successful' : `Connection degraded: ${t.message}`, data })
  })

  // ---- 8. POST /{integrationId}/sync -------------------------------------------------------------------
  route(router, OPS.sync, async (req, res) => {
    const id = idOf(req, res)
    if (id === null) return
    await integrations.get(callerScope(req), id) // 404 and 403 before the body is looked at
    const parsed = SyncBody.safeParse(req.body ?? {})
    if (!parsed.success) return invalid(res, fieldErrors(parsed.error.issues, req.body))
    const q = await integrations.queueSync(callerScope(req), id, parsed.data)
    res.status(202).json({
      success: true,
      message: 'Sync queued',
      data: { sync_id: q.job.sync_id, status: 'queued', estimated_time: seconds(q.estimatedMs), webhook_url: q.webhookUrl, queue_position: q.queuePosition },
    })
  })

  // The spec's INVALID_APP_KEY answer (create, update) carries its solution beside the error; every
  // other refusal of the service takes the common error body (errors.ts errorHandler).
  router.use(((err, _req, res, next) => {
    if (!(err instanceof InvalidCredentialsError && err.code === 'INVALID_APP_KEY')) return next(err)
    res.status(400).json({ success: false, error: err.code, solution: err.solution, details: err.details })
  }) as ErrorRequestHandler)

  return router
}

/** Credentials may also come grouped under `credentials` (the spec puts them beside tenant_id); grouped ones are moved up. */
function flattenCredentials(body: unknown): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body
  const { credentials, ...rest } = body as Record<string, unknown>
  if (!credentials || typeof credentials !== 'object' || Array.isArray(credentials)) return body
  return { ...credentials, ...rest }
}
