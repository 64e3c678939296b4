import { randomUUID } from 'node:crypto'
import type { EventLog, LogRecord, ConsumerHandle, TopicPartition } from '../eventlog/port.ts'
import type { EventCodec } from '../eventlog/codec.ts'
import { TOPICS } from '../topics.ts'
import type { DeadLetter } from '../events.ts'
import type { Logger } from '../logger.ts'
import { batchDuration, consumerLag, deadLetters, RateMeter, recordsPerSecond, recordsProcessed } from './metrics.ts'

/**
 * What a pipeline step makes of one record: keep it for the sink, send it to the dead-letter
 * topic with a reason, or drop it on purpose. Steps return results instead of throwing, so one
 * bad record never stops the partition behind it.
 */
export type StepResult<T> =
  | { kind: 'ok'; value: T }
  | { kind: 'dlq'; code: string; reason: string; step: string; tenantId?: number | null }
  | { kind: 'drop'; reason: string }

export const ok = <T>(value: T): StepResult<T> => ({ kind: 'ok', value })
export const dlq = (step: string, code: string, reason: string, tenantId?: number | null): StepResult<never> => ({ kind: 'dlq', step, code, reason, tenantId })
export const drop = (reason: string): StepResult<never> => ({ kind: 'drop', reason })

export interface PipelineDefinition<T> {
  /** Consumer group id and metrics label. */
  name: string
  topics: string[]
  /**
   * Decode and validate one record. Async only when it must wait (a schema lookup, a first
   * order's currency): a result without a promise saves the loop a turn per record.
   */
  process(record: LogRecord, codec: EventCodec): StepResult<T> | Promise<StepResult<T>>
  /** Writes the kept values of a batch. Must be idempotent: a batch can be delivered again. */
  sink(items: { record: LogRecord; value: T }[]): Promise<void>
  /**
   * Hand the sink a batch in parts of this many kept records, each part's write started while the
   * next part is processed (for sinks that write parts independently, such as the projection's).
   * The batch still counts as handled, and its offsets are committed, only once every part is
   * written; a part that fails fails the batch. Unset: one sink call per batch, after the batch.
   */
  sinkEvery?: number
  /**
   * Process a part of a batch at once (sinkEvery records, or the whole batch): one result per
   * record, in order. For steps that hand records to another thread: the runner asks for every
   * part of a batch before it awaits the first, so later parts are processed while earlier ones
   * are written. A rejection fails the batch (it is delivered again); a bad record is a result.
   * Unset: `process`, record by record.
   */
  processMany?(records: readonly LogRecord[], codec: EventCodec): Promise<StepResult<T>[]>
  /**
   * Records in a row kept with one value (the same object, as a `processMany` step may give for
   * the records another thread read) reach the sink as one item: the row's first record with the
   * value. For a sink whose value stands for its records (the feature consumer's): an item a
   * record lived as long as its batch, and with 600,000 records waiting their turn behind the
   * write being scored, each was copied and promoted by the collector.
   */
  sinkRuns?: boolean
  /**
   * Batches of one partition handled at once (ConsumeOptions.inFlight; default 1). Above 1 the next
   * batches are read and processed while earlier ones are written, so onBatch runs for several
   * batches of a partition at once: only for a sink whose writes may overlap and land in any order.
   */
  batchesInFlight?: number
  /** Input topics read in step by stream time (ConsumeOptions.alignTopics). */
  alignTopics?: string[]
  /**
   * `process`, `processMany` and `sink` read no record's key, value or headers once the batch is
   * done (ConsumeOptions.recordBytesEndWithBatch): the values they keep are copies.
   */
  recordBytesEndWithBatch?: boolean
  /** Releases what the definition holds of its own (a thread), when the pipeline stops. */
  close?(): Promise<void>
  /** This consumer's partitions, on join and after every rebalance (stateful pipelines keep state per partition). */
  onAssign?(assignment: TopicPartition[]): void
  /** A rebalance has begun: this consumer may be losing partitions (EventLog's onRebalancing). */
  onRebalancing?(): void
}

export interface PipelineDeps {
  log: EventLog
  codec: EventCodec
  logger: Logger
  maxBatch?: number
  fromBeginning?: boolean
}

export interface RunningPipeline {
  name: string
  stop(): Promise<void>
  /** True once the consumer joined and handled (or waited for) its first fetch. */
  isRunning(): boolean
}

