import express, { type Request, type Response, type Router } from 'express'
import { z } from 'zod'
import type { Logger } from '../../common/logger.ts'
import { SEGMENTS } from '../../pipelines/features/segments.ts'
import type { AudienceSyncConfig, AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import { REQUIRED_SCOPES, tokenExpired } from '../../pipelines/audience-sync/syncer.ts'
import { AdsApiError, AdsClient } from '../../pipelines/audience-sync/ads-platform/index.ts'
import { fieldErrorsFromZod } from '../../pipelines/ingest/validation.ts'
import { sendError } from './errors.ts'
import { iso } from '../../common/time.ts'

const BASE = '/api/v2/cdp/audience-syncs'
const UNAVAILABLE = 'unavailable'

export interface AudienceSyncRoutesDeps {
  store: AudienceSyncStore
  logger: Logger
  /** When given, a token is checked with /debug_token before a configuration is saved. */
  ads?: { baseUrl: string; version?: string; appAccessToken: string }
  /** Called after a configuration changed (the syncer runs a cycle soon). */
  onChange?: () => void
}

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
 * in a custom audience of which ad account. The token is write-only (stored encrypted, shown
 * masked). docs/audience-sync.md "Managing syncs".
 */
export function audienceSyncRouter(deps: AudienceSyncRoutesDeps): Router {
  const router = express.Router()
  const { store } = deps

  const tenantOf = (req: Request, res: Response): number | undefined => {
    const q = tenantQuery.safeParse(req.query)
    if (!q.success) return void sendError(res, 400, 'Invalid query parameters', { errors: fieldErrorsFromZod(q.error.issues) })
    return q.data.tenant_id
  }

  /**
   * /debug_token: valid, not expired, with the three permissions; null when fine, else why not.
   * 'unavailable' when the platform could not be asked (down, or our application token rejected).
   */
  const tokenProblem = async (accessToken: string): Promise<string | null> => {
    if (!deps.ads) return null
    try {
      const info = await new AdsClient({ ...deps.ads, accessToken, retry: { policy: { maxAttempts: 1, multiplier: 1, minWaitMs: 0, maxWaitMs: 0 } } }).debugToken()
      if (!info.is_valid || tokenExpired(info.expires_at, Date.now())) return 'the access token is invalid or expired'
      const missing = REQUIRED_SCOPES.filter((s) => !info.scopes.includes(s))
      return missing.length ? `the access token lacks ${missing.join(', ')}` : null
    } catch (err) {
      if (err instanceof AdsApiError && (err.code === 190 || err.code === 200)) return 'the access token is invalid or lacks permissions'
      if (err instanceof AdsApiError) {
        deps.logger.error({ err: { name: err.name, code: err.code, status: err.httpStatus } }, '/debug_token failed: check CDP_ADS_APP_ACCESS_TOKEN and the ads platform')
        return UNAVAILABLE
      }
      throw err
    }
  }
  const refuse = (res: Response, problem: string) =>
    problem === UNAVAILABLE
      ? sendError(res, 502, 'Ads platform unavailable', 'the token could not be checked with the ads platform; try again later')
      : sendError(res, 400, 'Invalid credentials', { validation_error: problem })

  const view = async (tenantId: number, configs: AudienceSyncConfig[]) => {
    const ids = configs.map((c) => c.config_id)
    const [statuses, alerts, batches] = ids.length ? await Promise.all([store.statusOf(tenantId, ids), store.alertsOf(tenantId, ids, 10), store.batchSummary(tenantId, ids)]) : [[], [], new Map()]
    return configs.map((c) => {
      const s = statuses.find((x) => x.config_id === c.config_id)
      const b = batches.get(c.config_id)
      return {
        id: c.config_id,
        tenant_id: c.tenant_id,
        name: c.name,
        segment: c.segment,
        ad_account_id: c.ad_account_id,
        access_token: '********',
        status: c.status,
        paused_reason: c.paused_reason,
        blocked_until: iso(c.blocked_until),
        audience: {
          id: c.audience_id,
          approximate_count: s?.approximate_count ?? null,
          delivery_status: s && s.delivery_code !== null ? { code: s.delivery_code, description: s.delivery_description } : null,
          status_source: s?.source ?? null,
          status_updated_at: iso(s?.updated_at),
        },
        last_sync: iso(b?.last_sync),
        batches_done: b?.batches_done ?? 0,
        batches_dead_lettered: b?.batches_dead_lettered ?? 0,
        rejected_rows: b?.rejected_rows ?? 0,
        rejected_batches: b?.rejected_batches ?? [],
        alerts: alerts.filter((a) => a.config_id === c.config_id).map((a) => ({ code: a.code, message: a.message, at: iso(a.created_at) })),
        created_at: iso(c.created_at),
        updated_at: iso(c.updated_at),
      }
    })
  }

  router.get(BASE, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      const data = await view(tenantId, await store.listConfigs(tenantId))
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
      const problem = await tokenProblem(b.data.access_token)
      if (problem) return refuse(res, problem)
      const { access_token, ...rest } = b.data
      const c = await store.createConfig({ ...rest, token: access_token, name: rest.name ?? `CDP ${rest.segment} (tenant ${rest.tenant_id})` })
      deps.logger.info({ tenantId: c.tenant_id, configId: c.config_id, segment: c.segment }, 'audience sync configured')
      deps.onChange?.()
      res.status(201).json({ success: true, message: 'Audience sync created', data: (await view(c.tenant_id, [c]))[0] })
    } catch (err) {
      next(err)
    }
  })

  router.get(`${BASE}/:configId`, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      const c = await store.getConfig(tenantId, String(req.params.configId))
      if (!c) return sendError(res, 404, 'Audience sync not found', { id: req.params.configId, tenant_id: tenantId })
      res.json({ success: true, data: (await view(tenantId, [c]))[0] })
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
      const cur = await store.getConfig(tenantId, String(req.params.configId))
      if (!cur) return sendError(res, 404, 'Audience sync not found', { id: req.params.configId, tenant_id: tenantId })
      if (b.data.access_token) {
        const problem = await tokenProblem(b.data.access_token)
        if (problem) return refuse(res, problem)
      }
      const next = await store.updateConfig(
        tenantId,
        cur.config_id,
        (c) => ({
          ...c,
          name: b.data.name ?? c.name,
          segment: b.data.segment ?? c.segment,
          // Resuming (or a new token) clears the pause and the rate-limit wait.
          ...(b.data.status ? { status: b.data.status, paused_reason: b.data.status === 'active' ? null : 'paused_by_user' } : {}),
          ...(b.data.access_token && !b.data.status ? { status: 'active' as const, paused_reason: null, blocked_until: null } : {}),
        }),
        b.data.access_token,
      )
      deps.onChange?.()
      res.json({ success: true, message: 'Audience sync updated', data: (await view(tenantId, [next!]))[0] })
    } catch (err) {
      next(err)
    }
  })

  router.delete(`${BASE}/:configId`, async (req, res, next) => {
    try {
      const tenantId = tenantOf(req, res)
      if (tenantId === undefined) return
      if (!(await store.deleteConfig(tenantId, String(req.params.configId)))) return sendError(res, 404, 'Audience sync not found', { id: req.params.configId, tenant_id: tenantId })
      res.json({ success: true, message: 'Audience sync deleted; the custom audience stays on the platform', data: { id: req.params.configId, deleted_at: new Date().toISOString() } })
    } catch (err) {
      next(err)
    }
  })

  return router
}
