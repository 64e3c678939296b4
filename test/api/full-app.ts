import type { Express } from 'express'
import type { Store } from '../../common/store/clickhouse.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { ApiKeyStore } from '../../common/store/api-keys.ts'
import { parseKeyring } from '../../common/secrets.ts'
import type { Analysis, ProcessingEngine, ProcessingResults, RunOptions } from '../../pipelines/features/analyses.ts'
import { AudienceSyncStore } from '../../pipelines/audience-sync/store.ts'
import type { ConnectorEndpoints } from '../../pipelines/connectors/sources/types.ts'
import { createApp } from '../../services/api/app.ts'
import { audienceSyncRouter } from '../../services/api/audience-sync-routes.ts'
import { integrationsRouter } from '../../services/api/integrations/index.ts'
import { tenantSettingsRouter } from '../../services/api/tenant-settings-routes.ts'
import { webhooksRouter } from '../../services/api/webhooks.ts'
import { silentLogger } from '../helpers.ts'

/** The API with every optional router mounted (what the `api` role builds), for the route and answer checks. */

export const ADMIN = 'test-admin-token-documented-0123'
export const APP_SECRET = 'app-secret-documented-tests'
export const VERIFY_TOKEN = 'verify-token-documented-tests'
export const UNKNOWN_TENANT = 404_404
const KEYRING = `k1:${'3c'.repeat(32)}`

/** An engine that knows every tenant but UNKNOWN_TENANT and answers each analysis at once. */
export class InstantEngine implements ProcessingEngine {
  async tenantExists(tenantId: number): Promise<boolean> {
    return tenantId !== UNKNOWN_TENANT
  }
  async run(_tenantId: number, opts: RunOptions): Promise<ProcessingResults> {
    opts.onProgress?.(10, 10)
    const all: Required<Omit<ProcessingResults, 'metadata'>> = {
      rfm: { total_processed: 10, segments: [{ segment: 'Champions', count: 10, percentage: 100 }], processing_time: 0.01, errors: 0 },
      clv: { processed: 10, avg_clv: 1234.5, processing_time: 0.01 },
      churn: { processed: 10, at_risk: 2, churn_rate: 0.2, processing_time: 0.01 },
    }
    return { metadata: { reference_date: '2025-06-01', reference_date_setting: 'now', reference_date_source: 'setting' }, ...Object.fromEntries(opts.analyses.map((a: Analysis) => [a, all[a]])) }
  }
}

export interface FullAppOptions {
  store: Store
  /** The platforms integrations are verified with (default: nothing listens there). */
  endpoints?: ConnectorEndpoints
  /** The ads platform audience-sync tokens are checked with (default: not checked). */
  ads?: { baseUrl: string; appAccessToken: string }
}

export function fullApp(o: FullAppOptions): Express {
  const none = 'http://127.0.0.1:9'
  const secrets = parseKeyring(KEYRING)
  const syncStore = new AudienceSyncStore(o.store, secrets)
  return createApp({
    logger: silentLogger,
    log: {} as EventLog,
    codec: {} as EventCodec,
    store: o.store,
    readiness: [{ name: 'store', check: async () => (await o.store.ping()).success }],
    processing: { store: o.store, engine: new InstantEngine(), logger: silentLogger, heartbeatMs: 50 },
    analytics: { store: o.store, logger: silentLogger },
    auth: { adminToken: ADMIN, keys: new ApiKeyStore(o.store), rateLimits: { operationsPerMinute: 1_000_000, jobsPerMinute: 1_000_000 } },
    tenantSettings: tenantSettingsRouter({ store: o.store, logger: silentLogger }),
    integrations: integrationsRouter({
      store: o.store,
      secrets,
      endpoints: o.endpoints ?? { commercePlatform: none, marketplace: none, searchAds: none, socialAds: none },
      logger: silentLogger,
      timeoutMs: 2000,
    }),
    audienceSyncs: audienceSyncRouter({ store: syncStore, logger: silentLogger, ...(o.ads ? { ads: o.ads } : {}) }),
    webhooks: webhooksRouter({ store: syncStore, logger: silentLogger, appSecret: APP_SECRET, verifyToken: VERIFY_TOKEN }),
  })
}
