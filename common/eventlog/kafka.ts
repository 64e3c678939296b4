import { Kafka, logLevel, type Admin, type Batch as KafkaBatch, type Consumer, type KafkaMessage, type Producer, type ICustomPartitioner, CompressionTypes } from 'kafkajs'
import { PARTITIONS_CONSUMED_CONCURRENTLY, type ConsumeOptions, type LogRecord, type ConsumerHandle, type EventLog, type OutRecord, type PartitionOffset, type TopicConfig } from './port.ts'
import { partitionFor } from './partitioner.ts'
import { PartitionFlow } from './partition-flow.ts'
import type { Logger } from '../logger.ts'

/** Records per produce request (KafkaEventLog.send). */
const SEND_CHUNK = 2500

/** The same murmur2 partitioner as the embedded log (and Java clients). */
const murmur2Partitioner: ICustomPartitioner = () => ({ message, partitionMetadata }) =>
  partitionFor((message.key as Buffer | string | null) ?? null, partitionMetadata.length, () => Math.floor(Math.random() * 1e9))

/** Routes kafkajs's own log lines into pino, at the level kafkajs gave them. */
function kafkaLogCreator(logger?: Logger) {
  return () =>
    ({ level, log }: { level: number; log: { message: string } & Record<string, unknown> }) => {
      if (!logger) return
      const { message, ...extra } = log
      const child = { ...extra, component: 'kafkajs' }
      if (level === logLevel.ERROR) logger.error(child, message)
      else if (level === logLevel.WARN) logger.warn(child, message)
      else logger.debug(child, message)
    }
}

/**
 * Fetch and session settings of our consumers (also used by the benchmark's raw baseline). kafkajs
 * decodes a whole fetch on the main thread in one stretch, during which no decoded batch is taken
 * and no write started: fetches of at most 16 MB (4 MB a partition) keep those stretches near a
 * fifth of a second. With 64 MB ones they reached 0.9 s, and the projection's Kafka ingest was
 * 144,000–159,000 events/s against 158,000–181,000/s now (docs/analytics-performance.md, "Ingest").
 */
export const CONSUMER_SETTINGS = {
  allowAutoTopicCreation: false,
  maxBytesPerPartition: 4 * 1024 * 1024,
  maxBytes: 16 * 1024 * 1024,
  maxWaitTimeInMs: 200,
  sessionTimeout: 30_000,
  heartbeatInterval: 3_000,
} as const

export class KafkaEventLog implements EventLog {
  readonly kind = 'kafka' as const
  private readonly kafka: Kafka
  private producer: Producer | null = null
  private producing: Promise<Producer> | null = null
  private admin: Admin | null = null
  private readonly consumers = new Set<Consumer>()
  private readonly sessionTimeout: number
  private readonly logger: Logger | undefined

  /** `sessionTimeoutMs`: how long the broker waits for a silent member before its partitions move (CONSUMER_SETTINGS by default). */
  constructor(opts: { brokers: string[]; clientId: string; logger?: Logger; sessionTimeoutMs?: number }) {
    this.sessionTimeout = opts.sessionTimeoutMs ?? CONSUMER_SETTINGS.sessionTimeout
    this.logger = opts.logger?.child({ component: 'kafka' })
    this.kafka = new Kafka({
      brokers: opts.brokers,
      clientId: opts.clientId,
      logLevel: logLevel.WARN,
      logCreator: kafkaLogCreator(this.logger),
      retry: { retries: 8, initialRetryTime: 200 },
    })
  }

  private async getAdmin(): Promise<Admin> {
    if (!this.admin) {
      const a = this.kafka.admin()
      await a.connect()
      this.admin = a
    }
    return this.admin
  }

  private getProducer(): Promise<Producer> {
    this.producing ??= (async () => {
      const p = this.kafka.producer({ createPartitioner: murmur2Partitioner, allowAutoTopicCreation: false, idempotent: false })
      await p.connect()
      this.producer = p
      return p
    })()
    return this.producing
  }

  async createTopics(topics: TopicConfig[]): Promise<void> {
    const admin = await this.getAdmin()
    const existing = new Set(await admin.listTopics())
    const missing = topics.filter((t) => !existing.has(t.name))
    if (missing.length === 0) return
    await admin.createTopics({
      waitForLeaders: true,
      topics: missing.map((t) => ({
        topic: t.name,
        numPartitions: t.partitions,
        configEntries: t.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : [],
      })),
    })
  }

