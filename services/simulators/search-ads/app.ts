/**
 * The search-ads simulator as an Express app: an OAuth token endpoint (refresh-token grant) and
 * the ads API under `/{version}/` with a developer token header; admin endpoints under `/_sim/`.
 * See README.md.
 */
import { createHash } from 'node:crypto'
import express, { type ErrorRequestHandler, type Express, type NextFunction, type Request, type Response } from 'express'
import { timeParam, type Faults, type RequestLogEntry } from '../commerce-platform/dataset.ts'
import { digits, SearchAdsState, type SeedAccount, type SeedRefreshToken } from './state.ts'

export interface SearchAdsSimulatorOptions {
  /** Version path segment; default 'v17'. */
  version?: string
  /** Accepted developer tokens; default DEFAULTS.developerToken. */
  developerTokens?: string[]
  /** Refresh tokens and the accounts each reaches; default DEFAULTS.refreshToken → every account. */
  refreshTokens?: (SeedRefreshToken | string)[]
  /** Ad accounts; default one, DEFAULTS.customerId. */
  accounts?: (SeedAccount | string)[]
  /** When set, the token endpoint also wants this OAuth client (client_id, client_secret). */
  oauthClient?: { clientId: string; clientSecret: string }
  /** Default one hour. */
  accessTokenTtlMs?: number
  /** Shop behind the conversions (synthetic generator): default 150 customers, seed 'search-ads', the year before `end`. */
  customers?: number
  seed?: string | number
  start?: Date
  end?: Date
  /** Share of orders attributed to an ad click; default 0.3. */
  attributedShare?: number
  /** Requests per window per developer token; default 1,000 per minute. */
  rateLimit?: { requests?: number; windowMs?: number }
  faults?: Partial<Faults>
  /** Largest pageSize; default 1,000. */
  maxPageSize?: number
  now?: () => number
  random?: () => number
  onRequest?: (entry: RequestLogEntry) => void
}

export const DEFAULTS = {
  version: 'v17',
  developerToken: 'sim-developer-token-0123456789',
  refreshToken: '1//sim-refresh-token-0123456789abcdef',
  customerId: '1234567890',
  customers: 150,
  seed: 'search-ads',
} as const

const DAY = 86_400_000

/** The platform's error body: `{ error: { code, message, status, details: [{ errors: [{ errorCode, message }] }] } }`. */
class ApiError extends Error {
  constructor(readonly status: number, readonly statusName: string, readonly reason: Record<string, string> | null, message: string, readonly retryAfter?: number) {
    super(message)
  }
  body() {
    return {
      error: {
        code: this.status,
        message: this.message,
        status: this.statusName,
        details: this.reason ? [{ '@type': 'type.example.com/ads.v17.errors.AdsFailure', errors: [{ errorCode: this.reason, message: this.message }] }] : [],
      },
    }
  }
}

interface Locals {
  t0: number
  time: number
  caller: string | null
}

export function createSearchAdsSimulator(options: SearchAdsSimulatorOptions = {}): { app: Express; state: SearchAdsState } {
  const now = options.now ?? Date.now
  const end = options.end ?? new Date(Math.floor(now() / DAY) * DAY)
  const seed = options.seed ?? DEFAULTS.seed
  const state = SearchAdsState.fromGenerator(
    {
      accessTokenTtlMs: options.accessTokenTtlMs ?? 3_600_000,
      now,
      random: options.random ?? Math.random,
      maxPageSize: options.maxPageSize ?? 1000,
      rateLimit: { requests: options.rateLimit?.requests ?? 1000, windowMs: options.rateLimit?.windowMs ?? 60_000 },
      oauthClient: options.oauthClient ?? null,
    },
    { customers: options.customers ?? DEFAULTS.customers, seed, start: options.start ?? new Date(end.getTime() - 365 * DAY), end, attributedShare: options.attributedShare ?? 0.3 },
  )
  for (const a of options.accounts ?? [DEFAULTS.customerId]) state.addAccount(typeof a === 'string' ? { id: a } : a)
  for (const t of options.developerTokens ?? [DEFAULTS.developerToken]) state.developerTokens.add(t)
  for (const t of options.refreshTokens ?? [DEFAULTS.refreshToken]) state.addRefreshToken(typeof t === 'string' ? { refreshToken: t } : t)
  if (options.faults) state.setFaults(options.faults)

  const version = options.version ?? DEFAULTS.version
  const app = express()
  app.disable('x-powered-by')
  app.disable('etag')
  app.use('/_sim', adminRouter(state))
  app.use(apiRouter(state, version, options.onRequest))
  return { app, state }
}

