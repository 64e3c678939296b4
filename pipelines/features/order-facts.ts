import type { OrderEvent } from '../../common/events.ts'
import { toCents } from '../../common/decimal.ts'
import { orderVersion } from '../../common/events.ts'

/**
 * The per-customer state behind RFM, CLV and churn, and the pure functions that fold order
 * events into it. Everything downstream (scores, models) is a function of these facts, so the
 * streaming consumer and the batch recompute agree by construction.
 *
 * An order's fact is the state of its latest event: the highest `orderVersion` (event time, then
 * life-cycle step). Two events of one order with the same version (the same millisecond and the
 * same step) are ordered by what they say: cancelled after not, then the larger total, then the
 * later placement time. This merge is commutative, associative and idempotent, so duplicated,
 * replayed and out-of-order events give the same fact, and it needs nothing but the fact itself:
 * the consumer keeps no event id in memory (order-book.ts). The state store restores by the same
 * rule (feature-store.ts).
 */
export interface OrderFact {
  version: number
  /** The event the fact is from: written with it to the state store, never compared. */
  eventId: string
  placedAt: number
  /** Order total after its latest event, in cents (0 after a full refund or a cancel; negative for a credit note). */
  cents: number
  cancelled: boolean
}

/** What the aggregates and the order history read of a fact. */
export type CountedFact = Pick<OrderFact, 'placedAt' | 'cents' | 'cancelled'>

export const DAY_MS = 86_400_000

export const utcDay = (ms: number): number => Math.floor(ms / DAY_MS)

export function factOf(e: OrderEvent): OrderFact {
  return {
    version: orderVersion(e),
    eventId: e.event_id,
    placedAt: e.placed_at,
    cents: Number(toCents(e.total)),
    cancelled: e.event_type === 'cancelled',
  }
}

type Versioned = Omit<OrderFact, 'eventId'>

/** True when `b` supersedes `a`: a higher version, or at the same version a greater (cancelled, cents, placedAt). */
export function newer(a: Versioned, b: Versioned): boolean {
  if (b.version !== a.version) return b.version > a.version
  if (b.cancelled !== a.cancelled) return b.cancelled
  if (b.cents !== a.cents) return b.cents > a.cents
  return b.placedAt > a.placedAt
}

/** Folds one fact into an order map; returns whether the map changed. */
export function mergeFact(orders: Map<string, OrderFact>, orderId: string, fact: OrderFact): boolean {
  const cur = orders.get(orderId)
  if (cur && !newer(cur, fact)) return false
  orders.set(orderId, fact)
  return true
}

/** An order counts (for frequency, spend, recency) unless it was cancelled or fully refunded. */
export const counts = (f: CountedFact): boolean => !f.cancelled && f.cents > 0

/** A credit note (the only fact with a negative total, event_type credit_note): lowers spend only. */
export const isCredit = (f: CountedFact): boolean => !f.cancelled && f.cents < 0

/**
 * Net of credit notes: spend falls by the credited cents (never below zero), and the mean spend
 * of the repeat days (Gamma-Gamma's zbar) by the same proportion, as if every purchase had been
 * credited alike: a credit note names no order, so it cannot be put against one.
 */
export function withCredits(gross: CustomerAggregates, creditCents: number): CustomerAggregates {
  if (creditCents <= 0 || gross.orderCount === 0) return gross
  const net = Math.max(0, gross.monetaryCents - creditCents)
  const share = gross.monetaryCents > 0 ? net / gross.monetaryCents : 0
  return { ...gross, monetaryCents: net, repeatAvgCents: gross.repeatAvgCents * share }
}

/**
 * What the models read from one customer's orders. Days are UTC epoch days; the repeat-purchase
 * statistics follow the BTYD convention (same-day orders merge into one purchase day):
 * x = purchase days − 1, t_x = last − first purchase day, zbar = mean spend of the repeat days.
 */