export const DLQ_HEADERS = { reason: 'x-dlq-reason', step: 'x-dlq-step', time: 'x-dlq-time', code: 'x-dlq-code', pipeline: 'x-dlq-pipeline' } as const

/**
 * Runs a pipeline: batches in, step per record, one sink write per batch, dead letters produced
 * and acknowledged, and only then is the offset committed (by the log adapter, when the batch
 * handler resolves). A sink failure throws, so the whole batch is delivered again.
 */
export async function runPipeline<T>(def: PipelineDefinition<T>, deps: PipelineDeps): Promise<RunningPipeline> {
  if (def.sinkEvery !== undefined && !(Number.isSafeInteger(def.sinkEvery) && def.sinkEvery > 0)) throw new Error(`${def.name}: sinkEvery must be a positive integer, got ${def.sinkEvery}`)
  const logger = deps.logger.child({ pipeline: def.name })
  const meter = new RateMeter()
  let running = false
  const handle: ConsumerHandle = await deps.log.consume({
    groupId: def.name,
    topics: def.topics,
    fromBeginning: deps.fromBeginning ?? true,
    maxBatch: deps.maxBatch,
    inFlight: def.batchesInFlight,
    alignTopics: def.alignTopics,
    recordBytesEndWithBatch: def.recordBytesEndWithBatch,
    onError: (err, where) => logger.error({ err, ...where }, 'batch failed; it will be delivered again'),
    onAssign: def.onAssign ? (a) => def.onAssign!(a) : undefined,
    onRebalancing: def.onRebalancing ? () => def.onRebalancing!() : undefined,
    onBatch: async (batch) => {
      running = true
      const end = batchDuration.startTimer({ pipeline: def.name })
      let kept: { record: LogRecord; value: T }[] = []
      // Parts already handed to the sink (sinkEvery); each has a handler so that one failing before
      // the batch awaits it is not an unhandled rejection.
      const parts: Promise<void>[] = []
      const dead: { record: LogRecord; result: Extract<StepResult<T>, { kind: 'dlq' }> }[] = []
      const sinkKept = () => {
        const part = def.sink(kept)
        part.catch(() => {})
        parts.push(part)
        kept = []
      }
      const take = (record: LogRecord, result: StepResult<T>) => {
        if (result.kind === 'ok') {
          if (!def.sinkRuns || kept.length === 0 || kept[kept.length - 1]!.value !== result.value) kept.push({ record, value: result.value })
        }
        else if (result.kind === 'dlq') dead.push({ record, result })
        else logger.debug({ offset: record.offset, reason: result.reason }, 'record dropped')
      }
      const processOneByOne = async () => {
        let lastBeat = Date.now()
        for (const record of batch.records) {
          let result = safeProcess(def, record, deps.codec)
          if (result instanceof Promise) result = await result
          take(record, result)
          if (kept.length === def.sinkEvery) {
            sinkKept()
            // A turn of the event loop, so that the part's write is sent before the next part is processed.
            await new Promise<void>((resolve) => setImmediate(resolve))
          }
          if (Date.now() - lastBeat > 1000) {
            await batch.heartbeat()
            lastBeat = Date.now()
          }
        }
        if (kept.length) sinkKept()
      }
      const asked: [LogRecord[], Promise<StepResult<T>[]>][] = []
      try {
        if (def.processMany) {
          const size = def.sinkEvery ?? batch.records.length
          for (let i = 0; i < batch.records.length; i += size) {
            const records = batch.records.slice(i, i + size)
            const results = def.processMany(records, deps.codec)
            results.catch(() => {})
            asked.push([records, results])
          }
          for (const [records, results] of asked) {
            const got = await results
            for (let j = 0; j < records.length; j++) take(records[j]!, got[j]!)
            if (kept.length) sinkKept()
            await batch.heartbeat()
          }
        } else await processOneByOne()
        await Promise.all(parts)
      } catch (err) {
        // The batch fails once nothing of it runs any more: the parts still being processed or
        // written would otherwise read its records after the log has been told it is done.
        await Promise.allSettled([...asked.map(([, r]) => r), ...parts])
        throw err
      }
      if (dead.length) await sendDeadLetters(deps, def.name, dead)
      await batch.heartbeat()
      const n = batch.records.length
      recordsProcessed.inc({ pipeline: def.name, topic: batch.topic }, n)
      recordsPerSecond.set({ pipeline: def.name }, meter.add(n))
      const lastOffset = Number(batch.records[n - 1]?.offset ?? -1)
      consumerLag.set({ pipeline: def.name, topic: batch.topic, partition: String(batch.partition) }, Math.max(0, Number(batch.highWatermark) - lastOffset - 1))
      end()
    },
  })
  running = true
  return {
    name: def.name,
    isRunning: () => running,
    stop: async () => {
      try {
        await handle.stop()
      } finally {
        await def.close?.()
      }
      running = false
      logger.info('pipeline stopped')
    },
  }
}
/**
 * Thrown by a step that cannot judge a record now, through no fault of the record (a store it
 * reads is unavailable): the batch fails and is delivered again, instead of a valid record being
 * dead-lettered for an outage.
 */
