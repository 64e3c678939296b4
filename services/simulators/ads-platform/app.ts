/**
 * The ads platform simulator as an Express app: the spec's endpoints under `/{version}/`, admin
 * endpoints under `/_sim/` for tests and demos. See README.md for the behaviour it stands for.
 */
import crypto from 'node:crypto'
import express, { type ErrorRequestHandler, type Express, type Request, type Response } from 'express'
import { addLatency } from '../shared/faults.ts'
import { createSimulatorApp } from '../shared/http.ts'
import { appendEntry, durationSince, type RequestClock } from '../shared/request-log.ts'
import { GraphError, invalidParameter, unknownObject } from './graph-error.ts'
import type { Faults, LimitedOperation, RequestLogEntry, SeedAdAccount, SeedToken } from './model.ts'
import { AdsPlatformState } from './state.ts'

export interface AdsPlatformSimulatorOptions {
  /** Version path segment; default 'v18.0'. */
  version?: string
  appId?: string
  appName?: string
  /** Signs webhook events; with appId forms the application access token `<appId>|<appSecret>`. */
  appSecret?: string
  /** Tokens to create (a bare string gets the three scopes and a 60-day expiry). */
  tokens?: (SeedToken | string)[]
  /** Ad accounts to create; default one, act_1000000001. */
  adAccounts?: (SeedAdAccount | string)[]
  /** Calls per window per token; default the spec's 25 / 200 / 200. */
  limits?: Partial<Record<LimitedOperation, number>>
  /** Default one hour. */
  windowMs?: number
  /** Rows per upload; default 10,000. */
  maxRows?: number
  /** Samples per column in invalid_entry_samples; default 100. */
  maxInvalidSamples?: number
  faults?: Partial<Faults>
  webhookUrl?: string | null
  /** What the subscription handshake sends as hub.verify_token; default 'sim-verify-token'. */
  webhookVerifyToken?: string
  /** Send a delivery-status event when an upload changes an audience's status; default true. */
  autoWebhook?: boolean
  /** Clock (epoch ms); injectable for limit and expiry tests. */
  now?: () => number
  /** Draws the random faults; default Math.random. */
  random?: () => number
  /** Called with each request log entry as it is recorded. */
  onRequest?: (entry: RequestLogEntry) => void
}

export const DEFAULTS = {
  version: 'v18.0',
  appId: '100000000000001',
  appName: 'CDP audience sync (simulated)',
  appSecret: 'sim-app-secret',
  adAccount: 'act_1000000001',
  verifyToken: 'sim-verify-token',
} as const

const AD_ACCOUNT_FIELDS = ['id', 'name', 'account_status', 'currency', 'timezone_name', 'business'] as const
const AUDIENCE_FIELDS = ['id', 'name', 'subtype', 'description', 'customer_file_source', 'approximate_count', 'delivery_status', 'time_created', 'time_updated'] as const

interface Locals extends RequestClock {
  rows: number | null
  applied: boolean
  bodyDigest: string | null
}

export function createAdsPlatformSimulator(options: AdsPlatformSimulatorOptions = {}): { app: Express; state: AdsPlatformState } {
  const now = options.now ?? Date.now
  const state = new AdsPlatformState(
    {
      appId: options.appId ?? DEFAULTS.appId,
      appName: options.appName ?? DEFAULTS.appName,
      appSecret: options.appSecret ?? DEFAULTS.appSecret,
      limits: { create_audience: 25, upload_users: 200, read_audience: 200, ...options.limits },
      windowMs: options.windowMs ?? 3_600_000,
      maxRows: options.maxRows ?? 10_000,
      maxInvalidSamples: options.maxInvalidSamples ?? 100,
      now,
      random: options.random ?? Math.random,
    },
    { url: options.webhookUrl ?? null, verifyToken: options.webhookVerifyToken ?? DEFAULTS.verifyToken, auto: options.autoWebhook ?? true },
  )
  for (const a of options.adAccounts ?? [DEFAULTS.adAccount]) state.addAdAccount(typeof a === 'string' ? { id: a } : a)
  for (const t of options.tokens ?? []) state.addToken(typeof t === 'string' ? { token: t } : t)
  if (options.faults) state.setFaults(options.faults)

  const version = options.version ?? DEFAULTS.version
  const app = createSimulatorApp()
  app.use(`/${version}`, apiRouter(state, options.onRequest))
  app.use('/_sim', adminRouter(state))
  app.use((req, res) => {
    res.status(404).json(invalidParameter(`Unknown path components: ${req.path} (the API is under /${version}/)`).body())
  })
  return { app, state }
}

