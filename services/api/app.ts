import express, { type Express, type Router } from 'express'
import qs from 'qs'
import { MAX_LIST_ITEMS } from './analytics/options.ts'
import type { Logger } from '../../common/logger.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { healthRouter, type ReadinessCheck } from './health.ts'
import { ingestRouter } from './ingest-routes.ts'
import { processRouter } from './process-routes.ts'
import type { ProcessingDeps } from '../../pipelines/processing/deps.ts'
import { errorHandler, notFound, unknownMethod } from './errors.ts'
import { requestObservability } from './request-observability.ts'
import { analyticsRouter, type AnalyticsDeps } from './analytics/router.ts'
import { customerRecordRouter } from './analytics/customer-record.ts'
import { clvValidationRouter } from './analytics/clv-validation.ts'
import { profilesRouter } from './profiles-routes.ts'
import { ResponseCache } from './analytics/cache.ts'
import { docsRouter } from './docs-routes.ts'
import { openApiDocument } from './openapi.ts'
import { JSON_BODY_LIMIT_MB } from './routes.ts'
import { createAuth, type AuthDeps } from './auth.ts'
import { keyLimiter, defaultRateLimits, demographicsLimiter } from './rate-limit.ts'
import { apiKeyRouter } from './api-key-routes.ts'
import { ApiKeyStore } from '../../common/store/api-keys.ts'
import { sessionRouter } from './session-routes.ts'

export interface ApiDeps {
  logger: Logger
  log: EventLog
  codec: EventCodec
  readiness: ReadinessCheck[]
  info?: Record<string, unknown>
  /** The store the ingest API reads tenants' currencies and orders' paid totals from (without it, only the stateless rules apply). */
  store?: Store
  /** Mounts the processing API (/api/v2/cdp/process/*) when given. */
  processing?: ProcessingDeps
  /** Mounts the analytics endpoints (/api/v2/cdp/analytics/*, /api/cdp/v2/customers) when given. */
  analytics?: AnalyticsDeps
  /**
   * Bearer authentication, tenant isolation and rate limits (docs/auth.md). When given, every
   * route except /health, /ready, /metrics, /openapi.json and /docs needs a token.
   */
  auth?: AuthDeps
  /** Tenant settings (/api/v2/cdp/tenants/{tenantId}/settings), behind auth. */
  tenantSettings?: Router
  /** Tenant integrations (/api/v2/tenant-integrations/*), behind auth; the router checks each resource's tenant. */
  integrations?: Router
  /** Audience-sync configurations (/api/v2/cdp/audience-syncs/*), behind auth. */
  audienceSyncs?: Router
  /** Platform webhooks (/webhooks/<provider>): public, verified by signature; mounted before the JSON parser (they read the raw body). */
  webhooks?: Router
  /** The web console (services/console: /console), public like /docs; it reads the API with a session cookie (needs auth). */
  console?: Router
  /** Express's `trust proxy` (CDP_TRUST_PROXY): `true`, a hop count, or addresses/subnets; default none. */
  trustProxy?: string
}

/** CDP_TRUST_PROXY as Express takes it: true/false, a hop count, or the addresses as given. */
export function trustProxySetting(v: string): boolean | number | string {
  if (v === 'true' || v === 'false') return v === 'true'
  return /^\d+$/.test(v) ? Number(v) : v
}

/** The Express query service. Routers per area; every error leaves as the common error body. */
export function createApp(deps: ApiDeps): Express {
  const app = express()
  app.disable('x-powered-by')
  if (deps.trustProxy !== undefined) app.set('trust proxy', trustProxySetting(deps.trustProxy))
  // qs, as Express's 'extended' parser, with room for the documented lists: by default qs turns
  // more than 20 repeated values (customer_ids=1&customer_ids=2&…) into an object and stops at 1,000
  // parameters, so a list the OpenAPI document allows (up to MAX_LIST_ITEMS) was refused.
  app.set('query parser', (query: string) => qs.parse(query, { arrayLimit: MAX_LIST_ITEMS, parameterLimit: 2 * MAX_LIST_ITEMS + 100, allowPrototypes: true }))
  app.use(...requestObservability(deps.logger))
  app.use(unknownMethod)
  // With auth: the per-IP limit and the token check come before the body is parsed (no 20 MB
  // parse for a caller without a key); the tenant check needs the body (ingest), so it comes after.
  if (deps.webhooks) app.use(deps.webhooks)
  const auth = deps.auth ? createAuth(deps.auth) : null
  const limits = deps.auth ? { ...defaultRateLimits('development'), now: deps.auth.now, ...deps.auth.rateLimits } : null
  if (auth && limits) {
    app.use(demographicsLimiter(limits))
    app.use(auth.authenticate)
  }
  app.use(express.json({ limit: `${JSON_BODY_LIMIT_MB}mb` }))
  app.use(healthRouter(deps.readiness, deps.info))
  app.use(docsRouter(openApiDocument)) // GET /openapi.json, /docs and its assets, public like /health
  if (deps.console) app.use(deps.console)
  if (auth) app.use(sessionRouter({ sessions: auth.sessions, resolve: auth.resolve, resolveSession: auth.resolveSession, revokeSession: auth.revokeSession, logger: deps.logger, now: deps.auth!.now }))
  if (auth && limits) {
    app.use(auth.authorize)
    app.use(keyLimiter(limits))
  }
  app.use(ingestRouter({ log: deps.log, codec: deps.codec, store: deps.store }))
  if (deps.tenantSettings) app.use(deps.tenantSettings)
  if (deps.processing) app.use(processRouter(deps.processing))
  if (deps.analytics) {
    // One answer cache for the analytics routers, so a profile change drops what they cached.
    const analytics = { ...deps.analytics, cache: deps.analytics.cache ?? new ResponseCache(deps.analytics.now) }
    app.use(analyticsRouter(analytics))
    app.use(customerRecordRouter(analytics))
    app.use(clvValidationRouter(analytics))
    app.use(profilesRouter({ store: analytics.store, log: deps.log, codec: deps.codec, logger: deps.logger, now: analytics.now, onChange: (tenantId) => analytics.cache.invalidateTenant(tenantId) }))
  }
  // Tenant API keys over HTTP, with the admin token (authorize refuses tenant keys here).
  if (auth && deps.auth!.keys instanceof ApiKeyStore) app.use(apiKeyRouter({ keys: deps.auth!.keys, logger: deps.logger, onRevoke: auth.clearCache }))
  if (deps.integrations) app.use(deps.integrations)
  if (deps.audienceSyncs) app.use(deps.audienceSyncs)
  app.use(notFound)
  app.use(errorHandler)
  return app
}

/** A role without the API still serves /health, /ready and /metrics. */
export function createHealthApp(readiness: ReadinessCheck[], info?: Record<string, unknown>): Express {
  const app = express()
  app.disable('x-powered-by')
  app.use(unknownMethod)
  app.use(healthRouter(readiness, info))
  app.use(notFound)
  return app
}
