/** The `audience-sync` role: the segment-changes consumer and the uploads to the ads platform (pipelines/audience-sync/run.ts). */
import type { Config } from '../../common/config.ts'
import type { Runtime } from '../../common/runtime/context.ts'
import type { SecretBox } from '../../common/secrets.ts'
import { runAudienceSync, type RunningAudienceSync } from '../../pipelines/audience-sync/run.ts'

/** The ads platform of the config, when one is configured (the role, and the token checks of the API). */
export function adsPlatform(config: Config) {
  return config.adsApiBaseUrl && config.adsAppAccessToken ? { baseUrl: config.adsApiBaseUrl, version: config.adsApiVersion, appAccessToken: config.adsAppAccessToken } : undefined
}

/** Null, with a warning, when no ads platform is configured. */
export async function start(rt: Runtime, secrets: SecretBox): Promise<RunningAudienceSync | null> {
  const ads = adsPlatform(rt.config)
  if (!ads) {
    rt.logger.warn('audience-sync role: no ads platform configured (CDP_ADS_API_BASE_URL, CDP_ADS_APP_ACCESS_TOKEN); nothing is synced')
    return null
  }
  const c = rt.config
  return runAudienceSync(rt, secrets, { ...ads, settleMs: c.audienceSyncWindowMs, pacingMs: c.audienceSyncPacingMs, statusIntervalMs: c.audienceStatusIntervalMs })
}
