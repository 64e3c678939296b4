import { orderVersion, type CustomerUpserted, type OrderEvent } from '../../common/events.ts'
import { iso } from '../../common/time.ts'

/** Pure mapping from events to the rows of the raw projections (schemas/clickhouse/001_*.sql). */


export function orderEventRow(e: OrderEvent) {
  return {
    tenant_id: e.tenant_id,
    customer_id: e.customer_id,
    order_id: e.order_id,
    event_id: e.event_id,
    event_type: e.event_type,
    status: e.status,
    total: e.total,
    refunded_amount: e.refunded_amount,
    currency: e.currency,
    items: e.items.map((i) => ({ sku: i.sku, name: i.name, quantity: i.quantity, unit_price: i.unit_price })),
    placed_at: iso(e.placed_at),
    occurred_at: iso(e.occurred_at),
    source: e.source,
  }
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
    placed_at: iso(e.placed_at),
    updated_at: iso(e.occurred_at),
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
    created_at: e.created_at === null ? null : iso(e.created_at),
    source_ids: e.source_ids.map((s) => ({ source: s.source, id: s.id })),
    source: e.source,
    updated_at: iso(e.occurred_at),
    version: e.occurred_at,
  }
}
