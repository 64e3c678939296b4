import express, { type Router } from 'express'
import { z } from 'zod'
import type { Logger } from '../../common/logger.ts'
import type { AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import { deliveryStatusEventSchema, SIGNATURE_HEADER, verifyHubSignature } from '../../pipelines/audience-sync/ads-platform/webhook.ts'
import { secretEquals } from './auth.ts'
import { failure, sendError } from './errors.ts'
import { fieldErrorsFromZod } from '../../pipelines/ingest/validation.ts'
import { json, route, type Operation, type RouteGroup } from './routes.ts'
import { Count, success } from './response-schemas.ts'

/** Providers whose events we take; the path is /webhooks/<provider> (the first; the others are aliases). */
export const WEBHOOK_PROVIDERS = ['social-ads', 'social_ads'] as const

const [path, ...aliases] = WEBHOOK_PROVIDERS.map((p) => `/webhooks/${p}`) as [string, ...string[]]
const MOUNTED = 'Mounted only when CDP_ADS_APP_SECRET and CDP_ADS_WEBHOOK_VERIFY_TOKEN are set (404 otherwise).'

const handshake: Operation = {
  method: 'get',
  path,
  aliases,
  operationId: 'socialAdsWebhookHandshake',
  summary: "The ads platform's subscription handshake",
  description: `Echoes \`hub.challenge\` when \`hub.mode\` is subscribe and \`hub.verify_token\` is CDP_ADS_WEBHOOK_VERIFY_TOKEN. Public: no bearer token. ${MOUNTED}`,
  public: true,
  request: {
    query: z.object({
      'hub.mode': z.literal('subscribe').meta({ description: 'Must be subscribe' }),
      'hub.verify_token': z.string().meta({ description: 'CDP_ADS_WEBHOOK_VERIFY_TOKEN' }),
      'hub.challenge': z.string().meta({ description: 'Echoed back' }),
    }),
  },
  responses: {
    200: { description: 'The challenge, as is', content: { 'text/plain': z.string() } },
    400: failure('Not a subscription request (`hub.mode` is not subscribe, or no `hub.challenge`)'),
    403: failure('`hub.verify_token` is missing or does not match'),
  },
}

const deliveryStatus: Operation = {
  method: 'post',
  path,
  aliases,
  operationId: 'socialAdsWebhookEvent',
  summary: 'Delivery-status events of custom audiences',
  description: `Stores each entry's last \`delivery_status\` change for the audience sync that owns the audience; entries of unknown audiences are counted and ignored, and a change older than the status already stored is counted as stale. Public: no bearer token; the \`X-Hub-Signature-256\` header authenticates the raw body. ${MOUNTED}`,
  public: true,
  request: {
    headers: z.object({ 'X-Hub-Signature-256': z.string().regex(/^sha256=[0-9a-fA-F]{64}$/).meta({ description: 'sha256=<hex HMAC-SHA256 of the raw body, keyed with CDP_ADS_APP_SECRET>' }) }),
    body: { schema: deliveryStatusEventSchema, required: true },
  },
  responses: {
    200: json('`data`: how many audiences got a new status, how many entries named unknown audiences, how many changes were older than the stored status', success({ data: z.strictObject({ updated: Count, unknown_audiences: Count, stale: Count }) })),
    400: failure('The body is not JSON, or not the event shape (`details.errors[]`)'),
    401: failure('Missing or wrong signature'),
    413: failure('Body larger than 1 MB'),
  },
}

export const WEBHOOK_ROUTES: RouteGroup = {
  tag: { name: 'Webhooks', description: 'Events from the platforms (no token needed: they are verified by signature).' },
  operations: [handshake, deliveryStatus],
}

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

  route(router, handshake, (req, res) => {
    const q = req.query as Record<string, string | undefined>
    if (q['hub.mode'] !== 'subscribe' || typeof q['hub.challenge'] !== 'string') return sendError(res, 400, 'Invalid subscription request', 'expected hub.mode=subscribe, hub.verify_token and hub.challenge')
    if (!q['hub.verify_token'] || !secretEquals(q['hub.verify_token'], deps.verifyToken)) return sendError(res, 403, 'Forbidden', 'hub.verify_token does not match')
    res.type('text/plain').send(q['hub.challenge'])
  })

  route(router, deliveryStatus, express.raw({ type: () => true, limit: '1mb' }), async (req, res, next) => {
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
