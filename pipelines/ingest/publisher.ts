import { customerKey, type CustomerUpserted, type OrderEvent } from '../../common/events.ts'
import type { EventLog } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
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
  // Encoded without a promise per event when the schema is known here (the usual case).
  const records: { key: string; value: Buffer<ArrayBufferLike> }[] = new Array(events.length)
  let fetching: Promise<unknown>[] | null = null
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!
    const value = codec.encodeSoon(topic, e)
    if (value instanceof Promise) {
      const record: { key: string; value: Buffer<ArrayBufferLike> } = { key: customerKey(e.tenant_id, e.customer_id), value: Buffer.alloc(0) }
      ;(fetching ??= []).push(value.then((v) => (record.value = v)))
      records[i] = record
    } else records[i] = { key: customerKey(e.tenant_id, e.customer_id), value }
  }
  if (fetching) await Promise.all(fetching)
  await log.send(topic, records)
  eventsIngested.inc({ kind, source: events[0]!.source }, events.length)
}
