/**
 * The commerce-platform simulator as an Express app. The API lives under
 * `/{account_name}/{environment}/api/…` (a real platform puts both in the host name; the
 * connector takes a base URL template, see README.md); admin endpoints under `/_sim/`.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express'
import { apiErrorHandler, SimulatorApiError } from '../shared/api-error.ts'
import { addLatency } from '../shared/faults.ts'
import { createSimulatorApp, platformAdminRouter, timeRangeParams } from '../shared/http.ts'
import { trafficOptions, type PlatformSimulatorOptions } from '../shared/platform-options.ts'
import { admit, type Refusal } from '../shared/platform-state.ts'
import { loggedReply, timeRequests, type RequestLocals } from '../shared/request-log.ts'
import { historyPeriod } from './dataset.ts'
import { populationOptions, type SharedPopulationOption } from './shared-population.ts'
import { CommercePlatformState, seqOfOrderId, type Anomalies, type Resource, type SeedAppKey } from './state.ts'

/**
 * The shared options' defaults here: 200 customers, seed 'commerce-platform' (with `overlap`:
 * SHARED_DEFAULTS); 600 requests per minute per app key.
 */
export interface CommercePlatformSimulatorOptions extends PlatformSimulatorOptions, SharedPopulationOption {
  /** Default 'demoshop'. */
  accountName?: string
  /** Default '7d0e4a9c-…' (stable per account name). */
  accountId?: string
  /** Environments the account answers on; default ['commerce_stable']. */
  environments?: string[]
  /** The account's store hosts; default `www.{account}.com.ar`, `{account}.mitienda.com.ar`. */
  hosts?: string[]
  /** false: the account answers `isActive: false` (a suspended shop). */
  isActive?: boolean
  /** App keys (appkey-{account}-{hash}) and their tokens; default DEFAULTS.appKey / appToken. */
  appKeys?: SeedAppKey[]
  /** Share of orders with a shipping charge; default 0.2. */
  shippingShare?: number
  anomalies?: Partial<Anomalies>
  /** Largest `per_page`; default 100. */
  maxPerPage?: number
}

export const DEFAULTS = {
  accountName: 'demoshop',
  environment: 'commerce_stable',
  appKey: 'appkey-demoshop-SIM0001',
  appToken: 'sim-app-token-demoshop-0123456789abcdef',
  customers: 200,
  seed: 'commerce-platform',
  perPage: 50,
} as const

/** The platform's error body: `{ error: { code, message } }`. */
class ApiError extends SimulatorApiError {
  constructor(status: number, readonly code: string, message: string, retryAfter?: number) {
    super(status, message, retryAfter)
  }
  body() {
    return { error: { code: this.code, message: this.message } }
  }
}

export function createCommercePlatformSimulator(options: CommercePlatformSimulatorOptions = {}): { app: Express; state: CommercePlatformState } {
  const traffic = trafficOptions(options, 600)
  const accountName = options.accountName ?? DEFAULTS.accountName
  const { start, end } = historyPeriod(options, traffic.now)
  const state = CommercePlatformState.fromGenerator(
    {
      ...traffic,
      accountName,
      accountId: options.accountId ?? `acc-${accountName}-0001`,
      environments: options.environments ?? [DEFAULTS.environment],
      hosts: options.hosts ?? [`www.${accountName}.com.ar`, `${accountName}.mitienda.com.ar`],
      isActive: options.isActive ?? true,
      maxPerPage: options.maxPerPage ?? 100,
    },
    { ...populationOptions(options, DEFAULTS), start, end, shippingShare: options.shippingShare },
  )
  for (const k of options.appKeys ?? [{ appKey: DEFAULTS.appKey, appToken: DEFAULTS.appToken }]) state.addAppKey(k)
  if (options.faults) state.setFaults(options.faults)
  if (options.anomalies) state.setAnomalies(options.anomalies)

  const app = createSimulatorApp()
  app.use('/_sim', adminRouter(state))
  app.use('/:account/:environment/api', apiRouter(state, options.onRequest))
  app.use((req, res) => void res.status(404).json({ error: { code: 'NOT_FOUND', message: `no route for ${req.method} ${req.path}; the API is under /{account_name}/{environment}/api/` } }))
  return { app, state }
}

