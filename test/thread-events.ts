import { randomUUID } from 'node:crypto'
import type { CustomerUpserted, OrderEvent } from '../common/events.ts'

/** Events of the decode-thread tests (the projection's and the feature consumer's threads). */
export const T0 = Date.UTC(2025, 0, 1)

/** Order `n` of a customer: paid, 100.50 ARS, one line with a name outside ASCII. */
export function order(tenant: number, customer: number, n: number, over: Partial<OrderEvent> = {}): OrderEvent {
  return {
    event_id: `e-${customer}-${n}`, tenant_id: tenant, occurred_at: T0 + n * 60_000, source: 'test', event_type: 'placed',
    order_id: `o-${customer}-${n}`, customer_id: customer, status: 'paid', total: '100.50', currency: 'ARS',
    refunded_amount: null, items: [{ sku: 's', name: 'Ñandú “mate”', quantity: 2, unit_price: '50.25' }], placed_at: T0 + n * 60_000, ...over,
  }
}

export const customer = (tenant: number, id: number, over: Partial<CustomerUpserted> = {}): CustomerUpserted => ({
  event_id: randomUUID(), tenant_id: tenant, occurred_at: T0, source: 'test', customer_id: id, email: `c${id}@example.com`,
  first_name: 'Ana', last_name: 'Pérez', phone: null, national_id: null, street: null, city: null, province: null,
  postal_code: null, country: 'AR', registration_source: 'web', created_at: T0, source_ids: [], ...over,
})
