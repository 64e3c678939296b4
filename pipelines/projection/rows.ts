import { orderVersion, type CustomerUpserted, type OrderEvent } from '../../common/events.ts'
import { storedTime } from '../../common/time.ts'

/** Pure mapping from events to the rows of the raw projections (schemas/clickhouse/001_*.sql). */


/** The columns of an `order_events` row, in the order orderEventValues gives them. */
export const ORDER_EVENT_COLUMNS = ['tenant_id', 'customer_id', 'order_id', 'event_id', 'event_type', 'status', 'total', 'refunded_amount', 'currency', 'items', 'placed_at', 'occurred_at', 'source'] as const

/**
 * An `order_events` row as its values in ORDER_EVENT_COLUMNS' order: what the projection sends,
 * with no object per row. Items are named tuples, written as the event's own item objects (they
 * hold the tuple's four fields: the Avro schema's OrderItem). The times are epoch milliseconds
 * (storedTime): a DateTime64(3) column reads a number as its milliseconds.
 */
export function orderEventValues(e: OrderEvent): unknown[] {
  return [e.tenant_id, e.customer_id, e.order_id, e.event_id, e.event_type, e.status, e.total, e.refunded_amount, e.currency, e.items, storedTime(e.placed_at), storedTime(e.occurred_at), e.source]
}

/** The same row as an object (JSONEachRow): tests and the ingest bench's file write it. */
export function orderEventRow(e: OrderEvent): Record<(typeof ORDER_EVENT_COLUMNS)[number], unknown> {
  const v = orderEventValues(e)
  return Object.fromEntries(ORDER_EVENT_COLUMNS.map((c, k) => [c, v[k]])) as Record<(typeof ORDER_EVENT_COLUMNS)[number], unknown>
}

export function orderStateRow(e: OrderEvent) {
  return {
    tenant_id: e.tenant_id,
    customer_id: e.customer_id,
    order_id: e.order_id,
    last_event_id: e.event_id,
    status: e.status,
    total: e.total,
    refunded_amount: e.refunded_amount,
    currency: e.currency,
    items_count: e.items.length,
    placed_at: storedTime(e.placed_at),
    updated_at: storedTime(e.occurred_at),
    is_cancelled: e.event_type === 'cancelled' ? 1 : 0,
    source: e.source,
    version: orderVersion(e),
  }
}

export function customerRow(e: CustomerUpserted) {
  return {
    tenant_id: e.tenant_id,
    customer_id: e.customer_id,
    last_event_id: e.event_id,
    email: e.email,
    first_name: e.first_name,
    last_name: e.last_name,
    phone: e.phone,
    national_id: e.national_id,
    street: e.street,
    city: e.city,
    province: e.province,
    postal_code: e.postal_code,
    country: e.country,
    registration_source: e.registration_source,
    created_at: storedTime(e.created_at),
    source_ids: e.source_ids.map((s) => ({ source: s.source, id: s.id })),
    source: e.source,
    updated_at: storedTime(e.occurred_at),
    version: e.occurred_at,
  }
}
