import type { Runtime } from '../../common/runtime/context.ts'
import { groupLag } from '../../common/eventlog/port.ts'
import { runPipeline } from '../../common/runtime/pipeline.ts'
import { PROJECTION_TABLES, truncateProjections } from '../../common/store/clickhouse.ts'
import { projectionPipeline, PROJECTION_GROUP } from './pipeline.ts'

export interface ReplayProgress {
  total: number
  remaining: number
}

/**
 * `cdp replay`: empties the raw projections, rewinds the projection group to the start of the
 * log and consumes until it has caught up with the end offsets taken at the start. The tables
 * come out identical because every row is a function of its event (versions come from event
 * times, never from arrival), and ReplacingMergeTree keeps the same winner whatever the order.
 * The projection role must not be running meanwhile (its group would fight over the offsets).
 */
export async function replayProjections(rt: Runtime, opts: { group?: string; onProgress?: (p: ReplayProgress) => void; timeoutMs?: number } = {}): Promise<{ records: number; seconds: number }> {
  const started = Date.now()
  const group = opts.group ?? rt.config.consumerGroupPrefix + PROJECTION_GROUP
  const def = projectionPipeline(rt.store, { name: group })
  await truncateProjections(rt.store, PROJECTION_TABLES)
  await rt.log.resetGroup(group, def.topics)
  const lagOf = async () => (await Promise.all(def.topics.map((t) => groupLag(rt.log, group, t)))).reduce((a, b) => a + b, 0)
  const total = await lagOf()
  opts.onProgress?.({ total, remaining: total })
  const running = await runPipeline(def, { log: rt.log, codec: rt.codec, logger: rt.logger, maxBatch: rt.config.batchSize, fromBeginning: true })
  const deadline = Date.now() + (opts.timeoutMs ?? 24 * 3600_000)
  try {
    for (;;) {
      const remaining = await lagOf()
      opts.onProgress?.({ total, remaining })
      if (remaining === 0) break
      if (Date.now() > deadline) throw new Error(`replay did not catch up in time (${remaining} records left)`)
      await new Promise((r) => setTimeout(r, 250))
    }
  } finally {
    await running.stop()
  }
  return { records: total, seconds: (Date.now() - started) / 1000 }
}