function locals(res: Response): Locals {
  return res.locals as Locals
}

/** Records the request in the log, then answers. Recording before sending: a test that got the answer sees the entry. */
function reply(state: AdsPlatformState, onRequest: AdsPlatformSimulatorOptions['onRequest'], req: Request, res: Response, status: number, body: unknown, fault: 429 | 500 | null = null): void {
  const l = locals(res)
  const errorCode = status >= 400 ? ((body as { error?: { code?: number } })?.error?.code ?? null) : null
  appendEntry<RequestLogEntry>(state.requestLog, onRequest, {
    time: l.time,
    method: req.method,
    path: req.path,
    status,
    errorCode,
    bodyDigest: l.bodyDigest ?? null,
    rows: l.rows ?? null,
    applied: status < 400 && (l.applied ?? false),
    fault,
    durationMs: durationSince(l.t0),
  })
  res.status(status).json(body)
}

function bearer(req: Request): string | null {
  const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')
  if (m) return m[1]!
  return typeof req.query.access_token === 'string' ? req.query.access_token : null
}

/** The requested fields (id always), or error 100 for one the node does not have. */
function pick(node: Record<string, unknown>, fieldsParam: unknown, allowed: readonly string[], nodeType: string): Record<string, unknown> {
  const requested = typeof fieldsParam === 'string' && fieldsParam.trim() ? fieldsParam.split(',').map((f) => f.trim()).filter(Boolean) : ['id']
  const out: Record<string, unknown> = { id: node.id }
  for (const f of requested) {
    if (!allowed.includes(f)) throw invalidParameter(`Tried accessing nonexisting field (${f}) on node type (${nodeType})`)
    out[f] = node[f]
  }
  return out
}

