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

/**
 * T of a buyer's (x, t_x, T) on `today` (a UTC day number): days since the first purchase, never
 * less than t_x (a reference day before the last purchase). What the CLV fit, the CLV features and
 * their memo all read; the caller has checked the customer has bought (firstDay set).
 */
export function customerAgeDays(a: CustomerAggregates, today: number): number {
  return Math.max(today - a.firstDay!, a.repeatSpanDays)
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
 * One customer's orders placed by a cutoff, gathered flat: the counting ones (neither cancelled nor
 * fully refunded) as times and cents sorted by placement time, then amount, and the credit notes'
 * total. `aggregate` and `orderHistory` are computed from it; the feature consumer's write gathers
 * a profile's order books into one instance (reused: no object an order) and reads both.
 * Cents are whole numbers, so the sums do not depend on the order the facts come in.
 */
export class CountedOrders {
  private readonly times: number[] = []
  private readonly cents: number[] = []
  private n = 0
  private creditCents = 0
  private cutoffMs = Infinity
  private sorted = true

  /** Starts another customer's gathering: facts placed after `cutoffMs` are left out. */
  reset(cutoffMs = Infinity): this {
    this.n = 0
    this.creditCents = 0
    this.cutoffMs = cutoffMs
    this.sorted = true
    return this
  }

  /**
   * One fact. An order counts (for frequency, spend, recency) unless it was cancelled or fully
   * refunded (0 cents); a credit note (the only fact with a negative total, event_type
   * credit_note) lowers spend only.
   */
  add(placedAt: number, cents: number, cancelled: boolean): void {
    if (placedAt > this.cutoffMs || cancelled) return
    if (cents < 0) {
      this.creditCents -= cents
      return
    }
    if (cents === 0) return
    const n = this.n++
    if (n > 0 && this.sorted) {
      const t = this.times[n - 1]!
      if (t > placedAt || (t === placedAt && this.cents[n - 1]! > cents)) this.sorted = false
    }
    this.times[n] = placedAt
    this.cents[n] = cents
  }

  aggregates(): CustomerAggregates {
    this.sort()
    const n = this.n
    if (n === 0) return EMPTY_AGGREGATES
    const t = this.times
    const c = this.cents
    const firstDay = utcDay(t[0]!)
    let monetaryCents = 0
    let firstDayCents = 0
    let purchaseDays = 0
    let day = NaN
    for (let i = 0; i < n; i++) {
      const d = utcDay(t[i]!)
      monetaryCents += c[i]!
      if (d === firstDay) firstDayCents += c[i]!
      if (d !== day) {
        purchaseDays++
        day = d
      }
    }
    const repeatPurchases = purchaseDays - 1
    return withCredits({
      orderCount: n,
      monetaryCents,
      firstOrderAt: t[0]!,
      lastOrderAt: t[n - 1]!,
      purchaseDays,
      firstDay,
      lastDay: day,
      repeatPurchases,
      repeatSpanDays: day - firstDay,
      repeatAvgCents: repeatPurchases > 0 ? (monetaryCents - firstDayCents) / repeatPurchases : 0,
    }, this.creditCents)
  }

  history(): OrderHistory {
    this.sort()
    return { times: this.times.slice(0, this.n), cents: this.cents.slice(0, this.n) }
  }

  /** Ascending by time, then amount: orders mostly arrive in time, so mostly a no-op. */
  private sort(): void {
    if (this.sorted) return
    const n = this.n
    const t = this.times
    const c = this.cents
    if (n <= 32) {
      for (let i = 1; i < n; i++) {
        const ti = t[i]!
        const ci = c[i]!
        let j = i - 1
        while (j >= 0 && (t[j]! > ti || (t[j] === ti && c[j]! > ci))) {
          t[j + 1] = t[j]!
          c[j + 1] = c[j]!
          j--
        }
        t[j + 1] = ti
        c[j + 1] = ci
      }
    } else {
      const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => t[a]! - t[b]! || c[a]! - c[b]!)
      const ts = order.map((i) => t[i]!)
      const cs = order.map((i) => c[i]!)
      for (let i = 0; i < n; i++) {
        t[i] = ts[i]!
        c[i] = cs[i]!
      }
    }
    this.sorted = true
  }
}

/**
 * A customer's aggregates from its order facts; orders and credit notes placed after `cutoffMs`
 * (a fixed reference date, common/reference-date.ts) are left out.
 */
export function aggregate(orders: Iterable<CountedFact>, cutoffMs = Infinity): CustomerAggregates {
  return gathered(orders, cutoffMs).aggregates()
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
  return gathered(orders, cutoffMs).history()
}

const shared = new CountedOrders()

function gathered(orders: Iterable<CountedFact>, cutoffMs: number): CountedOrders {
  const g = shared.reset(cutoffMs)
  for (const f of orders) g.add(f.placedAt, f.cents, f.cancelled)
  return g
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
