import type { Runtime } from '../../common/runtime/context.ts'
import { createRecomputeEngine } from '../../pipelines/features/recompute.ts'
import type { ProcessingDeps } from '../../pipelines/processing/index.ts'

/**
 * The processing engine of a process (the API's processing routes and scheduler, the connectors'
 * analysis after a sync): a full recompute per tenant from the raw projections.
 */
export function processingDeps(rt: Runtime): ProcessingDeps {
  const c = rt.config
  const engine = createRecomputeEngine({
    store: rt.store,
    logger: rt.logger,
    partitions: c.partitions,
    features: { horizonMonths: c.clvHorizonMonths, monthlyDiscountRate: c.clvMonthlyDiscountRate },
    clvModel: c.clvModel,
  })
  return { store: rt.store, engine, logger: rt.logger }
}
