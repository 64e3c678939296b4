import express, { type Router } from 'express'
import type { Logger } from '../../common/logger.ts'
import type { AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import { deliveryStatusEventSchema, SIGNATURE_HEADER, verifyHubSignature } from '../../pipelines/audience-sync/ads-platform/webhook.ts'
import { secretEquals } from './auth.ts'
import { sendError } from './errors.ts'
import { fieldErrorsFromZod } from '../../pipelines/ingest/validation.ts'

/** Providers whose events we take; the path is /webhooks/<provider>. */
export const WEBHOOK_PROVIDERS = ['social-ads', 'social_ads'] as const

export interface WebhookDeps {
  store: AudienceSyncStore
  logger: Logger
  /** The platform app's secret: the key of X-Hub-Signature-256. */
  appSecret: string
  /** What the subscription handshake must present as hub.verify_token. */
  verifyToken: string
}

/**
 * The ads platform's delivery-status events (spec "Events"). The spec shows no signature, so we
 * take the platform's usual scheme: `X-Hub-Signature-256: sha256=<HMAC-SHA256 of the raw body
 * with the app secret>` (401 when it does not match), and its subscription handshake (GET with
 * hub.mode=subscribe, hub.verify_token, hub.challenge: the challenge is echoed). Public routes:
 * mounted before bearer authentication and the JSON parser (the signature covers the raw bytes).
 */
export function webhooksRouter(deps: WebhookDeps): Router {
  const router = express.Router()
  const paths = WEBHOOK_PROVIDERS.map((p) => `/webhooks/${p}`)

  router.get(paths, (req, res) => {
    const q = req.query as Record<string, string | undefined>
    if (q['hub.mode'] !== 'subscribe' || typeof q['hub.challenge'] !== 'string') return sendError(res, 400, 'Invalid subscription request', 'expected hub.mode=subscribe, hub.verify_token and hub.challenge')
    if (!q['hub.verify_token'] || !secretEquals(q['hub.verify_token'], deps.verifyToken)) return sendError(res, 403, 'Forbidden', 'hub.verify_token does not match')
    res.type('text/plain').send(q['hub.challenge'])
  })

  router.post(paths, express.raw({ type: () => true, limit: '1mb' }), async (req, res, next) => {
    try {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)
      if (!verifyHubSignature(raw, req.header(SIGNATURE_HEADER), deps.appSecret)) {
        deps.logger.warn({ path: req.path }, 'webhook with a missing or wrong signature refused')
        return sendError(res, 401, 'Invalid signature', `${SIGNATURE_HEADER} must be sha256=<HMAC-SHA256 of the body with the app secret>`)
      }
      let json: unknown
      try {
        json = JSON.parse(raw.toString('utf8'))
      } catch {
        return sendError(res, 400, 'Invalid JSON', 'the body is not JSON')
      }
      const ev = deliveryStatusEventSchema.safeParse(json)
      if (!ev.success) return sendError(res, 400, 'Invalid event', { errors: fieldErrorsFromZod(ev.error.issues) })
      let updated = 0
      let unknown = 0
      let stale = 0
      for (const entry of ev.data.entry) {
        const change = [...entry.changes].reverse().find((c) => c.field === 'delivery_status')
        if (!change) continue
        const config = await deps.store.configOfAudience(entry.id)
        if (!config) {
          unknown++
          continue
        }
        const stored = await deps.store.recordStatus({
          tenant_id: config.tenant_id,
          config_id: config.config_id,
          audience_id: entry.id,
          delivery_code: change.value.code,
          delivery_description: change.value.description,
          source: 'webhook',
          status_time: entry.time * 1000,
        })
        if (stored) updated++
        else stale++
      }
      deps.logger.info({ updated, unknown, stale }, 'delivery-status event received')
      res.json({ success: true, data: { updated, unknown_audiences: unknown, stale } })
    } catch (err) {
      next(err)
    }
  })

  return router
}
