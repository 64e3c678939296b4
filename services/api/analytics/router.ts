import express, { type Router } from 'express'
import type { Store } from '../../../common/store/clickhouse.ts'
import type { Logger } from '../../../common/logger.ts'
import { tenantExists } from '../../../common/store/tenants.ts'
import { fieldErrorsFromZod } from '../../../pipelines/ingest/validation.ts'
import { sendError } from '../errors.ts'
import { ResponseCache, OVERVIEW_MAX_AGE_S } from './cache.ts'
import { isBodyExport, NO_CONTENT, type AnalyticsContext, type AnalyticsEndpoint, type ExportTable } from './endpoint.ts'
import { asOfSummary, type SummarySource } from './summary.ts'
import { customerScope } from './customers.ts'
import { EXPORT_ROW_LIMIT, exportName, sendTables } from './exports.ts'
import { ANALYTICS_ENDPOINTS } from './endpoints.ts'
import { asOfStore, type AsOfSnapshots, ReferenceSource } from './reference.ts'
import { referenceMetadata } from '../../../common/reference-date.ts'
import { lruCache } from '../../../common/lru.ts'
import { route } from '../routes.ts'
import type { CommonOptions } from './options.ts'
import { ANALYTICS_OPERATIONS } from './operations.ts'
import type { BodyRunner } from './body-workers.ts'

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
  /** Most rows an export may hold (default EXPORT_ROW_LIMIT, the spec's). */
  exportRowLimit?: number
  /** Worker threads that compute the bodies answered from a tenant summary (body-workers.ts); without them the main thread does. */
  workers?: BodyRunner
}

/**
 * The read-only analytics endpoints: each is a module (endpoints.ts lists them) with its query
 * schema, body and answer's schema (documented by operations.ts); this router does what they
 * share. Order: query validation (400 with field errors), tenant known (404), then with `format`
 * the export (its rows counted, 400 beyond the limit, then streamed; a body export made from the
 * cached body), else the cached body, Cache-Control on overviews.
 */
export function analyticsRouter(deps: AnalyticsDeps): Router {
  const router = express.Router()
  const ctx = ctxFor(deps)
  const references = deps.references ?? new ReferenceSource(deps.store, deps.now)
  const exportLimit = deps.exportRowLimit ?? EXPORT_ROW_LIMIT
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
        } else if (!customerScope(q, ref.ms).filtered || deps.summaries?.columns?.(q.tenant_id)) {
          // Unfiltered requests are answered as of the tenant summary (its reference), and so are
          // filtered ones while it holds the customer columns they are selected from; else live.
          rctx = asOfSummary(rctx, q.tenant_id)
        }
        // A summary with columns: a worker thread computes the body (it hands back what needs ClickHouse).
        const runner = !q.as_of && deps.summaries?.columns?.(q.tenant_id) ? deps.workers : undefined
        const metadata = referenceMetadata({ ...ref, ms: rctx.now() })
        res.set('X-Reference-Date', metadata.reference_date)
        if (q.format) {
          const file = await exportFile(ep, rctx, q, exportLimit, runner)
          if (file === NO_CONTENT) return void res.status(204).end()
          if (file.rows > exportLimit) return sendError(res, 400, 'Export too large', `the export would hold ${file.rows} rows; at most ${exportLimit} are allowed: narrow it with filters`)
          return await sendTables(res, q.format, `${exportName(ep.path)}-${q.tenant_id}`, file.tables, isBodyExport(ep.export) ? ep.export.tableColumn : undefined)
        }
        const { body } = await answer(ep, rctx, q, runner)
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

/** A body and the clock it was computed as of (`rctx.now()`), as the response cache keeps them. */
interface Answer {
  body: unknown
  at: number
}

/** The endpoint's body for a request, from the response cache when it holds it (the same for the JSON answer and a body export). */
async function answer(ep: AnalyticsEndpoint, rctx: AnalyticsContext, q: CommonOptions, runner?: BodyRunner): Promise<Answer> {
  const { format: _file, ...asked } = q
  const key = `${ep.path}?${JSON.stringify(asked)}`
  const hit = ep.cacheTtlMs ? rctx.cache.get<Answer>(q.tenant_id, key) : undefined
  if (hit) return hit
  const epoch = rctx.cache.epoch(q.tenant_id)
  const at = rctx.now()
  const ran = runner ? await runner.body(ep, asked, at) : null
  const fresh = { body: ran ? ran.body : await ep.body(rctx, q), at }
  if (ep.cacheTtlMs) rctx.cache.set(q.tenant_id, key, fresh, ep.cacheTtlMs, epoch)
  return fresh
}

/**
 * What a request's export holds and how many rows: a rows export is counted first and read only
 * within the limit; a body export is made from the body (NO_CONTENT when the body is).
 */
async function exportFile(ep: AnalyticsEndpoint, rctx: AnalyticsContext, q: CommonOptions, limit: number, runner?: BodyRunner): Promise<{ rows: number; tables: ExportTable[] } | typeof NO_CONTENT> {
  const x = ep.export
  if (!isBodyExport(x)) {
    const rows = await x.count(rctx, q)
    return { rows, tables: rows > limit ? [] : [{ name: exportName(ep.path), columns: x.columns, rows: await x.rows(rctx, q, limit) }] }
  }
  const { body, at } = await answer(ep, rctx, q, runner)
  if (body === NO_CONTENT) return NO_CONTENT
  const tables = x.fromBody(body, q, at)
  return { rows: tables.reduce((n, t) => n + t.rows.length, 0), tables }
}

/** The context an endpoint module runs with (the router's, and the tests'). */
export function ctxFor(deps: AnalyticsDeps): AnalyticsContext {
  return { store: deps.store, logger: deps.logger, now: deps.now ?? Date.now, cache: deps.cache ?? new ResponseCache(deps.now), summaries: deps.summaries }
}