/** The refusals of the rate limit and the fault dice, in the platform's words. */
function refused(r: Refusal, state: CommercePlatformState): ApiError {
  if (r.status === 500) return new ApiError(500, 'INTERNAL_ERROR', 'simulated fault: internal error')
  const why = r.cause === 'fault' ? 'simulated fault: too many requests' : `more than ${state.window.limit} requests in ${state.window.windowMs / 1000}s`
  return new ApiError(429, 'TOO_MANY_REQUESTS', why, r.retryAfterSec)
}

function apiRouter(state: CommercePlatformState, onRequest: CommercePlatformSimulatorOptions['onRequest']): express.Router {
  const api = express.Router({ mergeParams: true })
  // The log has the whole path: the account and environment are in it.
  const send = loggedReply(state.requestLog, onRequest, (body) => (body as { error?: { code?: string } }).error?.code ?? null, (req) => req.originalUrl.split('?')[0]!)

  api.use(timeRequests(state.opts.now))
  api.use(async (req: Request, res: Response, next: NextFunction) => {
    const { account, environment } = req.params as { account: string; environment: string }
    if (account !== state.opts.accountName) throw new ApiError(404, 'ACCOUNT_NOT_FOUND', `account '${account}' does not exist`)
    if (!state.opts.environments.includes(environment)) throw new ApiError(404, 'ENVIRONMENT_NOT_FOUND', `account '${account}' has no environment '${environment}'`)
    const key = req.header('x-app-key')
    const reason = state.authenticate(key, req.header('x-app-token'))
    if (reason) throw new ApiError(401, 'UNAUTHORIZED', reason)
    ;(res.locals as RequestLocals).caller = key!
    await addLatency(state.faults)
    const refusal = admit(state, key!)
    if (refusal) throw refused(refusal, state)
    next()
  })

  const requireResource = (req: Request, res: Response, r: Resource) => {
    if (!state.resourcesOf((res.locals as RequestLocals).caller!)[r]) throw new ApiError(403, 'FORBIDDEN', `this app key has no access to the ${r} API`)
  }

  api.get('/account', (req, res) => send(req, res, 200, state.renderAccount((res.locals as RequestLocals).caller!)))

  api.get('/catalog/products', (req, res) => {
    requireResource(req, res, 'catalog')
    const p = page(req, state, sorted(req, state.productsIn(range(req, 'updated'))))
    send(req, res, 200, { data: p.items.map((x) => state.renderProduct(x)), paging: p.paging })
  })

  api.get('/oms/orders', (req, res) => {
    requireResource(req, res, 'orders')
    const rows = state.ordersIn({ updated: range(req, 'updated'), created: range(req, 'created') })
    const p = page(req, state, sorted(req, rows))
    send(req, res, 200, { list: p.items.map((o) => state.renderOrder(o)), paging: { total: p.paging.total, pages: p.paging.pages, currentPage: p.paging.page, perPage: p.paging.per_page } })
  })

  api.get('/oms/orders/:orderId', (req, res) => {
    requireResource(req, res, 'orders')
    const o = state.order(seqOfOrderId(req.params.orderId as string))
    if (!o) throw new ApiError(404, 'ORDER_NOT_FOUND', `order ${req.params.orderId} does not exist`)
    send(req, res, 200, state.renderOrder(o))
  })

  api.get('/masterdata/customers', (req, res) => {
    requireResource(req, res, 'masterdata')
    const p = page(req, state, sorted(req, state.customersIn(range(req, 'updated'))))
    send(req, res, 200, { data: p.items.map((c) => state.renderCustomer(c)), paging: p.paging })
  })

  api.use(() => {
    throw new ApiError(404, 'NOT_FOUND', 'no such API')
  })

  api.use(apiErrorHandler(state.opts.now, send, (err) => new ApiError(500, 'INTERNAL_ERROR', (err as Error).message)))
  return api
}

