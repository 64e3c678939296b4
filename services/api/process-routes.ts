import express, { type Request, type Response, type Router } from 'express'
import { EARLIEST_DATE, ReferenceDateSchema } from '../../common/reference-date.ts'
import { sendError } from './errors.ts'
import type { ProcessingDeps } from '../../pipelines/processing/deps.ts'
import type { JobRow } from '../../pipelines/processing/jobs-table.ts'
import { ProcessingService } from '../../pipelines/processing/service.ts'
import { parseBody, parseTenantId, ProcessBodySchema, ScheduleBodySchema, type FieldError } from '../../pipelines/processing/validation.ts'
import { iso } from '../../common/time.ts'
import { route } from './routes.ts'
import { PROCESS_OPERATIONS as OPS } from './process-operations.ts'

const BASE = '/api/v2/cdp/process'

/**
 * Processing endpoints (spec "Endpoints › Processing" 1–4, plus DELETE .../schedule; documented in
 * process-operations.ts). Every failure leaves as the common error body; see docs/processing.md.
 */
export function processRouter(deps: ProcessingDeps): Router {
  const service = new ProcessingService(deps)
  const router = express.Router()

  /** Tenant id and body checked together (every field error at once), then the tenant must exist. */
  async function tenantOf(req: Request, res: Response, errors: FieldError[] = []): Promise<number | undefined> {
    const t = parseTenantId(req.params.tenantId as string | undefined)
    if (!t.ok) errors.unshift(t.error)
    if (errors.length) return void sendError(res, 400, 'Invalid request', { errors })
    if (!t.ok) return undefined
    if (!(await service.tenantExists(t.value))) return void sendError(res, 404, 'Tenant not found', { tenant_id: t.value })
    return t.value
  }

  const conflict = (res: Response, tenantId: number, blocker: JobRow | undefined) =>
    sendError(res, 409, 'A processing job is already running for this tenant', {
      tenant_id: tenantId,
      job_id: blocker?.job_id ?? null,
      status: blocker?.status ?? null,
      claimed_at: blocker ? iso(blocker.claimed_at) : null,
    })

  route(router, OPS.status, async (req, res) => {
    const tenantId = await tenantOf(req, res)
    if (tenantId === undefined) return
    res.json({ success: true, data: await service.status(tenantId) })
  })

  route(router, OPS.process, async (req, res) => {
    const errors: FieldError[] = []
    // as_of may come in the query as on the analytics endpoints, or in the body.
    const queryAsOf = (req.query as Record<string, unknown>).as_of
    const asOfQuery = queryAsOf === undefined ? undefined : ReferenceDateSchema.safeParse(queryAsOf)
    if (asOfQuery && !asOfQuery.success) errors.push({ path: 'as_of', code: 'invalid_format', message: `expected a date YYYY-MM-DD from ${EARLIEST_DATE} to today` })
    if (asOfQuery?.success && req.body?.as_of !== undefined && req.body.as_of !== asOfQuery.data) {
      errors.push({ path: 'as_of', code: 'conflict', message: 'as_of is given in the query and, differently, in the body' })
    }
    const body = parseBody(ProcessBodySchema, req.body, errors)
    const tenantId = await tenantOf(req, res, errors)
    if (tenantId === undefined || !body) return
    const asOf = body.as_of ?? asOfQuery?.data
    if (asOf !== undefined) {
      // A read-only run as of another date: no job, no lock, no cache; the tenant's rows stay.
      if (!deps.engine.runAsOf) return sendError(res, 400, 'as_of not supported', 'this engine computes only as of the tenant reference date')
      const started = performance.now()
      const { metadata, ...results } = await deps.engine.runAsOf(tenantId, asOf, body.analyses)
      return void res.json({
        success: true,
        message: `Processed ${body.analyses.join(', ')} for tenant ${tenantId} as of ${asOf} (not stored as the tenant's features)`,
        tenant_id: tenantId,
        results,
        total_time: Math.round(performance.now() - started) / 1000,
        metadata,
      })
    }
    const out = await service.process(tenantId, body)
    switch (out.kind) {
      case 'processed': {
        const { metadata, ...results } = out.results
        return void res.json({
          success: true,
          message: `Processed ${body.analyses.join(', ')} for tenant ${tenantId}`,
          tenant_id: tenantId,
          results,
          total_time: out.totalTime,
          metadata,
        })
      }
      case 'cached': {
        const { metadata, ...results } = out.results
        return void res.json({
          success: true,
          message: `Processing results from cache (computed at ${iso(out.run.finishedAt)}); send force: true to recompute`,
          tenant_id: tenantId,
          results,
          total_time: out.run.totalTime,
          metadata,
        })
      }
      case 'conflict':
        return conflict(res, tenantId, out.blocker)
      case 'cancelled':
        return sendError(res, 409, 'Processing cancelled', { tenant_id: tenantId, job_id: out.job.job_id })
      default:
        return sendError(res, 500, 'Processing failed', {
          tenant_id: tenantId,
          job_id: out.job.job_id,
          message: `the run failed; GET ${BASE}/status/${tenantId} shows it, the service logs say why`,
        })
    }
  })

  route(router, OPS.schedule, async (req, res) => {
    const errors: FieldError[] = []
    const body = parseBody(ScheduleBodySchema, req.body, errors)
    const tenantId = await tenantOf(req, res, errors)
    if (tenantId === undefined || !body) return
    const { schedule: s, replaced } = await service.schedule(tenantId, body)
    res.status(201).json({
      success: true,
      message: `Processing scheduled for tenant ${tenantId}${s.recurring ? ` (${s.frequency})` : ''}${replaced.length ? `; replaced schedule ${replaced.join(', ')}` : ''}`,
      data: {
        schedule_id: s.schedule_id,
        tenant_id: tenantId,
        schedule_at: iso(s.schedule_at),
        recurring: s.recurring,
        frequency: s.frequency,
        analyses: s.analyses,
        next_run: iso(s.next_run),
      },
    })
  })

  route(router, OPS.unschedule, async (req, res) => {
    const tenantId = await tenantOf(req, res)
    if (tenantId === undefined) return
    const removed = await service.unschedule(tenantId)
    if (!removed.length) return sendError(res, 404, 'No active schedule', { tenant_id: tenantId })
    res.json({ success: true, message: `Processing schedule removed for tenant ${tenantId}`, data: { tenant_id: tenantId, schedule_ids: removed.map((s) => s.schedule_id) } })
  })

  route(router, OPS.cancel, async (req, res) => {
    const tenantId = await tenantOf(req, res)
    if (tenantId === undefined) return
    const out = await service.cancel(tenantId)
    switch (out.kind) {
      case 'nothing':
        return sendError(res, 404, 'No running or queued job', { tenant_id: tenantId })
      case 'finished':
        return sendError(res, 409, 'The job finished before it could be cancelled', { tenant_id: tenantId, job_id: out.job.job_id, status: out.job.status })
      default:
        return void res.json({
          success: true,
          message: out.kind === 'cancelled' ? `Processing job ${out.job.job_id} cancelled` : `Cancel requested; the replica running job ${out.job.job_id} stops it within a heartbeat`,
          data: { tenant_id: tenantId, job_id: out.job.job_id, status: out.kind },
        })
    }
  })

  return router
}
