/**
 * A shop's history for the platform simulators, folded from the synthetic generator
 * (pipelines/ingest/synthetic): customers with their profile and registration time, orders with
 * their basket and life-cycle times. Each simulator renders these in its own platform's shapes;
 * the marketplace and search-ads simulators import this module too.
 *
 * Time is explicit: a record or a status change is visible once its time is <= the simulator's
 * clock, so an order placed "later" appears and a delivery or refund shows up as time passes.
 */
import { createHash } from 'node:crypto'
import { toCents } from '../../../common/decimal.ts'
import type { CustomerUpserted, OrderEvent } from '../../../common/events.ts'
import { generateEvents, type GeneratedEvent } from '../../../pipelines/ingest/synthetic/generate.ts'

export interface SimCustomer {
  /** 1-based number within the dataset (the generator's customer id). */
  no: number
  email: string | null
  firstName: string | null
  lastName: string | null
  phone: string | null
  /** DNI or CUIL as the shop collected it (dotted, dashed or bare). */
  document: string | null
  street: string | null
  city: string | null
  province: string | null
  postalCode: string | null
  registrationSource: string | null
  registeredAt: number
  updatedAt: number
  /** The customer's id on the marketplace, when registered there. */
  marketplaceId: string | null
}

export interface SimOrderItem {
  sku: string
  name: string
  quantity: number
  unitCents: number
}

export interface SimOrder {
  /** 1-based, in the generator's order. */
  seq: number
  customerNo: number
  placedAt: number
  items: SimOrderItem[]
  itemsCents: number
  shippingCents: number
  /** Added to the order value without an item or a total line explaining it (an anomaly for integrity tests). */
  unexplainedCents: number
  cancelledAt: number | null
  deliveredAt: number | null
  refund: { at: number; cents: number } | null
}

export interface Dataset {
  customers: SimCustomer[]
  orders: SimOrder[]
}

export interface DatasetOptions {
  customers: number
  seed: string | number
  start: Date
  end: Date
  /** Share of orders with a shipping charge (its own total line); default 0.2. */
  shippingShare?: number
  shippingCents?: number
}

/** A stable fraction in [0, 1) from a string: the same order always draws the same. */
export function unitHash(s: string): number {
  return createHash('sha256').update(s).digest().readUInt32BE(0) / 2 ** 32
}

const cents = (s: string) => Number(toCents(s))

export function buildDataset(opts: DatasetOptions): Dataset {
  return foldDataset(generateEvents({ tenantId: 1, customers: opts.customers, seed: opts.seed, start: opts.start, end: opts.end, source: 'simulator' }), opts)
}

/** A dataset from generated events: customers by their customer id, orders by the generator's order number. */
export function foldDataset(events: Iterable<GeneratedEvent>, opts: Pick<DatasetOptions, 'seed' | 'shippingShare' | 'shippingCents'>): Dataset {
  const customers: SimCustomer[] = []
  const orders = new Map<string, SimOrder>()
  const shippingShare = opts.shippingShare ?? 0.2
  for (const { value } of events) {
    if ('event_type' in value) foldOrder(orders, value as OrderEvent, opts.seed, shippingShare, opts.shippingCents ?? 499_000)
    else customers.push(toCustomer(value as CustomerUpserted))
  }
  return { customers, orders: [...orders.values()].sort((a, b) => a.seq - b.seq) }
}

function toCustomer(c: CustomerUpserted): SimCustomer {
  return {
    no: c.customer_id,
    email: c.email,
    firstName: c.first_name,
    lastName: c.last_name,
    phone: c.phone,
    document: c.national_id,
    street: c.street,
    city: c.city,
    province: c.province,
    postalCode: c.postal_code,
    registrationSource: c.registration_source,
    registeredAt: c.created_at ?? c.occurred_at,
    updatedAt: c.occurred_at,
    marketplaceId: c.source_ids.find((s) => s.source === 'marketplace')?.id ?? null,
  }
}

