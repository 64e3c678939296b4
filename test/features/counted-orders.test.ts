/**
 * CountedOrders (order-facts.ts), behind `aggregate`, `orderHistory` and the feature consumer's
 * write: checked against a plain computation written here from the definitions (a map of day
 * totals, a filtered and sorted copy), on random facts with cancellations, full refunds, credit
 * notes, same-day and same-instant orders, a cutoff, in and out of time order, below and above the
 * size where its sort changes method; and reused across customers.
 */
import { describe, expect, it } from 'vitest'
import { CountedOrders, DAY_MS, EMPTY_AGGREGATES, aggregate, orderHistory, utcDay, withCredits, type CountedFact, type CustomerAggregates } from '../../pipelines/features/order-facts.ts'
import { bookAppend, emptyBook, gatherBook } from '../../pipelines/features/order-book.ts'
import { rng, shuffle } from './histories.ts'

/** The aggregates as the definitions read (order-facts.ts' CustomerAggregates), one fact at a time. */
function plainAggregate(facts: readonly CountedFact[], cutoffMs: number): CustomerAggregates {
  const kept = facts.filter((f) => f.placedAt <= cutoffMs && !f.cancelled)
  const credit = -kept.filter((f) => f.cents < 0).reduce((s, f) => s + f.cents, 0)
  const counting = kept.filter((f) => f.cents > 0)
  if (!counting.length) return EMPTY_AGGREGATES
  const days = new Map<number, number>()
  for (const f of counting) days.set(utcDay(f.placedAt), (days.get(utcDay(f.placedAt)) ?? 0) + f.cents)
  const first = Math.min(...counting.map((f) => f.placedAt))
  const last = Math.max(...counting.map((f) => f.placedAt))
  const monetary = counting.reduce((s, f) => s + f.cents, 0)
  const x = days.size - 1
  return withCredits({
    orderCount: counting.length,
    monetaryCents: monetary,
    firstOrderAt: first,
    lastOrderAt: last,
    purchaseDays: days.size,
    firstDay: utcDay(first),
    lastDay: utcDay(last),
    repeatPurchases: x,
    repeatSpanDays: utcDay(last) - utcDay(first),
    repeatAvgCents: x > 0 ? (monetary - days.get(utcDay(first))!) / x : 0,
  }, credit)
}

function plainHistory(facts: readonly CountedFact[], cutoffMs: number) {
  const kept = facts.filter((f) => f.placedAt <= cutoffMs && !f.cancelled && f.cents > 0).sort((a, b) => a.placedAt - b.placedAt || a.cents - b.cents)
  return { times: kept.map((f) => f.placedAt), cents: kept.map((f) => f.cents) }
}

/** n facts over about 40 days, several on one day and some at one instant, in time order or not. */
function randomFacts(seed: number, n: number, inOrder: boolean): CountedFact[] {
  const rand = rng(seed)
  const start = Date.UTC(2025, 0, 1)
  const out: CountedFact[] = []
  let at = start
  for (let i = 0; i < n; i++) {
    const r = rand()
    // A third at the instant before (ties by amount), else later the same day or days later.
    at += r < 0.3 ? 0 : r < 0.6 ? Math.floor(rand() * 3_600_000) : Math.floor(rand() * 3) * DAY_MS + 1
    const kind = rand()
    const cents = kind < 0.1 ? 0 : kind < 0.2 ? -Math.floor(rand() * 5_000) - 1 : Math.floor(rand() * 20_000) + 1
    out.push({ placedAt: at, cents, cancelled: rand() < 0.1 })
  }
  return inOrder ? out : shuffle(out, rand)
}

describe('CountedOrders', () => {
  it('gives the plain aggregates and history, with and without a cutoff, in any input order, at any size', () => {
    const reused = new CountedOrders()
    let checked = 0
    for (let seed = 1; seed <= 300; seed++) {
      const n = [0, 1, 2, 5, 31, 32, 33, 80, 400][seed % 9]!
      const facts = randomFacts(seed, n, seed % 2 === 0)
      const times = facts.map((f) => f.placedAt).sort((a, b) => a - b)
      for (const cutoff of [Infinity, times[Math.floor(times.length / 2)] ?? 0]) {
        const label = `seed ${seed}, ${n} facts, cutoff ${cutoff}`
        expect(aggregate(facts, cutoff), label).toEqual(plainAggregate(facts, cutoff))
        expect(orderHistory(facts, cutoff), label).toEqual(plainHistory(facts, cutoff))
        // One instance across customers, as the consumer uses it: nothing of the last one stays.
        reused.reset(cutoff)
        for (const f of facts) reused.add(f.placedAt, f.cents, f.cancelled)
        expect(reused.history(), label).toEqual(plainHistory(facts, cutoff))
        expect(reused.aggregates(), label).toEqual(plainAggregate(facts, cutoff))
        checked++
      }
    }
    expect(checked).toBe(600)
  })

  it('reads an order book as its facts: gatherBook adds what bookFacts would', () => {
    const facts = randomFacts(7, 50, false)
    const book = emptyBook()
    facts.forEach((f, i) => bookAppend(book, i, { ...f, version: i }))
    const g = new CountedOrders().reset()
    gatherBook(book, g)
    expect(g.aggregates()).toEqual(plainAggregate(facts, Infinity))
    expect(g.history()).toEqual(plainHistory(facts, Infinity))
  })

  it('counts same-day orders as one purchase day and nets credit notes (hand-computed)', () => {
    const day = (d: number, h = 0) => Date.UTC(2025, 0, d, h)
    const agg = aggregate([
      { placedAt: day(3, 18), cents: 4_000, cancelled: false },
      { placedAt: day(1), cents: 10_000, cancelled: false },
      { placedAt: day(1, 5), cents: 2_000, cancelled: false },
      { placedAt: day(9), cents: 6_000, cancelled: false },
      { placedAt: day(5), cents: 9_999, cancelled: true },
      { placedAt: day(6), cents: -2_200, cancelled: false },
    ])
    // Days 1, 3 and 9: x = 2, t_x = 8 days; 22,000 spent, 2,200 credited (10 %); repeat days 4,000 and 6,000.
    expect(agg).toEqual({
      orderCount: 4, monetaryCents: 19_800, firstOrderAt: day(1), lastOrderAt: day(9), purchaseDays: 3, firstDay: utcDay(day(1)), lastDay: utcDay(day(9)),
      repeatPurchases: 2, repeatSpanDays: 8, repeatAvgCents: 4_500,
    })
  })
})