export interface CustomerAggregates {
  orderCount: number
  monetaryCents: number
  firstOrderAt: number | null
  lastOrderAt: number | null
  purchaseDays: number
  firstDay: number | null
  lastDay: number | null
  /** x: repeat purchase days. */
  repeatPurchases: number
  /** t_x in days. */
  repeatSpanDays: number
  /** Mean spend of the repeat purchase days, in cents (0 when x = 0). */
  repeatAvgCents: number
}

export const EMPTY_AGGREGATES: CustomerAggregates = {
  orderCount: 0,
  monetaryCents: 0,
  firstOrderAt: null,
  lastOrderAt: null,
  purchaseDays: 0,
  firstDay: null,
  lastDay: null,
  repeatPurchases: 0,
  repeatSpanDays: 0,
  repeatAvgCents: 0,
}

/**
 * A customer's aggregates from its order facts; orders and credit notes placed after `cutoffMs`
 * (a fixed reference date, common/reference-date.ts) are left out.
 */
export function aggregate(orders: Iterable<CountedFact>, cutoffMs = Infinity): CustomerAggregates {
  let orderCount = 0
  let monetaryCents = 0
  let creditCents = 0
  let firstOrderAt = Infinity
  let lastOrderAt = -Infinity
  const dayTotals = new Map<number, number>()
  for (const f of orders) {
    if (f.placedAt > cutoffMs) continue
    if (isCredit(f)) creditCents -= f.cents
    if (!counts(f)) continue
    orderCount++
    monetaryCents += f.cents
    if (f.placedAt < firstOrderAt) firstOrderAt = f.placedAt
    if (f.placedAt > lastOrderAt) lastOrderAt = f.placedAt
    const d = utcDay(f.placedAt)
    dayTotals.set(d, (dayTotals.get(d) ?? 0) + f.cents)
  }
  if (orderCount === 0) return EMPTY_AGGREGATES
  const firstDay = utcDay(firstOrderAt)
  const lastDay = utcDay(lastOrderAt)
  const repeatPurchases = dayTotals.size - 1
  const repeatCents = monetaryCents - (dayTotals.get(firstDay) ?? 0)
  return withCredits({
    orderCount,
    monetaryCents,
    firstOrderAt,
    lastOrderAt,
    purchaseDays: dayTotals.size,
    firstDay,
    lastDay,
    repeatPurchases,
    repeatSpanDays: lastDay - firstDay,
    repeatAvgCents: repeatPurchases > 0 ? repeatCents / repeatPurchases : 0,
  }, creditCents)
}

/**
 * A customer's counting orders as two parallel arrays, ascending by placement time (then amount):
 * the feature row's `order_times` (epoch ms) and `order_cents`. The analytics read windows of
 * them (revenue of a period, cohorts, the churn window) from the customer's row instead of
 * scanning every order of the tenant (docs/analytics-performance.md).
 */
export interface OrderHistory {
  times: number[]
  cents: number[]
}

export function orderHistory(orders: Iterable<CountedFact>, cutoffMs = Infinity): OrderHistory {
  const kept: CountedFact[] = []
  for (const f of orders) if (counts(f) && f.placedAt <= cutoffMs) kept.push(f)
  kept.sort((a, b) => a.placedAt - b.placedAt || a.cents - b.cents)
  return { times: kept.map((f) => f.placedAt), cents: kept.map((f) => f.cents) }
}

export const EMPTY_HISTORY: OrderHistory = { times: [], cents: [] }

/** Batch path: the aggregates of every customer from a plain list of order events. */
export function aggregateEvents(events: Iterable<OrderEvent>): Map<string, CustomerAggregates> {
  const perCustomer = new Map<string, Map<string, OrderFact>>()
  for (const e of events) {
    const key = `${e.tenant_id}:${e.customer_id}`
    let orders = perCustomer.get(key)
    if (!orders) perCustomer.set(key, (orders = new Map()))
    mergeFact(orders, e.order_id, factOf(e))
  }
  const out = new Map<string, CustomerAggregates>()
  for (const [k, orders] of perCustomer) out.set(k, aggregate(orders.values()))
  return out
}
