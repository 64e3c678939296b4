/**
 * The search-ads simulator as an Express app: an OAuth token endpoint (refresh-token grant) and
 * the ads API under `/{version}/` with a developer token header; admin endpoints under `/_sim/`.
 * See README.md.
 */
import { createHash } from 'node:crypto'
import express, { type Express, type NextFunction, type Request, type Response } from 'express'
import { historyPeriod } from '../commerce-platform/dataset.ts'
import { apiErrorHandler, SimulatorApiError } from '../shared/api-error.ts'
import { addLatency } from '../shared/faults.ts'
import { createSimulatorApp, platformAdminRouter, timeRangeParams } from '../shared/http.ts'
import { trafficOptions, type PlatformSimulatorOptions } from '../shared/platform-options.ts'
import { admit, type Refusal } from '../shared/platform-state.ts'
import { loggedReply, timeRequests, type RequestLocals } from '../shared/request-log.ts'
import { digits, SearchAdsState, type SeedAccount, type SeedRefreshToken } from './state.ts'

/** The shared options' defaults here: 150 customers, seed 'search-ads' (the shop behind the conversions); 1,000 requests per minute per developer token. */
export interface SearchAdsSimulatorOptions extends PlatformSimulatorOptions {
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
  /** Share of orders attributed to an ad click; default 0.3. */
  attributedShare?: number
  /** Largest pageSize; default 1,000. */
  maxPageSize?: number
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
class ApiError extends SimulatorApiError {
  constructor(status: number, readonly statusName: string, readonly reason: Record<string, string> | null, message: string, retryAfter?: number) {
    super(status, message, retryAfter)
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

export function createSearchAdsSimulator(options: SearchAdsSimulatorOptions = {}): { app: Express; state: SearchAdsState } {
  const traffic = trafficOptions(options, 1000)
  const { start, end } = historyPeriod(options, traffic.now)
  const seed = options.seed ?? DEFAULTS.seed
  const state = SearchAdsState.fromGenerator(
    {
      ...traffic,
      accessTokenTtlMs: options.accessTokenTtlMs ?? 3_600_000,
      maxPageSize: options.maxPageSize ?? 1000,
      oauthClient: options.oauthClient ?? null,
    },
    { customers: options.customers ?? DEFAULTS.customers, seed, start, end, attributedShare: options.attributedShare ?? 0.3 },
  )
  for (const a of options.accounts ?? [DEFAULTS.customerId]) state.addAccount(typeof a === 'string' ? { id: a } : a)
  for (const t of options.developerTokens ?? [DEFAULTS.developerToken]) state.developerTokens.add(t)
  for (const t of options.refreshTokens ?? [DEFAULTS.refreshToken]) state.addRefreshToken(typeof t === 'string' ? { refreshToken: t } : t)
  if (options.faults) state.setFaults(options.faults)

  const version = options.version ?? DEFAULTS.version
  const app = createSimulatorApp()
  app.use('/_sim', adminRouter(state))
  app.use(apiRouter(state, version, options.onRequest))
  return { app, state }
}

function apiRouter(state: SearchAdsState, version: string, onRequest: SearchAdsSimulatorOptions['onRequest']): express.Router {
  const api = express.Router()
  // The token endpoint's errors are OAuth's (`error` a string), the API's the platform's (`error.status`).
  const send = loggedReply(state.requestLog, onRequest, (body) => {
    const err = (body as { error?: unknown }).error
    return typeof err === 'string' ? err : ((err as { status?: string } | undefined)?.status ?? null)
  })

  api.use(timeRequests(state.opts.now))
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
    ;(res.locals as RequestLocals).caller = `developer-token:sha256:${createHash('sha256').update(devToken).digest('hex').slice(0, 8)}`
    await addLatency(state.faults)
    const refusal = admit(state, devToken)
    if (refusal) throw refused(refusal)
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

  api.use(apiErrorHandler(state.opts.now, send, (err) => new ApiError(500, 'INTERNAL', null, (err as Error).message)))
  return api
}

/** The refusals of the rate limit and the fault dice, in the platform's words. */
function refused(r: Refusal): ApiError {
  if (r.status === 500) return new ApiError(500, 'INTERNAL', { internalError: 'INTERNAL_ERROR' }, 'simulated fault: internal error')
  if (r.cause === 'fault') return new ApiError(429, 'RESOURCE_EXHAUSTED', { quotaError: 'RESOURCE_TEMPORARILY_EXHAUSTED' }, 'simulated fault: too many requests', r.retryAfterSec)
  return new ApiError(429, 'RESOURCE_EXHAUSTED', { quotaError: 'RESOURCE_EXHAUSTED' }, 'Too many requests. Retry in a moment.', r.retryAfterSec)
}

/** `dateFrom` / `dateTo` (YYYY-MM-DD, both inclusive, UTC). */
function dates(req: Request): { from?: number; to?: number } {
  const r = timeRangeParams(req, 'dateFrom', 'dateTo')
  if (!r) throw new ApiError(400, 'INVALID_ARGUMENT', { requestError: 'INVALID_DATE' }, 'dateFrom and dateTo must be YYYY-MM-DD dates')
  return { from: r.from, to: r.to === undefined ? undefined : r.to + DAY }
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
  const admin = platformAdminRouter(state)
  admin.post('/expire-tokens', (_req, res) => {
    for (const t of state.accessTokens.values()) t.expiresAt = state.opts.now()
    res.json({ expired: state.accessTokens.size })
  })
  return admin
}
