/**
 * The lanes' services of a process, built once: the API's routers and the demo call the same
 * instances, so a sync queued by either wakes this process's connectors runner and a changed
 * audience sync runs a cycle of this process's syncer.
 */
import type { Runtime } from '../../common/runtime/context.ts'
import type { SecretBox } from '../../common/secrets.ts'
import type { RunningAudienceSync } from '../../pipelines/audience-sync/run.ts'
import { AudienceSyncService } from '../../pipelines/audience-sync/service.ts'
import { AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import { IntegrationService } from '../../pipelines/connectors/service.ts'
import { adsPlatform } from './audience-sync.ts'
import { allowPrivateWebhooks, connectorEndpoints, type RunningConnectors } from './connectors.ts'

export interface LaneServices {
  integrations: IntegrationService
  audienceSyncs: AudienceSyncService
}

export function laneServices(rt: Runtime, secrets: SecretBox, running: { audienceSync: RunningAudienceSync | null; connectors: RunningConnectors | null }): LaneServices {
  const { config, logger } = rt
  return {
    integrations: new IntegrationService({
      store: rt.store,
      secrets,
      endpoints: connectorEndpoints(config),
      logger,
      allowPrivateWebhooks: allowPrivateWebhooks(config),
      onSyncQueued: () => void running.connectors?.runOnce().catch((err) => logger.error({ err }, 'sync run failed')),
    }),
    audienceSyncs: new AudienceSyncService({
      store: new AudienceSyncStore(rt.store, secrets),
      logger,
      ads: adsPlatform(config),
      onChange: () => void running.audienceSync?.cycle().catch(() => {}),
    }),
  }
}
