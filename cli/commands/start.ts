import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { ConfigError, loadConfig, redactConfig, type Config } from '../../common/config.ts'
import { createLogger, type Logger } from '../../common/logger.ts'
import { openRuntime, type Runtime } from '../../common/runtime/context.ts'
import { runPipeline, type RunningPipeline } from '../../common/runtime/pipeline.ts'
import { projectionPipeline, PROJECTION_GROUP } from '../../pipelines/projection/pipeline.ts'
import { runFeatures, type RunningFeatures } from '../../pipelines/features/run.ts'
import { createRecomputeEngine } from '../../pipelines/features/recompute.ts'
import { invalidateProcessingResults, onTenantProcessed, processingEvents, startProcessingScheduler } from '../../pipelines/processing/index.ts'
import { ResponseCache } from '../../services/api/analytics/cache.ts'
import { devSecretFile, resolveSecretBox } from '../../common/secrets.ts'
import { runAudienceSync, type RunningAudienceSync } from '../../pipelines/audience-sync/run.ts'
import { AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import { audienceSyncRouter } from '../../services/api/audience-sync-routes.ts'
import { webhooksRouter } from '../../services/api/webhooks.ts'
import { integrationsRouter } from '../../services/api/integrations/index.ts'
import { runConnectors } from '../../pipelines/connectors/run.ts'
import { TOPICS } from '../../common/topics.ts'
import { groupLag } from '../../common/eventlog/port.ts'
import { ProcessingService } from '../../pipelines/processing/index.ts'
import { start as startAdsSimulator } from '../../services/simulators/ads-platform/index.ts'
import { start as startCommerceSimulator } from '../../services/simulators/commerce-platform/index.ts'
import { DEMOGRAPHICS_GROUP, demographicsPipeline } from '../../pipelines/demographics/pipeline.ts'
import { loadReferenceDirectory } from '../../pipelines/demographics/reference-loader.ts'
import { TenantSummaries } from '../../services/api/analytics/summary.ts'
import { ANALYTICS_ENDPOINTS, SUMMARY_QUERIES } from '../../services/api/analytics/endpoints.ts'
import { createApp, createHealthApp } from '../../services/api/app.ts'
import { tenantSettingsRouter } from '../../services/api/tenant-settings-routes.ts'
import { AsOfSnapshots, ReferenceSource } from '../../services/api/analytics/reference.ts'
import type { ReadinessCheck } from '../../services/api/health.ts'
import { DEMO_TENANT, streamDemoTenant } from '../../pipelines/ingest/demo.ts'
import { adminTokenFile } from '../../pipelines/ingest/sink.ts'
import { ApiKeyStore } from '../../common/store/api-keys.ts'
import type { AuthDeps } from '../../services/api/auth.ts'
import { defaultRateLimits } from '../../services/api/rate-limit.ts'
import { RUNTIME_FLAGS, configFlags, parse } from '../args.ts'

const FLAGS = {
  ...RUNTIME_FLAGS,
  demo: { type: 'boolean' },
  roles: { type: 'string' },
  'api-port': { type: 'string' },
  'api-host': { type: 'string' },
} as const

const HELP = `usage: cdp start [--demo] [--roles api,features,...] [--api-port N] [--runtime embedded|distributed] [--data-dir DIR]

Starts the roles of this process (default: all, in one process on the embedded runtime:
event log and ClickHouse (chdb) under ./data, API on http://127.0.0.1:8080).
--demo also generates a demo tenant (tenant 1) and streams its customers and orders, and prints
an API key for tenant 1 once. Every API route except /health, /ready, /metrics needs
Authorization: Bearer <key>; CDP_ADMIN_TOKEN reaches every tenant (required in production; in
development one is generated into <data-dir>/admin-token). See docs/auth.md.
SIGTERM or Ctrl-C drains: the batch in hand is written and committed before exit.
`

export interface Started {
  runtime: Runtime
  pipelines: RunningPipeline[]
  server: http.Server
  url: string
  stop(): Promise<void>
}

/**
 * The admin token: CDP_ADMIN_TOKEN; in production there is no default (the API refuses to start);
 * in development one is generated once into <dataDir>/admin-token (mode 0600) and reused.
 * The token itself is never logged, only the file that holds it.
 */
export function resolveAdminToken(config: Config, logger: Logger): string {
  if (config.adminToken) return config.adminToken
  if (config.nodeEnv === 'production') {
    throw new ConfigError([{ path: 'adminToken (CDP_ADMIN_TOKEN)', message: 'is required in production: the API does not start without an admin token (docs/auth.md)' }])
  }
  const file = adminTokenFile(config)
  const token = devSecretFile(file, (v) => v.length >= 16, () => randomBytes(32).toString('base64url'))
  logger.warn({ file }, 'CDP_ADMIN_TOKEN is not set: using the development admin token stored in this file; set CDP_ADMIN_TOKEN in production')
  return token
}

/** The composition root of a process: opens the runtime, starts its roles and the HTTP server. */
export async function startRoles(config: Config, logger: Logger): Promise<Started> {
  const roles = new Set(config.roles)
  // Before anything is opened: a production API without an admin token does not start.
  const adminToken = roles.has('api') ? resolveAdminToken(config, logger) : ''
  // Stored credentials (ads tokens, integrations) are encrypted under this keyring; production requires one.
  const secrets = roles.has('api') || roles.has('audience-sync') || roles.has('connectors') ? resolveSecretBox(config, logger) : null
  const apiUrl = roles.has('api') ? `http://${config.apiHost}:${config.apiPort}` : undefined
  const runtime = await openRuntime(config, logger, { apiUrl })
  const pipelines: RunningPipeline[] = []
  const deps = { log: runtime.log, codec: runtime.codec, logger, maxBatch: config.batchSize }
  let features: RunningFeatures | null = null
  if (roles.has('features')) {
    pipelines.push(await runPipeline(projectionPipeline(runtime.store, { name: config.consumerGroupPrefix + PROJECTION_GROUP }), deps))
    pipelines.push((features = await runFeatures(runtime)))
    const reference = config.demographicsReferenceDir ? loadReferenceDirectory(config.demographicsReferenceDir) : undefined
    if (reference) logger.info({ dir: config.demographicsReferenceDir, files: reference.source.files }, 'demographic reference data loaded')
    pipelines.push(await runPipeline(demographicsPipeline({ store: runtime.store, log: runtime.log, codec: runtime.codec, reference, name: config.consumerGroupPrefix + DEMOGRAPHICS_GROUP }), deps))
  }
  // The processing API's engine: a full recompute per tenant from the raw projections. After a
  // run, this process's feature consumer drops its cached model and rescores with the new one
  // (consumers in other processes pick it up on their next tick).
  const engine = createRecomputeEngine({
    store: runtime.store,
    logger,
    partitions: config.partitions,
    features: { horizonMonths: config.clvHorizonMonths, monthlyDiscountRate: config.clvMonthlyDiscountRate },
    clvModel: config.clvModel,
  })
  const processing = { store: runtime.store, engine, logger }
  // Analytics answers are cached per tenant; a processing run (or an invalidation) drops them.
  // Tenant summaries precompute the unfiltered overviews (refreshed as data moves and after each run).
  const cache = new ResponseCache(Date.now, config.analyticsCacheEntries)
  // Each tenant's reference date ("today" of its analytics) and the rows of other dates for as_of.
  const references = new ReferenceSource(runtime.store)
  const snapshots = new AsOfSnapshots(engine, logger)
  const summaries =
    roles.has('api') && config.analyticsSummaryIntervalMs > 0
      ? new TenantSummaries({
          store: runtime.store,
          logger,
          endpoints: ANALYTICS_ENDPOINTS,
          queries: SUMMARY_QUERIES,
          intervalMs: config.analyticsSummaryIntervalMs,
          onDataMoved: (tenantId) => cache.invalidateTenant(tenantId),
          reference: async (tenantId) => (await references.reference(tenantId)).ms,
        })
      : null
  const analytics = { store: runtime.store, logger, cache, summaries: summaries ?? undefined, references, snapshots }
  const unsubscribeCache = processingEvents.onCacheInvalidated((e) => analytics.cache.invalidateTenant(e.tenantId))
  const unsubscribe = onTenantProcessed((e) => {
    analytics.cache.invalidateTenant(e.tenantId)
    references.invalidate(e.tenantId)
    snapshots.invalidateTenant(e.tenantId)
    summaries?.invalidate(e.tenantId)
    summaries?.refresh(e.tenantId).catch((err) => logger.error({ err, tenantId: e.tenantId }, 'analytics summary refresh after a processing run failed'))
    if (!features) return
    features.engine.invalidateModel(e.tenantId)
    void features.tick().catch((err) => logger.error({ err }, 'rescoring after a processing run failed'))
  })
  const scheduler = roles.has('api') ? startProcessingScheduler({ ...processing }) : null
  summaries?.start()
  // Audience sync: the segment-changes consumer and the uploads to the ads platform.
  const ads = config.adsApiBaseUrl && config.adsAppAccessToken ? { baseUrl: config.adsApiBaseUrl, version: config.adsApiVersion, appAccessToken: config.adsAppAccessToken } : undefined
  let audienceSync: RunningAudienceSync | null = null
  if (roles.has('audience-sync')) {
    if (ads) {
      audienceSync = await runAudienceSync(runtime, secrets!, { ...ads, settleMs: config.audienceSyncWindowMs, pacingMs: config.audienceSyncPacingMs, statusIntervalMs: config.audienceStatusIntervalMs })
      pipelines.push(audienceSync)
    } else logger.warn('audience-sync role: no ads platform configured (CDP_ADS_API_BASE_URL, CDP_ADS_APP_ACCESS_TOKEN); nothing is synced')
  }
  const audienceStore = secrets ? new AudienceSyncStore(runtime.store, secrets) : null
  const audienceSyncs = roles.has('api') && audienceStore ? audienceSyncRouter({ store: audienceStore, logger, ads, onChange: () => void audienceSync?.cycle().catch(() => {}) }) : undefined
  const webhooks =
    roles.has('api') && audienceStore && config.adsAppSecret && config.adsWebhookVerifyToken
      ? webhooksRouter({ store: audienceStore, logger, appSecret: config.adsAppSecret, verifyToken: config.adsWebhookVerifyToken })
      : undefined
  if (roles.has('api') && !webhooks) logger.info('ads webhooks off: set CDP_ADS_APP_SECRET and CDP_ADS_WEBHOOK_VERIFY_TOKEN to receive delivery-status events')
  // Connectors: sync jobs from the external systems into the topics, then the tenant's analysis.
  const endpoints = {
    commercePlatform: config.connectorsCommercePlatformUrl,
    marketplace: config.connectorsMarketplaceUrl,
    searchAds: config.connectorsSearchAdsUrl,
    socialAds: config.connectorsSocialAdsUrl ?? config.adsApiBaseUrl ?? 'http://127.0.0.1:8089',
  }
  const processingService = new ProcessingService(processing)
  const triggerAnalysis = async (tenantId: number) => {
    // The run reads the raw projections: let the projection consume what the sync published first (bounded).
    const group = config.consumerGroupPrefix + PROJECTION_GROUP
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      const lags = await Promise.all([TOPICS.orders.name, TOPICS.customers.name].map((t) => groupLag(runtime.log, group, t)))
      if (lags.every((l) => l === 0)) break
      await new Promise((r) => setTimeout(r, 250))
    }
    const out = await processingService.process(tenantId, { analyses: ['rfm', 'clv', 'churn'], force: true, batch_size: 1000 })
    if (out.kind === 'failed') throw out.error
    if (out.kind === 'conflict') throw new Error(`a processing job is already running for tenant ${tenantId}; the analysis runs with it`)
  }
  let connectors: (RunningPipeline & { runOnce(): Promise<number> }) | null = null
  const allowPrivateWebhooks = config.connectorsAllowPrivateWebhooks ?? config.nodeEnv !== 'production'
  if (roles.has('connectors')) {
    connectors = await runConnectors(runtime, {
      secrets: secrets!,
      triggerAnalysis,
      endpoints,
      pollMs: config.connectorsPollMs,
      timeoutMs: config.connectorsSyncTimeoutMs,
      webhookSecret: config.connectorsWebhookSecret,
      allowPrivateWebhooks,
    })
    pipelines.push(connectors)
  }
  const integrations =
    roles.has('api') && secrets
      ? integrationsRouter({ store: runtime.store, secrets, endpoints, logger, allowPrivateWebhooks, onSyncQueued: () => void connectors?.runOnce().catch((err) => logger.error({ err }, 'sync run failed')) })
      : undefined

  const readiness: ReadinessCheck[] = [
    { name: 'store', check: async () => (await runtime.store.ping()).success },
    { name: 'pipelines', check: () => pipelines.every((p) => p.isRunning()) },
  ]
  const info = { runtime: config.runtime, roles: config.roles }
  const auth: AuthDeps = {
    adminToken,
    keys: new ApiKeyStore(runtime.store),
    rateLimits: {
      analyticsPerMinute: config.rateLimitAnalyticsPerMinute,
      demographicsPer15Min: config.rateLimitDemographicsPer15Min ?? defaultRateLimits(config.nodeEnv).demographicsPer15Min,
      operationsPerMinute: config.rateLimitOperationsPerMinute,
      jobsPerMinute: config.rateLimitJobsPerMinute,
    },
  }
  // A new reference date drops the tenant's cached answers and has this process's feature consumer
  // rescore now; consumers elsewhere follow at their next tick. Changes that arrive while a
  // rescoring runs are served by one more tick, not one each.
  const rescore = coalescedTicks(async (tenants) => {
    await features!.tick()
    for (const t of tenants) await summaries?.refresh(t)
  }, (err) => logger.error({ err }, 'rescoring after a settings change failed'))
  const tenantSettings = tenantSettingsRouter({
    store: runtime.store,
    logger,
    onChange: (tenantId, next, previous) => {
      if (next.reference_date === previous.reference_date) return // a name or currency: nothing ages differently
      references.invalidate(tenantId)
      analytics.cache.invalidateTenant(tenantId)
      snapshots.invalidateTenant(tenantId)
      summaries?.invalidate(tenantId)
      // Results of runs as of the previous reference are not served from the results cache.
      invalidateProcessingResults(processing, tenantId).catch((err) => logger.error({ err, tenantId }, 'dropping cached processing results failed'))
      if (!features) return
      features.engine.invalidateModel(tenantId)
      rescore.request(tenantId)
    },
  })
  const app = roles.has('api')
    ? createApp({ logger, log: runtime.log, codec: runtime.codec, store: runtime.store, readiness, info, processing, analytics, auth, audienceSyncs, webhooks, integrations, tenantSettings })
    : createHealthApp(readiness, info)
  const port = roles.has('api') ? config.apiPort : config.metricsPort
  const server = http.createServer(app)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, config.apiHost, resolve)
  })
  const addr = server.address() as AddressInfo
  const url = `http://${addr.address}:${addr.port}`
  logger.info({ url, roles: config.roles }, roles.has('api') ? 'API listening' : 'health and metrics listening')

  let stopping: Promise<void> | null = null
  const stop = () =>
    (stopping ??= (async () => {
      logger.info('draining: finishing batches in hand')
      await new Promise<void>((r) => server.close(() => r()))
      server.closeAllConnections()
      unsubscribe()
      unsubscribeCache()
      await scheduler?.stop()
      await summaries?.stop()
      for (const p of pipelines) await p.stop()
      await runtime.close()
      logger.info('stopped')
    })())
  return { runtime, pipelines, server, url, stop }
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, FLAGS)
  if (values.help) {
    process.stdout.write(HELP)
    return 0
  }
  let config = loadConfig(process.env, configFlags(values, Object.keys(FLAGS)))
  const logger = createLogger({ level: config.logLevel })
  // The demo without an ads platform configured: the simulator runs in this process.
  const adsSim = config.demo && config.roles.includes('audience-sync') && !config.adsApiBaseUrl ? await startDemoAdsPlatform() : null
  if (adsSim) config = { ...config, ...adsSim.config }
  // ... and the commerce platform, which tenant 2's integration syncs from.
  const shopSim = config.demo && config.roles.includes('connectors') && !process.env.CDP_CONNECTORS_COMMERCE_PLATFORM_URL ? await startCommerceSimulator({ customers: 300, appKeys: [DEMO_SHOP_KEY] }) : null
  if (shopSim) config = { ...config, connectorsCommercePlatformUrl: shopSim.url }
  logger.info({ config: redactConfig(config) }, 'starting')
  const started = await startRoles(config, logger)
  if (config.demo && config.roles.includes('api')) {
    // Printed once, on stdout as plain text, never into the JSON log.
    const created = await new ApiKeyStore(started.runtime.store).create(DEMO_TENANT, 'demo')
    process.stdout.write(
      [
        '',
        `Demo API key for tenant ${DEMO_TENANT} (shown once; key id ${created.key_id}):`,
        `  ${created.key}`,
        'Try:',
        `  curl -H "Authorization: Bearer ${created.key}" "${started.url}/api/v2/cdp/analytics/dashboard?tenant_id=${DEMO_TENANT}"`,
        '',
      ].join('\n') + '\n',
    )
  }
  if (adsSim && config.roles.includes('api')) {
    adsSim.sim.state.setWebhook(`${started.url}/webhooks/social-ads`, DEMO_ADS.verifyToken)
    const syncs = new AudienceSyncStore(started.runtime.store, resolveSecretBox(config, logger))
    if (!(await syncs.listConfigs(DEMO_TENANT)).length) {
      await syncs.createConfig({ tenant_id: DEMO_TENANT, name: 'Demo: Champions', segment: 'Champions', ad_account_id: DEMO_ADS.account, token: DEMO_ADS.token })
    }
    process.stdout.write(`Ads platform simulator at ${adsSim.sim.url}: tenant ${DEMO_TENANT}'s Champions sync to ${DEMO_ADS.account} (GET /api/v2/cdp/audience-syncs?tenant_id=${DEMO_TENANT})\n`)
  }
  if (shopSim && config.roles.includes('api')) await connectDemoShop(started.url, resolveAdminToken(config, logger), shopSim).catch((err) => logger.error({ err }, 'demo: the commerce integration failed'))
  const demo = config.demo ? streamDemoTenant(started.runtime, logger) : null
  await new Promise<void>((resolve) => {
    const onSignal = (sig: string) => {
      logger.info({ signal: sig }, 'shutting down')
      demo?.cancel()
      resolve()
    }
    process.once('SIGTERM', () => onSignal('SIGTERM'))
    process.once('SIGINT', () => onSignal('SIGINT'))
  })
  await demo?.done.catch(() => {})
  await started.stop()
  await adsSim?.sim.close()
  await shopSim?.close()
  return 0
}

