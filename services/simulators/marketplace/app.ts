/**
 * The marketplace simulator as an Express app: OAuth token endpoint, the seller's identity,
 * order and buyer searches (offset paging), admin endpoints under `/_sim/`. See README.md.
 */
import express, { type ErrorRequestHandler, type Express, type NextFunction, type Request, type Response } from 'express'
import { timeParam, type Faults, type RequestLogEntry } from '../commerce-platform/dataset.ts'
import { MarketplaceState, type SeedClient, type SellerOptions } from './state.ts'

export interface MarketplaceSimulatorOptions {
  /** Registered applications; default DEFAULTS' one. */
  clients?: SeedClient[]
  /** The seller every application acts for; default user 123456789 'DEMOSHOP' on site 'MLA'. */
  seller?: Partial<SellerOptions>
  /** Access-token lifetime; default 6 hours (the marketplace's usual). */
  tokenTtlMs?: number
  /** Shop size and history (synthetic generator): default 150 customers, seed 'marketplace', the year before `end`. */
  customers?: number
  seed?: string | number
  start?: Date
  end?: Date
  /** Requests per window per application; default 1,500 per minute. */
  rateLimit?: { requests?: number; windowMs?: number }
  faults?: Partial<Faults>
  /** Largest `limit`; default 50. */
  maxLimit?: number
  now?: () => number
  random?: () => number
  onRequest?: (entry: RequestLogEntry) => void
}

export const DEFAULTS = {
  clientId: '4417723912054587',
  clientSecret: 'sim-client-secret-0123456789abcdef',
  redirectUri: 'https://cdp.example.com/oauth/marketplace/callback',
  seller: { userId: 123_456_789, nickname: 'DEMOSHOP', siteId: 'MLA' },
  customers: 150,
  seed: 'marketplace',
} as const

const DAY = 86_400_000

/** The marketplace's error body: `{ message, error, status, cause }`. */
class ApiError extends Error {
  constructor(readonly status: number, readonly error: string, message: string, readonly retryAfter?: number) {
    super(message)
  }
  body() {
    return { message: this.message, error: this.error, status: this.status, cause: [] as unknown[] }
  }
}

interface Locals {
  t0: number
  time: number
  caller: string | null
}

export function createMarketplaceSimulator(options: MarketplaceSimulatorOptions = {}): { app: Express; state: MarketplaceState } {
  const now = options.now ?? Date.now
  const end = options.end ?? new Date(Math.floor(now() / DAY) * DAY)
  const state = MarketplaceState.fromGenerator(
    {
      seller: { ...DEFAULTS.seller, ...options.seller },
      tokenTtlMs: options.tokenTtlMs ?? 6 * 3_600_000,
      now,
      random: options.random ?? Math.random,
      maxLimit: options.maxLimit ?? 50,
      rateLimit: { requests: options.rateLimit?.requests ?? 1500, windowMs: options.rateLimit?.windowMs ?? 60_000 },
    },
    { customers: options.customers ?? DEFAULTS.customers, seed: options.seed ?? DEFAULTS.seed, start: options.start ?? new Date(end.getTime() - 365 * DAY), end },
  )
  for (const c of options.clients ?? [{ clientId: DEFAULTS.clientId, clientSecret: DEFAULTS.clientSecret, redirectUri: DEFAULTS.redirectUri }]) state.addClient(c)
  if (options.faults) state.setFaults(options.faults)

  const app = express()
  app.disable('x-powered-by')
  app.disable('etag')
  app.use('/_sim', adminRouter(state))
  app.use(apiRouter(state, options.onRequest))
  return { app, state }
}

