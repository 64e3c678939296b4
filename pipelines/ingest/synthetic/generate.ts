/**
 * Deterministic synthetic events for an Argentine online shop: customer upserts and the life of
 * their orders, shaped like the cdp.customers.v1 and cdp.orders.v1 Avro contracts. The same
 * options (seed included) always yield byte-identical output.
 *
 * Customers are generated one at a time, each from its own seeded stream, so memory stays bounded
 * however many customers are asked for; the only cross-customer state is the order counter and a
 * capped set of e-mail addresses.
 */
import { customerKey, type CustomerUpserted, type OrderEvent, type OrderItem, type SourceId } from '../../../common/events.ts'
import { EmailRegistry } from './identity.ts'
import { fromCents } from '../../../common/decimal.ts'

/** The generator counts money in whole cents (numbers); the contracts carry decimal strings. */
const centsToDecimal = (cents: number): string => fromCents(BigInt(cents))
import { drawProfile, type Profile } from './profile.ts'
import { buildBasket, simulatePurchases, type Basket, type SimulatedOrder } from './purchases.ts'
import { Rng } from './random.ts'

export interface GenerateOptions {
  tenantId: number
  customers: number
  seed: string | number
  start: Date
  end: Date
  /** Producer name in every event's `source`; default 'generator'. */
  source?: string
  /** Share of customer records with messy location/id formats; default 0.3. */
  dirtyShare?: number
}

export interface GeneratedEvent {
  topic: 'customers' | 'orders'
  /** `${tenantId}:${customerId}` */
  key: string
  value: CustomerUpserted | OrderEvent
}

const DEFAULT_SOURCE = 'generator'
const DEFAULT_DIRTY_SHARE = 0.3

function checkWindow(start: Date, end: Date): [number, number] {
  const startMs = start.getTime()
  const endMs = end.getTime()
  if (!Number.isFinite(startMs) || !Number.isFinite(endMs) || endMs <= startMs) {
    throw new RangeError('start and end must be valid dates with start < end')
  }
  return [startMs, endMs]
}

