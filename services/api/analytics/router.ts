import express, { type Router } from 'express'
import type { Store } from '../../../common/store/clickhouse.ts'
import type { Logger } from '../../../common/logger.ts'
import { tenantExists } from '../../../common/store/tenants.ts'
import { fieldErrorsFromZod } from '../../../pipelines/ingest/validation.ts'
import { sendError } from '../errors.ts'
import { ResponseCache, OVERVIEW_MAX_AGE_S } from './cache.ts'
import { NO_CONTENT, type AnalyticsContext } from './endpoint.ts'
import { asOfSummary, type SummarySource } from './summary.ts'
import { customerScope } from './customers.ts'
import { EXPORT_ROW_LIMIT, sendExport } from './exports.ts'
import { ANALYTICS_ENDPOINTS } from './endpoints.ts'
import { asOfStore, type AsOfSnapshots, ReferenceSource } from './reference.ts'
import { referenceMetadata } from '../../../common/reference-date.ts'
import { lruCache } from '../../../common/lru.ts'
import { route } from '../routes.ts'
import { ANALYTICS_OPERATIONS } from './operations.ts'

export interface AnalyticsDeps {
  store: Store
  logger: Logger
  now?: () => number
  cache?: ResponseCache
  summaries?: SummarySource
  /** The tenants' reference dates (default: read from the tenant settings). */
  references?: ReferenceSource
  /** Feature rows of another date for `as_of` requests; without it, `as_of` is refused (400). */
  snapshots?: AsOfSnapshots
}

/**
 * The read-only analytics endpoints: each is a module (endpoints.ts lists them) with its query
 * schema, body and answer's schema (documented by operations.ts); this router does what they
 * share. Order: query validation (400 with field errors), tenant known (404), export (format=…)
 * or cached body, Cache-Control on overviews.
 */
export function analyticsRouter(deps: AnalyticsDeps): Router {
  const router = express.Router()
  const ctx = ctxFor(deps)
  const references = deps.references ?? new ReferenceSource(deps.store, deps.now)
  // A tenant, once known, stays known (its rows are never deleted but by a replay): remembered for a minute.
  const knownTenants = lruCache<number, true>({ max: 10_000, ttlMs: 60_000 })
  const known = async (tenantId: number) => {
    if (knownTenants.get(tenantId)) return true
    if (!(await tenantExists(ctx.store, tenantId))) return false
    knownTenants.set(tenantId, true)
    return true
  }
  for (const ep of ANALYTICS_ENDPOINTS) {
    route(router, ANALYTICS_OPERATIONS.get(ep.path)!, async (req, res, next) => {
      try {
        // Said apart from the other unknown options: the endpoint has no rows to export.
        if (!ep.export && 'format' in req.query) return sendError(res, 400, 'Export not available', `${ep.path} has no row-level export; formats apply to endpoints with rows`)
        const parsed = ep.query.safeParse(req.query)
        if (!parsed.success) {
          const errors = fieldErrorsFromZod(parsed.error.issues)
          const special = ep.filterErrorStatus
          const status = special && errors.every((e) => special.fields.includes(e.path)) ? special.status : 400
          return sendError(res, status, status === 422 ? 'Invalid filter value' : 'Invalid query parameters', { errors })
        }
        const q = parsed.data
        if (!(await known(q.tenant_id))) return sendError(res, ep.unknownTenantStatus ?? 404, 'Tenant not found', { tenant_id: q.tenant_id })
        // The tenant's reference date ("today" for recency, churn and the periods), or the request's as_of.
        const ref = await references.reference(q.tenant_id, q.as_of)
        let rctx: AnalyticsContext = { ...ctx, now: () => ref.ms }
        if (q.as_of) {
          if (!deps.snapshots) return sendError(res, 400, 'as_of not available', 'this service answers only as of the tenant reference date')
          await deps.snapshots.ensure(q.tenant_id, q.as_of)
          rctx = { ...rctx, store: asOfStore(ctx.store, q.as_of) }
        } else if (!customerScope(q, ref.ms).filtered) {
          // Unfiltered requests are answered as of the tenant summary (its reference); filtered ones run live.
          rctx = asOfSummary(rctx, q.tenant_id)
        }
        const metadata = referenceMetadata({ ...ref, ms: rctx.now() })
        res.set('X-Reference-Date', metadata.reference_date)
        if (q.format && ep.export) {
          const n = await ep.export.count(rctx, q)
          if (n > EXPORT_ROW_LIMIT) return sendError(res, 400, 'Export too large', `the export would hold ${n} rows; at most ${EXPORT_ROW_LIMIT} are allowed: narrow it with filters`)
          const name = `${ep.path.split('/').filter(Boolean).at(-1)}-${q.tenant_id}`
          return await sendExport(res, q.format, name, ep.export.columns, await ep.export.rows(rctx, q, EXPORT_ROW_LIMIT))
        }
        const key = `${ep.path}?${JSON.stringify(q)}`
        let body = ep.cacheTtlMs ? ctx.cache.get(q.tenant_id, key) : undefined
        if (body === undefined) {
          const epoch = ctx.cache.epoch(q.tenant_id)
          body = await ep.body(rctx, q)
          if (ep.cacheTtlMs) ctx.cache.set(q.tenant_id, key, body, ep.cacheTtlMs, epoch)
        }
        if (ep.overview) res.set('Cache-Control', `private, max-age=${OVERVIEW_MAX_AGE_S}`)
        if (body === NO_CONTENT) return void res.status(204).end()
        res.json({ ...(body as object), metadata: { ...((body as { metadata?: object }).metadata ?? {}), ...metadata } })
      } catch (err) {
        next(err)
      }
    })
  }
  return router
}

/** The context an endpoint module runs with (the router's, and the tests'). */
export function ctxFor(deps: AnalyticsDeps): AnalyticsContext {
  return { store: deps.store, logger: deps.logger, now: deps.now ?? Date.now, cache: deps.cache ?? new ResponseCache(deps.now), summaries: deps.summaries }
}