function apiRouter(state: MarketplaceState, onRequest: MarketplaceSimulatorOptions['onRequest']): express.Router {
  const api = express.Router()
  const send = (req: Request, res: Response, status: number, body: unknown) => {
    const l = res.locals as Locals
    const entry: RequestLogEntry = {
      seq: state.requestLog.length + 1,
      time: l.time,
      method: req.method,
      path: req.path,
      status,
      error: status >= 400 ? ((body as { error?: string }).error ?? null) : null,
      caller: l.caller,
      durationMs: Math.round((performance.now() - l.t0) * 100) / 100,
    }
    state.requestLog.push(entry)
    onRequest?.(entry)
    res.status(status).json(body)
  }

  api.use((_req, res, next) => {
    Object.assign(res.locals, { t0: performance.now(), time: state.opts.now(), caller: null } satisfies Locals)
    next()
  })
  api.use(express.urlencoded({ extended: false }), express.json())
  // Faults, latency and the rate limit apply to every call, the token endpoint included.
  api.use(async (req: Request, res: Response, next: NextFunction) => {
    if (state.faults.latencyMs > 0) await new Promise((r) => setTimeout(r, state.faults.latencyMs))
    const caller = callerOf(req, state)
    ;(res.locals as Locals).caller = caller
    const wait = state.window.take(caller ?? req.ip ?? 'anonymous', state.opts.now())
    if (wait > 0) throw new ApiError(429, 'too_many_requests', 'Too many requests, please retry later', Math.max(1, Math.ceil(wait / 1000)))
    const fault = state.nextFault()
    if (fault === 429) throw new ApiError(429, 'too_many_requests', 'simulated fault: too many requests', state.faults.retryAfterSec)
    if (fault === 500) throw new ApiError(500, 'internal_error', 'simulated fault: internal error')
    next()
  })

  api.post('/oauth/token', (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>
    if (b.grant_type === 'client_credentials') {
      const c = state.checkClient(b.client_id, b.client_secret, b.redirect_uri)
      if (typeof c === 'string') throw new ApiError(400, 'invalid_client', c)
      return send(req, res, 200, state.issue(c.clientId))
    }
    if (b.grant_type === 'refresh_token') {
      const c = state.checkClient(b.client_id, b.client_secret, undefined)
      if (typeof c === 'string') throw new ApiError(400, 'invalid_client', c)
      if (!state.redeemRefresh(b.refresh_token, c.clientId)) throw new ApiError(400, 'invalid_grant', 'the refresh token is invalid, expired or was already used')
      return send(req, res, 200, state.issue(c.clientId))
    }
    throw new ApiError(400, 'unsupported_grant_type', 'grant_type must be client_credentials or refresh_token')
  })

  // Everything below needs `Authorization: Bearer <access_token>`.
  api.use((req, _res, next) => {
    const m = /^Bearer\s+(\S+)$/i.exec(req.header('authorization') ?? '')
    const check = state.checkAccess(m?.[1] ?? null)
    if (check.status === 'expired') throw new ApiError(401, 'expired_token', 'expired_token: the access token has expired; refresh it')
    if (check.status === 'invalid') throw new ApiError(401, 'invalid_token', 'invalid access token')
    next()
  })

  api.get('/users/me', (req, res) => {
    const s = state.opts.seller
    send(req, res, 200, { id: s.userId, nickname: s.nickname, site_id: s.siteId, country_id: 'AR', user_type: 'normal', status: { site_status: 'active' }, registration_date: '2019-03-14T10:22:41.000-03:00' })
  })

  api.get('/orders/search', (req, res) => {
    checkSeller(req, state)
    const rows = state.ordersIn({ updated: range(req, 'order.date_last_updated'), created: range(req, 'order.date_created') })
    const p = page(req, state, rows)
    send(req, res, 200, { query: '', results: p.items.map((o) => state.renderOrder(o)), paging: p.paging, sort: { id: 'date_asc', name: 'Date ascending' } })
  })

  api.get('/orders/:id', (req, res) => {
    const o = state.order(Number(req.params.id))
    if (!o) throw new ApiError(404, 'not_found', `order ${req.params.id} not found`)
    send(req, res, 200, state.renderOrder(o))
  })

  api.get('/customers/search', (req, res) => {
    checkSeller(req, state)
    const p = page(req, state, state.customersIn(range(req, 'date_last_updated')))
    send(req, res, 200, { results: p.items.map((c) => state.renderBuyer(c)), paging: p.paging })
  })

  api.use((req) => {
    throw new ApiError(404, 'not_found', `resource ${req.method} ${req.path} not found`)
  })

  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    if (!(res.locals as Partial<Locals>).t0) Object.assign(res.locals, { t0: performance.now(), time: state.opts.now(), caller: null })
    if (err instanceof ApiError) {
      if (err.retryAfter !== undefined) res.setHeader('Retry-After', String(err.retryAfter))
      return send(req, res, err.status, err.body())
    }
    const e = err as { type?: string; message?: string }
    if (e.type === 'entity.parse.failed') return send(req, res, 400, new ApiError(400, 'bad_request', 'malformed body').body())
    send(req, res, 500, new ApiError(500, 'internal_error', e.message ?? String(err)).body())
  }
  api.use(onError)
  return api
}

