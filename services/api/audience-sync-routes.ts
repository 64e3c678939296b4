import express, { type Request, type Response, type Router } from 'express'
import { z } from 'zod'
import { SEGMENTS } from '../../pipelines/features/segments.ts'
import { AudienceSyncService, type AudienceSyncServiceDeps } from '../../pipelines/audience-sync/service.ts'
import { fieldErrorsFromZod } from '../../pipelines/ingest/validation.ts'
import { callerScope } from './auth.ts'
import { sendError } from './errors.ts'
import { audienceSyncView } from './audience-sync-views.ts'

const BASE = '/api/v2/cdp/audience-syncs'

/** What the router's own AudienceSyncService is built from (or pass one, shared with the demo). */
export type AudienceSyncRoutesDeps = AudienceSyncServiceDeps

export const tenantQuery = z.object({ tenant_id: z.coerce.number().int().positive() })
const token = z.string().trim().min(8).max(4096)
export const CreateBody = z
  .object({
    tenant_id: z.coerce.number().int().positive(),
    name: z.string().trim().min(1).max(200).optional(),
    segment: z.enum(SEGMENTS),
    ad_account_id: z.string().regex(/^act_\d{1,30}$/, 'must be act_<number>'),
    access_token: token,
  })
  .strict()
export const UpdateBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    segment: z.enum(SEGMENTS).optional(),
    access_token: token.optional(),
    status: z.enum(['active', 'paused']).optional(),
  })
  .strict()

/**
 * Audience-sync configurations (ours; the spec has none): which RFM segment of a tenant is kept
 * in a custom audience of which ad account. Parses and validates each request and calls the
 * audience-sync lane's AudienceSyncService; its refusals become the common error body
 * (errors.ts). The token is write-only (stored encrypted, shown masked).
 * docs/audience-sync.md "Managing syncs".
 */
export function audienceSyncRouter(deps: AudienceSyncRoutesDeps | AudienceSyncService): Router {
  const router = express.Router()
  const syncs = deps instanceof AudienceSyncService ? deps : new AudienceSyncService(deps)

  const tenantOf = (req: Request, res: Response): number | undefined => {
    const q = tenantQuery.safeParse(req.query)
    if (!q.success) return void sendError(res, 400, 'Invalid query parameters', { errors: fieldErrorsFromZod(q.error.issues) })
    return q.data.tenant_id
  }

  router.get(BASE, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      const data = (await syncs.list(callerScope(req), tenantId)).map(audienceSyncView)
      res.json({ success: true, data, count: data.length })
    } catch (err) {
      next(err)
    }
  })

  router.post(BASE, async (req, res, next) => {
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

  router.get(`${BASE}/:configId`, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      res.json({ success: true, data: audienceSyncView(await syncs.get(callerScope(req), tenantId, String(req.params.configId))) })
    } catch (err) {
      next(err)
    }
  })

  router.put(`${BASE}/:configId`, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      const b = UpdateBody.safeParse(req.body)
      if (!b.success) return sendError(res, 400, 'Invalid request', { errors: fieldErrorsFromZod(b.error.issues) })
      const updated = await syncs.update(callerScope(req), tenantId, String(req.params.configId), b.data)
      res.json({ success: true, message: 'Audience sync updated', data: audienceSyncView(updated) })
    } catch (err) {
      next(err)
    }
  })

  router.delete(`${BASE}/:configId`, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      const out = await syncs.remove(callerScope(req), tenantId, String(req.params.configId))
      res.json({ success: true, message: 'Audience sync deleted; the custom audience stays on the platform', data: { id: out.id, deleted_at: new Date(out.deleted_at).toISOString() } })
    } catch (err) {
      next(err)
    }
  })

  return router
}
