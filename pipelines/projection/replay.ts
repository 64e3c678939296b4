import type { Runtime } from '../../common/runtime/context.ts'
import { replayPipeline, type ReplayProgress } from '../../common/runtime/replay.ts'
import { PROJECTION_TABLES } from '../../common/store/clickhouse.ts'
import { projectionPipeline, PROJECTION_GROUP } from './pipeline.ts'

export type { ReplayProgress }

/** `cdp replay`, raw projections: order_events, orders and customers rebuilt from the orders and customers topics. */
export function replayProjections(rt: Runtime, opts: { group?: string; onProgress?: (p: ReplayProgress) => void; timeoutMs?: number } = {}) {
  const group = opts.group ?? rt.config.consumerGroupPrefix + PROJECTION_GROUP
  return replayPipeline(rt, projectionPipeline(rt.store, { name: group }), PROJECTION_TABLES, { maxBatch: rt.config.projectionBatchSize, ...opts })
}
