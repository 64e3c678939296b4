import { randomUUID } from 'node:crypto'
import type { CustomerUpserted, OrderEvent } from '../common/events.ts'

/** Events of the decode-thread tests (the projection's and the feature consumer's threads). */
export const T0 = Date.UTC(2025, 0, 1)
/** The decode threads' clock in the tests that compare a fast path with the general way. */
export const NOW = T0 + 365 * 86_400_000

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

/** Events broken or odd in one field each (and a few valid odd ones). */
export const ORDER_MUTATIONS: [string, (e: OrderEvent) => Partial<OrderEvent>][] = [
  ['negative total', () => ({ total: '-1.00' })],
  ['credit note, positive total', () => ({ event_type: 'credit_note', total: '5.00', items: [] })],
  ['credit note (valid)', () => ({ event_type: 'credit_note', total: '-5.00', items: [] })],
  ['credit note with a refund', () => ({ event_type: 'credit_note', total: '-5.00', items: [], refunded_amount: '1.00' })],
  ['refund above a placed total', (e) => ({ refunded_amount: (Number(e.total) + 1).toFixed(2) })],
  ['refund equal to a placed total (valid)', (e) => ({ refunded_amount: e.total })],
  ['negative refund', () => ({ event_type: 'refunded', refunded_amount: '-0.01' })],
  ['refunded (valid)', () => ({ event_type: 'refunded', status: 'refunded', total: '0.00', refunded_amount: '10.00' })],
  ['status change with other items', () => ({ event_type: 'status_changed', total: '1.00' })],
  ['cancelled', () => ({ event_type: 'cancelled', status: 'cancelled' })],
  ['blank event id', () => ({ event_id: '' })],
  ['space-led order id', () => ({ order_id: ' o-1' })],
  ['tab-only status', () => ({ status: '\t' })],
  ['blank source', () => ({ source: '   ' })],
  ['order id outside ASCII (valid)', () => ({ order_id: 'ñ-1' })],
  ['status outside ASCII after its first letter', () => ({ status: 'pagó' })],
  ['lower-case currency', () => ({ currency: 'usd' })],
  ['two-letter currency', () => ({ currency: 'US' })],
  ['four-letter currency', () => ({ currency: 'USDX' })],
  ['currency outside ASCII', () => ({ currency: 'ÜSD' })],
  ['other currency (valid)', () => ({ currency: 'USD' })],
  ['tenant 0', () => ({ tenant_id: 0 })],
  ['negative customer', () => ({ customer_id: -3 })],
  // avsc writes and reads longs up to 2^52.
  ['largest ids avsc writes', () => ({ tenant_id: 2 ** 52, customer_id: 2 ** 52 - 1 })],
  ['future occurred_at', () => ({ occurred_at: NOW + 6 * 60_000, placed_at: NOW })],
  ['occurred_at within the tolerance (valid)', () => ({ occurred_at: NOW + 4 * 60_000, placed_at: NOW })],
  ['placed after occurred', (e) => ({ placed_at: e.occurred_at + 1 })],
  ['placed before 1990', () => ({ placed_at: Date.UTC(1989, 11, 31) })],
  ['times past DateTime64', () => ({ placed_at: Date.UTC(2400, 0, 1), occurred_at: Date.UTC(2400, 0, 2) })],
  ['seconds for milliseconds', (e) => ({ placed_at: Math.floor(e.placed_at / 1000), occurred_at: Math.floor(e.occurred_at / 1000) })],
  ['no items on a placed order (valid)', () => ({ items: [] })],
  ['items not adding up', (e) => ({ items: e.items.map((it, k) => (k ? it : { ...it, unit_price: (Number(it.unit_price) + 0.01).toFixed(2) })) })],
  ['quantity 0', (e) => ({ items: e.items.map((it) => ({ ...it, quantity: 0 })) })],
  ['negative quantity', (e) => ({ items: e.items.map((it) => ({ ...it, quantity: -1 })) })],
  ['blank sku', (e) => ({ items: e.items.map((it) => ({ ...it, sku: ' ' })) })],
  ['names outside ASCII and none (valid)', (e) => ({ items: e.items.map((it, k) => ({ ...it, name: k % 2 ? null : 'Ñandú “mate” 🧉' })) })],
  ['a line past the safe integers', () => ({ total: '9999999999999.99', items: [{ sku: 'x', name: null, quantity: 2_147_483_647, unit_price: '9999999999999.99' }] })],
  ['a total of 16 digits', () => ({ total: '99999999999999.99', items: [] })],
  ['a total of 15 digits in seven bytes (valid)', () => ({ total: '9999999999999.99', items: [] })],
  ['a negative price line (valid when it adds up)', () => ({ total: '5.00', items: [{ sku: 'a', name: null, quantity: 1, unit_price: '6.00' }, { sku: 'd', name: 'discount', quantity: 1, unit_price: '-1.00' }] })],
  ['a long event id (valid)', () => ({ event_id: 'e'.repeat(300) })],
]