function apiRouter(state: SearchAdsState, version: string, onRequest: SearchAdsSimulatorOptions['onRequest']): express.Router {
  const api = express.Router()
  const send = (req: Request, res: Response, status: number, body: unknown) => {
    const l = res.locals as Locals
    const err = (body as { error?: unknown }).error
    const entry: RequestLogEntry = {
      seq: state.requestLog.length + 1,
      time: l.time,
      method: req.method,
      path: req.path,
      status,
      error: status >= 400 ? (typeof err === 'string' ? err : ((err as { status?: string } | undefined)?.status ?? null)) : null,
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

  // OAuth: the refresh-token grant (the tenant authorised the CDP once; the refresh token is what it keeps).
  api.post('/oauth2/token', (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>
    const c = state.opts.oauthClient
    if (c && (b.client_id !== c.clientId || b.client_secret !== c.clientSecret)) {
      return send(req, res, 401, { error: 'invalid_client', error_description: 'The OAuth client was not found.' })
    }
    if (b.grant_type !== 'refresh_token') return send(req, res, 400, { error: 'unsupported_grant_type', error_description: 'grant_type must be refresh_token' })
    const out = state.exchange(b.refresh_token)
    if (!out) return send(req, res, 400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' })
    send(req, res, 200, out)
  })

  const v = `/${version}`
  api.use(v, async (req: Request, res: Response, next: NextFunction) => {
    const devToken = req.header('developer-token')
    if (!devToken || !state.developerTokens.has(devToken)) throw new ApiError(401, 'UNAUTHENTICATED', { authenticationError: 'DEVELOPER_TOKEN_INVALID' }, 'The developer token is not valid.')
    const m = /^Bearer\s+(\S+)$/i.exec(req.header('authorization') ?? '')
    const refresh = state.access(m?.[1] ?? null)
    if (refresh === 'expired') throw new ApiError(401, 'UNAUTHENTICATED', { authenticationError: 'OAUTH_TOKEN_EXPIRED' }, 'The OAuth access token has expired.')
    if (!refresh) throw new ApiError(401, 'UNAUTHENTICATED', { authenticationError: 'OAUTH_TOKEN_INVALID' }, 'Request had invalid authentication credentials.')
    res.locals.refresh = refresh
    ;(res.locals as Locals).caller = `developer-token:sha256:${createHash('sha256').update(devToken).digest('hex').slice(0, 8)}`
    if (state.faults.latencyMs > 0) await new Promise((r) => setTimeout(r, state.faults.latencyMs))
    const wait = state.window.take(devToken, state.opts.now())
    if (wait > 0) throw new ApiError(429, 'RESOURCE_EXHAUSTED', { quotaError: 'RESOURCE_EXHAUSTED' }, 'Too many requests. Retry in a moment.', Math.max(1, Math.ceil(wait / 1000)))
    const fault = state.nextFault()
    if (fault === 429) throw new ApiError(429, 'RESOURCE_EXHAUSTED', { quotaError: 'RESOURCE_TEMPORARILY_EXHAUSTED' }, 'simulated fault: too many requests', state.faults.retryAfterSec)
    if (fault === 500) throw new ApiError(500, 'INTERNAL', { internalError: 'INTERNAL_ERROR' }, 'simulated fault: internal error')
    next()
  })

  // `customers:listAccessibleCustomers` has a colon, which Express route patterns reserve: matched by hand.
  api.get(v + '/*path', (req, res, next) => {
    if (req.path !== `${v}/customers:listAccessibleCustomers`) return next()
    send(req, res, 200, { resourceNames: state.reachable(res.locals.refresh as string).map((id) => `customers/${id}`) })
  })

  const account = (req: Request, res: Response) => {
    const id = digits(String(req.params.customerId))
    const refresh = res.locals.refresh as string
    if (!state.accounts.has(id)) throw new ApiError(400, 'INVALID_ARGUMENT', { requestError: 'INVALID_CUSTOMER_ID' }, `Invalid customer ID '${req.params.customerId}'.`)
    if (!state.canReach(refresh, id)) throw new ApiError(403, 'PERMISSION_DENIED', { authorizationError: 'USER_PERMISSION_DENIED' }, "User doesn't have permission to access customer.")
    return state.accounts.get(id)!
  }

  api.get(`${v}/customers/:customerId`, (req, res) => {
    const a = account(req, res)
    send(req, res, 200, { resourceName: `customers/${a.id}`, id: a.id, descriptiveName: a.descriptiveName, currencyCode: a.currencyCode, timeZone: a.timeZone, manager: false, testAccount: false, status: 'ENABLED' })
  })

  api.get(`${v}/customers/:customerId/conversions`, (req, res) => {
    const a = account(req, res)
    const p = page(req, state, state.conversionsIn(dates(req)))
    send(req, res, 200, { results: p.items.map((c) => state.renderConversion(c, a.id)), totalResultsCount: p.total, ...(p.next ? { nextPageToken: p.next } : {}) })
  })

  api.get(`${v}/customers/:customerId/customerMatchMembers`, (req, res) => {
    account(req, res)
    const p = page(req, state, state.membersIn(dates(req)))
    send(req, res, 200, { results: p.items, totalResultsCount: p.total, ...(p.next ? { nextPageToken: p.next } : {}) })
  })

  api.use((req) => {
    throw new ApiError(404, 'NOT_FOUND', null, `Method not found: ${req.method} ${req.path}`)
  })

  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    if (!(res.locals as Partial<Locals>).t0) Object.assign(res.locals, { t0: performance.now(), time: state.opts.now(), caller: null })
    if (err instanceof ApiError) {
      if (err.retryAfter !== undefined) res.setHeader('Retry-After', String(err.retryAfter))
      return send(req, res, err.status, err.body())
    }
    send(req, res, 500, new ApiError(500, 'INTERNAL', null, (err as Error).message).body())
  }
  api.use(onError)
  return api
}

/** `dateFrom` / `dateTo` (YYYY-MM-DD, both inclusive, UTC). */
function dates(req: Request): { from?: number; to?: number } {
  const from = timeParam(req.query.dateFrom)
  const to = timeParam(req.query.dateTo)
  if (Number.isNaN(from) || Number.isNaN(to)) throw new ApiError(400, 'INVALID_ARGUMENT', { requestError: 'INVALID_DATE' }, 'dateFrom and dateTo must be YYYY-MM-DD dates')
  return { from, to: to === undefined ? undefined : to + DAY }
}

/** Page tokens are opaque to callers: base64url of the next offset. */
function page<T>(req: Request, state: SearchAdsState, rows: T[]): { items: T[]; total: number; next: string | null } {
  const size = req.query.pageSize === undefined ? state.opts.maxPageSize : Number(req.query.pageSize)
  if (!Number.isInteger(size) || size < 1 || size > state.opts.maxPageSize) throw new ApiError(400, 'INVALID_ARGUMENT', { requestError: 'INVALID_PAGE_SIZE' }, `pageSize must be in 1..${state.opts.maxPageSize}`)
  let offset = 0
  if (typeof req.query.pageToken === 'string' && req.query.pageToken) {
    offset = Number(Buffer.from(req.query.pageToken, 'base64url').toString())
    if (!Number.isInteger(offset) || offset < 0) throw new ApiError(400, 'INVALID_ARGUMENT', { requestError: 'INVALID_PAGE_TOKEN' }, 'Invalid page token.')
  }
  const next = offset + size < rows.length ? Buffer.from(String(offset + size)).toString('base64url') : null
  return { items: rows.slice(offset, offset + size), total: rows.length, next }
}

function adminRouter(state: SearchAdsState): express.Router {
  const admin = express.Router()
  admin.use(express.json())
  admin.get('/state', (_req, res) => void res.json(state.snapshot()))
  admin.get('/requests', (_req, res) => void res.json({ data: state.requestLog }))
  admin.put('/faults', (req, res) => {
    state.setFaults(req.body ?? {})
    res.json(state.faults)
  })
  admin.post('/expire-tokens', (_req, res) => {
    for (const t of state.accessTokens.values()) t.expiresAt = state.opts.now()
    res.json({ expired: state.accessTokens.size })
  })
  return admin
}
