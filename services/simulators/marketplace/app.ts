/**
 * The marketplace simulator as an Express app: OAuth token endpoint, the seller's identity,
 * order and buyer searches (offset paging), admin endpoints under `/_sim/`. See README.md.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express'
import { historyPeriod } from '../commerce-platform/dataset.ts'
import { populationOptions, type SharedPopulationOption } from '../commerce-platform/shared-population.ts'
import { apiErrorHandler, SimulatorApiError } from '../shared/api-error.ts'
import { addLatency } from '../shared/faults.ts'
import { createSimulatorApp, platformAdminRouter, timeRangeParams } from '../shared/http.ts'
import { trafficOptions, type PlatformSimulatorOptions } from '../shared/platform-options.ts'
import { admit, type Refusal } from '../shared/platform-state.ts'
import { loggedReply, timeRequests, type RequestLocals } from '../shared/request-log.ts'
import { MarketplaceState, type SeedClient, type SellerOptions } from './state.ts'

/**
 * The shared options' defaults here: 150 customers, seed 'marketplace' (with `overlap`:
 * SHARED_DEFAULTS); 1,500 requests per minute per application.
 */
export interface MarketplaceSimulatorOptions extends PlatformSimulatorOptions, SharedPopulationOption {
  /** Registered applications; default DEFAULTS' one. */
  clients?: SeedClient[]
  /** The seller every application acts for; default user 123456789 'DEMOSHOP' on site 'MLA'. */
  seller?: Partial<SellerOptions>
  /** Access-token lifetime; default 6 hours (the marketplace's usual). */
  tokenTtlMs?: number
  /** Largest `limit`; default 50. */
  maxLimit?: number
}

export const DEFAULTS = {
  clientId: '4417723912054587',
  clientSecret: 'sim-client-secret-0123456789abcdef',
  redirectUri: 'https://cdp.example.com/oauth/marketplace/callback',
  seller: { userId: 123_456_789, nickname: 'DEMOSHOP', siteId: 'MLA' },
  customers: 150,
  seed: 'marketplace',
} as const

/** The marketplace's error body: `{ message, error, status, cause }`. */
class ApiError extends SimulatorApiError {
  constructor(status: number, readonly error: string, message: string, retryAfter?: number) {
    super(status, message, retryAfter)
  }
  body() {
    return { message: this.message, error: this.error, status: this.status, cause: [] as unknown[] }
  }
}

export function createMarketplaceSimulator(options: MarketplaceSimulatorOptions = {}): { app: Express; state: MarketplaceState } {
  const traffic = trafficOptions(options, 1500)
  const { start, end } = historyPeriod(options, traffic.now)
  const state = MarketplaceState.fromGenerator(
    {
      ...traffic,
      seller: { ...DEFAULTS.seller, ...options.seller },
      tokenTtlMs: options.tokenTtlMs ?? 6 * 3_600_000,
      maxLimit: options.maxLimit ?? 50,
    },
    { ...populationOptions(options, DEFAULTS), start, end },
  )
  for (const c of options.clients ?? [{ clientId: DEFAULTS.clientId, clientSecret: DEFAULTS.clientSecret, redirectUri: DEFAULTS.redirectUri }]) state.addClient(c)
  if (options.faults) state.setFaults(options.faults)

  const app = createSimulatorApp()
  app.use('/_sim', adminRouter(state))
  app.use(apiRouter(state, options.onRequest))
  return { app, state }
}

function apiRouter(state: MarketplaceState, onRequest: MarketplaceSimulatorOptions['onRequest']): express.Router {
  const api = express.Router()
  const send = loggedReply(state.requestLog, onRequest, (body) => (body as { error?: string }).error ?? null)

  api.use(timeRequests(state.opts.now))
  api.use(express.urlencoded({ extended: false }), express.json())
  // Faults, latency and the rate limit apply to every call, the token endpoint included.
  api.use(async (req: Request, res: Response, next: NextFunction) => {
    await addLatency(state.faults)
    const caller = callerOf(req, state)
    ;(res.locals as RequestLocals).caller = caller
    const refusal = admit(state, caller ?? req.ip ?? 'anonymous')
    if (refusal) throw refused(refusal)
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
    const sort = sortOf(req)
    const p = page(req, state, sort.id === 'date_asc' ? rows : [...rows].reverse())
    send(req, res, 200, { query: '', results: p.items.map((o) => state.renderOrder(o)), paging: p.paging, sort })
  })

  api.get('/orders/:id', (req, res) => {
    const o = state.order(Number(req.params.id))
    if (!o) throw new ApiError(404, 'not_found', `order ${req.params.id} not found`)
    send(req, res, 200, state.renderOrder(o))
  })

  api.get('/customers/search', (req, res) => {
    checkSeller(req, state)
    const sort = sortOf(req)
    const rows = state.customersIn(range(req, 'date_last_updated'))
    const p = page(req, state, sort.id === 'date_asc' ? rows : [...rows].reverse())
    send(req, res, 200, { results: p.items.map((c) => state.renderBuyer(c)), paging: p.paging, sort })
  })

  api.use((req) => {
    throw new ApiError(404, 'not_found', `resource ${req.method} ${req.path} not found`)
  })

  api.use(
    apiErrorHandler(state.opts.now, send, (err) => {
      const e = err as { type?: string; message?: string }
      if (e.type === 'entity.parse.failed') return new ApiError(400, 'bad_request', 'malformed body')
      return new ApiError(500, 'internal_error', e.message ?? String(err))
    }),
  )
  return api
}

/** The refusals of the rate limit and the fault dice, in the marketplace's words. */
function refused(r: Refusal): ApiError {
  if (r.status === 500) return new ApiError(500, 'internal_error', 'simulated fault: internal error')
  const why = r.cause === 'fault' ? 'simulated fault: too many requests' : 'Too many requests, please retry later'
  return new ApiError(429, 'too_many_requests', why, r.retryAfterSec)
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
  const r = timeRangeParams(req, `${field}.from`, `${field}.to`)
  if (!r) throw new ApiError(400, 'bad_request', `${field}.from and ${field}.to must be ISO 8601 timestamps`)
  return r
}

/** `sort`: `date_asc` (the default: by last update, then id) or `date_desc`. */
function sortOf(req: Request): { id: 'date_asc' | 'date_desc'; name: string } {
  const sort = req.query.sort ?? 'date_asc'
  if (sort === 'date_asc') return { id: 'date_asc', name: 'Date ascending' }
  if (sort === 'date_desc') return { id: 'date_desc', name: 'Date descending' }
  throw new ApiError(400, 'bad_request', 'sort must be date_asc or date_desc')
}

function page<T>(req: Request, state: MarketplaceState, rows: T[]): { items: T[]; paging: { total: number; offset: number; limit: number } } {
  const offset = req.query.offset === undefined ? 0 : Number(req.query.offset)
  const limit = req.query.limit === undefined ? state.opts.maxLimit : Number(req.query.limit)
  if (!Number.isInteger(offset) || offset < 0) throw new ApiError(400, 'bad_request', 'offset must be an integer >= 0')
  if (!Number.isInteger(limit) || limit < 1 || limit > state.opts.maxLimit) throw new ApiError(400, 'bad_request', `limit must be an integer in 1..${state.opts.maxLimit}`)
  return { items: rows.slice(offset, offset + limit), paging: { total: rows.length, offset, limit } }
}

function adminRouter(state: MarketplaceState): express.Router {
  const admin = platformAdminRouter(state)
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