function apiRouter(state: AdsPlatformState, onRequest: AdsPlatformSimulatorOptions['onRequest']): express.Router {
  const api = express.Router()
  const send = (req: Request, res: Response, status: number, body: unknown, fault: 429 | 500 | null = null) => reply(state, onRequest, req, res, status, body, fault)

  api.use((_req, res, next) => {
    Object.assign(res.locals, { time: state.opts.now(), t0: performance.now(), rows: null, applied: false, bodyDigest: null } satisfies Locals)
    next()
  })
  // The body is read before faults are drawn, so a faulted attempt is logged with its body digest too.
  api.use(
    express.json({
      limit: '50mb',
      verify: (_req, res, buf) => {
        ;(res as unknown as Response).locals.bodyDigest = crypto.createHash('sha256').update(buf).digest('hex')
      },
    }),
  )
  api.use(async (req, res, next) => {
    await addLatency(state.faults)
    const fault = state.nextFault()
    if (fault === 429) return send(req, res, 429, new GraphError(429, 2, 'Simulated fault: too many requests, retry later', 'SimulatedFault').body(), 429)
    if (fault === 500) return send(req, res, 500, new GraphError(500, 1, 'Simulated fault: an unexpected error has occurred, retry later', 'SimulatedFault').body(), 500)
    next()
  })

  api.get('/debug_token', (req, res) => {
    const appToken = typeof req.query.access_token === 'string' ? req.query.access_token : bearer(req)
    const input = typeof req.query.input_token === 'string' ? req.query.input_token : null
    send(req, res, 200, state.debugToken(appToken, input))
  })

  api.get('/me/adaccounts', (req, res) => {
    const t = state.authenticate(bearer(req))
    state.requireScope(t, 'business_management', 'access ad accounts')
    const data = state.adAccountsOf(t).map((a) => pick(a, req.query.fields, AD_ACCOUNT_FIELDS, 'AdAccount'))
    send(req, res, 200, { data })
  })

  api.get('/:id', (req, res) => {
    const id = req.params.id!
    const t = state.authenticate(bearer(req))
    if (id.startsWith('act_')) {
      state.requireScope(t, 'business_management', 'access ad accounts')
      return send(req, res, 200, pick(state.adAccount(t, id), req.query.fields, AD_ACCOUNT_FIELDS, 'AdAccount'))
    }
    if (!/^\d+$/.test(id)) throw unknownObject(id, 'GET')
    state.requireScope(t, 'ads_read', 'read audiences')
    state.countCall(t, 'read_audience')
    const a = state.audienceFor(t, id, 'GET')
    send(req, res, 200, pick({ ...state.view(a) }, req.query.fields, AUDIENCE_FIELDS, 'CustomAudience'))
  })

  api.post('/:id/customaudiences', (req, res) => {
    const id = req.params.id!
    const t = state.authenticate(bearer(req))
    state.requireScope(t, 'ads_management', 'create and manage audiences')
    state.adAccount(t, id)
    state.countCall(t, 'create_audience')
    const out = state.createAudience(t, id, (req.body ?? {}) as Record<string, unknown>)
    locals(res).applied = true
    send(req, res, 200, out)
  })

  const users = (mode: 'add' | 'remove') => (req: Request, res: Response) => {
    const id = req.params.id as string
    const payload = (req.body as { payload?: unknown } | undefined)?.payload
    const data = typeof payload === 'object' && payload !== null ? (payload as { data?: unknown }).data : undefined
    if (Array.isArray(data)) locals(res).rows = data.length
    const t = state.authenticate(bearer(req))
    state.requireScope(t, 'ads_management', 'create and manage audiences')
    state.countCall(t, 'upload_users')
    const { result, statusChanged } = state.upload(t, id, payload, mode)
    locals(res).applied = true
    send(req, res, 200, result)
    if (statusChanged) state.statusChanged(id)
  }
  api.post('/:id/users', users('add'))
  api.delete('/:id/users', users('remove'))

  api.delete('/:id', (req, res) => {
    const id = req.params.id!
    const t = state.authenticate(bearer(req))
    state.requireScope(t, 'ads_management', 'create and manage audiences')
    if (!/^\d+$/.test(id)) throw unknownObject(id, 'DELETE')
    const out = state.deleteAudience(t, id)
    locals(res).applied = true
    send(req, res, 200, out)
  })

  api.use((req) => {
    throw invalidParameter(`Unknown path components: ${req.method} ${req.path}`)
  })

  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    if (!res.locals.t0) Object.assign(res.locals, { time: state.opts.now(), t0: performance.now() })
    if (err instanceof GraphError) return send(req, res, err.httpStatus, err.body())
    const e = err as { type?: string; message?: string }
    if (e.type === 'entity.parse.failed') return send(req, res, 400, invalidParameter('The request body is not valid JSON').body())
    if (e.type === 'entity.too.large') return send(req, res, 413, invalidParameter('The request body is too large').body())
    send(req, res, 500, new GraphError(500, 1, `An unknown error occurred: ${e.message ?? String(err)}`).body())
  }
  api.use(onError)
  return api
}