/** `{field}_from` / `{field}_to` query values (ISO 8601; from inclusive, to exclusive). */
function range(req: Request, field: 'updated' | 'created'): { from?: number; to?: number } {
  const r = timeRangeParams(req, `${field}_from`, `${field}_to`)
  if (!r) throw new ApiError(400, 'INVALID_PARAMETER', `${field}_from and ${field}_to must be ISO 8601 timestamps`)
  return r
}

/** `sort`: `updated_asc` (the default: by last change, then id) or `updated_desc`. */
function sorted<T>(req: Request, rows: T[]): T[] {
  const sort = req.query.sort ?? 'updated_asc'
  if (sort === 'updated_asc') return rows
  if (sort === 'updated_desc') return [...rows].reverse()
  throw new ApiError(400, 'INVALID_PARAMETER', 'sort must be updated_asc or updated_desc')
}

function page<T>(req: Request, state: CommercePlatformState, rows: T[]): { items: T[]; paging: { total: number; pages: number; page: number; per_page: number } } {
  const pageNo = req.query.page === undefined ? 1 : Number(req.query.page)
  const perPage = req.query.per_page === undefined ? DEFAULTS.perPage : Number(req.query.per_page)
  if (!Number.isInteger(pageNo) || pageNo < 1) throw new ApiError(400, 'INVALID_PARAMETER', 'page must be an integer >= 1')
  if (!Number.isInteger(perPage) || perPage < 1 || perPage > state.opts.maxPerPage) throw new ApiError(400, 'INVALID_PARAMETER', `per_page must be an integer in 1..${state.opts.maxPerPage}`)
  return {
    items: rows.slice((pageNo - 1) * perPage, pageNo * perPage),
    paging: { total: rows.length, pages: Math.ceil(rows.length / perPage), page: pageNo, per_page: perPage },
  }
}

function adminRouter(state: CommercePlatformState): express.Router {
  const admin = platformAdminRouter(state)
  admin.put('/anomalies', (req, res) => {
    state.setAnomalies(req.body ?? {})
    res.json(state.anomalies)
  })
  admin.put('/rate-limit', (req, res) => {
    const { requests, windowMs } = (req.body ?? {}) as { requests?: number; windowMs?: number }
    if (requests !== undefined) state.window.limit = requests
    if (windowMs !== undefined) state.window.windowMs = windowMs
    state.window.reset()
    res.json({ requests: state.window.limit, windowMs: state.window.windowMs })
  })
  admin.post('/app-keys', (req, res) => {
    const k = (req.body ?? {}) as SeedAppKey
    if (!k.appKey || !k.appToken) return void res.status(400).json({ error: 'appKey and appToken are required' })
    state.addAppKey(k)
    res.status(201).json({ appKey: k.appKey })
  })
  admin.post('/orders', (req, res) => {
    const { customer, items, placedAt } = (req.body ?? {}) as { customer?: number; items?: { sku: string; quantity: number }[]; placedAt?: string }
    try {
      const o = state.addOrder(Number(customer), items ?? [], placedAt ? Date.parse(placedAt) : undefined)
      res.status(201).json(state.renderOrder(state.order(o.seq)!))
    } catch (err) {
      res.status(400).json({ error: (err as Error).message })
    }
  })
  admin.post('/orders/:orderId/cancel', (req, res) => {
    try {
      const o = state.cancelOrder(seqOfOrderId(req.params.orderId))
      res.json(state.renderOrder(state.order(o.seq)!))
    } catch (err) {
      res.status(404).json({ error: (err as Error).message })
    }
  })
  return admin
}