export class RedeliverError extends Error {
  override name = 'RedeliverError'
}

/** A step that throws on a record is a bug or a poison record; either way the record goes aside (RedeliverError: the batch comes again). */
const failed = (err: unknown) => {
  if (err instanceof RedeliverError) throw err
  return dlq('process', 'step_error', (err as Error).message ?? String(err))
}

// No closure is created per record here: tsx compiles with esbuild's keepNames, which names each
// function as it is created, and that naming cost more than the rest of this function.
/** `def.process` of one record as the runner calls it: a step that throws gives a dead letter. For `processMany` steps that process some records one by one. */
export function processRecord<T>(def: PipelineDefinition<T>, record: LogRecord, codec: EventCodec): StepResult<T> | Promise<StepResult<T>> {
  return safeProcess(def, record, codec)
}

/** Records processed one by one with `processRecord`, in order: for `processMany` steps, on the records (or the parts) they do not hand elsewhere. */
export async function processEach<T>(def: PipelineDefinition<T>, records: readonly LogRecord[], codec: EventCodec): Promise<StepResult<T>[]> {
  const out: StepResult<T>[] = new Array(records.length)
  for (let i = 0; i < records.length; i++) {
    const r = safeProcess(def, records[i]!, codec)
    out[i] = r instanceof Promise ? await r : r
  }
  return out
}

function safeProcess<T>(def: PipelineDefinition<T>, record: LogRecord, codec: EventCodec): StepResult<T> | Promise<StepResult<T>> {
  try {
    const result = def.process(record, codec)
    return result instanceof Promise ? result.catch(failed) : result
  } catch (err) {
    return failed(err)
  }
}

async function sendDeadLetters<T>(deps: PipelineDeps, pipeline: string, dead: { record: LogRecord; result: Extract<StepResult<T>, { kind: 'dlq' }> }[]): Promise<void> {
  const now = Date.now()
  const out = await Promise.all(
    dead.map(async ({ record, result }) => {
      const envelope: DeadLetter = {
        event_id: randomUUID(),
        tenant_id: result.tenantId ?? tenantFromKey(record.key),
        occurred_at: now,
        source: pipeline,
        original_topic: record.topic,
        original_partition: record.partition,
        original_offset: record.offset,
        original_key: record.key,
        original_value: record.value,
        reason: result.reason,
        step: result.step,
        error_code: result.code,
      }
      deadLetters.inc({ pipeline, topic: record.topic, code: result.code })
      deps.logger.warn({ pipeline, topic: record.topic, partition: record.partition, offset: record.offset, code: result.code, reason: result.reason }, 'record dead-lettered')
      return {
        key: record.key,
        value: await deps.codec.encode(TOPICS.deadLetter.name, envelope),
        headers: {
          ...record.headers,
          [DLQ_HEADERS.reason]: result.reason,
          [DLQ_HEADERS.step]: result.step,
          [DLQ_HEADERS.code]: result.code,
          [DLQ_HEADERS.time]: new Date(now).toISOString(),
          [DLQ_HEADERS.pipeline]: pipeline,
        },
      }
    }),
  )
  await deps.log.send(TOPICS.deadLetter.name, out)
}

function tenantFromKey(key: Buffer | null): number | null {
  if (!key) return null
  const t = Number(key.toString().split(':')[0])
  return Number.isSafeInteger(t) && t > 0 ? t : null
}
