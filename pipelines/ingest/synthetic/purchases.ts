/**
 * One customer's buying life, in the spirit of BG/NBD (Fader, Hardie & Lee 2005) with
 * Gamma-Gamma spend, so that CLV and churn models have something realistic to recover:
 * - while alive, purchases arrive as a Poisson process with rate λ ~ Gamma, modulated by the
 *   retail calendar (thinning against SEASONALITY_MAX);
 * - after each repeat purchase the customer drops out with probability p ~ Beta;
 * - spend per order ~ Gamma around the customer's own mean, which is itself Gamma distributed;
 * - on top of that, explicit shares of registered-but-never-bought, one-time and churned buyers,
 *   because real shops have more of those than a pure BG/NBD draw gives.
 * All amounts are integer cents; all times are UTC epoch ms.
 */
import { productNear } from './catalog.ts'
import type { Rng } from './random.ts'
import { SEASONALITY_MAX, seasonality } from './seasonality.ts'

const MINUTE_MS = 60_000
const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000

export type BuyerKind = 'never' | 'one_time' | 'churned' | 'repeat'

const BUYER_KINDS: readonly BuyerKind[] = ['never', 'one_time', 'churned', 'repeat']
const BUYER_KIND_SHARES: readonly number[] = [0.08, 0.3, 0.17, 0.45]

/** Tunables of the process, in one place. */
export const PURCHASE_PARAMS = {
  /** λ ~ Gamma(shape, scale) purchases per day: mean 1/60, heavy heterogeneity (shape 1). */
  rateShape: 1.0,
  rateScale: 1 / 60,
  /** p ~ Beta(a, b): mean ≈ 0.22 chance of leaving after each repeat purchase. */
  dropoutA: 1.0,
  dropoutB: 3.5,
  /** Customer's mean order value ~ Gamma(shape, scale) pesos: mean ≈ 44,000 ARS. */
  meanSpendShape: 2.0,
  meanSpendScale: 22_000,
  /** Order value ~ Gamma(shape, mean/shape) around the customer mean. */
  orderSpendShape: 5.0,
  /** Clamp of an order's target value in pesos; rounding of unit prices keeps totals within 5,000–300,000. */
  minTargetPesos: 6_500,
  maxTargetPesos: 290_000,
  cancelShare: 0.03,
  /** Share of all orders refunded; drawn among the non-cancelled ones. */
  refundShare: 0.02,
  deliveredShare: 0.75,
} as const

export interface BuyerProfile {
  kind: BuyerKind
  ratePerDay: number
  dropout: number
  meanSpendPesos: number
}

export interface BasketItem {
  sku: string
  name: string
  quantity: number
  unitCents: number
}

export interface Basket {
  items: BasketItem[]
  totalCents: number
}

export interface SimulatedOrder extends Basket {
  placedAt: number
  /** Set when the order was cancelled within the window; the order then never ships. */
  cancelledAt: number | null
  deliveredAt: number | null
  refund: { at: number; cents: number } | null
}

export interface PurchaseHistory {
  profile: BuyerProfile
  registeredAt: number
  orders: SimulatedOrder[]
}

export function drawBuyerProfile(rng: Rng): BuyerProfile {
  const P = PURCHASE_PARAMS
  return {
    kind: rng.weighted(BUYER_KINDS, BUYER_KIND_SHARES),
    ratePerDay: rng.gamma(P.rateShape, P.rateScale),
    dropout: rng.beta(P.dropoutA, P.dropoutB),
    meanSpendPesos: rng.gamma(P.meanSpendShape, P.meanSpendScale),
  }
}

/** A time in [from, to) drawn with density proportional to seasonality (rejection sampling). */
export function seasonalTime(rng: Rng, from: number, to: number): number {
  for (;;) {
    const t = Math.floor(rng.uniform(from, to))
    if (rng.next() * SEASONALITY_MAX < seasonality(t)) return t
  }
}

const ITEM_COUNTS = [1, 2, 3, 4] as const
const ITEM_COUNT_WEIGHTS = [0.5, 0.28, 0.14, 0.08] as const
const QUANTITIES = [1, 2, 3] as const
const QUANTITY_WEIGHTS = [0.75, 0.18, 0.07] as const

/**
 * 1–4 lines whose unit prices are whole pesos (a quarter end in 99, "12.499"), near a target
 * value. The total is the exact sum of quantity × unit price, so item sums always equal totals.
 */
