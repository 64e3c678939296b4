/**
 * The `connectors` role: runs the queued syncs from the external systems into the topics
 * (pipelines/connectors/run.ts); after a sync published a tenant's events, the projection
 * catches up and the tenant's analysis runs.
 */
import type { Config } from '../../common/config.ts'
import type { Runtime } from '../../common/runtime/context.ts'
import { waitForConsumer } from '../../common/runtime/lag.ts'
import type { SecretBox } from '../../common/secrets.ts'
import { TOPICS } from '../../common/topics.ts'
import { runConnectors } from '../../pipelines/connectors/run.ts'
import type { ConnectorEndpoints } from '../../pipelines/connectors/sources/types.ts'
import { ProcessingService, type ProcessingDeps } from '../../pipelines/processing/index.ts'
import { PROJECTION_GROUP } from '../../pipelines/projection/pipeline.ts'

export type RunningConnectors = Awaited<ReturnType<typeof runConnectors>>

/** Base URLs of the external systems (the role, and the credential checks of the API). */
export function connectorEndpoints(config: Config): ConnectorEndpoints {
  return {
    commercePlatform: config.connectorsCommercePlatformUrl,
    marketplace: config.connectorsMarketplaceUrl,
    searchAds: config.connectorsSearchAdsUrl,
    socialAds: config.connectorsSocialAdsUrl ?? config.adsApiBaseUrl ?? 'http://127.0.0.1:8089',
  }
}

/** Webhook notifications to private addresses: allowed in development, refused in production unless configured. */
export const allowPrivateWebhooks = (config: Config): boolean => config.connectorsAllowPrivateWebhooks ?? config.nodeEnv !== 'production'

export async function start(rt: Runtime, secrets: SecretBox, processing: ProcessingDeps): Promise<RunningConnectors> {
  const c = rt.config
  const analyses = new ProcessingService(processing)
  const triggerAnalysis = async (tenantId: number) => {
    // The run reads the raw projections: let the projection consume what the sync published first (bounded).
    await waitForConsumer(rt.log, c.consumerGroupPrefix + PROJECTION_GROUP, [TOPICS.orders.name, TOPICS.customers.name], { timeoutMs: 60_000 })
    const out = await analyses.process(tenantId, { analyses: ['rfm', 'clv', 'churn'], force: true, batch_size: 1000 })
    if (out.kind === 'failed') throw out.error
    if (out.kind === 'conflict') throw new Error(`a processing job is already running for tenant ${tenantId}; the analysis runs with it`)
  }
  return runConnectors(rt, {
    secrets,
    triggerAnalysis,
    endpoints: connectorEndpoints(c),
    pollMs: c.connectorsPollMs,
    timeoutMs: c.connectorsSyncTimeoutMs,
    webhookSecret: c.connectorsWebhookSecret,
    allowPrivateWebhooks: allowPrivateWebhooks(c),
    mail: c.smtpUrl ? { url: c.smtpUrl, from: c.smtpFrom } : null,
  })
}
