import type { Runtime } from '../../common/runtime/context.ts'
import { replayPipeline, type ReplayProgress } from '../../common/runtime/replay.ts'
import type { ReferenceData } from './reference.ts'
import { DEMOGRAPHICS_GROUP, demographicsPipeline } from './pipeline.ts'

/**
 * `cdp replay`, demographics: customer_demographics rebuilt from the customers topic. The
 * enriched events are published again with the same event ids (downstream deduplicates them).
 * Ages are computed with today's clock, so a replay in a later year ages everyone by a year.
 */
export function replayDemographics(rt: Runtime, opts: { group?: string; reference?: ReferenceData; onProgress?: (p: ReplayProgress) => void; timeoutMs?: number } = {}) {
  const group = opts.group ?? rt.config.consumerGroupPrefix + DEMOGRAPHICS_GROUP
  return replayPipeline(rt, demographicsPipeline({ store: rt.store, log: rt.log, codec: rt.codec, reference: opts.reference, name: group }), ['customer_demographics'], opts)
}
