import { customerKey, type CustomerUpserted, type OrderEvent } from '../../common/events.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { EncodedRecords } from '../../common/eventlog/encoded-records.ts'
import { TOPICS } from '../../common/topics.ts'
import { eventsIngested } from '../../common/runtime/metrics.ts'

export type IngestKind = 'orders' | 'customers'

export const TOPIC_OF: Record<IngestKind, string> = { orders: TOPICS.orders.name, customers: TOPICS.customers.name }

/**
 * Encodes events and appends them to their topic, keyed tenant:customer. Resolves once they are
 * durable in the log: that is when the HTTP endpoint answers 202 and the importer moves on.
 */
export async function publishEvents(log: EventLog, codec: EventCodec, kind: IngestKind, events: (OrderEvent | CustomerUpserted)[]): Promise<void> {
  if (events.length === 0) return
  const topic = TOPIC_OF[kind]
  // About 170 bytes an order event: a small request's buffer is small, a large one's grows.
  const records = new EncodedRecords(codec, topic, Math.min(64 * 1024, events.length * 256))
  for (const e of events) records.add(customerKey(e.tenant_id, e.customer_id), e)
  await log.send(topic, await records.records())
  eventsIngested.inc({ kind, source: events[0]!.source }, events.length)
}
