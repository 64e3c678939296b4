/**
 * What `cdp start --demo` adds to the roles: the simulated ads, commerce and marketplace platforms
 * (in this process unless real ones are configured), an API key for tenant 1 printed once, tenant
 * 1's Champions audience sync, and tenant 2's commerce-platform and marketplace integrations with a
 * first full sync each. Tenant 2's two platforms serve one shop's buyers (a share of them on both,
 * their details written another way): its profiles show the identity resolution at work.
 * It calls the lanes' services, as the API does; never the API itself.
 */
import type { Config } from '../common/config.ts'
import type { Logger } from '../common/logger.ts'
import type { Runtime } from '../common/runtime/context.ts'
import { ApiKeyStore } from '../common/store/api-keys.ts'
import { ALL_TENANTS } from '../common/tenant-scope.ts'
import { DEMO_TENANT } from '../pipelines/ingest/demo.ts'
import { start as startAdsSimulator } from '../services/simulators/ads-platform/index.ts'
import { start as startCommerceSimulator } from '../services/simulators/commerce-platform/index.ts'
import { DEFAULTS as MARKETPLACE_DEFAULTS, start as startMarketplaceSimulator } from '../services/simulators/marketplace/index.ts'
import type { LaneServices } from './roles/services.ts'

/** The demo's simulated ads platform: one token with the three permissions, one ad account. */
const DEMO_ADS = { token: 'EAAB-demo-ads-token', account: 'act_1000000001', appSecret: 'demo-app-secret', verifyToken: 'demo-verify-token' } as const
/** The demo's tenant 2 sells through the simulated commerce platform. */
const DEMO_SHOP_TENANT = 2
const DEMO_SHOP_KEY = { appKey: 'appkey-demoshop-DEMO0001', appToken: 'demo-app-token-demoshop-0123456789abcdef' }
/** Tenant 2's buyers: 300 people, 40 % of them also on the marketplace. */
const DEMO_POPULATION = { customers: 300, seed: 'demo-shop', overlap: 0.4 } as const

export interface DemoSimulators {
  /** The config pointed at the simulators started. */
  config: Config
  ads: Awaited<ReturnType<typeof startAdsSimulator>> | null
  shop: Awaited<ReturnType<typeof startCommerceSimulator>> | null
  market: Awaited<ReturnType<typeof startMarketplaceSimulator>> | null
  close(): Promise<void>
}

/** The simulators the demo's roles need and that are not configured. */
export async function startDemoSimulators(config: Config): Promise<DemoSimulators> {
  const ads =
    config.demo && config.roles.includes('audience-sync') && !config.adsApiBaseUrl
      ? await startAdsSimulator({ tokens: [DEMO_ADS.token], adAccounts: [DEMO_ADS.account], appSecret: DEMO_ADS.appSecret, webhookVerifyToken: DEMO_ADS.verifyToken })
      : null
  // The demo's tenants are small and move all the time: summaries are checked every 2 s (a check reads three change stamps; a refresh follows only a change) and the
  // feature role ticks every 10 s, so the overviews show new data at once (a deployment's
  // defaults are 60 s for both; a tick over a million customers takes tens of seconds).
  if (config.demo && !process.env.CDP_ANALYTICS_SUMMARY_INTERVAL_MS) config = { ...config, analyticsSummaryIntervalMs: 2_000 }
  if (config.demo && !process.env.CDP_FEATURES_TICK_MS) config = { ...config, featuresTickMs: 10_000 }
  if (config.demo && !process.env.CDP_FEATURES_CATCH_UP_TICKS) config = { ...config, featuresCatchUpTicks: true }
  if (ads) config = { ...config, adsApiBaseUrl: ads.url, adsAppAccessToken: ads.appAccessToken, adsAppSecret: DEMO_ADS.appSecret, adsWebhookVerifyToken: DEMO_ADS.verifyToken }
  // ... and the commerce platform, which tenant 2's integration syncs from.
  const shop = config.demo && config.roles.includes('connectors') && !process.env.CDP_CONNECTORS_COMMERCE_PLATFORM_URL ? await startCommerceSimulator({ ...DEMO_POPULATION, appKeys: [DEMO_SHOP_KEY] }) : null
  if (shop) config = { ...config, connectorsCommercePlatformUrl: shop.url }
  // ... and the marketplace, the other side of the same shop's buyers.
  const market = shop && !process.env.CDP_CONNECTORS_MARKETPLACE_URL ? await startMarketplaceSimulator(DEMO_POPULATION) : null
  if (market) config = { ...config, connectorsMarketplaceUrl: market.url }
  return {
    config,
    ads,
    shop,
    market,
    close: async () => {
      await ads?.close()
      await shop?.close()
      await market?.close()
    },
  }
}

