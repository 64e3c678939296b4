import type { Runtime } from '../../common/runtime/context.ts'
import { runPipeline, type RunningPipeline } from '../../common/runtime/pipeline.ts'
import { FeatureEngine, FEATURES_GROUP } from './engine.ts'
import { featureTicks } from './metrics.ts'
import { TOPICS } from '../../common/topics.ts'
import { groupLag } from '../../common/eventlog/port.ts'

export interface RunningFeatures extends RunningPipeline {
  engine: FeatureEngine
  /** Runs one tick now (also what the timer does). */
  tick(): ReturnType<FeatureEngine['tick']>
}

/** How often the role checks whether it has caught up, during its first tick interval. */
const CATCH_UP_CHECK_MS = 1_000
/** A catch-up tick comes at the latest this long after new input arrived. */
const CATCH_UP_WAIT_MS = 8_000
/** Catch-up ticks happen during the role's first tick interval, and at most this long. */
const CATCH_UP_MAX_MS = 120_000

/** Composition of the feature role: the consumer plus its wall-clock punctuator. */
export async function runFeatures(rt: Runtime, opts: { now?: () => number; tickMs?: number; name?: string; flushChunk?: number; /** false: decode on the main thread (tests of that path). */ decodeThread?: boolean } = {}): Promise<RunningFeatures> {
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
    refreshIntervalMs: opts.tickMs ?? c.featuresTickMs,
    flushChunk: opts.flushChunk,
    decodeThread: opts.decodeThread,
  })
  const logger = rt.logger.child({ pipeline: engine.name })
  const pipeline = await runPipeline(engine.definition(), { log: rt.log, codec: rt.codec, logger: rt.logger, maxBatch: c.featuresBatchSize })
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
  // First scoring right after catch-up (CDP_FEATURES_CATCH_UP_TICKS, on in the demo): during its
  // first tick interval (at most two minutes),
  // whenever the group has read what arrived (or is still reading CATCH_UP_WAIT_MS after it
  // arrived: a source that keeps publishing, a loaded machine), the role ticks as its timer would
  // (a model older than half an interval is refreshed), so a tenant seen for the first time is
  // scored within seconds instead of after tickMs; the timer does the rest.
  const inputs = [TOPICS.orders.name, TOPICS.customers.name]
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
  const ends = async () => sum(await Promise.all(inputs.map(async (t) => sum((await rt.log.endOffsets(t)).map((e) => Number(e.offset))))))
  const startedAt = Date.now()
  let lastEnds = await ends().catch(() => 0)
  let pendingSince: number | null = null
  let checking: Promise<void> = Promise.resolve()
  const catchUp = setInterval(() => {
    if (!c.featuresCatchUpTicks) return clearInterval(catchUp)
    if (Date.now() - startedAt >= Math.min(opts.tickMs ?? c.featuresTickMs, CATCH_UP_MAX_MS)) return clearInterval(catchUp)
    if (ticking) return
    checking = (async () => {
      const now = await ends()
      const lag = sum(await Promise.all(inputs.map((t) => groupLag(rt.log, engine.name, t))))
      if (pendingSince === null && (now > lastEnds || lag > 0)) pendingSince = Date.now()
      lastEnds = now
      if (pendingSince === null || (lag > 0 && Date.now() - pendingSince < CATCH_UP_WAIT_MS) || ticking) return
      pendingSince = null
      ticking = true
      await tick().finally(() => (ticking = false))
    })().catch((err) => logger.warn({ err }, 'catch-up tick failed; the timer ticks later'))
  }, CATCH_UP_CHECK_MS)
  catchUp.unref()
  return {
    ...pipeline,
    engine,
    tick,
    stop: async () => {
      clearInterval(timer)
      clearInterval(catchUp)
      await checking // a catch-up tick in flight finishes before the store closes
      await pipeline.stop()
    },
  }
}
