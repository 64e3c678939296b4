import { TOPICS } from '../../common/topics.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'

/**
 * The feature consumer's order and customer batches as pairs (pure): a customer's record and its
 * orders come on two topics, read in step by stream time (alignTopics), and a partition's batches
 * of both written together score each of its customers once, not once for the record and once for
 * the orders (engine.ts, WriteTurns' Pairs).
 */

/** Order and customer batches of one partition as pairs: 2p and 2p + 1 (key ^ 1 is the pair's); null for another topic. */
export function inputKey(record: LogRecord): number | null {
  if (record.topic === TOPICS.orders.name) return 2 * record.partition
  if (record.topic === TOPICS.customers.name) return 2 * record.partition + 1
  return null
}

/**
 * Whether a waiting batch of `key` is held back for a batch still being processed (`coming`, by
 * key). It waits while a batch of the same partition's other topic is coming. It also waits while
 * its own topic's next batch is coming, when a batch of the other topic waits on as well
 * (`waiting`: the keys of the batches that wait past this turn, WriteTurns' Pairs): that one was
 * read up to the stream time of both of this topic's batches and is written with them. Held only
 * by the first rule, a partition's customer batch went out alone while its order batches waited
 * for the next customer batch, and at a million customers a quarter of them were scored twice
 * (docs/analytics-performance.md, "Streaming", stop 50).
 */
export function heldForPair(key: number, coming: (key: number) => boolean, waiting: readonly (number | null)[]): boolean {
  if (coming(key ^ 1)) return true
  return coming(key) && waiting.includes(key ^ 1)
}