/** The demo's tenants, once the roles run: printed on stdout as plain text, never into the JSON log. */
export async function seedDemo(started: { runtime: Runtime; url: string; services: LaneServices | null }, config: Config, logger: Logger, sims: DemoSimulators): Promise<void> {
  const api = config.roles.includes('api')
  if (api) {
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
  const services = started.services
  if (sims.ads && api && services) {
    sims.ads.state.setWebhook(`${started.url}/webhooks/social-ads`, DEMO_ADS.verifyToken)
    const syncs = services.audienceSyncs
    if (!(await syncs.list(ALL_TENANTS, DEMO_TENANT)).length) {
      await syncs.create(ALL_TENANTS, { tenant_id: DEMO_TENANT, name: 'Demo: Champions', segment: 'Champions', ad_account_id: DEMO_ADS.account, access_token: DEMO_ADS.token })
    }
    process.stdout.write(`Ads platform simulator at ${sims.ads.url}: tenant ${DEMO_TENANT}'s Champions sync to ${DEMO_ADS.account} (GET /api/v2/cdp/audience-syncs?tenant_id=${DEMO_TENANT})\n`)
  }
  const shop = sims.shop
  const market = sims.market
  const tenant = { tenant_id: DEMO_SHOP_TENANT, configuration: { sync_interval: 'hourly' as const } }
  if (shop && services) {
    const input = { ...tenant, integration_type: 'commerce_platform' as const, account_name: shop.accountName, environment: shop.environment, app_key: DEMO_SHOP_KEY.appKey, app_token: DEMO_SHOP_KEY.appToken }
    await connectDemoIntegration(services, input, `Commerce platform simulator at ${shop.url}`).catch((err) => logger.error({ err }, 'demo: the commerce integration failed'))
  }
  if (market && services) {
    const input = { ...tenant, integration_type: 'marketplace' as const, client_id: MARKETPLACE_DEFAULTS.clientId, client_secret: MARKETPLACE_DEFAULTS.clientSecret, redirect_uri: MARKETPLACE_DEFAULTS.redirectUri }
    const note = `; the buyers on both platforms become one profile each (GET /api/cdp/v2/customers?tenant_id=${DEMO_SHOP_TENANT})`
    await connectDemoIntegration(services, input, `Marketplace simulator at ${market.url}`, note).catch((err) => logger.error({ err }, 'demo: the marketplace integration failed'))
  }
}

/** One of tenant 2's integrations (its credentials checked with the simulator, as any) and a first full sync of its customers and orders. */
async function connectDemoIntegration(services: LaneServices, input: Parameters<LaneServices['integrations']['create']>[1], where: string, note = ''): Promise<void> {
  // A demo started again on the same data finds its integration: it reuses it and only syncs again.
  const { integrations } = await services.integrations.list(ALL_TENANTS, DEMO_SHOP_TENANT)
  const existing = integrations.find((i) => i.integration_type === input.integration_type && i.deleted_at === null)
  const integration = existing ?? (await services.integrations.create(ALL_TENANTS, input)).integration
  const sync = await services.integrations.queueSync(ALL_TENANTS, integration.id, { sync_type: existing ? 'incremental' : 'full', entities: ['customers', 'orders'] })
  process.stdout.write(`${where}: tenant ${DEMO_SHOP_TENANT}'s integration ${integration.id} is syncing (sync ${sync.job.sync_id})${note}\n`)
}
