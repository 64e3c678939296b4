import type { Runtime } from './context.ts'
import { consumerLag, waitForConsumer } from './lag.ts'
import { runPipeline, type PipelineDefinition } from './pipeline.ts'
import { truncateProjections } from '../store/clickhouse.ts'

export interface ReplayProgress {
  total: number
  remaining: number
}

/**
 * Rebuilds a projection from the log: empties its tables, rewinds its group to the start and
 * consumes until it has caught up with the end offsets taken at the start. The tables come out
 * identical when every row is a function of its event (versions from event times, never from
 * arrival) and ReplacingMergeTree keeps the same winner whatever the order. The role running the
 * pipeline must be stopped meanwhile (its group would fight over the offsets).
 */
export async function replayPipeline<T>(
  rt: Runtime,
  def: PipelineDefinition<T>,
  tables: readonly string[],
  opts: { onProgress?: (p: ReplayProgress) => void; timeoutMs?: number; /** Largest batch (default CDP_BATCH_SIZE). */ maxBatch?: number } = {},
): Promise<{ records: number; seconds: number }> {
  const started = Date.now()
  await truncateProjections(rt.store, tables)
  await rt.log.resetGroup(def.name, def.topics)
  const total = await consumerLag(rt.log, def.name, def.topics)
  opts.onProgress?.({ total, remaining: total })
  const running = await runPipeline(def, { log: rt.log, codec: rt.codec, logger: rt.logger, maxBatch: opts.maxBatch ?? rt.config.batchSize, fromBeginning: true })
  try {
    const left = await waitForConsumer(rt.log, def.name, def.topics, { timeoutMs: opts.timeoutMs ?? 24 * 3600_000, onProgress: (remaining) => opts.onProgress?.({ total, remaining }) })
    if (left > 0) throw new Error(`replay of ${def.name} did not catch up in time (${left} records left)`)
  } finally {
    await running.stop()
  }
  return { records: total, seconds: (Date.now() - started) / 1000 }
}