  async send(topic: string, records: OutRecord[]): Promise<void> {
    if (records.length === 0) return
    const producer = await this.getProducer()
    // In requests of at most SEND_CHUNK records, one after the other (so in order): kafkajs
    // 2.2.4 groups a request's messages by partition copying the partition's list once per
    // message, time quadratic in the request's size (tulios/kafkajs#1576).
    for (let i = 0; i < records.length; i += SEND_CHUNK) {
      await producer.send({
        topic,
        acks: -1,
        compression: CompressionTypes.None,
        messages: records.slice(i, i + SEND_CHUNK).map((r) => ({ key: r.key, value: r.value, headers: r.headers })),
      })
    }
  }

  async consume(opts: ConsumeOptions): Promise<ConsumerHandle> {
    // Heartbeats at most a tenth of the session: a member survives several missed ones.
    const consumer = this.kafka.consumer({
      groupId: opts.groupId,
      ...CONSUMER_SETTINGS,
      sessionTimeout: this.sessionTimeout,
      heartbeatInterval: Math.min(CONSUMER_SETTINGS.heartbeatInterval, Math.floor(this.sessionTimeout / 10)),
    })
    this.consumers.add(consumer)
    await consumer.connect()
    await consumer.subscribe({ topics: opts.topics, fromBeginning: opts.fromBeginning ?? true })
    if (opts.onAssign) {
      const onAssign = opts.onAssign
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        onAssign(Object.entries(payload.memberAssignment).flatMap(([topic, partitions]) => partitions.map((partition) => ({ topic, partition }))))
      })
    }
    if (opts.onRebalancing) {
      const onRebalancing = opts.onRebalancing
      consumer.on(consumer.events.REBALANCING, () => onRebalancing())
    }
    const maxBatch = opts.maxBatch ?? 5000
    const inFlight = opts.inFlight ?? 1
    if (inFlight > 1) return this.consumeInFlight(consumer, opts, maxBatch, inFlight)
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: PARTITIONS_CONSUMED_CONCURRENTLY,
      eachBatch: async ({ batch, heartbeat, resolveOffset, isRunning, isStale }) => {
        const messages = batch.messages
        for (let i = 0; i < messages.length; i += maxBatch) {
          if (!isRunning() || isStale()) return
          const slice = messages.slice(i, i + maxBatch)
          try {
            await opts.onBatch({ topic: batch.topic, partition: batch.partition, records: logRecords(batch, slice), highWatermark: batch.highWatermark, heartbeat })
          } catch (err) {
            opts.onError?.(err, { topic: batch.topic, partition: batch.partition })
            throw err // kafkajs restarts the consumer from the last committed offset
          }
          const last = slice[slice.length - 1]!.offset
          // Commit only after the handler (sink write + dead letters) succeeded.
          await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(BigInt(last) + 1n) }])
          resolveOffset(last)
          await heartbeat()
        }
      },
    })
    return { stop: () => this.leave(consumer) }
  }

  /** Stops a consumer and leaves its group. */
  private async leave(consumer: Consumer): Promise<void> {
    await consumer.stop()
    await consumer.disconnect()
    this.consumers.delete(consumer)
  }

  /**
   * consume with up to `inFlight` batches of a partition handled at once (partition-flow.ts). A
   * batch is handed and its offsets marked read at once, so kafkajs fetches the next while it is
   * handled: its fetcher waits for every batch of a fetch to end before it fetches again, and with
   * one batch in flight fetches and writes took turns. A failed batch seeks its partition back.
   */
  private async consumeInFlight(
    consumer: Consumer,
    opts: ConsumeOptions,
    maxBatch: number,
    inFlight: number,
  ): Promise<ConsumerHandle> {
    const flows = new Map<string, PartitionFlow>()
    const flowOf = (topic: string, partition: number): PartitionFlow => {
      const key = `${topic}:${partition}`
      let flow = flows.get(key)
      if (!flow) {
        flow = new PartitionFlow(inFlight, {
          commit: (next) => consumer.commitOffsets([{ topic, partition, offset: next }]),
          rewind: (offset) => consumer.seek({ topic, partition, offset }),
          onError: (err) => opts.onError?.(err, { topic, partition }),
          onCommitError: (err) => this.logger?.warn({ err, topic, partition }, 'offset commit failed; a later commit of the partition covers it'),
        })
        flows.set(key, flow)
      }
      return flow
    }
    // After a join kafkajs reads every partition from the group's committed offsets again. A batch
    // of the generation before (waiting for room as the join happened) is not handed.
    let generation = 0
    consumer.on(consumer.events.GROUP_JOIN, () => {
      generation++
      for (const flow of flows.values()) flow.reassigned()
    })
    let stopping = false
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: PARTITIONS_CONSUMED_CONCURRENTLY,
      eachBatch: async ({ batch, heartbeat, resolveOffset, isRunning, isStale }) => {
        const flow = flowOf(batch.topic, batch.partition)
        const messages = batch.messages
        const joined = generation
        for (let i = 0; i < messages.length; i += maxBatch) {
          if (!isRunning() || isStale() || stopping) return
          await flow.room()
          // A failure while waiting seeks the partition back: kafkajs says the batch is stale until
          // its next fetch, which comes only after every batch of this one has returned.
          if (!isRunning() || isStale() || stopping || generation !== joined) return
          const slice = messages.slice(i, i + maxBatch)
          const last = slice[slice.length - 1]!.offset
          const batchRecords = logRecords(batch, slice)
          flow.hand(slice[0]!.offset, last, () => opts.onBatch({ topic: batch.topic, partition: batch.partition, records: batchRecords, highWatermark: batch.highWatermark, heartbeat }))
          resolveOffset(last)
          await heartbeat()
        }
      },
    })
    return {
      stop: async () => {
        // Nothing more is fetched or handed; the batches in flight end and commit; then the group is left.
        stopping = true
        try {
          consumer.pause(opts.topics.map((topic) => ({ topic })))
        } catch {
          // A consumer restarting after a crash has no group to pause; nothing is handed (stopping).
        }
        try {
          await Promise.all([...flows.values()].map((f) => f.drain()))
        } finally {
          await this.leave(consumer)
        }
      },
    }
  }

  async endOffsets(topic: string): Promise<PartitionOffset[]> {
    const admin = await this.getAdmin()
    const offs = await admin.fetchTopicOffsets(topic)
    return offs.map((o) => ({ partition: o.partition, offset: o.high })).sort((a, b) => a.partition - b.partition)
  }

  async committedOffsets(groupId: string, topic: string): Promise<PartitionOffset[]> {
    const admin = await this.getAdmin()
    const [res] = await admin.fetchOffsets({ groupId, topics: [topic] })
    return (res?.partitions ?? []).map((p) => ({ partition: p.partition, offset: p.offset })).sort((a, b) => a.partition - b.partition)
  }

  async resetGroup(groupId: string, topics: string[]): Promise<void> {
    const admin = await this.getAdmin()
    for (const topic of topics) {
      const offs = await admin.fetchTopicOffsets(topic)
      await admin.setOffsets({ groupId, topic, partitions: offs.map((o) => ({ partition: o.partition, offset: o.low })) })
    }
  }

  async close(): Promise<void> {
    for (const c of this.consumers) await c.disconnect().catch(() => {})
    this.consumers.clear()
    if (this.producer) await this.producer.disconnect()
    if (this.admin) await this.admin.disconnect()
    this.producer = null
    this.producing = null
    this.admin = null
  }
}

/** A slice of a kafkajs batch as the port's records. */
function logRecords(batch: KafkaBatch, slice: KafkaMessage[]): LogRecord[] {
  return slice.map((m) => ({
    topic: batch.topic,
    partition: batch.partition,
    offset: m.offset,
    key: m.key ?? null,
    value: m.value ?? null,
    headers: headersOf(m.headers),
    timestamp: Number(m.timestamp),
  }))
}

/** The headers of every record that has none: one frozen object, not one per record. */
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>

/**
 * A message's headers as text. In a loop, not entries mapped through a closure: the closure was
 * made per record (tsx's keepNames names each as it is made), and most records have no headers.
 */
function headersOf(headers: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined): Record<string, string> {
  if (!headers) return NO_HEADERS
  let out: Record<string, string> | null = null
  for (const k in headers) {
    const v = headers[k]
    ;(out ??= {})[k] = v === undefined ? '' : String(v)
  }
  return out ?? NO_HEADERS
}

