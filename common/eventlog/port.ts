/**
 * The event log port. Two adapters implement it with the same semantics, checked by one
 * conformance suite (test/common/eventlog-conformance.int.test.ts): Kafka (kafkajs) and the embedded,
 * on-disk log of the single-process runtime.
 *
 * Semantics both guarantee:
 * - `send` resolves only once every record is durable (Kafka acks=all; embedded fsync).
 * - Records with the same key go to the same partition (Kafka's murmur2 partitioner), in order.
 * - A consumer group resumes after its last committed offset; offsets are committed only after
 *   `onBatch` resolves, so a batch whose handler threw (or whose process died) is delivered again.
 * - `fromBeginning` applies to a group with no committed offset.
 */
export interface LogRecord {
  topic: string
  partition: number
  /** Decimal string, as Kafka clients represent 64-bit offsets. */
  offset: string
  key: Buffer | null
  value: Buffer | null
  headers: Record<string, string>
  timestamp: number
  /**
   * A log that holds its records' bytes in shared chunks (the embedded one) may also give the
   * value's byte count (-1: null) and copy its bytes without making a view of them each time
   * `value` is read: for a reader that copies every value of a batch (a decode thread's job).
   * Both or neither.
   */
  readonly valueLength?: number
  copyValueInto?(target: Uint8Array, at: number): void
}

export interface OutRecord {
  key: string | Buffer | null
  value: Buffer | null
  headers?: Record<string, string>
}

export interface Batch {
  topic: string
  partition: number
  records: LogRecord[]
  /** Offset the next record written to this partition will get (Kafka's high watermark). */
  highWatermark: string
  /** Keeps the group membership alive during long work on a batch. */
  heartbeat(): Promise<void>
}

/** Batches of this many partitions are handled at once by one consumer, on either log. */
export const PARTITIONS_CONSUMED_CONCURRENTLY = 4

export interface ConsumeOptions {
  groupId: string
  topics: string[]
  fromBeginning?: boolean
  /** Largest number of records handed to one onBatch call. */
  maxBatch?: number
  /**
   * Batches of one partition handed to onBatch before the first of them has resolved (default 1:
   * each batch is handled and committed before the next of its partition is handed over). Above 1,
   * the log reads and hands a partition's next batches while earlier ones are still handled (for
   * sinks whose writes may overlap, as the projection's); offsets are still committed in order, a
   * batch's once it and every batch before it resolved, and a batch that throws has the partition
   * delivered again from its first record, with the batches handed after it (partition-flow.ts).
   */
  inFlight?: number
  /**
   * Topics whose partitions of one number are read in step by stream time (their records'
   * timestamps), as Kafka Streams picks the earliest record of a task's co-partitioned inputs:
   * under a backlog a partition of one of them is not read far past what the same partition of the
   * others has been read to. Only the embedded log does this (see embedded.ts, alignedEnd).
   */
  alignTopics?: string[]
  /**
   * The handler reads no record's key, value, headers, timestamp or valueLength once its onBatch
   * has settled (it keeps copies of what it needs): the embedded log then reads later batches into
   * the same buffers (buffer-pool.ts) instead of new ones, each of which counted towards V8's next
   * full collection. Kafka's client allocates its own and ignores it.
   */
  recordBytesEndWithBatch?: boolean
  /** Records of each partition, in order. Resolve to commit; throw to have the batch redelivered. */
  onBatch(batch: Batch): Promise<void>
  /** Called when onBatch throws, before the redelivery; defaults to nothing. */
  onError?(err: unknown, batch: { topic: string; partition: number }): void
  /**
   * Called with this member's whole assignment whenever it changes (join and every rebalance;
   * the embedded log assigns every partition once). Partitions missing from it were revoked.
   */
  onAssign?(assignment: TopicPartition[]): void
  /**
   * Called as soon as this member learns that a rebalance has begun: until the next onAssign its
   * partitions may be moving to another member, so work outside onBatch (timers) must not write
   * for them. The embedded log never rebalances.
   */
  onRebalancing?(): void
}

export interface TopicPartition {
  topic: string
  partition: number
}

export interface ConsumerHandle {
  /** Stops fetching, lets the batch in hand finish and commit, then leaves the group. */
  stop(): Promise<void>
}

export interface TopicConfig {
  name: string
  partitions: number
  compacted: boolean
}

export interface PartitionOffset {
  partition: number
  offset: string
}

export interface EventLog {
  readonly kind: 'kafka' | 'embedded'
  createTopics(topics: TopicConfig[]): Promise<void>
  send(topic: string, records: OutRecord[]): Promise<void>
  consume(opts: ConsumeOptions): Promise<ConsumerHandle>
  /** Offset the next record of each partition will get. */
  endOffsets(topic: string): Promise<PartitionOffset[]>
  /** Committed offsets of a group on a topic ('-1' where nothing is committed). */
  committedOffsets(groupId: string, topic: string): Promise<PartitionOffset[]>
  /** Forgets a group's offsets on the topics, so it next starts from the beginning (group must be stopped). */
  resetGroup(groupId: string, topics: string[]): Promise<void>
  close(): Promise<void>
}

/** Records still to be consumed by a group: end offset minus committed offset, summed over partitions. */
export async function groupLag(log: EventLog, groupId: string, topic: string): Promise<number> {
  const [ends, committed] = await Promise.all([log.endOffsets(topic), log.committedOffsets(groupId, topic)])
  let lag = 0
  for (const e of ends) {
    const c = committed.find((x) => x.partition === e.partition)
    const from = c && c.offset !== '-1' ? Number(c.offset) : 0
    lag += Math.max(0, Number(e.offset) - from)
  }
  return lag
}