function checkCount(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`)
}

function toItems(basket: Basket): OrderItem[] {
  return basket.items.map((item) => ({
    sku: item.sku,
    name: item.name,
    quantity: item.quantity,
    unit_price: centsToDecimal(item.unitCents),
  }))
}

/** Order events without ids yet: ids are drawn after time-sorting, in emission order. */
type PendingEvent = { topic: 'customers'; value: Omit<CustomerUpserted, 'event_id'> } | { topic: 'orders'; value: Omit<OrderEvent, 'event_id'> }

interface OrderContext {
  tenantId: number
  customerId: number
  source: string
}

/**
 * Events of one order. Placed and 'delivered' events carry the basket (its items sum to the total);
 * cancelled and refunded events carry no items, since the total after them no longer equals the basket.
 */
function orderEvents(ctx: OrderContext, orderId: string, order: SimulatedOrder): Omit<OrderEvent, 'event_id'>[] {
  type Change = Pick<OrderEvent, 'occurred_at' | 'event_type' | 'status' | 'total' | 'refunded_amount' | 'items'>
  // A literal per event (an object spread followed by new keys costs about a microsecond a key).
  const event = (e: Change): Omit<OrderEvent, 'event_id'> => ({
    tenant_id: ctx.tenantId,
    source: ctx.source,
    order_id: orderId,
    customer_id: ctx.customerId,
    currency: 'ARS',
    placed_at: order.placedAt,
    occurred_at: e.occurred_at,
    event_type: e.event_type,
    status: e.status,
    total: e.total,
    refunded_amount: e.refunded_amount,
    items: e.items,
  })
  const total = centsToDecimal(order.totalCents)
  const items = toItems(order)
  const events = [event({ occurred_at: order.placedAt, event_type: 'placed', status: 'paid', total, refunded_amount: null, items })]
  if (order.cancelledAt !== null) events.push(event({ occurred_at: order.cancelledAt, event_type: 'cancelled', status: 'cancelled', total: '0.00', refunded_amount: null, items: [] }))
  if (order.deliveredAt !== null) events.push(event({ occurred_at: order.deliveredAt, event_type: 'status_changed', status: 'delivered', total, refunded_amount: null, items }))
  if (order.refund !== null) {
    events.push(event({
      occurred_at: order.refund.at,
      event_type: 'refunded',
      status: 'refunded',
      total: centsToDecimal(order.totalCents - order.refund.cents),
      refunded_amount: centsToDecimal(order.refund.cents),
      items: [],
    }))
  }
  return events
}

/** One generated customer: the profile drawn (with what its formatted fields were made from) and its events. */
export interface GeneratedCustomer {
  customerId: number
  profile: Profile
  /** The customer upsert first, then the order events, in non-decreasing occurred_at order. */
  events: GeneratedEvent[]
}

/**
 * Streams events in non-decreasing occurred_at order per customer, customer upsert before its
 * first order. Memory stays bounded for millions of customers: generated customer by customer.
 */
export function* generateEvents(opts: GenerateOptions): Generator<GeneratedEvent> {
  for (const c of generateCustomers(opts)) yield* c.events
}

/** generateEvents one customer at a time, with the profile each customer's events were made from. */
export function* generateCustomers(opts: GenerateOptions): Generator<GeneratedCustomer> {
  const [startMs, endMs] = checkWindow(opts.start, opts.end)
  checkCount('customers', opts.customers, 0)
  checkCount('tenantId', opts.tenantId, 0)
  const source = opts.source ?? DEFAULT_SOURCE
  const dirtyShare = opts.dirtyShare ?? DEFAULT_DIRTY_SHARE
  if (!(dirtyShare >= 0 && dirtyShare <= 1)) throw new RangeError(`dirtyShare must be in [0, 1], got ${dirtyShare}`)
  const { tenantId } = opts
  const referenceYear = opts.start.getUTCFullYear()
  const emails = new EmailRegistry()
  let orderNumber = 0

  for (let customerId = 1; customerId <= opts.customers; customerId++) {
    // One stream per customer (and a separate one for ids), so a customer's data doesn't depend on
    // how many random numbers the previous customers consumed.
    const stream = `${opts.seed}|tenant:${tenantId}|customer:${customerId}`
    const rng = new Rng(stream)
    const idRng = new Rng(`${stream}|event-ids`)

    const profile = drawProfile(rng, { customerId, referenceYear, dirty: rng.chance(dirtyShare), emails })
    const history = simulatePurchases(rng, startMs, endMs)

    const sourceIds: SourceId[] = [{ source, id: String(customerId) }]
    if (profile.marketplaceId !== null) sourceIds.push({ source: 'marketplace', id: profile.marketplaceId })
    const pending: PendingEvent[] = [
      {
        topic: 'customers',
        value: {
          tenant_id: tenantId,
          occurred_at: history.registeredAt,
          source,
          customer_id: customerId,
          email: profile.email,
          first_name: profile.firstName,
          last_name: profile.lastName,
          phone: profile.phone,
          national_id: profile.nationalId,
          street: profile.street,
          city: profile.city,
          province: profile.province,
          postal_code: profile.postalCode,
          country: 'AR',
          registration_source: profile.registrationSource,
          created_at: history.registeredAt,
          source_ids: sourceIds,
        },
      },
    ]
    const ctx: OrderContext = { tenantId, customerId, source }
    for (const order of history.orders) {
      orderNumber++
      for (const value of orderEvents(ctx, `ORD-${tenantId}-${orderNumber}`, order)) pending.push({ topic: 'orders', value })
    }
    // Array.prototype.sort is stable: the upsert (earliest) stays first, an order's events keep their order on ties.
    pending.sort((a, b) => a.value.occurred_at - b.value.occurred_at)

    const key = customerKey(tenantId, customerId)
    const events = pending.map((event): GeneratedEvent => ({ topic: event.topic, key, value: { event_id: idRng.uuid(), ...event.value } as CustomerUpserted | OrderEvent }))
    yield { customerId, profile, events }
  }
}

/**
 * Only order events, for benchmarks: exactly `count` 'placed' events with distinct order ids,
 * spread over customers (skewed: low ids buy more), deterministic from the seed. Times rise
 * monotonically across the whole stream, so per-customer order holds too.
 */
export function* generateOrderEvents(opts: {
  tenantId: number
  count: number
  customers: number
  seed: string | number
  start: Date
  end: Date
}): Generator<GeneratedEvent> {
  const [startMs, endMs] = checkWindow(opts.start, opts.end)
  checkCount('count', opts.count, 0)
  checkCount('customers', opts.customers, 1)
  checkCount('tenantId', opts.tenantId, 0)
  const { tenantId, count, customers } = opts
  const rng = new Rng(`${opts.seed}|tenant:${tenantId}|order-benchmark`)
  const span = endMs - startMs

  for (let i = 0; i < count; i++) {
    // Stratified times: the i-th order falls in the i-th slice of the window, so times never decrease.
    const placedAt = startMs + Math.floor(((i + rng.next()) * span) / count)
    const customerId = 1 + Math.floor(customers * Math.pow(rng.next(), 1.5))
    const basket = buildBasket(rng, Math.min(290_000, Math.max(6_500, rng.gamma(3, 15_000))))
    const value: OrderEvent = {
      event_id: rng.uuid(),
      tenant_id: tenantId,
      occurred_at: placedAt,
      source: DEFAULT_SOURCE,
      event_type: 'placed',
      order_id: `ORD-${tenantId}-${i + 1}`,
      customer_id: customerId,
      status: 'paid',
      total: centsToDecimal(basket.totalCents),
      currency: 'ARS',
      refunded_amount: null,
      items: toItems(basket),
      placed_at: placedAt,
    }
    yield { topic: 'orders', key: customerKey(tenantId, customerId), value }
  }
}