function adminRouter(state: AdsPlatformState): express.Router {
  const admin = express.Router()
  admin.use(express.json({ limit: '1mb' }))
  const need = (cond: unknown, msg: string) => {
    if (!cond) throw Object.assign(new Error(msg), { status: 400 })
  }

  admin.get('/state', (_req, res) => void res.json(state.snapshot()))
  admin.get('/audiences', (_req, res) => void res.json({ data: state.listAudiences() }))
  admin.get('/audiences/:id', (req, res) => {
    const a = state.audience(req.params.id)
    if (!a) return void res.status(404).json({ error: `unknown audience ${req.params.id}` })
    res.json(a)
  })
  admin.get('/audiences/:id/members', (req, res) => {
    const a = state.audience(req.params.id)
    if (!a) return void res.status(404).json({ error: `unknown audience ${req.params.id}` })
    res.json({ audience_id: a.id, count: a.approximate_count, members: state.members(a.id) })
  })
  admin.post('/audiences/:id/delivery-status', async (req, res) => {
    const { code, description, send = true } = (req.body ?? {}) as { code?: unknown; description?: unknown; send?: unknown }
    need(state.audience(req.params.id), `unknown audience ${req.params.id}`)
    const status = code === null ? null : { code: Number(code), description: String(description ?? '') }
    need(status === null || Number.isInteger(status.code), 'code must be an integer (or null to go back to the computed status)')
    state.setDeliveryStatus(req.params.id, status)
    const delivery = send && state.webhook.url ? await state.sendDeliveryStatus(req.params.id) : null
    res.json({ audience: state.audience(req.params.id), delivery })
  })
  admin.get('/requests', (_req, res) => void res.json({ data: state.requestLog }))
  admin.delete('/requests', (_req, res) => {
    state.clearRequestLog()
    res.json({ success: true })
  })
  admin.get('/faults', (_req, res) => void res.json({ ...state.faults, queued: state.queuedFaults }))
  admin.put('/faults', (req, res) => {
    const { queue, ...faults } = (req.body ?? {}) as Partial<Faults> & { queue?: unknown }
    if (queue !== undefined) {
      need(Array.isArray(queue) && queue.every((s) => s === 429 || s === 500), 'queue must be an array of 429 and 500')
      state.queueFaults(queue as (429 | 500)[])
    }
    try {
      res.json({ ...state.setFaults(faults), queued: state.queuedFaults })
    } catch (err) {
      throw Object.assign(err as Error, { status: 400 })
    }
  })
  admin.post('/tokens', (req, res) => {
    const b = (req.body ?? {}) as { token?: unknown; scopes?: unknown; expires_at?: unknown; ad_accounts?: unknown }
    need(typeof b.token === 'string' && b.token, 'token is required')
    need(b.scopes === undefined || (Array.isArray(b.scopes) && b.scopes.every((s) => typeof s === 'string')), 'scopes must be an array of strings')
    need(b.expires_at === undefined || b.expires_at === null || typeof b.expires_at === 'number', 'expires_at must be unix seconds or null')
    state.addToken({ token: b.token as string, scopes: b.scopes as string[] | undefined, expiresAt: b.expires_at as number | null | undefined, adAccounts: b.ad_accounts as string[] | undefined })
    res.status(201).json({ success: true })
  })
  const knownToken = (token: string) => {
    if (!state.hasToken(token)) throw Object.assign(new Error('unknown token'), { status: 404 })
  }
  admin.post('/tokens/:token/expire', (req, res) => {
    knownToken(req.params.token)
    state.expireToken(req.params.token)
    res.json({ success: true })
  })
  admin.put('/tokens/:token/scopes', (req, res) => {
    const scopes = (req.body as { scopes?: unknown } | undefined)?.scopes
    need(Array.isArray(scopes) && scopes.every((s) => typeof s === 'string'), 'scopes must be an array of strings')
    knownToken(req.params.token)
    state.setScopes(req.params.token, scopes as string[])
    res.json({ success: true })
  })
  admin.post('/ad-accounts', (req, res) => {
    const b = (req.body ?? {}) as SeedAdAccount
    try {
      state.addAdAccount(b)
    } catch (err) {
      throw Object.assign(err as Error, { status: 400 })
    }
    res.status(201).json({ success: true })
  })
  admin.post('/limits/reset', (_req, res) => {
    state.resetLimits()
    res.json({ success: true })
  })
  admin.put('/webhook', (req, res) => {
    const b = (req.body ?? {}) as { url?: unknown; verify_token?: unknown }
    need(b.url === null || typeof b.url === 'string', 'url must be a string or null')
    state.setWebhook(b.url as string | null, typeof b.verify_token === 'string' ? b.verify_token : undefined)
    res.json({ url: state.webhook.url })
  })
  admin.post('/webhook/verify', async (_req, res) => void res.json(await state.verifyWebhookSubscription()))
  admin.get('/webhook/deliveries', (_req, res) => void res.json({ data: state.webhookLog }))

  const onError: ErrorRequestHandler = (err, _req, res, _next) => {
    const e = err as { status?: number; message?: string }
    res.status(e.status && e.status < 500 ? e.status : 500).json({ error: e.message ?? String(err) })
  }
  admin.use(onError)
  return admin
}