/** The demo's tenant 2 sells through the simulated commerce platform: its integration and a first full sync. */
const DEMO_SHOP_TENANT = 2
const DEMO_SHOP_KEY = { appKey: 'appkey-demoshop-DEMO0001', appToken: 'demo-app-token-demoshop-0123456789abcdef' }

async function connectDemoShop(apiUrl: string, adminToken: string, sim: Awaited<ReturnType<typeof startCommerceSimulator>>): Promise<void> {
  const call = async (path: string, body: unknown) => {
    const res = await fetch(`${apiUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const json = (await res.json()) as { data?: { id?: number; sync_id?: string }; error?: unknown }
    if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${JSON.stringify(json.error)}`)
    return json.data!
  }
  const key = DEMO_SHOP_KEY
  const created = await call('/api/v2/tenant-integrations', {
    tenant_id: DEMO_SHOP_TENANT, integration_type: 'commerce_platform', account_name: sim.accountName, environment: sim.environment,
    app_key: key.appKey, app_token: key.appToken, configuration: { sync_interval: 'hourly' },
  })
  const sync = await call(`/api/v2/tenant-integrations/${created.id}/sync`, { sync_type: 'full', entities: ['customers', 'orders'] })
  process.stdout.write(`Commerce platform simulator at ${sim.url}: tenant ${DEMO_SHOP_TENANT}'s integration ${created.id} is syncing (sync ${sync.sync_id})\n`)
}

/** The demo's simulated ads platform: one token with the three permissions, one ad account. */
const DEMO_ADS = { token: 'EAAB-demo-ads-token', account: 'act_1000000001', appSecret: 'demo-app-secret', verifyToken: 'demo-verify-token' } as const

async function startDemoAdsPlatform() {
  const sim = await startAdsSimulator({ tokens: [DEMO_ADS.token], adAccounts: [DEMO_ADS.account], appSecret: DEMO_ADS.appSecret, webhookVerifyToken: DEMO_ADS.verifyToken })
  return {
    sim,
    config: { adsApiBaseUrl: sim.url, adsAppAccessToken: sim.appAccessToken, adsAppSecret: DEMO_ADS.appSecret, adsWebhookVerifyToken: DEMO_ADS.verifyToken },
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
