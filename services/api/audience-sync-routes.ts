import express, { type Request, type Response, type Router } from 'express'
import { AudienceSyncService, type AudienceSyncServiceDeps } from '../../pipelines/audience-sync/service.ts'
import { fieldErrorsFromZod } from '../../pipelines/ingest/validation.ts'
import { callerScope } from './auth.ts'
import { sendError } from './errors.ts'
import { audienceSyncView } from './audience-sync-views.ts'
import { route } from './routes.ts'
import { AUDIENCE_SYNC_OPERATIONS as OPS, CreateBody, tenantQuery, UpdateBody } from './audience-sync-operations.ts'

/** What the router's own AudienceSyncService is built from (or pass one, shared with the demo). */
export type AudienceSyncRoutesDeps = AudienceSyncServiceDeps

/**
 * Audience-sync configurations (ours; the spec has none): which RFM segment of a tenant is kept
 * in a custom audience of which ad account. Parses and validates each request and calls the
 * audience-sync lane's AudienceSyncService; its refusals become the common error body
 * (errors.ts). The token is write-only (stored encrypted, shown masked). Documented in
 * audience-sync-operations.ts; docs/audience-sync.md "Managing syncs".
 */
export function audienceSyncRouter(deps: AudienceSyncRoutesDeps | AudienceSyncService): Router {
  const router = express.Router()
  const syncs = deps instanceof AudienceSyncService ? deps : new AudienceSyncService(deps)

  const tenantOf = (req: Request, res: Response): number | undefined => {
    const q = tenantQuery.safeParse(req.query)
    if (!q.success) return void sendError(res, 400, 'Invalid query parameters', { errors: fieldErrorsFromZod(q.error.issues) })
    return q.data.tenant_id
  }

  route(router, OPS.list, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      const data = (await syncs.list(callerScope(req), tenantId)).map(audienceSyncView)
      res.json({ success: true, data, count: data.length })
    } catch (err) {
      next(err)
    }
  })

  route(router, OPS.create, async (req, res, next) => {
    try {
      const b = CreateBody.safeParse(req.body)
      if (!b.success) return sendError(res, 400, 'Invalid request', { errors: fieldErrorsFromZod(b.error.issues) })
      const q = req.query.tenant_id
      if (q !== undefined && String(q) !== String(b.data.tenant_id)) return sendError(res, 400, 'Invalid request', { errors: [{ path: 'tenant_id', code: 'tenant_mismatch', message: 'the query and the body name different tenants' }] })
      const created = await syncs.create(callerScope(req), b.data)
      res.status(201).json({ success: true, message: 'Audience sync created', data: audienceSyncView(created) })
    } catch (err) {
      next(err)
    }
  })

  route(router, OPS.get, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      res.json({ success: true, data: audienceSyncView(await syncs.get(callerScope(req), tenantId, String(req.params.id))) })
    } catch (err) {
      next(err)
    }
  })

  route(router, OPS.update, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      const b = UpdateBody.safeParse(req.body)
      if (!b.success) return sendError(res, 400, 'Invalid request', { errors: fieldErrorsFromZod(b.error.issues) })
      const updated = await syncs.update(callerScope(req), tenantId, String(req.params.id), b.data)
      res.json({ success: true, message: 'Audience sync updated', data: audienceSyncView(updated) })
    } catch (err) {
      next(err)
    }
  })

  route(router, OPS.remove, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      const out = await syncs.remove(callerScope(req), tenantId, String(req.params.id))
      res.json({ success: true, message: 'Audience sync deleted; the custom audience stays on the platform', data: { id: out.id, deleted_at: new Date(out.deleted_at).toISOString() } })
    } catch (err) {
      next(err)
    }
  })

  return router
}
