import type { Runtime } from '../../common/runtime/context.ts'
import { runPipeline, type RunningPipeline } from '../../common/runtime/pipeline.ts'
import { FeatureEngine, FEATURES_GROUP } from './engine.ts'
import { featureTicks } from './metrics.ts'

export interface RunningFeatures extends RunningPipeline {
  engine: FeatureEngine
  /** Runs one tick now (also what the timer does). */
  tick(): ReturnType<FeatureEngine['tick']>
}

/** Composition of the feature role: the consumer plus its wall-clock punctuator. */
export async function runFeatures(rt: Runtime, opts: { now?: () => number; tickMs?: number; name?: string } = {}): Promise<RunningFeatures> {
  const c = rt.config
  const engine = new FeatureEngine({
    store: rt.store,
    log: rt.log,
    codec: rt.codec,
    logger: rt.logger,
    partitions: c.partitions,
    name: opts.name ?? c.consumerGroupPrefix + FEATURES_GROUP,
    now: opts.now,
    features: { horizonMonths: c.clvHorizonMonths, monthlyDiscountRate: c.clvMonthlyDiscountRate },
    clvModel: c.clvModel,
    refitIntervalMs: c.clvRefitIntervalMs,
    boundaryMaxAgeMs: Math.floor((opts.tickMs ?? c.featuresTickMs) / 2),
  })
  const logger = rt.logger.child({ pipeline: engine.name })
  const pipeline = await runPipeline(engine.definition(), { log: rt.log, codec: rt.codec, logger: rt.logger, maxBatch: c.batchSize })
  const tick = async () => {
    const end = featureTicks.startTimer()
    const r = await engine.tick()
    end()
    if (r.changed) logger.info(r, 'feature tick')
    return r
  }
  let ticking = false
  const timer = setInterval(() => {
    if (ticking) return
    ticking = true
    tick()
      .catch((err) => logger.error({ err }, 'feature tick failed; retried next tick'))
      .finally(() => (ticking = false))
  }, opts.tickMs ?? c.featuresTickMs)
  timer.unref()
  return {
    ...pipeline,
    engine,
    tick,
    stop: async () => {
      clearInterval(timer)
      await pipeline.stop()
    },
  }
}
