/**
 * The `api` role: the Express query service with its routers, the processing scheduler, and the
 * analytics answers' caches, kept fresh as processing runs and tenant settings change.
 */
import type { Runtime } from '../../common/runtime/context.ts'
import type { RunningPipeline } from '../../common/runtime/pipeline.ts'
import type { SecretBox } from '../../common/secrets.ts'
import { ApiKeyStore } from '../../common/store/api-keys.ts'
import { SessionRevocations } from '../../common/store/session-revocations.ts'
import type { TenantSettings } from '../../common/store/tenant-settings.ts'
import type { RunningFeatures } from '../../pipelines/features/run.ts'
import { AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import { invalidateProcessingResults, onTenantProcessed, processingEvents, startProcessingScheduler, type ProcessingDeps } from '../../pipelines/processing/index.ts'
import { ResponseCache } from '../../services/api/analytics/cache.ts'
import { ANALYTICS_ENDPOINTS, SUMMARY_QUERIES } from '../../services/api/analytics/endpoints.ts'
import { AsOfSnapshots, ReferenceSource } from '../../services/api/analytics/reference.ts'
import { addColumnarAnswers, TenantSummaries } from '../../services/api/analytics/summary.ts'
import { BodyWorkers } from '../../services/api/analytics/body-workers.ts'
import { createApp } from '../../services/api/app.ts'
import { audienceSyncRouter } from '../../services/api/audience-sync-routes.ts'
import type { AuthDeps } from '../../services/api/auth.ts'
import { integrationsRouter } from '../../services/api/integrations/index.ts'
import { defaultRateLimits, replicaShare } from '../../services/api/rate-limit.ts'
import { tenantSettingsRouter } from '../../services/api/tenant-settings-routes.ts'
import { webhooksRouter } from '../../services/api/webhooks.ts'
import { consoleRouter } from '../../services/console/server.ts'
import { listen, processInfo, readiness, type RunningHttp } from './http.ts'
import type { LaneServices } from './services.ts'

export interface ApiRoleDeps {
  adminToken: string
  secrets: SecretBox
  services: LaneServices
  processing: ProcessingDeps
  /** This process's feature consumer, rescored when a tenant's reference date changes. */
  features: RunningFeatures | null
  /** The process's pipelines, for /ready. */
  pipelines: RunningPipeline[]
}

export async function start(rt: Runtime, deps: ApiRoleDeps): Promise<RunningHttp> {
  const { config, logger } = rt
  const analytics = analyticsCaches(rt, deps.processing)
  const scheduler = startProcessingScheduler({ ...deps.processing })
  analytics.summaries?.start()
  const app = createApp({
    logger,
    log: rt.log,
    codec: rt.codec,
    store: rt.store,
    readiness: readiness(rt, deps.pipelines),
    info: processInfo(rt),
    processing: deps.processing,
    analytics: analytics.deps,
    auth: authDeps(rt, deps.adminToken),
    audienceSyncs: audienceSyncRouter(deps.services.audienceSyncs),
    webhooks: adsWebhooks(rt, deps.secrets),
    integrations: integrationsRouter(deps.services.integrations),
    tenantSettings: tenantSettingsRouter({ store: rt.store, logger, onChange: referenceDateChanges(rt, deps, analytics) }),
    console: consoleRouter(),
    trustProxy: config.trustProxy,
  })
  const http = await listen(rt, app, config.apiPort, 'API listening').catch(async (err: unknown) => {
    analytics.detach()
    await scheduler.stop()
    await analytics.summaries?.stop()
    throw err
  })
  return {
    ...http,
    stop: async () => {
      await http.stop()
      analytics.detach()
      await scheduler.stop()
      await analytics.summaries?.stop()
    },
  }
}

function authDeps(rt: Runtime, adminToken: string): AuthDeps {
  const c = rt.config
  return {
    adminToken,
    keys: new ApiKeyStore(rt.store),
    sessionTtlMs: c.consoleSessionHours * 3_600_000,
    sessionSecureCookie: c.consoleSecureCookie,
    sessionRevocations: new SessionRevocations(rt.store),
    rateLimits: replicaShare(
      {
        analyticsPerMinute: c.rateLimitAnalyticsPerMinute,
        demographicsPer15Min: c.rateLimitDemographicsPer15Min ?? defaultRateLimits(c.nodeEnv).demographicsPer15Min,
        operationsPerMinute: c.rateLimitOperationsPerMinute,
        jobsPerMinute: c.rateLimitJobsPerMinute,
      },
      c.apiReplicas,
    ),
  }
}

/** The ads platform's delivery-status webhook, when its app secret and verify token are configured. */
function adsWebhooks(rt: Runtime, secrets: SecretBox) {
  const c = rt.config
  if (c.adsAppSecret && c.adsWebhookVerifyToken) return webhooksRouter({ store: new AudienceSyncStore(rt.store, secrets), logger: rt.logger, appSecret: c.adsAppSecret, verifyToken: c.adsWebhookVerifyToken })
  rt.logger.info('ads webhooks off: set CDP_ADS_APP_SECRET and CDP_ADS_WEBHOOK_VERIFY_TOKEN to receive delivery-status events')
  return undefined
}

type AnalyticsCaches = ReturnType<typeof analyticsCaches>

/**
 * Analytics answers are cached per tenant, with each tenant's reference date ("today" of its
 * analytics) and the rows of other dates for as_of; tenant summaries precompute the unfiltered
 * overviews. A processing run (or a cache invalidation) drops the tenant's entries.
 */
function analyticsCaches(rt: Runtime, processing: ProcessingDeps) {
  const { config, logger } = rt
  const cache = new ResponseCache(Date.now, config.analyticsCacheEntries)
  const references = new ReferenceSource(rt.store)
  const snapshots = new AsOfSnapshots(processing.engine, logger)
  // Declared before the summaries, which tell it of each summary they keep.
  let workers: BodyWorkers | null = null
  const summaries =
    config.analyticsSummaryIntervalMs > 0
      ? new TenantSummaries({
          store: rt.store,
          logger,
          endpoints: ANALYTICS_ENDPOINTS,
          queries: SUMMARY_QUERIES,
          intervalMs: config.analyticsSummaryIntervalMs,
          columns: config.analyticsColumns,
          onDataMoved: (tenantId) => cache.invalidateTenant(tenantId),
          reference: async (tenantId) => (await references.reference(tenantId)).ms,
          onKept: (tenantId, s) => workers?.publish(tenantId, s),
          onDropped: (tenantId) => workers?.drop(tenantId),
        })
      : null
  if (summaries && config.analyticsColumns && config.analyticsWorkers > 0) {
    workers = new BodyWorkers({ size: config.analyticsWorkers, store: rt.store, logger, logLevel: config.logLevel, columnsOf: (t) => summaries.columns(t), onColumnar: addColumnarAnswers })
  }
  const invalidate = (tenantId: number) => {
    cache.invalidateTenant(tenantId)
    references.invalidate(tenantId)
    snapshots.invalidateTenant(tenantId)
    summaries?.invalidate(tenantId)
  }
  const offCache = processingEvents.onCacheInvalidated((e) => cache.invalidateTenant(e.tenantId))
  const offProcessed = onTenantProcessed((e) => {
    invalidate(e.tenantId)
    summaries?.refresh(e.tenantId).catch((err) => logger.error({ err, tenantId: e.tenantId }, 'analytics summary refresh after a processing run failed'))
  })
  return {
    deps: { store: rt.store, logger, cache, summaries: summaries ?? undefined, references, snapshots, workers: workers ?? undefined },
    summaries,
    invalidate,
    detach: () => {
      offProcessed()
      offCache()
      void workers?.close()
    },
  }
}

/**
 * A new reference date drops the tenant's cached answers and processing results and has this
 * process's feature consumer rescore now; consumers elsewhere follow at their next tick. Changes
 * that arrive while a rescoring runs are served by one more tick, not one each.
 */
function referenceDateChanges(rt: Runtime, deps: ApiRoleDeps, analytics: AnalyticsCaches) {
  const { logger } = rt
  const features = deps.features
  const rescore = coalescedTicks(async (tenants) => {
    await features!.tick()
    for (const t of tenants) await analytics.summaries?.refresh(t)
  }, (err) => logger.error({ err }, 'rescoring after a settings change failed'))
  return (tenantId: number, next: TenantSettings, previous: TenantSettings) => {
    if (next.reference_date === previous.reference_date) return // a name or currency: nothing ages differently
    analytics.invalidate(tenantId)
    // Results of runs as of the previous reference are not served from the results cache.
    invalidateProcessingResults(deps.processing, tenantId).catch((err) => logger.error({ err, tenantId }, 'dropping cached processing results failed'))
    if (!features) return
    features.engine.invalidateModel(tenantId)
    rescore.request(tenantId)
  }
}

/**
 * Runs `fn` for the tenants requested, at most one run at a time: requests made while it runs
 * are gathered into the next run.
 */
export function coalescedTicks(fn: (tenants: number[]) => Promise<unknown>, onError: (err: unknown) => void): { request(tenantId: number): void } {
  let running = false
  let pending = new Set<number>()
  const loop = async () => {
    running = true
    while (pending.size) {
      const tenants = [...pending]
      pending = new Set()
      await fn(tenants).catch(onError)
    }
    running = false
  }
  return {
    request(tenantId) {
      pending.add(tenantId)
      if (!running) void loop()
    },
  }
}
