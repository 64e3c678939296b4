/**
 * The `features` role: the raw projection (orders and customers → ClickHouse), the feature
 * consumer with its ticks, the demographics enrichment and the identity resolver. After a processing run in this
 * process, the feature consumer drops the tenant's cached model and rescores with the new one
 * (consumers in other processes pick it up on their next tick).
 */
import type { Runtime } from '../../common/runtime/context.ts'
import { runPipeline, type RunningPipeline } from '../../common/runtime/pipeline.ts'
import { DEMOGRAPHICS_GROUP, demographicsPipeline } from '../../pipelines/demographics/pipeline.ts'
import { loadReferenceDirectory } from '../../pipelines/demographics/reference-loader.ts'
import { runFeatures, type RunningFeatures } from '../../pipelines/features/run.ts'
import { onTenantProcessed, processingEvents } from '../../pipelines/processing/index.ts'
import { projectionPipeline, PROJECTION_GROUP } from '../../pipelines/projection/pipeline.ts'
import { runIdentity } from '../../pipelines/identity/run.ts'

export interface RunningFeaturesRole {
  features: RunningFeatures
  /** In stop order: projection, features, demographics, the identity resolver. */
  pipelines: RunningPipeline[]
  /** Stops listening to processing runs (the pipelines stop on their own). */
  detach(): void
}

export async function start(rt: Runtime): Promise<RunningFeaturesRole> {
  const { config, logger } = rt
  const deps = { log: rt.log, codec: rt.codec, logger, maxBatch: config.batchSize }
  const projection = await runPipeline(projectionPipeline(rt.store, { name: config.consumerGroupPrefix + PROJECTION_GROUP }), { ...deps, maxBatch: config.projectionBatchSize })
  const features = await runFeatures(rt)
  const reference = config.demographicsReferenceDir ? loadReferenceDirectory(config.demographicsReferenceDir) : undefined
  if (reference) logger.info({ dir: config.demographicsReferenceDir, files: reference.source.files }, 'demographic reference data loaded')
  const demographics = await runPipeline(demographicsPipeline({ store: rt.store, log: rt.log, codec: rt.codec, reference, name: config.consumerGroupPrefix + DEMOGRAPHICS_GROUP }), deps)
  // Profiles moved: cached answers of the tenant (the customer list's profile_id) are dropped in this process.
  const identity = runIdentity(rt, { intervalMs: config.identityIntervalMs, onProfilesChanged: (tenantId) => processingEvents.emitCacheInvalidated({ tenantId, at: Date.now() }) })
  const detach = onTenantProcessed((e) => {
    features.engine.invalidateModel(e.tenantId)
    void features.tick().catch((err) => logger.error({ err }, 'rescoring after a processing run failed'))
  })
  return { features, pipelines: [projection, features, demographics, identity], detach }
}
