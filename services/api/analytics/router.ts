import express, { type Router } from 'express'
import type { Store } from '../../../common/store/clickhouse.ts'
import type { Logger } from '../../../common/logger.ts'
import { tenantExists } from '../../../common/store/tenants.ts'
import { fieldErrorsFromZod } from '../../../pipelines/ingest/validation.ts'
import { sendError } from '../errors.ts'
import { ResponseCache, OVERVIEW_MAX_AGE_S } from './cache.ts'
import type { AnalyticsContext } from './endpoint.ts'
import { EXPORT_ROW_LIMIT, sendExport } from './exports.ts'
import { ANALYTICS_ENDPOINTS } from './endpoints.ts'

export interface AnalyticsDeps {
  store: Store
  logger: Logger
  now?: () => number
  cache?: ResponseCache
}

/**
 * The read-only analytics endpoints: each is a module (endpoints.ts lists them) with its query
 * schema and body; this router does what they share. Order: query validation (400 with field
 * errors), tenant known (404), export (format=…) or cached body, Cache-Control on overviews.
 */
export function analyticsRouter(deps: AnalyticsDeps): Router {
  const router = express.Router()
  const ctx = ctxFor(deps)
  for (const ep of ANALYTICS_ENDPOINTS) {
    router.get(ep.path, async (req, res, next) => {
      try {
        const parsed = ep.query.safeParse(req.query)
        if (!parsed.success) return sendError(res, 400, 'Invalid query parameters', { errors: fieldErrorsFromZod(parsed.error.issues) })
        const q = parsed.data
        if (!(await tenantExists(ctx.store, q.tenant_id))) return sendError(res, 404, 'Tenant not found', { tenant_id: q.tenant_id })
        if (q.format) {
          if (!ep.export) return sendError(res, 400, 'Export not available', `${ep.path} has no row-level export; formats apply to endpoints with rows`)
          const n = await ep.export.count(ctx, q)
          if (n > EXPORT_ROW_LIMIT) return sendError(res, 400, 'Export too large', `the export would hold ${n} rows; at most ${EXPORT_ROW_LIMIT} are allowed: narrow it with filters`)
          const name = `${ep.path.split('/').filter(Boolean).at(-1)}-${q.tenant_id}`
          return await sendExport(res, q.format, name, ep.export.columns, await ep.export.rows(ctx, q, EXPORT_ROW_LIMIT))
        }
        const key = `${ep.path}?${JSON.stringify(q)}`
        let body = ep.cacheTtlMs ? ctx.cache.get(q.tenant_id, key) : undefined
        if (body === undefined) {
          body = await ep.body(ctx, q)
          if (ep.cacheTtlMs) ctx.cache.set(q.tenant_id, key, body, ep.cacheTtlMs)
        }
        if (ep.overview) res.set('Cache-Control', `private, max-age=${OVERVIEW_MAX_AGE_S}`)
        res.json(body)
      } catch (err) {
        next(err)
      }
    })
  }
  return router
}

/** The context an endpoint module runs with (the router's, and the tests'). */
export function ctxFor(deps: AnalyticsDeps): AnalyticsContext {
  return { store: deps.store, logger: deps.logger, now: deps.now ?? Date.now, cache: deps.cache ?? new ResponseCache(deps.now) }
}