export function buildBasket(rng: Rng, targetPesos: number): Basket {
  const lines = rng.weighted(ITEM_COUNTS, ITEM_COUNT_WEIGHTS)
  const shares: number[] = []
  let shareSum = 0
  for (let i = 0; i < lines; i++) {
    const s = rng.gamma(1.5)
    shares.push(s)
    shareSum += s
  }
  const used = new Set<string>()
  const items: BasketItem[] = []
  let totalCents = 0
  for (const share of shares) {
    const quantity = rng.weighted(QUANTITIES, QUANTITY_WEIGHTS)
    let unitPesos = Math.max(500, Math.floor((targetPesos * share) / shareSum / quantity))
    if (unitPesos >= 1_000 && rng.chance(0.25)) unitPesos = Math.floor(unitPesos / 100) * 100 - 1
    const product = productNear(rng, unitPesos, used)
    used.add(product.sku)
    const unitCents = unitPesos * 100
    items.push({ sku: product.sku, name: product.name, quantity, unitCents })
    totalCents += unitCents * quantity
  }
  return { items, totalCents }
}

function orderTarget(rng: Rng, meanSpendPesos: number): number {
  const P = PURCHASE_PARAMS
  const value = rng.gamma(P.orderSpendShape, meanSpendPesos / P.orderSpendShape)
  return Math.min(P.maxTargetPesos, Math.max(P.minTargetPesos, value))
}

/** Cancellation, delivery and refund of a placed order; anything at or after `endMs` hasn't happened yet. */
function lifecycle(rng: Rng, placedAt: number, basket: Basket, endMs: number): SimulatedOrder {
  const P = PURCHASE_PARAMS
  const within = (t: number): number | null => (t < endMs ? t : null)
  if (rng.chance(P.cancelShare)) {
    const cancelledAt = placedAt + MINUTE_MS + Math.floor(rng.exponential(1 / (8 * HOUR_MS)))
    return { ...basket, placedAt, cancelledAt: within(cancelledAt), deliveredAt: null, refund: null }
  }
  const deliveredAt = rng.chance(P.deliveredShare) ? within(placedAt + Math.floor(rng.uniform(1.5, 10) * DAY_MS)) : null
  let refund: SimulatedOrder['refund'] = null
  if (rng.chance(P.refundShare / (1 - P.cancelShare))) {
    const at = (deliveredAt ?? placedAt + 3 * DAY_MS) + Math.floor(rng.uniform(1, 20) * DAY_MS)
    if (at < endMs) refund = { at, cents: refundCents(rng, basket) }
  }
  return { ...basket, placedAt, cancelledAt: null, deliveredAt, refund }
}

/** Half the refunds are full; partial ones return one line or a share of the total. */
function refundCents(rng: Rng, basket: Basket): number {
  if (rng.chance(0.5)) return basket.totalCents
  if (basket.items.length > 1 && rng.chance(0.6)) {
    const item = rng.pick(basket.items)
    return item.unitCents * item.quantity
  }
  const cents = Math.round(basket.totalCents * rng.uniform(0.1, 0.6))
  return Math.min(basket.totalCents - 1, Math.max(1, cents))
}

/**
 * Registration and orders of one customer within [startMs, endMs). Registration follows the retail
 * calendar too (people sign up when they buy); the first order comes minutes to days later.
 */
export function simulatePurchases(rng: Rng, startMs: number, endMs: number): PurchaseHistory {
  const profile = drawBuyerProfile(rng)
  const registeredAt = seasonalTime(rng, startMs, endMs)
  const orders: SimulatedOrder[] = []
  if (profile.kind === 'never') return { profile, registeredAt, orders }

  // Many sign up at checkout (minutes); others come back after a few days.
  const delay = rng.chance(0.45) ? rng.uniform(1, 60) * MINUTE_MS : MINUTE_MS + rng.exponential(1 / (3 * DAY_MS))
  let t = registeredAt + Math.floor(delay)
  if (t >= endMs) return { profile, registeredAt, orders }
  const place = (at: number) => {
    orders.push(lifecycle(rng, at, buildBasket(rng, orderTarget(rng, profile.meanSpendPesos)), endMs))
  }
  place(t)
  if (profile.kind === 'one_time') return { profile, registeredAt, orders }

  // Churned customers stop for good somewhere in the first 10–60% of their remaining window.
  const stopAt = profile.kind === 'churned' ? t + Math.floor((endMs - t) * rng.uniform(0.1, 0.6)) : endMs
  const candidateRatePerMs = (profile.ratePerDay * SEASONALITY_MAX) / DAY_MS
  if (!(candidateRatePerMs > 0)) return { profile, registeredAt, orders }
  for (;;) {
    t += Math.max(1, Math.floor(rng.exponential(candidateRatePerMs)))
    if (t >= stopAt) break
    if (rng.next() * SEASONALITY_MAX >= seasonality(t)) continue // thinned away
    place(t)
    if (rng.chance(profile.dropout)) break
  }
  return { profile, registeredAt, orders }
}