function foldOrder(orders: Map<string, SimOrder>, e: OrderEvent, seed: string | number, shippingShare: number, shippingCents: number): void {
  let o = orders.get(e.order_id)
  if (!o) {
    const seq = Number(e.order_id.split('-').pop())
    const items = e.items.map((i) => ({ sku: i.sku, name: i.name ?? i.sku, quantity: i.quantity, unitCents: cents(i.unit_price) }))
    const shipping = unitHash(`${seed}|shipping|${seq}`) < shippingShare ? shippingCents : 0
    o = { seq, customerNo: e.customer_id, placedAt: e.placed_at, items, itemsCents: cents(e.total), shippingCents: shipping, unexplainedCents: 0, cancelledAt: null, deliveredAt: null, refund: null }
    orders.set(e.order_id, o)
  }
  if (e.event_type === 'cancelled') o.cancelledAt = e.occurred_at
  else if (e.event_type === 'status_changed' && e.status === 'delivered') o.deliveredAt = e.occurred_at
  else if (e.event_type === 'refunded') o.refund = { at: e.occurred_at, cents: cents(e.refunded_amount ?? '0') }
}

/** What an order looks like at `now`: status changes after `now` have not happened yet. */
export interface OrderAt {
  order: SimOrder
  cancelledAt: number | null
  deliveredAt: number | null
  refund: { at: number; cents: number } | null
  /** The latest change visible at `now`. */
  lastChange: number
  /** items + shipping + the unexplained amount, in cents. */
  valueCents: number
}

export function orderAt(o: SimOrder, now: number): OrderAt | null {
  if (o.placedAt > now) return null
  const cancelledAt = o.cancelledAt !== null && o.cancelledAt <= now ? o.cancelledAt : null
  const deliveredAt = o.deliveredAt !== null && o.deliveredAt <= now ? o.deliveredAt : null
  const refund = o.refund && o.refund.at <= now ? o.refund : null
  const lastChange = Math.max(o.placedAt, cancelledAt ?? 0, deliveredAt ?? 0, refund?.at ?? 0)
  return { order: o, cancelledAt, deliveredAt, refund, lastChange, valueCents: o.itemsCents + o.shippingCents + o.unexplainedCents }
}

/** Every time at which some order's visible state changes (placement, delivery, cancellation, refund). */
function transitions(orders: readonly SimOrder[]): number[] {
  const out: number[] = []
  for (const o of orders) {
    out.push(o.placedAt)
    if (o.cancelledAt !== null) out.push(o.cancelledAt)
    if (o.deliveredAt !== null) out.push(o.deliveredAt)
    if (o.refund) out.push(o.refund.at)
  }
  return out.sort((a, b) => a - b)
}

/**
 * The orders visible at `now`, sorted by (lastChange, seq), cached until the next transition or
 * a change of the dataset (`invalidate`), so a full sync's hundreds of page requests cost one sort.
 */
export class OrderView {
  private cache: { validFrom: number; validUntil: number; rows: OrderAt[] } | null = null
  private times: number[] | null = null

  constructor(private readonly orders: SimOrder[]) {}

  invalidate(): void {
    this.cache = null
    this.times = null
  }

  at(now: number): OrderAt[] {
    if (this.cache && now >= this.cache.validFrom && now < this.cache.validUntil) return this.cache.rows
    this.times ??= transitions(this.orders)
    const rows: OrderAt[] = []
    for (const o of this.orders) {
      const v = orderAt(o, now)
      if (v) rows.push(v)
    }
    rows.sort((a, b) => a.lastChange - b.lastChange || a.order.seq - b.order.seq)
    const next = this.times.find((t) => t > now) ?? Number.POSITIVE_INFINITY
    const prev = [...this.times].reverse().find((t) => t <= now) ?? Number.NEGATIVE_INFINITY
    this.cache = { validFrom: prev, validUntil: next, rows }
    return rows
  }
}

/** Inclusive lower, exclusive upper bound on a time; either may be absent. */
export interface TimeRange {
  from?: number
  to?: number
}

export const inRange = (t: number, r: TimeRange) => (r.from === undefined || t >= r.from) && (r.to === undefined || t < r.to)

const DAY = 86_400_000

/** The generator's period: by default the year before `end`, which defaults to the start of the clock's day (UTC). */
export function historyPeriod(o: { start?: Date; end?: Date }, now: () => number): { start: Date; end: Date } {
  const end = o.end ?? new Date(Math.floor(now() / DAY) * DAY)
  return { start: o.start ?? new Date(end.getTime() - 365 * DAY), end }
}
