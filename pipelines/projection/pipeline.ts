import type { CustomerUpserted, OrderEvent } from '../../common/events.ts'
import { TOPICS } from '../../common/topics.ts'
import type { Store } from '../../common/store/clickhouse.ts'
import { dlq, ok, type PipelineDefinition, type StepResult } from '../../common/runtime/pipeline.ts'
import { SchemaMismatchError } from '../../common/eventlog/codec.ts'
import { UndecodableRecordError } from '../../common/eventlog/schema-registry.ts'
import type { LogRecord } from '../../common/eventlog/port.ts'
import type { EventCodec } from '../../common/eventlog/codec.ts'
import { customerSemanticErrors, orderSemanticErrors } from '../ingest/validation.ts'
import { customerRow, orderEventRow, orderStateRow } from './rows.ts'

export const PROJECTION_GROUP = 'cdp-projection'

type Projected = { kind: 'order'; event: OrderEvent } | { kind: 'customer'; event: CustomerUpserted }

/** Decodes a record of our topics, turning poison into a dead-letter result. */
export async function decodeRecord<T>(record: LogRecord, codec: EventCodec): Promise<StepResult<T>> {
  try {
    return ok(await codec.decode<T>(record.topic, record.value))
  } catch (err) {
    if (err instanceof UndecodableRecordError) return dlq('decode', 'undecodable', err.message)
    if (err instanceof SchemaMismatchError) return dlq('decode', 'schema_invalid', err.message)
    throw err
  }
}

/**
 * orders and customers topics → ClickHouse raw projections (order_events, orders, customers).
 * Semantically invalid events (a negative total, an email that is not one) are dead-lettered.
 */
export function projectionPipeline(store: Store, opts: { now?: () => number; name?: string } = {}): PipelineDefinition<Projected> {
  const now = opts.now ?? Date.now
  return {
    name: opts.name ?? PROJECTION_GROUP,
    topics: [TOPICS.orders.name, TOPICS.customers.name],
    async process(record, codec) {
      if (record.topic === TOPICS.orders.name) {
        const r = await decodeRecord<OrderEvent>(record, codec)
        if (r.kind !== 'ok') return r
        const errors = orderSemanticErrors(r.value, now())
        if (errors.length) return dlq('validate', errors[0]!.code, errors.map((e) => `${e.path}: ${e.message}`).join('; '), r.value.tenant_id)
        return ok({ kind: 'order', event: r.value })
      }
      const r = await decodeRecord<CustomerUpserted>(record, codec)
      if (r.kind !== 'ok') return r
      const errors = customerSemanticErrors(r.value)
      if (errors.length) return dlq('validate', errors[0]!.code, errors.map((e) => `${e.path}: ${e.message}`).join('; '), r.value.tenant_id)
      return ok({ kind: 'customer', event: r.value })
    },
    async sink(items) {
      const orders: OrderEvent[] = []
      const customers: CustomerUpserted[] = []
      for (const { value } of items) {
        if (value.kind === 'order') orders.push(value.event)
        else customers.push(value.event)
      }
      const writes: Promise<unknown>[] = []
      if (orders.length) {
        writes.push(store.insert({ table: 'order_events', values: orders.map(orderEventRow), format: 'JSONEachRow' }))
        writes.push(store.insert({ table: 'orders', values: orders.map(orderStateRow), format: 'JSONEachRow' }))
      }
      if (customers.length) writes.push(store.insert({ table: 'customers', values: customers.map(customerRow), format: 'JSONEachRow' }))
      await Promise.all(writes)
    },
  }
}