/** The calling application's client id (never a secret), when the request names it or carries its token. */
function callerOf(req: Request, state: MarketplaceState): string | null {
  const b = (req.body ?? {}) as Record<string, unknown>
  if (typeof b.client_id === 'string') return b.client_id
  const m = /^Bearer\s+(\S+)$/i.exec(req.header('authorization') ?? '')
  const t = m ? state.accessTokens.get(m[1]!) : undefined
  return t?.clientId ?? null
}

function checkSeller(req: Request, state: MarketplaceState): void {
  if (req.query.seller !== undefined && Number(req.query.seller) !== state.opts.seller.userId) throw new ApiError(403, 'forbidden', 'the token cannot read another seller')
}

function range(req: Request, field: string): { from?: number; to?: number } {
  const from = timeParam(req.query[`${field}.from`])
  const to = timeParam(req.query[`${field}.to`])
  if (Number.isNaN(from) || Number.isNaN(to)) throw new ApiError(400, 'bad_request', `${field}.from and ${field}.to must be ISO 8601 timestamps`)
  return { from, to }
}

function page<T>(req: Request, state: MarketplaceState, rows: T[]): { items: T[]; paging: { total: number; offset: number; limit: number } } {
  const offset = req.query.offset === undefined ? 0 : Number(req.query.offset)
  const limit = req.query.limit === undefined ? state.opts.maxLimit : Number(req.query.limit)
  if (!Number.isInteger(offset) || offset < 0) throw new ApiError(400, 'bad_request', 'offset must be an integer >= 0')
  if (!Number.isInteger(limit) || limit < 1 || limit > state.opts.maxLimit) throw new ApiError(400, 'bad_request', `limit must be an integer in 1..${state.opts.maxLimit}`)
  return { items: rows.slice(offset, offset + limit), paging: { total: rows.length, offset, limit } }
}

function adminRouter(state: MarketplaceState): express.Router {
  const admin = express.Router()
  admin.use(express.json())
  admin.get('/state', (_req, res) => void res.json(state.snapshot()))
  admin.get('/requests', (_req, res) => void res.json({ data: state.requestLog }))
  admin.put('/faults', (req, res) => {
    state.setFaults(req.body ?? {})
    res.json(state.faults)
  })
  admin.post('/expire-tokens', (_req, res) => {
    state.expireAccessTokens()
    res.json({ expired: state.accessTokens.size })
  })
  admin.post('/clients', (req, res) => {
    const c = (req.body ?? {}) as SeedClient
    if (!c.clientId || !c.clientSecret || !c.redirectUri) return void res.status(400).json({ error: 'clientId, clientSecret and redirectUri are required' })
    state.addClient(c)
    res.status(201).json({ clientId: c.clientId })
  })
  return admin
}
